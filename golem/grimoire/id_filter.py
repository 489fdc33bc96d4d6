"""A Bloom filter of stored episode ids, so a write of new episodes can skip the id lookup.

``might_hold`` is True for every id ever added (no false negatives); False means the id
was certainly never added. A True may be wrong (about 1 in 10,000 ids while the filter
holds no more than its capacity), so a caller that needs the truth asks the store for
the ids that pass. Removing is not possible: an id deleted from the store still passes,
which costs only a lookup. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

BITS_PER_ID = 20
HASHES = 14  # ~BITS_PER_ID x ln 2: false positives ~0.6^20, ~7e-5 at capacity
MIN_CAPACITY = 4096


class IdFilter:
    """Bloom filter over string ids, sized for ``capacity`` ids (it keeps working past
    that, with more false positives; ``full`` says when to build a bigger one). Ids hash
    with Python's own string hash, which is salted per process: a filter lives in memory
    only and is never stored."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(int(capacity), MIN_CAPACITY)
        self._bits = np.zeros((self.capacity * BITS_PER_ID + 7) // 8, dtype=np.uint8)
        self._size = np.uint64(self._bits.size * 8)
        self.added = 0

    @classmethod
    def of(cls, ids: Sequence[str], headroom: float = 2.0) -> IdFilter:
        """A filter holding ``ids``, with room for ``headroom`` times as many."""
        made = cls(int(len(ids) * headroom))
        positions = made._positions(list(ids))
        if positions.size:
            every = np.zeros(made._bits.size * 8, dtype=bool)
            every[positions.ravel()] = True
            made._bits = np.packbits(every, bitorder="little")
            made.added = positions.shape[0]
        return made

    @property
    def full(self) -> bool:
        """More ids were added than it was sized for."""
        return self.added > self.capacity

    def add(self, ids: Iterable[str]) -> None:
        positions = self._positions(list(ids))
        if positions.size:
            np.bitwise_or.at(self._bits, positions >> 3,
                             np.left_shift(1, positions & 7).astype(np.uint8))
            self.added += positions.shape[0]

    def might_hold(self, ids: Sequence[str]) -> list[bool]:
        """For each id: False if it was never added, True if it may have been."""
        positions = self._positions(list(ids))
        if not positions.size:
            return []
        found = (self._bits[positions >> 3] >> (positions & 7).astype(np.uint8)) & 1
        return [bool(row) for row in found.all(axis=1)]

    def _positions(self, ids: list[str]) -> npt.NDArray[np.uint64]:
        """(len(ids), HASHES) bit positions by double hashing: the id's string hash, and
        a second hash mixed from it (splitmix64's finaliser), odd so every step moves."""
        if not ids:
            return np.zeros((0, HASHES), dtype=np.uint64)
        first = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)).view(np.uint64)
        with np.errstate(over="ignore"):  # wrapping is the point
            mixed = (first ^ (first >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            second = (mixed ^ (mixed >> np.uint64(31))) | np.uint64(1)
            steps = np.arange(HASHES, dtype=np.uint64)
            positions = first[:, None] + steps * second[:, None]
        return positions % self._size

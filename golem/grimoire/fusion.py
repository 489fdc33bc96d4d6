"""Reciprocal rank fusion of candidate lists (dense vectors, full-text).

RRF (Cormack, Clarke & Buettcher, 2009) adds 1 / (k + rank) over every list an id
appears in. It uses ranks only, so a cosine and a BM25 score, which live on
different scales, never have to be calibrated against each other; k = 60 damps
the head of each list so one list's top hit cannot drown agreement between lists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

RRF_K = 60


def first_ranks(ranked: Sequence[str]) -> dict[str, int]:
    """1-based rank of each id in one list; a repeated id keeps its best (first) rank."""
    ranks: dict[str, int] = {}
    for position, item in enumerate(ranked, start=1):
        ranks.setdefault(item, position)
    return ranks


def rrf(ranked_lists: Sequence[Sequence[str]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Fuse ranked id lists into one: (id, sum of 1 / (k + rank)), best first.

    Ranks are 1-based; an id repeated within a list counts once, at its best rank.
    Ties keep first appearance, reading the lists in the order given (so pass the
    list you trust most first). Empty input gives an empty result.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k: must be an integer >= 0, got {k!r}")
    parts: dict[str, list[float]] = {}  # insertion order = first appearance
    for ranked in ranked_lists:
        for item, rank in first_ranks(ranked).items():
            parts.setdefault(item, []).append(1.0 / (k + rank))
    # fsum is exactly rounded, so equal rank sets give equal scores whatever the list order.
    scores = {item: math.fsum(terms) for item, terms in parts.items()}
    order = {item: i for i, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], order[pair[0]]))

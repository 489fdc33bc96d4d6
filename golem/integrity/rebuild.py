"""`golem memory rebuild-episodes`: a damaged episode store is set aside and captured again.

Episode ids come from the chain (chain id, block hash, log index), so capture run again
from the first block writes the same ids, and the semantic entries that cite episodes
keep pointing at them. Lost for good: what consolidation wrote into the rows (replay
counts, verification marks, importance changes). The golem must be stopped (the
command takes the data-dir lock).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from golem.chain.cursor import CAPTURE_DB, CaptureStore
from golem.errors import NoInput
from golem.grimoire.episode_files import MovedAside, move_episode_store_aside
from golem.runtime.lock import DataDirLock

CHAIN_DIR = "chain"


@dataclass(frozen=True)
class Rebuilt:
    moved: MovedAside | None
    chains: tuple[tuple[int, int, int | None], ...]  # (chain id, first block, old cursor)

    def describe(self) -> str:
        if self.moved is None:
            head = "no episode store to set aside; "
        else:
            rows = ("its table could not be read" if self.moved.readable_rows is None
                    else f"it held {self.moved.readable_rows} readable episodes")
            head = (f"moved the episode store to {self.moved.path} ({rows}; their replay "
                    "counts, verification marks and importance changes are not carried "
                    "over); ")
        if not self.chains:
            return head + "nothing was captured yet, so there is nothing to capture again"
        parts = [f"chain {cid}: blocks {first}..{cursor}" if cursor is not None
                 else f"chain {cid}: from block {first}" for cid, first, cursor in self.chains]
        return (head + "the next `golem run` captures again " + "; ".join(parts)
                + " (same episode ids)")


def rebuild_episodes(data_dir: Path, *, now: float) -> Rebuilt:
    """Set the episode store aside and restart capture from each chain's first block.
    NoInput without a data dir; LockHeldError while a golem runs on it."""
    if not data_dir.is_dir():
        raise NoInput(f"no data dir at {data_dir}: nothing to rebuild")
    lock = DataDirLock(data_dir)
    lock.acquire()
    try:
        moved = move_episode_store_aside(data_dir, now)
        chains: list[tuple[int, int, int | None]] = []
        if (data_dir / CHAIN_DIR / CAPTURE_DB).exists():
            store = CaptureStore.open(data_dir / CHAIN_DIR)
            try:
                chains = store.restart_capture()
            finally:
                store.close()
        return Rebuilt(moved, tuple(chains))
    finally:
        lock.release()

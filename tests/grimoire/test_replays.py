"""Replay counts beside the episode table: reads by id, in chunks or as one scan."""

from __future__ import annotations

from pathlib import Path

from golem.grimoire.replays import WHOLE_READ_IDS, ReplayCounts


def test_a_store_wide_read_gives_what_chunked_reads_give(tmp_path: Path) -> None:
    counts = ReplayCounts.open(tmp_path, lambda: [])
    try:
        stored = [f"ep-{i}" for i in range(WHOLE_READ_IDS + 5_000)]
        counts.set(stored[::3], 2)
        counts.increment(stored[::6])
        expected = {i: 3 if n % 6 == 0 else 2 for n, i in enumerate(stored) if n % 3 == 0}
        asked = [*stored, "never-stored", stored[0]]  # unknown and repeated ids too
        assert len(asked) >= WHOLE_READ_IDS
        assert counts.get(asked) == expected  # one scan of the table
        few = stored[:900]
        assert counts.get(few) == {i: expected[i] for i in few if i in expected}  # chunks
        assert counts.get([]) == {}
    finally:
        counts.close()

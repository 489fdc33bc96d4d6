"""The per-tick log bound: whole blocks, oldest first, nothing skipped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem.chain.decoding import RawLog
from golem.chain.follower import bound_logs


def _logs(counts: list[int]) -> list[RawLog]:
    out = []
    for block, count in enumerate(counts, start=10):
        for i in range(count):
            out.append(RawLog(31337, block, f"0x{block:064x}", f"0x{i:064x}", i,
                              "0x" + "ab" * 20, (), "0x"))
    return out


@given(st.lists(st.integers(0, 8), min_size=1, max_size=30), st.integers(1, 20))
def test_bound_takes_whole_blocks_and_the_rest_is_left_for_later(
        counts: list[int], max_logs: int) -> None:
    logs = _logs(counts)
    top = 10 + len(counts) - 1
    kept, capture_to = bound_logs(list(reversed(logs)), top, max_logs)
    assert 10 <= capture_to <= top
    # exactly the logs of blocks up to capture_to, in chain order
    assert kept == [log for log in logs if log.block_number <= capture_to]
    if len(logs) <= max_logs:
        assert capture_to == top
    else:
        first_block = min(log.block_number for log in logs)
        whole_first = sum(1 for log in logs if log.block_number == first_block)
        assert len(kept) <= max(max_logs, whole_first)
        # the next block with logs would not have fitted
        rest = [log for log in logs if log.block_number > capture_to]
        nxt = [log for log in rest if log.block_number == rest[0].block_number]
        assert len(kept) + len(nxt) > max_logs or len(kept) == whole_first

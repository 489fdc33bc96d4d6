"""Recall's candidate lists: ranks, and the evidence each list gives its candidates."""

from __future__ import annotations

import pytest

from golem.grimoire.recall_engine import CandidateLists


def test_a_dense_hit_below_the_full_text_cut_gets_that_list_s_evidence_without_a_rank(
) -> None:
    lists = CandidateLists()
    lists.take("entry", [("a", 0.9, 0.9), ("b", 0.8, 0.8)], dense=True)
    lists.take("entry", [("c", 10.0, 0.3), ("a", 5.0, 0.9)], dense=False,
               unlisted={"b": 4.0, "z": 3.0})  # z: in no list, so not added
    pool = lists.pool
    assert set(pool) == {"entry:a", "entry:b", "entry:c"}
    assert pool["entry:b"].lexical == pytest.approx(0.4)  # over the list's best, 10.0
    assert pool["entry:b"].lexical_rank is None and pool["entry:b"].dense_rank == 2
    assert pool["entry:a"].lexical == pytest.approx(0.5) and pool["entry:a"].lexical_rank == 2
    assert pool["entry:c"].lexical == 1.0 and pool["entry:c"].dense_rank is None
    assert lists.ranked == [["entry:a", "entry:b"], ["entry:c", "entry:a"]]  # fusion's ranks

"""Reciprocal rank fusion: hand values, tie-breaks and invariants."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.fusion import RRF_K, first_ranks, rrf


def test_rrf_hand_values() -> None:
    dense = ["a", "b", "c"]
    lexical = ["b", "d"]
    fused = rrf([dense, lexical])
    # b: 1/62 + 1/61; a: 1/61; d: 1/62; c: 1/63
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert scores["c"] == pytest.approx(1 / 63)
    assert RRF_K == 60


def test_rrf_k_changes_the_damping() -> None:
    assert rrf([["x"]], k=0) == [("x", 1.0)]
    assert rrf([["x", "y"]], k=1) == [("x", 0.5), ("y", pytest.approx(1 / 3))]


def test_ties_keep_first_appearance() -> None:
    # x and y each sit at rank 1 of one list: a tie, the first list's wins
    assert [i for i, _ in rrf([["x"], ["y"]])] == ["x", "y"]
    assert [i for i, _ in rrf([["y"], ["x"]])] == ["y", "x"]
    # three-way ties with ranks spread over three lists are exact ties (fsum)
    fused = rrf([["a", "b", "c"], ["c", "a", "b"], ["b", "c", "a"]])
    assert [i for i, _ in fused] == ["a", "b", "c"]
    assert fused[0][1] == fused[1][1] == fused[2][1]


def test_repeated_id_in_one_list_counts_once_at_its_best_rank() -> None:
    assert first_ranks(["a", "b", "a"]) == {"a": 1, "b": 2}
    assert dict(rrf([["a", "b", "a"]])) == {"a": 1 / 61, "b": 1 / 62}


def test_empty_and_bad_inputs() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []
    with pytest.raises(ValueError, match="k"):
        rrf([["a"]], k=-1)
    with pytest.raises(ValueError, match="k"):
        rrf([["a"]], k=True)


ids = st.sampled_from([f"id{i}" for i in range(30)])
lists = st.lists(st.lists(ids, max_size=25), max_size=4)


@given(lists, st.integers(0, 200))
def test_rrf_invariants(ranked_lists: list[list[str]], k: int) -> None:
    fused = rrf(ranked_lists, k)
    items = [i for i, _ in fused]
    assert len(items) == len(set(items))
    assert set(items) == {i for ranked in ranked_lists for i in ranked}
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    for item, score in fused:
        expected = sum(1 / (k + r[item]) for r in map(first_ranks, ranked_lists) if item in r)
        assert score == pytest.approx(expected)


@given(lists, st.randoms(use_true_random=False))
def test_list_order_changes_only_tie_breaks(ranked_lists: list[list[str]],
                                           rnd: random.Random) -> None:
    shuffled = list(ranked_lists)
    rnd.shuffle(shuffled)
    assert dict(rrf(ranked_lists)) == dict(rrf(shuffled))


@given(st.lists(ids, min_size=1, max_size=25, unique=True), st.integers(1, 4))
def test_agreement_wins(ranked: list[str], copies: int) -> None:
    # the top of a list repeated in every list is the fused top
    others = [list(reversed(ranked[1:]))] * (copies - 1)
    fused = rrf([ranked, *[[ranked[0], *o] for o in others]])
    assert fused[0][0] == ranked[0]

"""The choice between the offline tier's knowledge and its prior (pure), and the journal
that keeps the two forecasters' records (real SQLite)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.experts import (
    MIN_SCORED,
    WEIGHTS,
    WINDOW,
    Outlook,
    Record,
    Scored,
    mix,
    record,
)
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, DecisionJournal, JournalReader
from golem.cognition.predictions import CLASSES, outlook_brier, stated_outlook

UP: Outlook = (0.1, 0.1, 0.8)  # a confident knowledge outlook
EVEN: Outlook = (0.45, 0.1, 0.45)  # the prior on a wide tape
OUTLOOK = st.tuples(st.floats(0, 1), st.floats(0, 1), st.floats(0, 1)).map(
    lambda t: tuple(x / (sum(t) or 1.0) for x in t))


def test_until_the_knowledge_has_a_record_the_prior_decides() -> None:
    r = record([Scored(UP, EVEN, "up")] * (MIN_SCORED - 1))
    assert r == Record(MIN_SCORED - 1, 0.0) and "only 19" in r.describe()
    with pytest.raises(ValueError, match="window"):
        record([], window=0)


def test_knowledge_that_keeps_missing_loses_its_weight_and_regains_it() -> None:
    wrong = [Scored(UP, EVEN, "down")] * WINDOW
    assert record(wrong).weight == 0.0
    right = [Scored(UP, EVEN, "up")] * WINDOW
    assert record(right).weight == 1.0
    assert record([*wrong, *right]).weight == 1.0  # only the newest window counts
    mixed = ([Scored(UP, EVEN, "up")] * 3 + [Scored(UP, EVEN, "down")]) * 15
    r = record(mixed)
    assert 0.0 < r.weight < 1.0  # right 3 times in 4: a share of it beats both ends
    assert "a " in r.describe() and "prior alone" in r.describe()


def test_a_lucky_streak_too_short_to_be_significant_earns_nothing() -> None:
    noisy = ([Scored(UP, EVEN, "up")] * 3 + [Scored(UP, EVEN, "down")] * 2) * 4
    r = record(noisy)  # right 60% at 0.8 confidence: better than even, not proven
    assert r.scored == 20 and r.weight == 0.0


@given(st.lists(st.tuples(OUTLOOK, OUTLOOK, st.sampled_from(CLASSES)), max_size=80))
def test_the_chosen_weight_never_scored_worse_than_the_prior(
        rows: list[tuple[Outlook, Outlook, str]]) -> None:
    r = record([Scored(*row) for row in rows])
    if r.briers:
        by = dict(r.briers)
        assert by[r.weight] <= by[0.0] + 1e-12
        assert [w for w, _ in r.briers] == list(WEIGHTS)
    else:
        assert r.weight == 0.0


def test_mix_is_a_convex_combination() -> None:
    assert mix(UP, EVEN, 1.0) == UP and mix(UP, EVEN, 0.0) == EVEN
    assert mix(UP, EVEN, 0.5) == pytest.approx((0.275, 0.1, 0.625))


def test_the_journal_keeps_both_outlooks_and_scores_them(tmp_path: Path) -> None:
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick in (1, 2, 3):
            journal.record(tick, float(tick), provider="offline", status="ok", summary="s",
                           record={}, predictions=[("ETH/USD", "up", 0.01, 0.6,
                                                    tick + 5, 100.0)],
                           outlooks=(UP, EVEN))
        journal.record(4, 4.0, provider="anthropic", status="ok", summary="s", record={},
                       predictions=[("ETH/USD", "up", 0.01, 0.6, 9, 100.0)])
        journal.settle([(p.id, 90.0 if p.tick < 3 else 101.0, 0.5, False)
                        for p in journal.due(10)])
        assert journal.outlook_record(10) == [Scored(UP, EVEN, "down"),
                                              Scored(UP, EVEN, "down"),
                                              Scored(UP, EVEN, "up")]  # not the model's
        assert journal.outlook_record(1) == [Scored(UP, EVEN, "up")]
        journal.record(1, 1.0, provider="offline", status="ok", summary="s", record={},
                       predictions=[], outlooks=None)  # a replayed tick replaces its row
        assert len(journal.outlook_record(10)) == 2
    finally:
        journal.close()


def test_the_journal_keeps_how_old_the_knowledge_behind_a_decision_was(tmp_path: Path) -> None:
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick, items in enumerate([[{"uri": "a", "observed_to": 7.5}],
                                      [], [{"uri": "b"}, {"uri": "c", "observed_to": 9}]], 1):
            journal.record(tick, 100.0 + tick, provider="offline", status="ok", summary="s",
                           record={"knowledge": {"attribution": items}}, predictions=[])
    finally:
        journal.close()
    reader = JournalReader(tmp_path / JOURNAL_DIR / JOURNAL_DB)
    assert reader.knowledge_ages() == [(101.0, [7.5]), (103.0, [None, 9.0])]


def test_the_three_way_brier_score_is_proper_and_bounded() -> None:
    assert outlook_brier((0.0, 0.0, 1.0), "up") == 0.0
    assert outlook_brier((0.0, 0.0, 1.0), "down") == 2.0
    assert outlook_brier((0.2, 0.3, 0.5), "flat") == pytest.approx(0.04 + 0.49 + 0.25)
    # the rare class named with a tiny confidence no longer scores well
    assert outlook_brier(stated_outlook("flat", 0.02), "up") > 0.5  # chosen-class: 0.0004
    assert stated_outlook("up", 0.6) == pytest.approx((0.2, 0.2, 0.6))
    with pytest.raises(ValueError, match="direction"):
        stated_outlook("sideways", 0.5)
    # proper: against a true outlook, reporting it beats any other report on average
    truth = (0.3, 0.1, 0.6)

    def expected(report: tuple[float, float, float]) -> float:
        return sum(p * outlook_brier(report, c) for p, c in zip(truth, CLASSES, strict=True))

    assert all(expected(truth) < expected(other)
               for other in [(0.0, 0.0, 1.0), (0.33, 0.34, 0.33), (0.4, 0.1, 0.5)])


def _by_definition(scored: list[Scored]) -> float:
    """The module docstring's rule, written out with the statistics module."""
    recent = scored[-WINDOW:]
    if len(recent) < MIN_SCORED:
        return 0.0
    prior = [outlook_brier(s.prior, s.observed) for s in recent]
    best, best_mean = 0.0, statistics.fmean(prior)
    for w in WEIGHTS[1:]:
        mine = [outlook_brier(mix(s.knowledge, s.prior, w), s.observed) for s in recent]
        gain = [a - b for a, b in zip(mine, prior, strict=True)]
        error = statistics.stdev(gain) / math.sqrt(len(gain))
        if statistics.fmean(gain) + 2.0 * error < 0 and statistics.fmean(mine) < best_mean:
            best, best_mean = w, statistics.fmean(mine)
    return best


@given(st.lists(st.tuples(OUTLOOK, OUTLOOK, st.sampled_from(CLASSES)), max_size=WINDOW + 10),
       st.sampled_from([UP, EVEN, (0.8, 0.1, 0.1)]))
def test_the_weight_is_the_rule_as_written(rows: list[tuple[Outlook, Outlook, str]],
                                           sharp: Outlook) -> None:
    """record's arrays give the weight the rule gives in plain arithmetic (half the rows
    share one sharp knowledge outlook, so some weights qualify)."""
    scored = [Scored(sharp if i % 2 else k, p, o) for i, (k, p, o) in enumerate(rows)]
    assert record(scored).weight == _by_definition(scored)

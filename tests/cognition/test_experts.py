"""The choice between the offline tier's knowledge and its prior (pure), and the journal
that keeps the two forecasters' records (real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.experts import MIN_DISAGREEMENTS, WINDOW, Record, Scored, record
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, DecisionJournal, JournalReader
from golem.cognition.predictions import CLASSES, outlook_brier, stated_outlook

DIRECTION = st.sampled_from(("down", "flat", "up"))


def test_agreements_do_not_count_and_the_window_keeps_the_newest() -> None:
    agree = [Scored("up", "up", "down")] * 50
    old_bad = [Scored("up", "down", "down")] * 30  # the knowledge was wrong long ago
    new_good = [Scored("up", "down", "up")] * WINDOW
    r = record([*old_bad, *agree, *new_good])
    assert r == Record(WINDOW, 0, WINDOW) and r.trust_knowledge
    assert not record([*new_good, *old_bad]).trust_knowledge


def test_too_few_disagreements_or_a_tie_follow_the_knowledge() -> None:
    few = [Scored("up", "down", "down")] * (MIN_DISAGREEMENTS - 1)
    assert record(few).trust_knowledge
    tie = [Scored("up", "down", "down"), Scored("up", "down", "up")] * MIN_DISAGREEMENTS
    assert record(tie).trust_knowledge
    assert "missed 6 and the prior 6" in record(tie).describe()
    with pytest.raises(ValueError, match="window"):
        record(tie, window=0)


@given(st.lists(st.tuples(DIRECTION, DIRECTION, DIRECTION), max_size=60))
def test_the_followed_forecaster_never_missed_more_in_the_window(
        rows: list[tuple[str, str, str]]) -> None:
    r = record([Scored(*row) for row in rows])
    assert r.disagreements <= WINDOW
    if r.disagreements >= MIN_DISAGREEMENTS:
        followed, other = ((r.knowledge_misses, r.prior_misses) if r.trust_knowledge
                           else (r.prior_misses, r.knowledge_misses))
        assert followed <= other


def test_the_journal_keeps_both_forecasters_and_scores_them(tmp_path: Path) -> None:
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick, (knowledge, prior) in enumerate([("up", "down"), ("up", "up"),
                                                   ("down", "up"), ("up", "down")], 1):
            journal.record(tick, float(tick), provider="offline", status="ok", summary="s",
                           record={}, predictions=[("ETH/USD", knowledge, 0.01, 0.6,
                                                    tick + 5, 100.0)],
                           forecasters=(knowledge, prior))
        journal.record(5, 5.0, provider="anthropic", status="ok", summary="s", record={},
                       predictions=[("ETH/USD", "up", 0.01, 0.6, 10, 100.0)])
        journal.settle([(p.id, 90.0 if p.tick < 3 else 101.0, 0.5, False)
                        for p in journal.due(10)])
        assert journal.forecaster_record(10) == [
            Scored("up", "down", "down"),  # tick 1: fell 10%
            Scored("down", "up", "up"),  # tick 3: rose 1% (tick 2 agreed, tick 5 a model's)
            Scored("up", "down", "up")]
        assert journal.forecaster_record(1) == [Scored("up", "down", "up")]
        # a replayed tick replaces its forecasters too
        journal.record(1, 1.0, provider="offline", status="ok", summary="s", record={},
                       predictions=[], forecasters=None)
        assert len(journal.forecaster_record(10)) == 2
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

"""The epistemic clock's evidence, read from a real decision journal: a prediction counts
only when its outlook differed from the no-knowledge reference its decision recorded,
and then by whether it scored the better Brier."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from golem.cognition.journal import KNOWLEDGE_CHUNK, DecisionJournal
from golem.cognition.offline import prior_outlook
from golem.mortality import vitality as v
from golem.perception.market import PricePoint

FEED = "0xfeed"
BASE = 2_000.0
REFERENCE = (0.45, 0.1, 0.45)


def knowledge(outlook: list[float] | None, *, subject: str | None = FEED,
              reference: tuple[float, float, float] | None = REFERENCE) -> dict[str, Any]:
    ref = None if subject is None or reference is None else \
        {"subject": subject, "outlook": list(reference)}
    return {"attribution": [], "outlook": outlook, "skipped": 0, "reference": ref}


def decide(journal: DecisionJournal, tick: int, direction: str, confidence: float, *,
           record: dict[str, Any] | None, subject: str = FEED,
           outlooks: tuple[Any, Any] | None = None) -> None:
    journal.record(tick, float(tick * 60), provider="offline", status="ok", summary="",
                   record={} if record is None else {"knowledge": record},
                   predictions=[(subject, direction, 0.01, confidence, tick + 1, BASE)],
                   outlooks=outlooks)


def settle(journal: DecisionJournal, moves: dict[int, float]) -> None:
    due = journal.due(10_000)
    journal.settle([(p.id, BASE * (1 + moves[p.tick]), 0.5, False) for p in due])


def test_only_predictions_that_differ_from_the_reference_count(tmp_path: Path) -> None:
    journal = DecisionJournal.open(tmp_path)
    try:
        leaning_up = [0.2, 0.05, 0.75]
        decide(journal, 1, "up", 0.45, record=knowledge(list(REFERENCE)))  # the reference
        decide(journal, 2, "up", 0.75, record=knowledge(leaning_up))  # leaned up, went up
        decide(journal, 3, "up", 0.75, record=knowledge(leaning_up))  # leaned up, fell
        decide(journal, 4, "up", 0.6, record=knowledge(None))  # a model's stated 60% up
        decide(journal, 5, "up", 0.9, record=knowledge(None), subject="0xother")  # no ref
        decide(journal, 6, "down", 0.7, record=None,  # journalled before references
               outlooks=((0.7, 0.05, 0.25), REFERENCE))
        decide(journal, 7, "down", 0.7, record=None)  # neither: nothing to judge by
        settle(journal, {1: -0.01, 2: 0.01, 3: -0.01, 4: 0.01, 5: -0.01, 6: 0.01, 7: 0.01})
        assert journal.recent_verdicts(100) == [True, False, True, False]
        assert journal.recent_verdicts(3) == [False, True, False]  # ticks 3, 4, 6
    finally:
        journal.close()


def test_a_golem_that_says_what_the_reference_says_is_unproven_whatever_it_hits(
        tmp_path: Path) -> None:
    """The death the old clock caused: a call on a coin flip that keeps missing is luck,
    not stale knowledge. Knowledge that keeps pulling the outlook the wrong way is."""
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick in range(1, 41):  # the reference's tie went up; the feed kept falling
            decide(journal, tick, "up", 0.45, record=knowledge(list(REFERENCE)))
        settle(journal, dict.fromkeys(range(1, 41), -0.01))
        luck = v.epistemic(journal.recent_verdicts(100), min_samples=10, threshold=0.35)
        assert luck.unproven and not luck.senescent and luck.value == 1.0
        assert v.predictive_fitness([False] * 40) < 0.35  # what the hit rate would read
        for tick in range(41, 81):  # learned "up" outcomes, and the feed kept falling
            decide(journal, tick, "up", 0.7, record=knowledge([0.2, 0.1, 0.7]))
        settle(journal, dict.fromkeys(range(41, 81), -0.01))
        stale = v.epistemic(journal.recent_verdicts(100), min_samples=10, threshold=0.35)
        assert stale.senescent and stale.samples == 40 and stale.value < 0.5
    finally:
        journal.close()


def test_the_reference_is_the_tapes_no_change_outlook() -> None:
    calm = tuple(PricePoint(float(60 * i), BASE * (1 + 0.0001 * (-1) ** i)) for i in range(30))
    wild = tuple(PricePoint(float(60 * i), BASE * (1 + 0.02 * (-1) ** i)) for i in range(30))
    down, flat, up = prior_outlook(calm)
    assert abs(down - up) < 1e-9 and flat > 0.5  # no change on average; a calm tape: flat
    wild_down, wild_flat, wild_up = prior_outlook(wild)
    assert abs(wild_down - wild_up) < 1e-9 and wild_flat < flat
    no_tape = prior_outlook(())  # the default spread
    assert abs(no_tape[0] - no_tape[2]) < 1e-9 and abs(sum(no_tape) - 1.0) < 1e-9


def test_overlapping_predictions_count_once_per_horizon(tmp_path: Path) -> None:
    """A prediction every tick over a five-tick horizon: each outcome would be counted
    five times; only predictions whose horizons do not overlap are judged."""
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick in range(1, 21):
            journal.record(tick, float(tick * 60), provider="offline", status="ok",
                           summary="", record={"knowledge": knowledge([0.2, 0.1, 0.7])},
                           predictions=[(FEED, "up", 0.01, 0.7, tick + 5, BASE)])
        due = journal.due(10_000)
        # the feed rose over the horizons that end on even ticks, fell over the others
        journal.settle([(p.id, BASE * (1.01 if (p.tick + 5) % 2 == 0 else 0.99), 0.5, False)
                        for p in due])
        # judged, oldest first: ticks 5, 10, 15, 20 (due 10, 15, 20, 25)
        assert journal.recent_verdicts(100) == [True, False, True, False]
        assert journal.recent_verdicts(2) == [True, False]  # the newest two kept: 15, 20
    finally:
        journal.close()


def test_the_window_counts_verdicts_not_rows(tmp_path: Path) -> None:
    """The death at golem day 23 of the fourth 30-day run: a window of 100 rows over a
    five-tick horizon held about 12 verdicts, so a bad half hour read as staleness. The
    window is the newest ``limit`` verdicts: ties with the reference and overlapping
    horizons do not use it up."""
    journal = DecisionJournal.open(tmp_path)
    try:
        for tick in range(1, 301):  # right until 200, the reference's tie to 250, then wrong
            said = list(REFERENCE) if 200 < tick <= 250 else [0.2, 0.1, 0.7]
            journal.record(tick, float(tick * 60), provider="offline", status="ok",
                           summary="", record={"knowledge": knowledge(said)},
                           predictions=[(FEED, "up", 0.01, 0.7, tick + 5, BASE)])
        journal.settle([(p.id, BASE * (1.01 if p.tick <= 250 else 0.99), 0.5, False)
                        for p in journal.due(10_000)])
        assert journal.recent_verdicts(20) == [True] * 10 + [False] * 10
        window = journal.recent_verdicts(50)
        assert len(window) == 50 and window.count(False) == 10
        assert not v.epistemic(window, min_samples=10, threshold=0.35).senescent
    finally:
        journal.close()


def test_a_long_window_reads_every_kept_decision_in_order(tmp_path: Path) -> None:
    """A window longer than one statement's share of decisions (KNOWLEDGE_CHUNK): every
    kept prediction is judged by its own decision's outlook, newest last."""
    journal = DecisionJournal.open(tmp_path)
    try:
        ticks = range(1, KNOWLEDGE_CHUNK + 201)
        for tick in ticks:  # one-tick horizons: none overlaps the next
            journal.record(tick, float(tick * 60), provider="offline", status="ok",
                           summary="", record={"knowledge": knowledge(
                               [0.2, 0.1, 0.7] if tick % 3 else [0.7, 0.1, 0.2])},
                           predictions=[(FEED, "up", 0.01, 0.7, tick + 1, BASE)])
        journal.settle([(p.id, BASE * 1.01, 0.5, False) for p in journal.due(10_000)])
        # the feed rose every time: the decisions that said "up" beat the reference
        assert journal.recent_verdicts(len(ticks)) == [tick % 3 != 0 for tick in ticks]
        assert journal.recent_verdicts(7) == [tick % 3 != 0 for tick in ticks][-7:]
    finally:
        journal.close()

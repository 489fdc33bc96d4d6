"""The regime-aware oracle bound (golem.lab.oracle, pure) and how the report shows it:
beside each arm when the runs' records hold it, "n/a" when they predate it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from golem.cognition.journal import DecisionJournal, JournalReader
from golem.cognition.offline import prior_outlook
from golem.cognition.predictions import CLASSES, outlook_brier
from golem.lab.design import design
from golem.lab.oracle import (
    Call,
    calls,
    oracle_briers,
    oracle_outlooks,
    reference_briers,
    true_regime,
)
from golem.lab.report import write_report
from golem.lab.runner import RESULT, fix_design, run_dir
from golem.perception.market import PricePoint


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_the_true_regime_is_the_last_switch_at_or_before_the_decision() -> None:
    switches = [(100.0, "calm"), (200.0, "crash"), (300.0, "volatile")]
    assert true_regime(switches, 150.0) == "calm"
    assert true_regime(switches, 200.0) == "crash"
    assert true_regime(switches, 1e9) == "volatile"
    assert true_regime(switches, 50.0) == "calm"  # before the first record: the start
    assert true_regime([], 150.0) is None
    made = calls([(150.0, "fell", "down"), (250.0, None, "up"), (310.0, "rose", "flat")],
                 switches, swap_at=250.0)
    assert made == [Call("calm", "fell", False, "down"), Call("crash", None, True, "up"),
                    Call("volatile", "rose", True, "flat")]
    assert calls([(150.0, "fell", "down")], [], swap_at=None) is None  # no ground truth
    unswapped = calls([(1e9, "flat", "up")], switches, swap_at=None)  # no swap planted
    assert unswapped == [Call("volatile", "flat", False, "up")]


def test_when_outcomes_follow_the_true_regime_the_oracle_beats_the_no_change_prior(
        ) -> None:
    # the market: crash falls, trending rises, calm stays flat, each 4 times in 5; the
    # golem saw the same bucket throughout, so only the regime tells them apart
    rng = np.random.default_rng(7)
    usual = {"calm": "flat", "trending": "up", "crash": "down"}
    switches = [(float(60 * i), regime) for i, regime in
                enumerate(["calm", "trending", "crash", "calm", "trending", "crash"] * 5)]
    situations = []
    for at, regime in switches:
        for k in range(3):
            seen = usual[regime] if rng.random() < 0.8 else str(rng.choice(CLASSES))
            situations.append((at + 10.0 * k, "flat", seen))
    made = calls(situations, switches, swap_at=None)
    assert made is not None and {c.regime for c in made} == set(usual)
    oracle = _mean(oracle_briers(made))
    # the no-change prior: regime-blind, what the offline tier says with nothing learned
    tape = tuple(PricePoint(10.0 * i, 100.0 * (1.0 + 0.004 * (-1) ** i)) for i in range(40))
    prior = reference_briers([prior_outlook(tape)] * len(made), [c.observed for c in made])
    assert prior is not None
    assert oracle < _mean(prior) - 0.2
    # and the regime is what it gains by: pooled over regimes, the same fit does worse
    blind = [Call("calm", c.bucket, c.swapped, c.observed) for c in made]
    assert oracle < _mean(oracle_briers(blind)) - 0.2


def test_with_one_regime_and_balanced_outcomes_it_is_the_frequency_forecaster() -> None:
    made = [Call("calm", "flat", False, seen) for seen in CLASSES * 10]
    outlooks = oracle_outlooks(made)
    assert all(o == pytest.approx((1 / 3, 1 / 3, 1 / 3)) for o in outlooks)
    assert _mean(oracle_briers(made)) == pytest.approx(2 / 3)
    # unbalanced, without smoothing: exactly the outcome frequencies
    lopsided = [Call("calm", "flat", False, seen) for seen in ["up"] * 6 + ["down"] * 3
                + ["flat"]]
    assert oracle_outlooks(lopsided, smoothing=0.0)[0] == pytest.approx((0.3, 0.1, 0.6))
    assert oracle_outlooks(lopsided)[0] == pytest.approx((4 / 13, 2 / 13, 7 / 13))


def test_smoothing_keeps_every_class_possible() -> None:
    made = [Call("trending", "rose", False, "up")] * 5 + [Call("crash", None, True, "down")]
    for outlook in oracle_outlooks(made):
        assert min(outlook) > 0 and sum(outlook) == pytest.approx(1.0)
    assert oracle_outlooks(made)[0] == pytest.approx((1 / 8, 1 / 8, 6 / 8))
    assert oracle_outlooks(made, smoothing=0.0)[0] == (0.0, 0.0, 1.0)  # what it prevents


def test_unsmoothed_the_bound_is_the_best_constant_outlook_of_each_cell() -> None:
    rng = np.random.default_rng(11)
    seen = [str(c) for c in rng.choice(CLASSES, size=40, p=(0.5, 0.2, 0.3))]
    made = [Call("volatile", "fell_hard", False, s) for s in seen]
    bound = _mean(oracle_briers(made, smoothing=0.0))
    for other in rng.dirichlet((1.0, 1.0, 1.0), size=200):
        outlook = (float(other[0]), float(other[1]), float(other[2]))
        assert bound <= _mean([outlook_brier(outlook, s) for s in seen]) + 1e-12
    assert _mean(oracle_briers(made)) >= bound  # smoothing costs a little in-sample


def test_the_prior_is_scored_only_when_every_prediction_has_one() -> None:
    assert reference_briers([(0.2, 0.6, 0.2), None], ["flat", "up"]) is None
    assert reference_briers([(0.2, 0.6, 0.2)], ["flat"]) == [pytest.approx(0.24)]


def test_the_journal_gives_each_scored_prediction_its_situation(tmp_path: Path) -> None:
    """The oracle's inputs from a real journal, in the order and over the rows of
    prediction_scores: the bucket the decision recorded, what the feed did, and the
    reference outlook (the prior in ``outlooks`` for a decision journalled before
    references were; None for a reference about another subject)."""
    journal = DecisionJournal.open(tmp_path)
    ref = {"subject": "0xFeed", "outlook": [0.45, 0.1, 0.45]}
    records = [{"situation": {"bucket": "fell_hard"}, "knowledge": {"reference": ref}},
               {"situation": {"bucket": None}, "knowledge": {"reference": ref}},
               {},  # journalled before situations and references were recorded
               {"situation": {"bucket": "rose"},
                "knowledge": {"reference": ref | {"subject": "0xother"}}}]
    try:
        for tick, record in enumerate(records, start=1):
            journal.record(tick, 60.0 * tick, provider="offline", status="ok", summary="",
                           record=record, predictions=[("0xfeed", "up", 0.0, 0.5, tick + 1,
                                                        100.0)],
                           outlooks=((0.3, 0.4, 0.3), (0.4, 0.2, 0.4)))
        moves = {1: -0.01, 2: 0.001, 3: 0.01, 4: 0.01}
        journal.settle([(p.id, 100.0 * (1 + moves[p.tick]), 0.5, False)
                        for p in journal.due(10)])
    finally:
        journal.close()
    reader = JournalReader(tmp_path / "cognition" / "decisions.db")
    got = reader.prediction_situations()
    assert [(s.golem_time, s.observed, s.bucket, s.reference) for s in got] == [
        (60.0, "down", "fell_hard", (0.45, 0.1, 0.45)), (120.0, "flat", None, (0.45, 0.1, 0.45)),
        (180.0, "up", None, (0.4, 0.2, 0.4)), (240.0, "up", "rose", None)]
    assert [s.golem_time for s in got] == [t for t, *_ in reader.prediction_scores()]


def _write_records(lab: Path, records: dict[tuple[str, int], dict[str, object]]) -> None:
    chosen = design("smoke")
    fix_design(lab, chosen, {})
    for run in chosen.runs:
        folder = run_dir(lab, run)
        folder.mkdir(parents=True)
        (folder / RESULT).write_text(json.dumps(records[run.arm, run.seed]))


def test_the_report_shows_the_bound_and_n_a_for_records_that_predate_it(
        tmp_path: Path) -> None:
    chosen = design("smoke")
    old = {(run.arm, run.seed): {"brier": 0.55 + 0.01 * run.seed, "predictions": 9,
                                 "brier_curve": [0.5, 0.6]}
           for run in chosen.runs}
    _write_records(tmp_path / "old", old)
    write_report(tmp_path / "old", chosen)
    markdown = (tmp_path / "old" / "report" / "report.md").read_text()
    brier = _mean([old["full", s]["brier"] for s in chosen.seeds])
    assert f"| full | 2 | {brier:.4g} | n/a | n/a | n/a | n/a |" in markdown
    assert "oracle bound: n/a for full (the runs' records predate it)." in markdown

    new = {(arm, seed): rec | {"prior_brier": 0.60, "oracle_brier": 0.40 + 0.02 * seed,
                               "oracle_brier_curve": [0.4, None]}
           for (arm, seed), rec in old.items()}
    _write_records(tmp_path / "new", new)
    write_report(tmp_path / "new", chosen)
    summary = json.loads((tmp_path / "new" / "report" / "summary.json").read_text())
    full = summary["arms"]["full"]
    gaps = [new["full", s]["brier"] - new["full", s]["oracle_brier"] for s in chosen.seeds]
    assert full["oracle"]["gap"]["mean_diff"] == pytest.approx(_mean(gaps))
    assert full["means"]["oracle_brier"] == pytest.approx(0.43)
    closed = (0.60 - full["means"]["brier"]) / (0.60 - 0.43)
    assert full["oracle"]["closed"] == pytest.approx(closed)
    assert full["oracle"]["curve"][0]["mean"] == pytest.approx(0.4)
    markdown = (tmp_path / "new" / "report" / "report.md").read_text()
    assert f"| full | 2 | {brier:.4g} | 0.6 | 0.43 | {_mean(gaps):+.4g}" in markdown
    assert f"full closes {closed:.0%} of the gap between the no-change prior" in markdown

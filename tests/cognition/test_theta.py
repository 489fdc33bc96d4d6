"""Theta end to end on the simulated market: a decision every tick, predictions scored."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import anyio

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.cognition.theta import ThetaCycle
from golem.config import load_config
from golem.grimoire.query_numbers import read_intent
from golem.logging import configure_logging
from golem.perception.market import BUCKET_WORDS, PricePoint, move_bucket
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.status import collect_status, render_status
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


def test_every_theta_tick_journals_a_decision_and_due_predictions_get_scored(
        tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": 3},
                                 "grimoire": {"model_dir": str(MODEL)},
                                 "theta_context": {"loop2_every": 3},
                                 "logging": {"format": "json", "level": "warning"}}))
    config = load_config(path)
    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=540, setup=setup)
    logged = io.StringIO()
    configure_logging("info", "json", logged)
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    assert [h.name for h in registry.for_loop("theta")] == ["theta-decision"]
    theta = daemon.loops[1].counters
    assert theta.ticks == theta.ok == 9  # golem time 0, 60, ..., 480
    # each tick's log line says where its time went: stages that cover the tick's work
    ticks = [line for line in map(json.loads, logged.getvalue().splitlines())
             if line.get("event") == "tick" and line.get("loop") == "theta"]
    assert len(ticks) == 9
    for tick in ticks:
        stages = [tick[f"theta-decision.{s}_ms"] for s in
                  ("sense", "assemble", "think", "execute", "journal", "loop2")]
        assert all(ms >= 0 for ms in stages)
        assert 0 < sum(stages) <= tick["duration_ms"] + 0.1

    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        rows = conn.execute("SELECT tick, provider, status, record FROM decisions "
                            "ORDER BY tick").fetchall()
        scored = conn.execute("SELECT tick, due_tick, quality, hit FROM predictions "
                              "WHERE quality IS NOT NULL").fetchall()
        open_ = conn.execute("SELECT due_tick FROM predictions WHERE quality IS NULL")\
            .fetchall()
    finally:
        conn.close()
    assert [r[0] for r in rows] == list(range(1, 10))  # ticks count from 1
    assert {r[1] for r in rows} == {"offline"} and {r[2] for r in rows} == {"ok"}
    record = json.loads(rows[-1][3])
    assert record["tier"] == "T0" and record["decision"]["analysis"]
    assert all(c["accepted"] for c in record["cage"])  # the offline tier only holds
    assert scored and all(0.0 <= q <= 1.0 for _, _, q, _ in scored)
    assert all(due <= 9 for _, due, _, _ in scored)
    assert all(due > 9 for (due,) in open_)  # nothing due was left unscored
    text = render_status(collect_status(config))
    assert "decision   tick 9 (offline, ok)" in text and "scored" in text

    # the Governor assembled every tick within budget, hard context included
    ws = record["workspace"]
    assert 0 < ws["used"] <= ws["budget"] == config.theta_context.total_budget
    assert ws["reasons"]["invariants"]["full"] >= 1  # the policy cage is always in view
    events = [json.loads(line) for line in
              (config.data_dir / "events.jsonl").read_text().splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds.count("context:assembled") == 9
    assert kinds.count("context:feedback_loop") >= 9  # Loop 1 every tick, Loop 2 on top
    # Loop 2 learnt from scored outcomes: new policy revisions, each within the 0.02 cap
    updates = [e for e in events if e["kind"] == "context:policy_updated"]
    assert updates and updates[-1]["revision"] == len(updates)
    assert all(abs(d) <= 0.02 + 1e-9 for u in updates for d in u["delta"].values())
    state = sqlite3.connect(config.data_dir / "state.db")
    try:
        revisions = [r for (r,) in state.execute("SELECT revision FROM context_policy")]
    finally:
        state.close()
    assert revisions == list(range(1, len(updates) + 1))
    assert f"governor   policy revision {len(updates)} (learnt" in render_status(
        collect_status(config))
    # I-frame / P-frame bookkeeping: the first assembly is an I-frame; the offline tier
    # sends nothing, so no keyframe is ever cached and every later frame is a new one
    # (Delta's first dream rewrites MEMORY.md, part of the stable prefix: stable_changed)
    frames = [json.loads(r[3])["frame"] for r in rows]
    assert frames[0] == {"kind": "i_frame", "why": "first", "delta_share": 0.0}
    assert {(f["kind"], f["why"]) for f in frames[1:]} <= {
        ("i_frame", "cache_cold"), ("i_frame", "regime_change"), ("i_frame", "stable_changed")}
    assert [e["frame"] for e in events if e["kind"] == "context:assembled"] == [
        f["kind"] for f in frames]


def _window(*prices: float) -> tuple[PricePoint, ...]:
    return tuple(PricePoint(1000.0 + 60.0 * i, p) for i, p in enumerate(prices))


def test_theta_asks_memory_for_the_kind_of_market_and_tells_the_model_its_numbers() -> None:
    two = _window(2000.0, 1990.0, 1960.0)  # -2.0%
    two_and_a_half = _window(2000.0, 1985.0, 1950.0)  # -2.5%
    crash = _window(2000.0, 1900.0, 1800.0)  # -10%
    query = ThetaCycle._query("ETH/USD", two)
    # the same kind of market asks the same question (its vector is cached)...
    assert query == ThetaCycle._query("ETH/USD", two_and_a_half)
    assert query.startswith("market falling, ") and "price feed ETH/USD" in query
    # no exact number: the learned-outcome part names the move's bucket, not its size
    kind, outcome = query.split("; ")
    assert not any(ch.isdigit() for ch in kind)
    assert outcome == ("after oracle feed ETH/USD fell 1.5% or more in regime trending, what "
                       "the next minutes returned, and whether our own buys and sells of WETH "
                       "paid")
    assert ThetaCycle._query("ETH/USD", crash).startswith("market crashing, crash regime")
    assert ThetaCycle._query("ETH/USD", ()).startswith("market state unknown")
    # ...while the model is told the exact move
    assert "price -2.0% over 2 min" in ThetaCycle._situation("ETH/USD", two)
    assert "price -2.5% over 2 min" in ThetaCycle._situation("ETH/USD", two_and_a_half)


def test_thetas_question_is_no_order_or_threshold_for_recall() -> None:
    """Theta asks for the lessons of a kind of situation: recall must not read its bucket
    words as a threshold ("less than 0.5%") and rank every feed answer by its move."""
    buckets = set()
    for last in (1900.0, 1980.0, 1995.0, 2000.0, 2005.0, 2020.0, 2100.0):
        prices = _window(2000.0, 2000.0, last)
        buckets.add(move_bucket(last / 2000.0 - 1.0))
        query = ThetaCycle._query("ETH/USD", prices)
        intent = read_intent(query)
        assert not intent.ranks_by_quantity, query
        assert intent.anchor is None, query
    assert buckets == set(BUCKET_WORDS)  # every bucket's words were asked

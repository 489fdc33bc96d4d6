"""The three loops on virtual time: scheduling, overruns, failures, determinism, resume."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from golem.errors import StateError
from golem.runtime.handlers import HandlerRegistry
from golem.runtime.state import StateStore, read_only_rows
from golem.testing.handlers import (
    ClockSleepHandler,
    FailingHandler,
    RecordingHandler,
    ThreadBlockHandler,
)

from .conftest import run_daemon

START = 1767225600.0  # 2026-01-01T00:00:00Z, the default simulated start


def tick_lines(log: str) -> list[dict]:
    records = [json.loads(line) for line in log.splitlines()]
    return [r for r in records if r.get("event") == "tick"]


def gamma_lines(log: str) -> list[dict]:
    return [line for line in tick_lines(log) if line["loop"] == "gamma"]


def test_each_loop_ticks_at_its_interval_and_logs_one_line_per_tick(make_config) -> None:
    _, cfg = make_config()
    recorders = {name: RecordingHandler() for name in ("gamma", "theta", "delta")}
    registry = HandlerRegistry()
    for name, handler in recorders.items():
        registry.register(name, handler)
    code, daemon, log = run_daemon(cfg, registry, stop_after=3600)
    assert code == 0
    assert [len(h.calls) for h in recorders.values()] == [360, 60, 6]
    assert [t - START for _, _, t in recorders["delta"].calls] == [0, 600, 1200, 1800, 2400, 3000]
    lines = tick_lines(log)
    assert len(lines) == 426
    first = lines[0]
    assert {"loop", "tick", "golem_time", "duration_ms", "outcome", "handlers"} <= set(first)
    assert first["record.calls"] == 1
    assert daemon.clock.now() == START + 3600


def test_each_tick_line_says_how_long_each_handler_took(make_config) -> None:
    _, cfg = make_config()
    registry = HandlerRegistry()
    registry.register("delta", RecordingHandler())
    registry.register("delta", ThreadBlockHandler(0.05))
    code, _, log = run_daemon(cfg, registry, stop_after=1800)
    assert code == 0
    delta = [line for line in tick_lines(log) if line["loop"] == "delta"]
    assert len(delta) == 3
    for line in delta:
        assert 50.0 <= line["thread-block.ms"] <= line["duration_ms"]
        assert 0.0 <= line["record.ms"] < line["thread-block.ms"]


def test_overrun_skips_the_next_slots_and_counts_them(make_config) -> None:
    _, cfg = make_config()
    registry = HandlerRegistry()
    recorder = RecordingHandler()
    registry.register("gamma", ClockSleepHandler(25.0, ticks=frozenset({2})))
    registry.register("gamma", recorder)
    code, daemon, log = run_daemon(cfg, registry, stop_after=100)
    assert code == 0
    gamma = daemon.loops[0].counters
    # tick 2 starts at 10 and ends at 35: slots 20 and 30 are skipped, never queued
    assert [t - START for _, _, t in recorder.calls] == [0, 35, 40, 50, 60, 70, 80, 90]
    assert gamma.skipped_overrun == 2
    assert gamma.ticks == 8
    line = gamma_lines(log)[1]
    assert line["tick"] == 2 and line["skipping_next"] == 2
    events = (cfg.data_dir / "events.jsonl").read_text()
    assert '"kind":"tick:skipped"' in events and '"reason":"overrun"' in events


def test_a_failing_tick_is_isolated_logged_and_repeated_failures_back_off(make_config) -> None:
    _, cfg = make_config(gamma={"interval_s": 10, "backoff_max_s": 40})
    registry = HandlerRegistry()
    registry.register("gamma", FailingHandler(frozenset({2, 3, 4, 5})))
    gamma_calls = RecordingHandler()
    registry.register("gamma", gamma_calls)
    theta_calls = RecordingHandler()
    registry.register("theta", theta_calls)
    code, daemon, log = run_daemon(cfg, registry, stop_after=300)
    assert code == 0
    gamma = daemon.loops[0].counters
    assert gamma.failed == 4
    assert gamma.consecutive_failures == 0
    # failures at t=10 (1st: no backoff), 20 (2nd: wait 20 s), 40 (3rd: wait 40 s),
    # 80 (4th: 80 s capped at 40 s); then ticks resume at 120
    failed_at = [line["golem_time"] for line in gamma_lines(log) if line["outcome"] == "failed"]
    assert failed_at == ["2026-01-01T00:00:10.000Z", "2026-01-01T00:00:20.000Z",
                         "2026-01-01T00:00:40.000Z", "2026-01-01T00:01:20.000Z"]
    assert gamma.skipped_backoff == 1 + 3 + 3
    # the recorder after the failing handler only ran on ticks that did not fail
    assert [tick for _, tick, _ in gamma_calls.calls][:3] == [1, 6, 7]
    # other loops are untouched
    assert len(theta_calls.calls) == 5
    errors = [json.loads(line) for line in log.splitlines()
              if json.loads(line).get("event") == "tick failed"]
    assert [(e["loop"], e["tick"]) for e in errors] == [("gamma", t) for t in (2, 3, 4, 5)]
    assert "scripted failure on gamma tick 2" in json.dumps(errors[0]["exception"])
    store = StateStore.open(cfg.data_dir)
    try:
        last = store.recent_errors(1)[0]
    finally:
        store.close()
    assert (last.loop, last.tick, last.kind) == ("gamma", 5, "RuntimeError")


def test_tracebacks_never_show_locals_and_secrets_are_redacted(make_config) -> None:
    _, cfg = make_config()
    registry = HandlerRegistry()
    handler = FailingHandler(frozenset({1}))
    registry.register("gamma", handler)
    _, _, log = run_daemon(cfg, registry, stop_after=10)
    assert "scripted failure" in log
    assert handler.secret not in log
    assert "api_key" not in log  # the local's name would appear if locals were rendered


def test_a_tick_past_its_deadline_is_cancelled_and_counted(make_config) -> None:
    _, cfg = make_config(gamma={"interval_s": 10, "deadline_s": 15})
    registry = HandlerRegistry()
    registry.register("gamma", ClockSleepHandler(40.0, ticks=frozenset({1})))
    code, daemon, log = run_daemon(cfg, registry, stop_after=60)
    assert code == 0
    gamma = daemon.loops[0].counters
    assert gamma.timed_out == 1
    first, second = gamma_lines(log)[:2]
    assert first["outcome"] == "deadline"
    # cancelled at 15 s: the slot at 10 was skipped, the next tick ran at 20
    assert second["golem_time"] == "2026-01-01T00:00:20.000Z"


def sequence(make_config, seed: int) -> list[tuple[str, int, float, int]]:
    _, cfg = make_config(golem={"seed": seed})
    registry = HandlerRegistry()
    seen: list[tuple[str, int, float, int]] = []

    class Draw:
        name = "draw"

        def __init__(self, loop: str) -> None:
            self.loop = loop

        async def __call__(self, ctx):  # type: ignore[no-untyped-def]
            seen.append((ctx.loop, ctx.tick, ctx.clock.now(), ctx.rng.randrange(10**9)))
            if ctx.rng.random() < 0.1:  # random overruns stress the ordering
                await ctx.clock.sleep_until(ctx.clock.now() + ctx.rng.uniform(0, 30))

    for loop in ("gamma", "theta", "delta"):
        registry.register(loop, Draw(loop))  # type: ignore[arg-type]
    run_daemon(cfg, registry, stop_after=6 * 3600)
    return seen


def test_same_seed_same_tick_sequence(make_config, tmp_path) -> None:
    first = sequence(make_config, seed=7)
    for path in tmp_path.glob("data/*"):
        path.unlink()
    second = sequence(make_config, seed=7)
    assert len(first) > 2000
    assert first == second
    for path in tmp_path.glob("data/*"):
        path.unlink()
    assert sequence(make_config, seed=8) != first


def test_ten_thousand_gamma_ticks_in_simulated_mode_are_fast(make_config) -> None:
    _, cfg = make_config(logging={"level": "info"})
    started = time.perf_counter()
    code, daemon, log = run_daemon(cfg, HandlerRegistry(), stop_after=100_000)
    elapsed = time.perf_counter() - started
    assert code == 0
    assert daemon.loops[0].counters.ticks == 10_000
    assert len(tick_lines(log)) == 10_000 + 1667 + 167
    assert elapsed < 5.0, f"10,000 gamma ticks took {elapsed:.2f}s"


def test_restart_resumes_counters_schedule_and_golem_time(make_config) -> None:
    _, cfg = make_config()
    recorder = RecordingHandler()
    registry = HandlerRegistry()
    registry.register("theta", recorder)
    run_daemon(cfg, registry, stop_after=3600)
    code, daemon, _ = run_daemon(cfg, registry, stop_after=3600)
    assert code == 0
    assert [c.ticks for c in (lp.counters for lp in daemon.loops)] == [720, 120, 12]
    ticks = [tick for _, tick, _ in recorder.calls]
    assert ticks == list(range(1, 121))
    times = [t - START for _, _, t in recorder.calls]
    assert times == [60.0 * i for i in range(120)]
    store = StateStore.open(cfg.data_dir)
    try:
        meta = store.all_meta()
    finally:
        store.close()
    assert meta["runs"] == 2
    assert meta["clean_shutdown"] is True
    assert meta["golem_time"] == START + 7200


def test_a_store_its_writer_is_still_creating_reads_as_not_there_yet(tmp_path: Path) -> None:
    """A reader (golem status) racing a starting golem may find the file before its
    tables: that is "nothing yet", not an error; a missing table beside others is one."""
    path = tmp_path / "store.db"
    assert read_only_rows(path, "the store", "SELECT a FROM t") is None  # no file
    sqlite3.connect(path).close()  # the file exists, no table yet
    assert read_only_rows(path, "the store", "SELECT a FROM t") is None
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE other (b)")
    with pytest.raises(StateError, match="no such table"):
        read_only_rows(path, "the store", "SELECT a FROM t")
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (a)")
        conn.execute("INSERT INTO t VALUES (1)")
    assert read_only_rows(path, "the store", "SELECT a FROM t") == [(1,)]

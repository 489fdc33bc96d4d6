"""Calendar jobs: the golem clock drives them in simulated mode, apscheduler in real mode."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from golem.runtime.handlers import HandlerRegistry
from golem.runtime.jobs import CalendarJobs, GolemClockJobs, Job, JobCounters

from .conftest import run_daemon

START = 1767225600.0  # the default simulated start


class Counting:
    """A job body that counts its runs (and fails on the runs listed in ``fail``)."""

    def __init__(self, fail: frozenset[int] = frozenset(), hold_s: float = 0.0) -> None:
        self.runs = 0
        self.fail = fail
        self.hold_s = hold_s
        self.running = 0
        self.most_at_once = 0

    async def __call__(self) -> JobCounters:
        self.runs += 1
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            if self.hold_s:
                await anyio.sleep(self.hold_s)
            if self.runs in self.fail:
                raise RuntimeError(f"run {self.runs} fails")
            return {"run": self.runs}
        finally:
            self.running -= 1


def log_events(log: str, event: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in log.splitlines()]
    return [r for r in records if r.get("event") == event]


def test_golem_clock_runs_each_job_once_per_period_and_survives_a_failing_run(
        make_config: Any) -> None:
    _, cfg = make_config()
    hourly, four_hourly = Counting(fail=frozenset({2})), Counting()
    registry = HandlerRegistry()
    registry.register("delta", GolemClockJobs([Job("hourly", 3600, hourly),
                                               Job("four-hourly", 4 * 3600, four_hourly)]))
    code, _, log = run_daemon(cfg, registry, stop_after=6 * 3600)
    assert code == 0
    # Delta ticks every 600 s from START: hourly is due at START + 1 h, 2 h, ... 5 h (the
    # run stops at 6 h before a tick at 6 h), four-hourly once at 4 h.
    assert hourly.runs == 5 and four_hourly.runs == 1
    done = log_events(log, "scheduled job done")
    failed = log_events(log, "scheduled job failed")
    assert [d["job"] for d in done].count("hourly") == 4
    assert len(failed) == 1 and failed[0]["job"] == "hourly"
    assert "run 2 fails" in failed[0]["error"] and failed[0]["driver"] == "golem clock"


def test_golem_clock_collapses_missed_periods_into_one_run() -> None:
    jobs = GolemClockJobs([Job("often", 60, Counting())])

    class Clock:
        t = START

        def now(self) -> float:
            return self.t

    clock = Clock()

    def ctx() -> Any:
        from golem.runtime.handlers import TickContext  # noqa: PLC0415

        return TickContext("delta", 1, clock.t, clock.t + 60, clock, None, 1, None)  # type: ignore[arg-type]

    assert anyio.run(jobs, ctx()) is None  # the first tick only sets the due times
    clock.t += 10 * 60  # ten periods later: one run, next due one period after now
    assert anyio.run(jobs, ctx()) == {"jobs_run": 1}
    clock.t += 30
    assert anyio.run(jobs, ctx()) is None
    clock.t += 30
    assert anyio.run(jobs, ctx()) == {"jobs_run": 1}


def test_apscheduler_runs_jobs_on_the_wall_clock_without_overlap_and_stops_on_shutdown(
        ) -> None:
    quick, slow, broken = Counting(), Counting(hold_s=0.5), Counting(fail=frozenset({1, 2, 3}))

    async def main() -> dict[str, float]:
        calendar = CalendarJobs([Job("quick", 0.1, quick), Job("slow", 0.1, slow),
                                 Job("broken", 0.1, broken)])
        calendar.start()
        nexts = calendar.next_runs()
        await anyio.sleep(1.05)
        calendar.shutdown()
        after = (quick.runs, slow.runs)
        await anyio.sleep(0.3)
        assert (quick.runs, slow.runs) == after, "a job ran after shutdown"
        return nexts

    nexts = anyio.run(main, backend="asyncio")
    assert set(nexts) == {"quick", "slow", "broken"}
    assert 5 <= quick.runs <= 11
    assert slow.most_at_once == 1 and 1 <= slow.runs <= 3  # never overlaps itself
    assert broken.runs >= 3  # failures are logged and the next period runs again


def test_a_job_needs_a_positive_period() -> None:
    with pytest.raises(ValueError, match="every_s"):
        Job("never", 0, Counting())

"""Calendar jobs: store upkeep that runs every so many seconds, not every so many ticks.

A `Job` is a name, a period in seconds and an async callable returning counters.
The same jobs run under two drivers, chosen by the clock mode:

- real mode (`CalendarJobs`): apscheduler 3.x's AsyncIOScheduler on the daemon's
  event loop, one interval trigger per job, first run one period after start.
  A run that is late (the VM slept, the loop was busy) runs once, not once per
  missed period; a job never overlaps itself.
- simulated mode (`GolemClockJobs`): a Delta tick handler that runs each job
  whose due time on the golem clock has passed, so a simulated month runs its
  thirty daily compactions and the same seed gives the same run.

Either way a failing job is logged with its error and retried at its next
period; it never stops the daemon. Jobs reach the stores only through their
room's public API (the Grimoire serialises store access, so a job and a Delta
tick never touch a store at the same time).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from golem.runtime.handlers import TickContext, TickCounters

log = structlog.get_logger("golem.jobs")

JobCounters = Mapping[str, int | float]


@dataclass(frozen=True)
class Job:
    """One calendar job. ``every_s`` > 0; ``run`` returns counters for the log line."""

    name: str
    every_s: float
    run: Callable[[], Awaitable[JobCounters]]

    def __post_init__(self) -> None:
        if not self.every_s > 0:
            raise ValueError(f"job {self.name}: every_s must be > 0, got {self.every_s}")


async def run_logged(job: Job, *, driver: str) -> JobCounters | None:
    """Run one job; log its counters and wall duration, or its error (then None)."""
    started = time.monotonic()
    try:
        counters = await job.run()
    except Exception as exc:  # a job's failure is logged; the next period retries
        log.warning("scheduled job failed", job=job.name, driver=driver,
                    error=f"{type(exc).__name__}: {exc}",
                    duration_s=round(time.monotonic() - started, 3))
        return None
    log.info("scheduled job done", job=job.name, driver=driver,
             duration_s=round(time.monotonic() - started, 3), **dict(counters))
    return counters


@dataclass
class GolemClockJobs:
    """Simulated mode: a Delta tick handler that runs the jobs due on the golem clock.
    Each job is first due one period after the first tick it sees, then every period
    after its previous due time (missed periods collapse into one run)."""

    jobs: Sequence[Job]
    name: str = "scheduled-jobs"
    _due: dict[str, float] = field(default_factory=dict, init=False)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        now = ctx.clock.now()
        ran = 0
        for job in self.jobs:
            due = self._due.setdefault(job.name, now + job.every_s)
            if now < due:
                continue
            await run_logged(job, driver="golem clock")
            ran += 1
            periods = int((now - due) // job.every_s) + 1
            self._due[job.name] = due + periods * job.every_s
        return {"jobs_run": ran} if ran else None


class CalendarJobs:
    """Real mode: the jobs on apscheduler's AsyncIOScheduler, on the running event loop.
    ``start`` must be called from inside that loop; ``shutdown`` cancels a job in flight
    (a store call already on its thread finishes first)."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        from apscheduler.schedulers.asyncio import (  # noqa: PLC0415 - real mode only
            AsyncIOScheduler,
        )
        from apscheduler.triggers.interval import IntervalTrigger  # noqa: PLC0415

        self.jobs = tuple(jobs)
        self._scheduler: Any = AsyncIOScheduler(timezone="UTC")
        for job in self.jobs:
            self._scheduler.add_job(
                self._runner(job), IntervalTrigger(seconds=job.every_s, timezone="UTC"),
                id=job.name, name=job.name, coalesce=True, max_instances=1,
                misfire_grace_time=max(1, int(job.every_s)))

    @staticmethod
    def _runner(job: Job) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await run_logged(job, driver="wall clock")
        return run

    def start(self) -> None:
        self._scheduler.start()
        for job in self._scheduler.get_jobs():
            log.info("scheduled job registered", job=job.id,
                     every_s=job.trigger.interval.total_seconds(),
                     next_run=job.next_run_time.isoformat())

    def next_runs(self) -> dict[str, float]:
        """Each job's next run as a UNIX timestamp (for status and tests)."""
        return {job.id: job.next_run_time.timestamp() for job in self._scheduler.get_jobs()}

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

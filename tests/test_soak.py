"""Chaos soak (slow): a simulated month with random failures, overruns and deadlines.

Checks the loop invariants that must hold whatever the handlers do: ticks never
overlap, every tick starts on a slot, every started tick has exactly one
outcome, and the counters agree with what the handlers saw.
"""

from __future__ import annotations

import itertools
import math

import pytest

from golem.runtime.handlers import HandlerRegistry, TickContext

from .conftest import run_daemon

START = 1767225600.0


class Chaos:
    name = "chaos"

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.spans: list[tuple[int, float, float]] = []

    async def __call__(self, ctx: TickContext) -> None:
        began = ctx.clock.now()
        roll = ctx.rng.random()
        try:
            if roll < 0.05:
                raise ValueError(f"chaos on {ctx.loop} {ctx.tick}")
            if roll < 0.15:  # overrun, sometimes past the deadline
                await ctx.clock.sleep_until(began + ctx.rng.uniform(0, 2) * self.deadline)
        finally:
            self.spans.append((ctx.tick, began, ctx.clock.now()))


@pytest.mark.slow
def test_a_month_of_chaos_keeps_the_loop_invariants(make_config) -> None:
    _, cfg = make_config(gamma={"interval_s": 10, "deadline_s": 60, "backoff_max_s": 160},
                         theta={"interval_s": 60, "deadline_s": 90, "backoff_max_s": 600},
                         delta={"interval_s": 600, "deadline_s": 900, "backoff_max_s": 3600},
                         logging={"level": "warning"})
    chaos = {loop: Chaos(cfg.loop(loop).deadline_s) for loop in ("gamma", "theta", "delta")}
    registry = HandlerRegistry()
    for loop, handler in chaos.items():
        registry.register(loop, handler)  # type: ignore[arg-type]
    code, daemon, _ = run_daemon(cfg, registry, stop_after=30 * 86400)
    assert code == 0
    for loop in daemon.loops:
        spans = chaos[loop.name].spans
        c = loop.counters
        interval = loop.section.interval_s
        assert c.ticks == len(spans) == c.ok + c.failed + c.timed_out + c.cancelled
        assert [tick for tick, _, _ in spans] == list(range(1, c.ticks + 1))
        assert c.failed > 0 and c.timed_out > 0 and c.skipped_overrun > 0
        assert c.cancelled == 0
        for (_, _start, end), (_, next_start, _) in itertools.pairwise(spans):
            assert next_start >= end  # never overlapped
        for _, start, _ in spans:
            slots = (start - START) / interval
            assert math.isclose(slots, round(slots), abs_tol=1e-6)  # always on a slot
        ends = [end for _, _, end in spans]
        assert max(end - start for _, start, end in spans) <= loop.section.deadline_s + 1e-6
        assert ends[-1] <= START + 30 * 86400 + loop.section.deadline_s

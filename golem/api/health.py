"""Liveness and readiness from the loops' own clocks. Pure: plain data in, plain data out.

A loop is stalled when a tick has run past its deadline and was not cancelled (``stuck``),
or when its last tick (or its start, before the first) is older than ``STALL_INTERVALS``
intervals plus one deadline in golem time. ``/healthz`` is 200 while no loop is stalled
and 503 naming the stalled loops otherwise; ``/readyz`` is 200 once every loop runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from golem.runtime.loop import LoopHealth, iso

STALL_INTERVALS = 3.0


def loop_report(loop: LoopHealth, now: float) -> dict[str, Any]:
    since = loop.last_tick_at if loop.last_tick_at is not None else loop.started_at
    allowed = STALL_INTERVALS * loop.interval_s + loop.deadline_s
    age = None if since is None else max(0.0, now - since)
    stalled = loop.stuck or (loop.state != "stopped" and age is not None and age > allowed)
    return {"loop": loop.name, "state": loop.state, "ticks": loop.ticks,
            "last_tick_at": iso(loop.last_tick_at) if loop.last_tick_at else None,
            "last_tick_age_s": None if age is None else round(age, 3),
            "last_outcome": loop.last_outcome, "last_duration_ms": loop.last_duration_ms,
            "allowed_age_s": allowed, "stuck": loop.stuck, "stalled": stalled}


def health(loops: Sequence[LoopHealth], now: float) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for /healthz."""
    reports = [loop_report(lp, now) for lp in loops]
    if not reports:
        return 503, {"status": "starting", "stalled": [], "loops": [],
                     "message": "the tick loops have not started yet"}
    stalled = [r["loop"] for r in reports if r["stalled"]]
    body: dict[str, Any] = {"status": "stalled" if stalled else "ok", "stalled": stalled,
                            "golem_time": iso(now), "loops": reports}
    if stalled:
        body["message"] = "stalled: " + ", ".join(
            f"{r['loop']} (last tick {r['last_tick_age_s']}s ago, allowed "
            f"{r['allowed_age_s']:g}s{', a tick stuck past its deadline' if r['stuck'] else ''})"
            for r in reports if r["stalled"])
    return (503 if stalled else 200), body


def readiness(loops: Sequence[LoopHealth]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, body) for /readyz: ready once every loop has started and none stopped."""
    waiting = [lp.name for lp in loops if lp.state in ("starting", "stopped")]
    ready = bool(loops) and not waiting
    return (200 if ready else 503), {
        "ready": ready, "loops": {lp.name: lp.state for lp in loops},
        **({} if ready else {"message": "not serving ticks: " + (
            ", ".join(waiting) if waiting else "loops not started")})}

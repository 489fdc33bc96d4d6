"""/healthz and /readyz decisions from the loops' own clocks (pure)."""

from __future__ import annotations

from golem.api.health import STALL_INTERVALS, health, readiness
from golem.runtime.loop import LoopHealth


def loop(name: str, *, interval: float = 10.0, deadline: float = 30.0, last: float | None,
         started: float | None = 0.0, state: str = "sleeping", stuck: bool = False,
         ) -> LoopHealth:
    return LoopHealth(name, interval, deadline, state, 5, last, "ok", 1.0, started, stuck)


def test_ok_while_every_loop_ticked_recently() -> None:
    status, body = health([loop("gamma", last=990.0), loop("theta", interval=60,
                                                           deadline=180, last=900.0)], 1000.0)
    assert status == 200 and body["status"] == "ok" and body["stalled"] == []


def test_503_names_the_stalled_loop() -> None:
    allowed = STALL_INTERVALS * 10.0 + 30.0
    late = loop("gamma", last=1000.0 - allowed - 1.0)
    fine = loop("theta", interval=60, deadline=180, last=990.0)
    status, body = health([late, fine], 1000.0)
    assert status == 503 and body["stalled"] == ["gamma"]
    assert "gamma" in body["message"] and "theta" not in body["message"]
    # exactly at the limit it is still alive
    assert health([loop("gamma", last=1000.0 - allowed)], 1000.0)[0] == 200


def test_a_tick_stuck_past_its_deadline_is_stalled_at_once() -> None:
    status, body = health([loop("delta", last=999.0, state="ticking", stuck=True)], 1000.0)
    assert status == 503 and "stuck past its deadline" in body["message"]


def test_before_the_first_tick_the_start_counts() -> None:
    assert health([loop("gamma", last=None, started=990.0)], 1000.0)[0] == 200
    assert health([loop("gamma", last=None, started=0.0)], 1000.0)[0] == 503
    assert health([], 1000.0)[0] == 503  # loops not built yet


def test_readiness() -> None:
    assert readiness([])[0] == 503
    assert readiness([loop("gamma", last=None, state="starting")])[0] == 503
    assert readiness([loop("gamma", last=1.0), loop("theta", last=1.0, state="ticking")])[0] \
        == 200
    assert readiness([loop("gamma", last=1.0, state="stopped")])[0] == 503

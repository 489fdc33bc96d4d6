"""The vitality check inside the real daemon on the simulated clock: a golem with a
lifespan of 0.05 days ages through every phase in order, each change is an event,
`golem status` shows it, and the death protocol is asked for exactly once."""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio

from golem.mortality import vitality as v
from golem.mortality.vitality_check import open_vitality
from golem.runtime.daemon import Daemon, SetupContext
from golem.runtime.handlers import HandlerRegistry
from golem.status import collect_status, render_status


def test_a_short_lived_golem_declines_through_the_phases(make_config: Any) -> None:
    _path, cfg = make_config(
        chain={"mode": "off"},
        gamma={"interval_s": 3600, "deadline_s": 60, "backoff_max_s": 0},
        theta={"interval_s": 3600, "deadline_s": 60, "backoff_max_s": 0},
        delta={"interval_s": 300, "deadline_s": 60, "backoff_max_s": 0},
        mortality={"lifespan_days": 0.05, "hazard_per_day": 0.0})
    causes: list[str] = []

    async def on_terminal(cause: str) -> None:
        causes.append(cause)

    async def setup(ctx: SetupContext, stack: AsyncExitStack) -> None:
        ctx.registry.register("delta", await open_vitality(
            ctx.config, ctx.clock.now(), stack, on_terminal=on_terminal))

    daemon = Daemon(cfg, HandlerRegistry(), stop_after=6000, setup=setup)
    assert anyio.run(daemon.run) == 0
    records = [json.loads(line) for line in
               (Path(cfg.data_dir) / "events.jsonl").read_text().splitlines()]
    phases = [r["to_phase"] for r in records if r["kind"] == "mortality:phase"]
    assert phases == ["thriving", "stable", "conservation", "declining", "terminal"]
    updates = [r for r in records if r["kind"] == "mortality:vitality"]
    stochastic = [r["stochastic"] for r in updates]
    assert len(updates) >= 18 and stochastic == sorted(stochastic, reverse=True)
    assert stochastic[-1] == 0.0  # past the Hayflick limit
    assert all(r["economic"] == 1.0 and r["unproven"] for r in updates)
    assert causes == [v.HAYFLICK]
    report = collect_status(cfg)
    assert report["phase"] == "terminal" and report["mortality"] == "enabled"
    assert report["vitality"]["terminal"]["cause"] == v.HAYFLICK
    text = render_status(report)
    assert "phase      terminal" in text and "stochastic (Hayflick limit)" in text
    assert "terminal   since Delta tick" in text and "terminal now" in text


def test_status_says_when_mortality_is_disabled(make_config: Any) -> None:
    _path, cfg = make_config(mortality={"enabled": False})
    report = collect_status(cfg)
    assert report["mortality"] == "disabled" and report["vitality"] is None
    assert "mortality disabled" in render_status(report)

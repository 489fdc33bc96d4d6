"""Death inside the real daemon: an operator's request taken on a Delta tick, an
unfinished death resumed at start-up instead of living, the clean stop afterwards, and a
real `golem die` process SIGKILLed mid-protocol and resumed."""
# ruff: noqa: F811 - the embedder fixture is imported from tests/grimoire/conftest.py

from __future__ import annotations

import json
import os
import signal
import subprocess
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.config import Config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.mortality.death import (
    DataDirDead,
    accepting_new_positions,
    read_death,
    refuse_if_dead,
    request_death,
)
from golem.mortality.death_journal import read_journal, unfinished_death
from golem.mortality.die import open_death_keeper
from golem.mortality.thanatopsis import STEPS, CrashInjected
from golem.runtime.daemon import Daemon, SetupContext
from golem.runtime.handlers import HandlerRegistry, TickContext
from golem.testing.webhook_receiver import WebhookReceiver

from ..conftest import child_env, golem_cmd
from ..grimoire.conftest import MODEL_DIR, embedder  # noqa: F401
from .test_thanatopsis import NOW, crash_at, die, make_cfg, seed

LOOPS = {name: {"interval_s": 600, "deadline_s": 3600, "backoff_max_s": 0}
         for name in ("gamma", "theta", "delta")}


def daemon_cfg(make_config: Any, hook: WebhookReceiver) -> Config:
    _, cfg = make_config(
        golem={"name": "golem-a"}, chain={"mode": "off"}, grimoire={"model_dir": str(MODEL_DIR)},
        clock={"mode": "simulated", "speed": "max"},
        mortality={"webhook_url": hook.url, "webhook_timeout_s": 2}, **LOOPS)
    return cfg


def run_with_keeper(cfg: Config, embedder: Embedder, ticks: list[str]) -> Daemon:
    class Counter:
        name = "counter"

        async def __call__(self, ctx: TickContext) -> None:
            ticks.append(ctx.loop)

    async def setup(ctx: SetupContext, stack: AsyncExitStack) -> None:
        grimoire = await Grimoire.open(ctx.config, now=ctx.clock.now, embedder=embedder,
                                       events=ctx.events)
        stack.push_async_callback(grimoire.close)
        keeper = open_death_keeper(ctx, grimoire, None)
        await keeper.resume_if_unfinished()
        ctx.registry.register("delta", keeper)
        ctx.registry.register("theta", Counter())

    daemon = Daemon(cfg, HandlerRegistry(), stop_after=86_400, setup=setup,
                    admit=refuse_if_dead)  # as the CLI builds it
    assert anyio.run(daemon.run) == 0
    return daemon


def test_a_running_golem_takes_the_operator_request_dies_and_stops(
        make_config: Any, embedder: Embedder) -> None:
    with WebhookReceiver() as hook:
        cfg = daemon_cfg(make_config, hook)
        anyio.run(seed, cfg, embedder)
        request_death(cfg.data_dir, "operator: enough", NOW)
        ticks: list[str] = []
        daemon = run_with_keeper(cfg, embedder, ticks)
        assert daemon.stop_reason == "died: operator: enough"
        record = read_death(cfg.data_dir)
        assert record is not None and record.trigger == "operator"
        assert [p["event"] for p in hook.delivered] == ["dying", "died"]
        assert len(ticks) <= 2  # stopped at once, not after a day of golem time
        events = [json.loads(x) for x in (cfg.data_dir / "events.jsonl").read_text().splitlines()]
        assert "mortality:died" in [e["kind"] for e in events]
        with pytest.raises(DataDirDead):
            run_with_keeper(cfg, embedder, ticks)


def test_an_unfinished_death_resumes_at_start_up_instead_of_living(
        make_config: Any, embedder: Embedder) -> None:
    with WebhookReceiver() as hook:
        cfg = daemon_cfg(make_config, hook)
        anyio.run(seed, cfg, embedder)
        with pytest.raises(CrashInjected):
            die(cfg, embedder, checkpoint=crash_at("reflect", "after"))
        assert unfinished_death(cfg.data_dir) is not None
        ticks: list[str] = []
        daemon = run_with_keeper(cfg, embedder, ticks)
        assert ticks == [] and daemon.stop_reason is not None
        assert read_death(cfg.data_dir) is not None and unfinished_death(cfg.data_dir) is None
        assert [p["event"] for p in hook.delivered] == ["dying", "died"]


def test_a_sigkilled_golem_die_resumes_and_finishes(tmp_path: Path, embedder: Embedder) -> None:
    with WebhookReceiver() as hook:
        cfg = make_cfg(tmp_path, None, hook)
        anyio.run(seed, cfg, embedder)
        hook.hang_next(1, seconds=60)  # the dying notice hangs: the process is mid-Acceptance
        argv = golem_cmd("die", "--reason", "operator: sigkill", "--config",
                         str(tmp_path / "golem.toml"))
        proc = subprocess.Popen(argv, env=child_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            assert hook.wait_for(1, timeout=60), "golem die never sent its dying notice"
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == -signal.SIGKILL
        death, steps = read_journal(cfg.data_dir)
        assert death is not None and death.finished_at is None
        assert [(s.name, s.state) for s in steps] == [("accept", "started")]
        assert not accepting_new_positions(cfg.data_dir) and read_death(cfg.data_dir) is None

        again = golem_cmd("die", "--reason", "ignored: joins the death under way", "--config",
                          str(tmp_path / "golem.toml"))
        done = subprocess.run(again, env=child_env(), capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert "died (operator: sigkill)" in done.stdout
        record = read_death(cfg.data_dir)
        assert record is not None and record.cause == "operator: sigkill"
        _, steps = read_journal(cfg.data_dir)
        assert [s.name for s in steps] == list(STEPS) and {s.state for s in steps} == {"done"}
        died = [p for p in hook.delivered if p["event"] == "died"]
        assert len(died) == 1 and died[0]["testament_id"] == record.testament_id
        testament = json.loads(Path(record.testament_path).read_text())
        assert testament["reflection_source"] == "offline"
        texts = [e["text"] for e in testament["entries"]]
        assert any("oracle gap" in t for t in texts)  # anti-knowledge always crosses

"""Chaos on the default simulated golem: 20 SIGKILLs at random points of a 2-hour simulated
run (start-up included), then a clean run to the 2-hour mark. Afterwards `golem check
--deep` passes, no episode is stored twice, and capture has no gap: every watched event
of the chain from the first block to the committed cursor is stored (slow suite)."""

from __future__ import annotations

import io
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from golem.chain.cursor import read_cursors
from golem.config import Config, load_config
from golem.gamma.capture import GammaCapture
from golem.grimoire.records import episode_id, tx_episode_id
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from .conftest import REPO, child_env, config_text, golem_cmd, run_golem, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
KILLS = 20
RUN_S = 2 * 3600.0
SEED = 11

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]


def meta(data_dir: Path, key: str) -> float:
    """A number from state.db's meta table (0 before it exists, also while a starting
    golem has created the file but not yet the table)."""
    path = data_dir / "state.db"
    if not path.exists():
        return 0.0
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        conn.execute("PRAGMA busy_timeout=5000")
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return 0.0
    finally:
        conn.close()
    return float(row[0]) if row else 0.0


def golem_time(data_dir: Path) -> float:
    return meta(data_dir, "golem_time")


def wait_for_loops(golem: subprocess.Popen[str], data_dir: Path, runs_before: float) -> None:
    """Until this run's loops are ticking (state.db counts the run when they start)."""
    deadline = time.monotonic() + 300
    while meta(data_dir, "runs") <= runs_before:
        if golem.poll() is not None:
            pytest.fail(f"the golem exited by itself ({golem.returncode}): "
                        f"{golem.communicate()[1][-2000:]}")
        assert time.monotonic() < deadline, "the golem did not start its loops in 5 min"
        time.sleep(0.1)


def final_run(config: Config, seconds: float) -> GammaCapture:
    registry = HandlerRegistry()
    configure_logging("warning", "json", io.StringIO())
    daemon = Daemon(config, registry, stop_after=seconds, setup=setup)
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    capture = registry.for_loop("gamma")[0]
    assert isinstance(capture, GammaCapture)
    return capture


def owed(capture: GammaCapture) -> set[str]:
    """The episode ids the chain says capture owes, first block to the committed cursor."""
    assert capture.market is not None and capture.follower is not None
    cursor = capture.follower.cursor
    assert cursor is not None
    logs = capture.market.evm.get_logs(capture.market.first_block, cursor)
    failed = []
    for lo in range(capture.market.first_block, cursor + 1, 1000):  # the reader's span cap
        failed += anyio.run(capture.reader.failed_transactions, lo, min(lo + 999, cursor),
                            capture.watch.addresses)
    return {episode_id(log.chain_id, log.block_hash, log.log_index) for log in logs
            if capture.watch.matches(log.address, log.topics[0] if log.topics else None)} | {
        tx_episode_id(t.chain_id, t.block_hash, t.tx_index) for t in failed}


def test_twenty_sigkills_leave_a_whole_golem(tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": SEED},
                                 "grimoire": {"model_dir": str(MODEL)},
                                 "logging": {"format": "json", "level": "warning"}}))
    config = load_config(path)
    start = config.clock.start.timestamp()
    rng = random.Random(SEED)
    # the kills while the loops tick land at golem moments, not after wall-clock sleeps:
    # how fast a golem runs must not decide whether twenty fit in its first 1.5 hours
    moments = sorted(rng.uniform(0.02, 0.7) * RUN_S for _ in range(KILLS))
    kills = 0
    while kills < KILLS and golem_time(config.data_dir) - start < RUN_S * 0.75:
        runs = meta(config.data_dir, "runs")
        golem = subprocess.Popen(golem_cmd("run", "--config", str(path)), env=child_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if kills % 5 == 4:  # every fifth kill lands in start-up (model load, replay)
            time.sleep(rng.uniform(0.3, 3.0))
        else:  # the others while the loops tick: capture, Theta, Delta mid-write
            wait_for_loops(golem, config.data_dir, runs)
            time.sleep(rng.uniform(0.0, 0.5))
            while (golem_time(config.data_dir) < start + moments[kills]
                   and golem.poll() is None):
                time.sleep(0.01)
        if golem.poll() is not None:
            pytest.fail(f"the golem exited by itself ({golem.returncode}): "
                        f"{golem.communicate()[1][-2000:]}")
        golem.send_signal(signal.SIGKILL)
        golem.communicate(timeout=60)
        kills += 1
    assert kills == KILLS, "the run reached 1.5 h of golem time before 20 kills"

    remaining = max(60.0, start + RUN_S - max(golem_time(config.data_dir), start))
    capture = final_run(config, remaining)
    assert golem_time(config.data_dir) - start >= RUN_S - 1

    deep = run_golem("check", "--deep", "--config", str(path), timeout=300)
    assert deep.returncode == 0, deep.stdout + deep.stderr
    ids = stored_episode_ids(config)
    assert len(ids) == len(set(ids)), "an episode was stored twice"
    expected = owed(capture)
    assert len(expected) > 500
    assert set(ids) == expected  # no gap and nothing foreign
    assert capture.follower is not None
    assert read_cursors(config.data_dir / "chain")[0]["cursor"] == capture.follower.cursor

"""Same seed, same golem: the default simulated golem (offline cognition, the real model,
stores and EVM) gives the same episode ids and the same decisions in two runs, in a run
stopped and started again at golem times (`golem run --stop-at`), after SIGTERMs at
random moments, and (episode ids: the same chain) after SIGKILLs. The market journal
never holds a golem time twice. The fast versions run in-process in the default suite;
the subprocess versions with signals are slow."""

from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from golem.cli import run_cli
from golem.config import Config, load_config

from .conftest import REPO, child_env, config_text, golem_cmd, stored_episode_ids
from .test_chaos_kill import golem_time, meta, wait_for_loops

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
SEED = 42
# bardo.toml's cage: the golem may trade WETH/USDC, so its own transactions are in the chain
CAGE = {"allowed_assets": ["USDC", "WETH"], "max_notional_usd": 20, "max_position_usd": 100}


def golem_config(tmp_path: Path, name: str) -> tuple[Path, Config]:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": SEED}, "cage": CAGE,
                                 "grimoire": {"model_dir": str(MODEL)},
                                 "logging": {"format": "json", "level": "warning"}}))
    return path, load_config(path)


def decisions(config: Config) -> list[tuple[Any, ...]]:
    """Every journalled decision: tick, golem time, status, summary and record."""
    conn = sqlite3.connect(config.data_dir / "cognition" / "decisions.db")
    try:
        rows = conn.execute("SELECT tick, golem_time, provider, status, summary, record "
                            "FROM decisions ORDER BY tick").fetchall()
    finally:
        conn.close()
    return [(*r[:5], json.loads(r[5])) for r in rows]


def journal_times(config: Config) -> list[float]:
    conn = sqlite3.connect(config.data_dir / "chain" / "capture.db")
    try:
        return [float(r[0]) for r in
                conn.execute("SELECT golem_time FROM sim_steps ORDER BY seq").fetchall()]
    finally:
        conn.close()


def golem_txs(config: Config) -> list[tuple[Any, ...]]:
    """The golem's own journalled transactions: after which step, when, what (bytes)."""
    conn = sqlite3.connect(config.data_dir / "chain" / "capture.db")
    try:
        return conn.execute("SELECT after_step, golem_time, kind, data FROM sim_golem_txs "
                            "ORDER BY seq").fetchall()
    finally:
        conn.close()


def first_difference(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> str:
    for x, y in zip(a, b, strict=False):
        if x != y:
            diff = {k: (x[5].get(k), y[5].get(k)) for k in x[5] if x[5].get(k) != y[5].get(k)}
            return f"tick {x[0]} differs: {x[:5]} / {y[:5]}; record keys {diff}"[:3000]
    return f"lengths {len(a)} / {len(b)}"


def same_life(one: Config, other: Config) -> None:
    ids = stored_episode_ids(one)
    assert len(ids) > 100
    assert sorted(ids) == sorted(stored_episode_ids(other))
    mine, theirs = decisions(one), decisions(other)
    assert len(mine) >= 5
    assert mine == theirs, first_difference(mine, theirs)
    times = journal_times(one)
    assert len(times) == len(set(times)), "a golem time was stepped twice"
    assert times == journal_times(other)
    txs = golem_txs(one)
    # the wallet's funding at least; trades only once the offline tier has learned an
    # edge (its prior never trades), which these short lives rarely reach
    assert txs and txs[0][2] == "fund", "no golem transaction was journalled"
    assert txs == golem_txs(other)


def run_to(path: Path, stop_at: str) -> None:
    assert run_cli(["run", "--config", str(path), "--stop-at", stop_at]) == 0


def test_a_restart_at_a_golem_time_changes_nothing(tmp_path: Path) -> None:
    """An uninterrupted run to 9 golem minutes, and one stopped at 7m30s (after its first
    trade at 7m, before the next) and started again: the same episodes, decisions, market
    journal and golem transactions."""
    path, config = golem_config(tmp_path, "a")
    run_to(path, "9m")
    stops_path, stops = golem_config(tmp_path, "b")
    for stop in ("7m30s", "9m"):
        run_to(stops_path, stop)
    same_life(config, stops)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_two_runs_and_a_run_stopped_three_times_are_one_life(tmp_path: Path) -> None:
    """Two uninterrupted runs to 12 golem minutes, and one stopped at 5m, 7m30s and 10m30s
    and started again (the golem trades every minute from 7m): the same episodes,
    decisions, market journal and golem transactions."""
    path, config = golem_config(tmp_path, "a")
    run_to(path, "12m")
    again_path, again = golem_config(tmp_path, "b")
    run_to(again_path, "12m")
    same_life(config, again)
    stops_path, stops = golem_config(tmp_path, "c")
    for stop in ("5m", "7m30s", "10m30s", "12m"):
        run_to(stops_path, stop)
    same_life(config, stops)


def spawn(path: Path, stop_at: str) -> subprocess.Popen[str]:
    return subprocess.Popen(golem_cmd("run", "--config", str(path), "--stop-at", stop_at),
                            env=child_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def interrupted(path: Path, config: Config, sig: signal.Signals, times: int,
                end_s: int) -> None:
    """`times` signals at random golem moments (increasing, in the first three quarters
    of the life, drawn from SEED) while the loops tick, each run bound for ``end_s``
    golem seconds, then a run to the end. The moments are golem times, not wall times:
    how fast a golem runs must not decide whether a signal lands before its end."""
    rng = random.Random(SEED)
    start = config.clock.start.timestamp()
    moments = sorted(rng.uniform(0.05, 0.75) * end_s for _ in range(times))
    for moment in moments:
        runs = meta(config.data_dir, "runs")
        golem = spawn(path, f"{end_s}s")
        try:
            wait_for_loops(golem, config.data_dir, runs)
            while golem_time(config.data_dir) < start + moment and golem.poll() is None:
                time.sleep(0.01)
            if golem.poll() is not None:
                pytest.fail(f"the golem exited by itself ({golem.returncode}): "
                            f"{golem.communicate()[1][-2000:]}")
            golem.send_signal(sig)
            _, err = golem.communicate(timeout=120)
        finally:
            if golem.poll() is None:  # the test failed with it running
                golem.kill()
                golem.communicate(timeout=60)
        if sig == signal.SIGTERM:
            assert golem.returncode == 0, err[-2000:]
    run_to(path, f"{end_s}s")


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_sigterms_and_sigkills_at_random_moments(tmp_path: Path) -> None:
    """Four SIGTERMs at random moments, then a run to 20 golem minutes: the same episodes
    and decisions as an uninterrupted run to that time. Four SIGKILLs: the same chain
    (episode ids), and no golem time stepped twice."""
    path, config = golem_config(tmp_path, "alone")
    run_to(path, "20m")
    term_path, term = golem_config(tmp_path, "term")
    interrupted(term_path, term, signal.SIGTERM, 4, 1200)
    assert meta(term.data_dir, "runs") == 5
    assert golem_time(term.data_dir) == config.clock.start.timestamp() + 1200
    same_life(config, term)
    kill_path, kill = golem_config(tmp_path, "kill")
    interrupted(kill_path, kill, signal.SIGKILL, 4, 1200)
    assert sorted(stored_episode_ids(kill)) == sorted(stored_episode_ids(config))
    times = journal_times(kill)
    assert len(times) == len(set(times)) and times == journal_times(config)
    assert golem_txs(kill) == golem_txs(config)


def test_golem_run_on_a_journal_that_does_not_replay_exits_65_naming_the_step(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, config = golem_config(tmp_path, "a")
    run_to(path, "2m")
    conn = sqlite3.connect(config.data_dir / "chain" / "capture.db")
    with conn:
        conn.execute("UPDATE sim_steps SET dt = 20 WHERE seq = 5")
    conn.close()
    capsys.readouterr()
    assert run_cli(["run", "--config", str(path), "--stop-at", "3m"]) == 65
    err = capsys.readouterr().err
    assert "the market journal does not replay at market step 6 (journal row 6" in err

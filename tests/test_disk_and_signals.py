"""The golem and a hostile disk or an early signal: a full disk stops it (exit 73) before
the golem clock runs on, a read-only data dir is one clear line, a SIGTERM during start-up
stops cleanly, and what check-config can know is refused before anything is written.
Real tmpfs mounts (CI runs as root; skipped, with the reason, where mounting is refused)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import REPO, child_env, config_text, golem_cmd, run_golem

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def write_config(path: Path, data_dir: Path, **extra: dict[str, object]) -> Path:
    sections: dict[str, dict[str, object]] = {
        "golem": {"data_dir": str(data_dir), "seed": 3}, "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "info"}}
    for key, values in extra.items():
        sections.setdefault(key, {}).update(values)
    path.write_text(config_text(sections))
    return path


def golem_time(data_dir: Path) -> float:
    conn = sqlite3.connect(f"{(data_dir / 'state.db').as_uri()}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'golem_time'").fetchone()
    finally:
        conn.close()
    return float(row[0])


@pytest.mark.parametrize(("floor_mb", "size"), [
    pytest.param(0, "5m", marks=[pytest.mark.slow, pytest.mark.timeout(900)], id="enospc"),
    pytest.param(4, "6m", marks=pytest.mark.timeout(400), id="floor")])
def test_a_full_disk_stops_the_golem_with_exit_73_before_its_clock_runs_on(
        tmp_path: Path, floor_mb: int, size: str) -> None:
    """floor 0: writes fail with ENOSPC and the first such tick stops the golem (about a
    minute to fill 5 MB: in the slow suite); floor 4: the free-space watch stops it first."""
    with tmpfs(tmp_path / "small", size) as disk:
        config = write_config(tmp_path / "g.toml", disk / "data",
                              runtime={"min_free_mb": floor_mb})
        done = run_golem("run", "--config", str(config), "--stop-after", "6h", timeout=600)
        assert done.returncode == 73, done.stderr[-2000:]
        assert "disk full" in done.stdout
        (line,) = done.stderr.strip().splitlines()
        assert line.startswith("golem: error: disk full, stopped: ") and ".rs:" not in line
        # Stopped at the first sign, not hours of golem time later with failing ticks.
        started = 1_767_225_600.0  # the config's default clock.start (2026-01-01)
        assert golem_time(disk / "data") - started < 2 * 3600
        if floor_mb:
            assert "below runtime.min_free_mb" in done.stdout
        # Nothing is half-written: on a bigger disk the same data checks clean and runs on.
        shutil.copytree(disk / "data", tmp_path / "moved", symlinks=True)
    moved = write_config(tmp_path / "moved.toml", tmp_path / "moved")
    assert run_golem("check", "--config", str(moved)).returncode == 0
    again = run_golem("run", "--config", str(moved), "--stop-after", "30s", timeout=300)
    assert again.returncode == 0, again.stderr


def test_a_read_only_data_dir_is_one_line_on_stderr(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", "4m") as disk:
        (disk / "data").mkdir()
        config = write_config(tmp_path / "g.toml", disk / "data")
        remount = subprocess.run(["mount", "-o", "remount,ro", str(disk)],
                                 capture_output=True, text=True, check=False)
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        done = run_golem("run", "--config", str(config), "--stop-after", "1m")
        assert done.returncode == 73
        assert done.stderr.strip().splitlines() == [
            f"golem: error: golem.data_dir: {disk / 'data'} is on a read-only filesystem; "
            "point golem.data_dir at a writable disk"]
        checked = run_golem("check-config", "--config", str(config))
        assert checked.returncode == 73 and "read-only" in checked.stderr


def test_sigterm_during_start_up_stops_cleanly_and_the_next_start_works(
        tmp_path: Path) -> None:
    config = write_config(tmp_path / "g.toml", tmp_path / "data")
    golem = subprocess.Popen(golem_cmd("run", "--config", str(config)), env=child_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The lock exists once the data dir is claimed; the model and the market load after.
    deadline = time.monotonic() + 60
    while not (tmp_path / "data" / "golem.lock").exists():
        assert golem.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    golem.send_signal(signal.SIGTERM)
    out, err = golem.communicate(timeout=120)
    assert golem.returncode == 0, err
    assert "stop requested during start-up" in out and "golem stopped during start-up" in out
    assert "golem started" not in out  # the loops never ran
    again = run_golem("run", "--config", str(config), "--stop-after", "20s", timeout=180)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("problem", ["model", "key"])
def test_what_check_config_can_know_is_refused_before_anything_is_written(
        tmp_path: Path, problem: str) -> None:
    data = tmp_path / "data"
    if problem == "model":
        config = write_config(tmp_path / "g.toml", data,
                              grimoire={"model_dir": str(tmp_path / "nonexistent")})
        expected = "embedding model not found"
    else:
        key = tmp_path / "key"
        key.write_text("sk-test\n")
        os.chmod(key, 0o644)
        config = write_config(tmp_path / "g.toml", data,
                              cognition={"provider": "anthropic", "api_key_file": str(key)})
        expected = "readable by others"
    checked = run_golem("check-config", "--config", str(config))
    assert checked.returncode == 78 and expected in checked.stderr
    ran = run_golem("run", "--config", str(config), "--stop-after", "1m")
    assert ran.returncode == 78 and expected in ran.stderr
    assert len(ran.stderr.strip().splitlines()) == 1
    assert not data.exists()

"""A damaged episode store is refused, named and rebuilt; backups copy a running golem
consistently and restore into a golem that starts (real files, a real simulated chain)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import anyio
import pytest

from golem.chain.cursor import read_cursors
from golem.cli import run_cli
from golem.config import Config, load_config
from golem.errors import EXIT_OK, EXIT_SOFTWARE
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from .conftest import REPO, child_env, config_text, golem_cmd, run_golem, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


def sim_config(tmp_path: Path, name: str = "golem.toml", data: str = "data",
               **extra: dict[str, object]) -> tuple[Path, Config]:
    sections: dict[str, dict[str, object]] = {
        "golem": {"data_dir": data, "seed": 7}, "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "warning"}}
    for key, values in extra.items():
        sections.setdefault(key, {}).update(values)
    path = tmp_path / name
    path.write_text(config_text(sections))
    return path, load_config(path)


def run_for(config: Config, seconds: float) -> int:
    configure_logging("warning", "json", io.StringIO())
    daemon = Daemon(config, HandlerRegistry(), stop_after=seconds, setup=setup)
    code: int = anyio.run(daemon.run, backend_options={"use_uvloop": True})
    return code


def lance_table(config: Config) -> Path:
    (table,) = (config.data_dir / "episodes").glob("episodes-*.lance")
    return table


def latest_manifest(config: Config) -> Path:
    # Lance names manifests by u64::MAX - version: the smallest name is the newest.
    return min((lance_table(config) / "_versions").glob("*.manifest"))


def referenced_data_file(config: Config) -> Path:
    """A data file the latest version reads: the manifest names it."""
    manifest = latest_manifest(config).read_bytes()
    for path in sorted((lance_table(config) / "data").glob("*.lance")):
        if path.name.encode() in manifest:
            return path
    raise AssertionError("the latest manifest names no data file")


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_damaged_episode_store_is_refused_named_and_rebuilt_into_the_same_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, config = sim_config(tmp_path)
    assert run_for(config, 200) == EXIT_OK
    before = set(stored_episode_ids(config))
    assert len(before) > 30
    cursor = read_cursors(config.data_dir / "chain")[0]["cursor"]
    assert run_cli(["check", "--config", str(path)]) == EXIT_OK
    capsys.readouterr()

    victim = referenced_data_file(config)
    victim.unlink()
    assert run_cli(["check", "--config", str(path)]) == EXIT_SOFTWARE
    out = capsys.readouterr().out
    assert "BAD  episodes" in out and victim.name in out and "rebuild-episodes" in out
    assert run_cli(["run", "--config", str(path), "--stop-after", "10s"]) == EXIT_SOFTWARE
    line = one_error_line(capsys)
    assert "episode store" in line and "damaged" in line and "rebuild-episodes" in line

    assert run_cli(["memory", "rebuild-episodes", "--config", str(path)]) == EXIT_OK
    said = capsys.readouterr().out
    assert "episodes.damaged-" in said and f"..{cursor}" in said
    assert len(list(config.data_dir.glob("episodes.damaged-*"))) == 1
    assert run_cli(["check", "--config", str(path)]) == EXIT_OK
    assert run_for(config, 60) == EXIT_OK  # captures the chain again, then goes on
    after = stored_episode_ids(config)
    assert len(after) == len(set(after))
    assert before <= set(after)  # every episode is back under its own id


def test_a_truncated_manifest_is_refused_with_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, config = sim_config(tmp_path)
    assert run_for(config, 60) == EXIT_OK
    manifest = latest_manifest(config)
    os.truncate(manifest, manifest.stat().st_size // 2)
    assert run_cli(["run", "--config", str(path), "--stop-after", "10s"]) == EXIT_SOFTWARE
    line = one_error_line(capsys)
    assert "episode store" in line and "unreadable" in line and "rebuild-episodes" in line
    assert run_cli(["check", "--config", str(path)]) == EXIT_SOFTWARE


def test_backup_of_a_running_golem_restores_into_a_golem_that_starts(tmp_path: Path) -> None:
    path, config = sim_config(tmp_path, clock={"speed": 20})
    before = remember(path, "Never trade HONEY: its sells revert")
    golem = subprocess.Popen(golem_cmd("run", "--config", str(path)), env=child_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (config.data_dir / "episodes" / "store.json").exists() or \
                not read_cursors(config.data_dir / "chain"):
            assert golem.poll() is None, golem.communicate()[1]
            assert time.monotonic() < deadline, "the golem captured nothing in 2 minutes"
            time.sleep(0.5)
        during = remember(path, "The WETH/USDC pool charges a 0.3% fee")  # beside the golem
        time.sleep(3)  # capture is writing while we copy
        backup = tmp_path / "backup"
        made = run_golem("backup", "--config", str(path), "--to", str(backup), timeout=120)
        assert made.returncode == 0, made.stderr
        assert golem.poll() is None, "the golem stopped while it was backed up"
    finally:
        golem.send_signal(signal.SIGTERM)
        _, err = golem.communicate(timeout=60)
        assert golem.returncode == 0, err

    manifest = json.loads((backup / "BACKUP.json").read_text())
    assert manifest["episodes"] > 0
    assert oct((backup / "wallet" / "key").stat().st_mode & 0o777) == "0o600"
    assert not (backup / "golem.lock").exists()
    restored_path, restored = sim_config(tmp_path, "restored.toml", "restored")
    put = run_golem("restore", "--config", str(restored_path), "--from", str(backup))
    assert put.returncode == 0, put.stderr
    deep = run_golem("check", "--deep", "--config", str(restored_path))
    assert deep.returncode == 0, deep.stdout
    # The copy is the source at one point: every episode in it is in the source, and every
    # source episode at or below the copy's capture cursor is in the copy.
    copied = stored_episode_ids(restored)
    assert len(copied) == manifest["episodes"] == len(set(copied))
    source = set(stored_episode_ids(config))
    assert set(copied) <= source
    cursor = read_cursors(restored.data_dir / "chain")[0]["cursor"]
    blocks = _blocks_of(config)
    assert {i for i in source if blocks[i] <= cursor} <= set(copied)
    # Entries too: the copy's are the source's (the source may have more since), both
    # operator entries among them.
    copied_entries = entry_ids(restored.data_dir)
    assert {before, during} <= copied_entries <= entry_ids(config.data_dir)
    shown = run_golem("memory", "show", during, "--config", str(restored_path))
    assert shown.returncode == 0 and "0.3% fee" in shown.stdout
    # and the restored golem runs
    assert run_golem("run", "--config", str(restored_path), "--stop-after", "30s",
                     timeout=180).returncode == 0
    refused = run_golem("restore", "--config", str(restored_path), "--from", str(backup))
    assert refused.returncode == 73 and "--force" in refused.stderr


def remember(path: Path, text: str) -> str:
    added = run_golem("memory", "add", text, "--anchored", "--json", "--config", str(path),
                      timeout=120)
    assert added.returncode == 0, added.stderr
    return str(json.loads(added.stdout)["id"])


def entry_ids(data_dir: Path) -> set[str]:
    conn = sqlite3.connect(f"{(data_dir / 'grimoire.db').as_uri()}?mode=ro", uri=True)
    try:
        return {str(row[0]) for row in conn.execute("SELECT id FROM entries")}
    finally:
        conn.close()


def _blocks_of(config: Config) -> dict[str, int]:
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415 - heavy

    async def read() -> dict[str, int]:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            return await g.scan_episodes(lambda batches: {
                e.id: e.block_number for batch in batches
                for e in batch})
        finally:
            await g.close()

    out: dict[str, int] = anyio.run(read)
    return out


SQLITE_FILES = ("state.db", "grimoire.db", "episodes/replays.db", "chain/capture.db",
                "chain/positions.db", "cognition/decisions.db",
                "consolidation/consolidation.db", "consolidation/delta.db",
                "consolidation/loop3.db", "mortality/vitality.db")


@pytest.fixture(scope="module")
def ran_golem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir after 20 simulated minutes (every SQLite file the golem keeps exists)."""
    root = tmp_path_factory.mktemp("ran")
    _, config = sim_config(root)
    assert run_for(config, 1200) == EXIT_OK
    return config.data_dir


def test_every_sqlite_file_of_a_run_is_one_the_check_knows(ran_golem: Path) -> None:
    from golem.integrity.check import sqlite_files  # noqa: PLC0415

    found = {p.relative_to(ran_golem).as_posix() for p in sqlite_files(ran_golem)}
    assert found == set(SQLITE_FILES)


@pytest.mark.parametrize("name", SQLITE_FILES)
def test_garbage_in_any_sqlite_file_stops_the_golem_with_one_line(
        ran_golem: Path, tmp_path: Path, name: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    from .test_integrity import fill, garble_page  # noqa: PLC0415

    path, config = sim_config(tmp_path)
    shutil.copytree(ran_golem, config.data_dir)
    victim = config.data_dir / name
    fill(victim)
    garble_page(victim, 2)
    assert run_cli(["run", "--config", str(path), "--stop-after", "10s"]) == EXIT_SOFTWARE
    line = one_error_line(capsys)
    assert str(victim) in line and "damaged" in line, line
    assert run_cli(["check", "--config", str(path)]) == EXIT_SOFTWARE
    assert f"BAD  {name}" in capsys.readouterr().out

"""Damaged SQLite files are refused at open, with one line naming the file (real files)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.cli import run_cli
from golem.errors import EXIT_SOFTWARE, StateError
from golem.grimoire.compute import cpu, preferred
from golem.grimoire.errors import StoreCorrupt
from golem.grimoire.semantic_db import SemanticDb
from golem.integrity.check import integrity_job
from golem.runtime.state import connect_durable

from .conftest import run_daemon


def garble_page(path: Path, page: int) -> None:
    """Overwrite one whole page of a SQLite file with seeded random bytes."""
    with path.open("r+b") as f:
        header = f.read(100)
        size = int.from_bytes(header[16:18], "big")
        size = 65536 if size == 1 else size
        f.seek((page - 1) * size)
        f.write(random.Random(page).randbytes(size))


def fill(path: Path, rows: int = 2000) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE IF NOT EXISTS filler (id INTEGER PRIMARY KEY, v TEXT)")
    conn.executemany("INSERT INTO filler (v) VALUES (?)", [("x" * 50,)] * rows)
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def test_a_damaged_durable_store_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    connect_durable(path, "the test store", "CREATE TABLE IF NOT EXISTS t (k TEXT)").close()
    fill(path)
    connect_durable(path, "the test store").close()  # intact: opens
    garble_page(path, 3)
    with pytest.raises(StateError, match="damaged") as err:
        connect_durable(path, "the test store")
    assert str(path) in str(err.value) and "the test store" in str(err.value)


def test_a_damaged_semantic_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "grimoire.db"
    SemanticDb.open(path, "sig", 384).close()
    fill(path)
    garble_page(path, 4)
    with pytest.raises(StoreCorrupt, match="damaged"):
        SemanticDb.open(path, "sig", 384)


def test_golem_run_refuses_a_damaged_state_db_with_one_line(
        make_config: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path, cfg = make_config(chain={"mode": "off"})
    code, _, _ = run_daemon(cfg, stop_after=600)
    assert code == 0
    state = cfg.data_dir / "state.db"
    fill(state)
    garble_page(state, 2)
    assert run_cli(["run", "--config", str(path), "--stop-after", "1s"]) == EXIT_SOFTWARE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(state) in err[0] and "damaged" in err[0], err


def test_the_daily_integrity_job_and_golem_check_name_a_damaged_file(
        make_config: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path, cfg = make_config(chain={"mode": "off"})
    assert run_daemon(cfg, stop_after=600)[0] == 0
    job = integrity_job(cfg.data_dir)
    assert anyio.run(job.run) == {"sqlite_checked": 1, "sqlite_damaged": 0}
    assert run_cli(["check", "--deep", "--config", str(path)]) == 0
    capsys.readouterr()
    assert run_cli(["check-config", "--config", str(path)]) == 0
    shown = capsys.readouterr().out  # the graph the golem embeds with, and why
    assert f"{preferred(cpu())} products: " in shown, shown
    state = cfg.data_dir / "state.db"
    fill(state)
    garble_page(state, 2)
    assert anyio.run(job.run) == {"sqlite_checked": 1, "sqlite_damaged": 1}
    capsys.readouterr()
    assert run_cli(["check", "--deep", "--config", str(path)]) == EXIT_SOFTWARE
    out = capsys.readouterr().out
    assert "BAD  state.db" in out and "golem restore" in out and "1 damaged" in out

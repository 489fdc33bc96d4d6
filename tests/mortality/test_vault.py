"""The local vault (Styx L0): off by default; testament and snapshot round trips through
files only; the `golem testament` and `golem vault` commands."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.cli import run_cli
from golem.config import Config
from golem.errors import EXIT_CONFIG, EXIT_OK
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.mortality import testament as tm
from golem.mortality import vault as vt

from ..grimoire.conftest import MODEL_DIR
from .test_testament import (
    T0,
    build_from,
    first_lineage,
    golem_config,
    live_a_life,
)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


def lived(root: Path, emb: Embedder, **extra: dict[str, Any]) -> tuple[Config, Path]:
    """A golem that lived and left a testament in its data dir (as the death protocol does)."""
    cfg = golem_config(root, "golem-a", **extra)

    async def main() -> Path:
        g = await Grimoire.open(cfg, now=lambda: T0 + 5000, embedder=emb)
        try:
            await live_a_life(g)
            (cfg.data_dir / "PLAYBOOK.md").write_text("# PLAYBOOK\n- heuristic\n")
            t = await build_from(g, first_lineage(cfg))
        finally:
            await g.close()
        return tm.write_testament(cfg.data_dir / "testament" / f"{t.testament_id}.json", t)

    return cfg, anyio.run(main)


def entries_in(db: Path) -> int:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    finally:
        conn.close()


def test_the_vault_is_off_by_default(tmp_path: Path, embedder: Embedder,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    cfg, _ = lived(tmp_path, embedder)
    assert vt.exporter(cfg) is None
    with pytest.raises(vt.VaultError, match="the vault is off"):
        vt.vault_dir(cfg)
    assert run_cli(["vault", "list", "--config", str(cfg.source)]) == EXIT_CONFIG
    assert "the vault is off" in capsys.readouterr().err
    assert not any(p.name == "vault" for p in tmp_path.iterdir())


def test_testament_and_snapshot_round_trip(tmp_path: Path, embedder: Embedder) -> None:
    cfg, path = lived(tmp_path, embedder)
    vault = tmp_path / "vault"
    t = tm.load_testament(path)
    dest = vt.export_testament(vault, path)
    assert dest == vault / vt.TESTAMENTS / f"{t.testament_id}.json"
    assert vt.export_testament(vault, path) == dest  # idempotent
    snap = vt.export_snapshot(vault, cfg.data_dir, "golem-a-1")
    assert sorted(p.name for p in snap.iterdir()) == [
        "PLAYBOOK.md", "grimoire.db", "manifest.json"]
    assert entries_in(snap / "grimoire.db") == entries_in(cfg.data_dir / "grimoire.db") == 8
    assert not (snap / "episodes").exists()  # episodes never cross
    with pytest.raises(vt.VaultError, match="already exists"):
        vt.export_snapshot(vault, cfg.data_dir, "golem-a-1")
    with pytest.raises(vt.VaultError, match="label"):
        vt.export_snapshot(vault, cfg.data_dir, "../escape")
    (vault / vt.TESTAMENTS / "t-broken.json").write_text("{}")
    items = {i.id: i for i in vt.list_vault(vault)}
    assert items[t.testament_id].kind == "testament"
    assert "generation 0" in items[t.testament_id].detail
    assert items["t-broken"].detail.startswith("INVALID")
    assert items["golem-a-1"].kind == "snapshot"
    back = vt.import_testament(vault, t.testament_id[:10])
    assert tm.load_testament(back) == t
    with pytest.raises(vt.VaultError, match="no testament"):
        vt.import_testament(vault, "t-nothing")
    with pytest.raises(tm.TestamentError):
        vt.import_testament(vault, "t-broken")


def test_the_death_protocol_exporter_writes_testament_and_snapshot(
        tmp_path: Path, embedder: Embedder) -> None:
    cfg, path = lived(tmp_path, embedder, succession={"vault_enabled": True,
                                                      "vault_dir": "vault"})
    export = vt.exporter(cfg)
    assert export is not None
    where = anyio.run(export, path)
    vault = (tmp_path / "vault").resolve()
    t = tm.load_testament(path)
    assert (vault / vt.TESTAMENTS / f"{t.testament_id}.json").exists()
    assert (vault / vt.SNAPSHOTS / t.testament_id / "grimoire.db").exists()
    assert t.testament_id in where
    assert anyio.run(export, path) == where  # a resumed death exports again harmlessly


def test_the_cli_commands(tmp_path: Path, embedder: Embedder,
                          capsys: pytest.CaptureFixture[str]) -> None:
    cfg, path = lived(tmp_path, embedder, succession={"vault_enabled": True,
                                                      "vault_dir": "vault"})
    conf = str(cfg.source)
    t = tm.load_testament(path)
    assert run_cli(["testament", "show", str(path)]) == EXIT_OK
    shown = capsys.readouterr().out
    assert t.testament_id in shown and "## What worked" in shown
    assert run_cli(["testament", "show", "--config", conf, "--json"]) == EXIT_OK
    assert tm.parse_testament(capsys.readouterr().out) == t
    assert run_cli(["testament", "export", "--config", conf, "--to",
                    str(tmp_path / "out")]) == EXIT_OK
    assert tm.load_testament(tmp_path / "out" / f"{t.testament_id}.json") == t
    capsys.readouterr()
    assert run_cli(["vault", "export", "--config", conf]) == EXIT_OK
    out = capsys.readouterr().out
    assert "testament ->" in out and "snapshot  ->" in out
    assert run_cli(["vault", "list", "--config", conf]) == EXIT_OK
    listing = capsys.readouterr().out
    assert f"testament {t.testament_id}" in listing and "snapshot  golem-a-" in listing
    assert run_cli(["vault", "import", "--config", conf, t.testament_id]) == EXIT_OK
    assert "--inherit" in capsys.readouterr().out
    other = golem_config(tmp_path / "young", "golem-y")
    assert run_cli(["testament", "show", "--config", str(other.source)]) == EXIT_CONFIG
    assert "has left no testament" in capsys.readouterr().err

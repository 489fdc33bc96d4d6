"""The local vault (Styx L0): testaments and Grimoire snapshots exported to a directory.

Opt-in (succession.vault_enabled) and files only: nothing leaves the machine. Layout:

    <vault>/testaments/<testament_id>.json         validated copies, mode 0644
    <vault>/snapshots/<label>/grimoire.db          the semantic store (SQLite backup API)
    <vault>/snapshots/<label>/PLAYBOOK.md, MEMORY.md, manifest.json

LanceDB episodes never cross (raw experience stays with the golem that lived it). The
semantic store is copied by the Grimoire's own reader (golem.grimoire.store_files);
every failure here is a VaultError naming what went wrong.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio.to_thread

from golem.errors import EXIT_CONFIG, GolemError
from golem.grimoire.errors import StoreCorrupt
from golem.grimoire.memory_file import MEMORY_FILE, atomic_write, fsync_dir
from golem.grimoire.playbook import PLAYBOOK_FILE
from golem.grimoire.store_files import SEMANTIC_FILE, backup_semantic_store, has_semantic_store
from golem.mortality import testament as tm

if TYPE_CHECKING:
    from golem.config import Config

TESTAMENTS = "testaments"
SNAPSHOTS = "snapshots"
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class VaultError(GolemError):
    """The vault is off, missing, or an export/import failed; one line says which."""

    exit_code = EXIT_CONFIG


@dataclass(frozen=True)
class VaultItem:
    kind: str  # "testament" | "snapshot"
    id: str
    path: Path
    detail: str


def vault_dir(config: Config) -> Path:
    """The configured vault; raises when it is off (nothing leaves unless configured)."""
    s = config.succession
    if not s.vault_enabled:
        raise VaultError("the vault is off (set succession.vault_enabled = true and "
                         "succession.vault_dir)")
    if not s.vault_dir:
        raise VaultError("succession.vault_dir is empty: where should the vault live?")
    path = Path(s.vault_dir).expanduser()
    base = config.source.resolve().parent if config.source is not None else Path.cwd()
    return path if path.is_absolute() else base / path


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def export_testament(vault: Path, path: Path) -> Path:
    """Validate ``path`` and copy it to the vault under its testament id (idempotent)."""
    t = tm.load_testament(path)
    dest = _mkdir(vault / TESTAMENTS) / f"{t.testament_id}.json"
    atomic_write(dest, path.read_bytes())
    dest.chmod(0o644)
    return dest


def export_snapshot(vault: Path, data_dir: Path, label: str) -> Path:
    """A consistent copy of the semantic store (safe while the golem runs) plus the
    PLAYBOOK.md and MEMORY.md beside it."""
    if not _LABEL.fullmatch(label):
        raise VaultError(f"snapshot label {label!r}: letters, digits, '.', '_' or '-' only")
    if not has_semantic_store(data_dir):
        raise VaultError(f"{data_dir / SEMANTIC_FILE}: no semantic store to snapshot")
    folder = _mkdir(vault / SNAPSHOTS) / label
    if folder.exists():
        raise VaultError(f"snapshot {label!r} already exists in {vault}")
    tmp = _mkdir(vault / SNAPSHOTS / f".{label}.partial")
    try:
        try:
            backup_semantic_store(data_dir, tmp / SEMANTIC_FILE)
        except StoreCorrupt as exc:
            raise VaultError(f"snapshot failed: {exc}") from None
        files = [SEMANTIC_FILE]
        for name in (PLAYBOOK_FILE, MEMORY_FILE):
            if (data_dir / name).exists():
                shutil.copyfile(data_dir / name, tmp / name)
                files.append(name)
        manifest = {"label": label, "files": files, "source": str(data_dir),
                    "episodes": "not exported (LanceDB episodes never cross)"}
        atomic_write(tmp / "manifest.json", (json.dumps(manifest, indent=1) + "\n").encode())
        tmp.rename(folder)
        fsync_dir(folder.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


def list_vault(vault: Path) -> list[VaultItem]:
    """Testaments (validated on read; invalid ones listed as such) and snapshots."""
    if not vault.is_dir():
        raise VaultError(f"{vault}: no vault here yet")
    items = []
    for path in sorted((vault / TESTAMENTS).glob("*.json")):
        try:
            t = tm.load_testament(path)
            detail = (f"{t.golem_name} generation {t.generation}, died {t.died_at:.0f} "
                      f"({t.cause}), {len(t.entries)} entries")
            items.append(VaultItem("testament", t.testament_id, path, detail))
        except tm.TestamentError as exc:
            items.append(VaultItem("testament", path.stem, path, f"INVALID: {exc}"))
    for folder in sorted(p for p in (vault / SNAPSHOTS).glob("*") if p.is_dir()
                         and not p.name.startswith(".")):
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        items.append(VaultItem("snapshot", folder.name, folder, f"{size} bytes"))
    return items


def import_testament(vault: Path, testament_id: str) -> Path:
    """The vault's testament with this id (or unique id prefix), validated: the path to
    give ``golem run --inherit``."""
    found = sorted((vault / TESTAMENTS).glob(f"{testament_id}*.json")) \
        if _LABEL.fullmatch(testament_id) else []
    if len(found) != 1:
        what = "no testament" if not found else f"{len(found)} testaments"
        raise VaultError(f"{what} in {vault} match {testament_id!r}")
    tm.load_testament(found[0])
    return found[0]


def exporter(config: Config) -> Callable[[Path], Awaitable[str]] | None:
    """For the death protocol (DeathServices.vault_export): the testament and a snapshot
    labelled with its id, or None when the vault is off."""
    if not config.succession.vault_enabled:
        return None
    vault, data_dir = vault_dir(config), config.data_dir

    async def export(path: Path) -> str:
        def run() -> str:
            dest = export_testament(vault, path)
            snap = vault / SNAPSHOTS / dest.stem
            if not snap.exists() and has_semantic_store(data_dir):
                snap = export_snapshot(vault, data_dir, dest.stem)
            return f"testament {dest}; snapshot {snap}"

        return await anyio.to_thread.run_sync(run)

    return export

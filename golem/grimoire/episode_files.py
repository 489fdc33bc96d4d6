"""The episode store's files for callers that must not open the Grimoire (it loads the
embedding model): `golem check`, `golem backup`, `golem memory rebuild-episodes`.

The store (``DATA/episodes/``) is rebuildable: every episode is a chain event with a
stable id (chain id, block hash, log index), so capture run again from the first block
writes the same ids. What capture cannot bring back is what consolidation added to the
rows (replay counts, verification marks, importance changes).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from golem.grimoire import episodes_layout as layout
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.errors import StoreCorrupt

EPISODES_DIR = "episodes"
_LANCE_VERSIONS = "_versions"
_VERSION_HINT = "latest_version_hint.json"
_SQLITE_FILES = (".db", ".db-wal", ".db-shm")


def episode_dir(data_dir: Path) -> Path:
    return data_dir / EPISODES_DIR


def verify_episode_store(data_dir: Path) -> int | None:
    """Open the data dir's episode store without writing to it and verify its latest
    version (EpisodeStore.verify). Returns its episode count, None when there is no store
    yet; raises StoreCorrupt naming the damage and the way out."""
    directory = episode_dir(data_dir)
    if not directory.is_dir():
        return None
    meta = layout.read_meta(directory)
    if meta is None:
        return None
    store = EpisodeStore.open(directory, meta.signature, index_min_rows=1 << 62,
                              for_migration=True, sweep_orphans=False)
    try:
        return store.count()
    finally:
        store.close()


@dataclass(frozen=True)
class MovedAside:
    """Where a damaged episode store went, and what its rows held that capture cannot redo."""

    path: Path
    readable_rows: int | None  # None: the table could not even be counted


def move_episode_store_aside(data_dir: Path, now: float | None = None) -> MovedAside | None:
    """Rename ``DATA/episodes`` to ``DATA/episodes.damaged-<unix time>`` (kept for
    inspection, never deleted here), so the next open creates an empty store. None when
    there is no store. The caller holds the data-dir lock."""
    directory = episode_dir(data_dir)
    if not directory.exists():
        return None
    rows: int | None
    try:
        rows = verify_episode_store(data_dir)
    except StoreCorrupt:
        rows = None
    stamp = int(now if now is not None else time.time())
    target = data_dir / f"{EPISODES_DIR}.damaged-{stamp}"
    n = 1
    while target.exists():
        target = data_dir / f"{EPISODES_DIR}.damaged-{stamp}-{n}"
        n += 1
    directory.rename(target)
    return MovedAside(target, rows)


def copy_episode_store(data_dir: Path, dest: Path) -> None:
    """Copy the episode store to ``dest`` (a new directory) at its latest committed version,
    while a golem may be writing it: LanceDB never rewrites a file, so the version
    manifests present now are listed first, every other file is copied, and then only
    those manifests, so no copied manifest names a file written after the listing. The
    version hint is left out (LanceDB then lists the manifests); SQLite files beside the
    table (replay counts) are not copied: the caller copies them with SQLite's backup
    API. Raises OSError (FileNotFoundError when a file the listed version needs went
    away mid-copy: the caller may try again)."""
    source = episode_dir(data_dir)
    if not source.is_dir():
        return
    manifests = {p: p.stat().st_size for p in source.rglob(f"{_LANCE_VERSIONS}/*.manifest")}
    for path in sorted(source.rglob("*")):
        if (path.is_dir() or path.name.startswith(".tmp") or path.name == _VERSION_HINT
                or path.name.endswith(_SQLITE_FILES)):
            continue  # SQLite files (replay counts) are the caller's: copy them consistently
        if path.parent.name == _LANCE_VERSIONS and path not in manifests:
            continue  # committed after the listing
        if path in manifests:
            continue  # copied last
        _copy(path, dest / path.relative_to(source))
    for path in sorted(manifests):
        _copy(path, dest / path.relative_to(source))


def _copy(path: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        shutil.copy2(path, target)
    except FileNotFoundError:
        if path.suffix in (".lance", ".manifest", ".idx"):
            raise  # a file the listed version needs went away: the caller retries
        return  # a stray temp file went away

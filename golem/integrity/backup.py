"""`golem backup` and `golem restore`: a consistent copy of a data dir, running golem or not.

The copy is made in an order that keeps it consistent across stores: the simulated
market's snapshots first (each stands for journal rows of the capture store, copied
after it, so none is ahead of the copied journal), then the SQLite files (each with
SQLite's online backup API, so a golem writing them is no problem), then the episode
store (LanceDB files are never rewritten: the copy takes the latest version committed
when it starts). A store copied earlier never refers to more than a
store copied later holds: the capture cursor is no further than the episodes, the
semantic entries cite only episodes that exist. Other files (MEMORY.md, the playbook,
the wallet key with its 0600 mode, the event log) are copied as they are. The lock file
and SQLite's -wal/-shm files are not copied. ``BACKUP.json`` records what was copied.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from golem.chain.snapshots import SNAPSHOT_DIR
from golem.errors import CannotWrite, NoInput, StateError
from golem.grimoire.episode_files import EPISODES_DIR, copy_episode_store
from golem.integrity.check import SET_ASIDE, Finding, check_data_dir, sqlite_files
from golem.runtime.lock import DataDirLock
from golem.runtime.state import online_copy

MANIFEST = "BACKUP.json"
MANIFEST_FORMAT = 1
_SKIP_SUFFIXES = ("-wal", "-shm", "-journal")
_LOCK_FILE = "golem.lock"
_COPY_ATTEMPTS = 3


@dataclass(frozen=True)
class BackupReport:
    dest: Path
    files: int
    episodes: int | None
    problems: tuple[Finding, ...]


def backup(data_dir: Path, dest: Path, *, made_at: float,
           progress: Callable[[str], None] = lambda _: None) -> BackupReport:
    """Copy ``data_dir`` to ``dest`` (which must not exist, or be an empty directory), then
    check the copy deeply. NoInput when there is no data dir; CannotWrite when ``dest``
    is taken or cannot be written. The report lists the copy's problems (none expected)."""
    if not data_dir.is_dir():
        raise NoInput(f"no data dir at {data_dir}: nothing to back up")
    if dest.resolve().is_relative_to(data_dir.resolve()):
        raise CannotWrite(f"{dest}: a backup cannot go inside the data dir it copies")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise CannotWrite(f"{dest} exists and is not an empty directory; choose a new one")
    try:
        dest.mkdir(parents=True, exist_ok=True, mode=0o700)
        dest.chmod(0o700)
        plain = _plain_files(data_dir)
        snapshots = [p for p in plain
                     if p.relative_to(data_dir).parts[:2] == ("chain", SNAPSHOT_DIR)]
        copied = _copy_plain(data_dir, dest, snapshots)
        databases = sqlite_files(data_dir)
        for path in databases:
            progress(f"copying {path.relative_to(data_dir)}")
            _copy_sqlite(path, dest / path.relative_to(data_dir))
        copied += len(databases)
        copied += _copy_plain(data_dir, dest, [p for p in plain if p not in snapshots])
        progress("copying the episode store")
        _copy_episodes(data_dir, dest)
    except OSError as exc:
        raise CannotWrite(f"{dest}: backup failed: {exc.strerror or exc}") from None
    progress("checking the copy (integrity_check, episode store)")
    findings = check_data_dir(dest, deep=True)
    episodes = next((f.episodes for f in findings if f.episodes is not None), None)
    manifest = {"format": MANIFEST_FORMAT, "source": str(data_dir.resolve()),
                "made_at": made_at, "files": copied, "episodes": episodes}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return BackupReport(dest, copied, episodes, tuple(f for f in findings if not f.ok))


def restore(source: Path, data_dir: Path, *, force: bool, stamp: int) -> Path | None:
    """Put the backup at ``source`` in place as ``data_dir``. A data dir that exists and is
    not empty is refused unless ``force``; then (with its lock held: no golem may run on
    it) it is moved aside to ``<data_dir>.restored-aside-<stamp>``, whose path is
    returned. NoInput when ``source`` is not a backup."""
    if not (source / MANIFEST).is_file():
        raise NoInput(f"{source} is not a golem backup (no {MANIFEST}); make one with "
                      "`golem backup --to DIR`")
    aside: Path | None = None
    if data_dir.exists() and any(data_dir.iterdir()):
        if not force:
            raise CannotWrite(f"{data_dir} is not empty; pass --force to move it aside and "
                              "restore in its place")
        lock = DataDirLock(data_dir)
        lock.acquire()  # LockHeldError while a golem runs on it
        try:
            aside = data_dir.with_name(f"{data_dir.name}.restored-aside-{stamp}")
            data_dir.rename(aside)
        finally:
            lock.release()
    try:
        staging = data_dir.with_name(f".{data_dir.name}.restoring-{stamp}")
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns(MANIFEST))
        staging.chmod(0o700)
        staging.rename(data_dir)
    except OSError as exc:
        raise CannotWrite(f"{data_dir}: restore failed: {exc.strerror or exc}") from None
    return aside


def _copy_plain(data_dir: Path, dest: Path, paths: list[Path]) -> int:
    copied = 0
    for path in paths:
        target = dest / path.relative_to(data_dir)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            shutil.copy2(path, target)
        except FileNotFoundError:
            continue  # replaced or removed while we copied: a temp file, an old snapshot
        copied += 1
    return copied


def _copy_sqlite(path: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        online_copy(path, target)
        os.chmod(target, path.stat().st_mode & 0o777)
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot copy it ({exc}); check it with `golem check`") \
            from None


def _plain_files(data_dir: Path) -> list[Path]:
    """Files that are neither SQLite (copied with the backup API) nor in the episode
    store (copied version by version) nor the lock, nor stores set aside."""
    out = []
    for path in sorted(data_dir.rglob("*")):
        rel = path.relative_to(data_dir)
        if (not path.is_file() or rel.parts[0] == EPISODES_DIR or path.suffix == ".db"
                or path.name.endswith(_SKIP_SUFFIXES) or rel.as_posix() == _LOCK_FILE
                or any(mark in part for part in rel.parts for mark in SET_ASIDE)):
            continue
        out.append(path)
    return out


def _copy_episodes(data_dir: Path, dest: Path) -> None:
    """The Lance files; retried when a file the listed version needed went away (the
    golem's upkeep cleaned an old version up while we copied)."""
    for attempt in range(1, _COPY_ATTEMPTS + 1):
        target = dest / EPISODES_DIR
        try:
            copy_episode_store(data_dir, target)
            return
        except FileNotFoundError:
            if attempt == _COPY_ATTEMPTS:
                raise
            for path in target.rglob("*"):
                if path.is_file() and path.suffix != ".db":
                    path.unlink()

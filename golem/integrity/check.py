"""`golem check`: every store in a data dir checked without opening the golem.

SQLite files get ``PRAGMA quick_check`` (pages readable; ``--deep``: the full
``integrity_check``, indexes against their tables too); the episode store's latest
LanceDB version is verified (every data, deletion and index file it names opens); the
simulated market's snapshots (data/chain/snapshots/) must match their checksums.
Read-only: safe beside a running golem.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import anyio.to_thread
import structlog

from golem.chain.snapshots import snapshot_problems
from golem.grimoire.episode_files import EPISODES_DIR, verify_episode_store
from golem.grimoire.errors import StoreCorrupt
from golem.runtime.jobs import Job, JobCounters

log = structlog.get_logger("golem.integrity")
DAILY = 86_400.0

# Directories inside a data dir that are not live stores: stores moved aside, backups.
SET_ASIDE = (".damaged-", ".restored-aside-")


@dataclass(frozen=True)
class Finding:
    """One store's verdict: ``problem`` is empty when it is intact."""

    path: Path
    what: str
    problem: str = ""
    remedy: str = ""
    episodes: int | None = None  # the episode store's count, when it is intact

    @property
    def ok(self) -> bool:
        return not self.problem


def sqlite_files(data_dir: Path) -> list[Path]:
    """The live SQLite files of a data dir (``*.db``), stores set aside excluded."""
    return sorted(p for p in data_dir.rglob("*.db")
                  if p.is_file() and not any(m in part for part in p.relative_to(data_dir).parts
                                             for m in SET_ASIDE))


def sqlite_problem(path: Path, deep: bool) -> str:
    """'' when SQLite finds the file intact, else the first problem it names."""
    pragma = "integrity_check(1)" if deep else "quick_check(1)"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            row = conn.execute(f"PRAGMA {pragma}").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    return "" if row is None or row[0] == "ok" else " ".join(str(row[0]).split())


def check_data_dir(data_dir: Path, *, deep: bool) -> list[Finding]:
    """A verdict for every store in ``data_dir`` (which must exist)."""
    findings: list[Finding] = []
    for path in sqlite_files(data_dir):
        rel = path.relative_to(data_dir)
        problem = sqlite_problem(path, deep)
        rebuildable = rel.parts[0] == EPISODES_DIR
        remedy = ("part of the episode store: run `golem memory rebuild-episodes`"
                  if rebuildable else
                  "cannot be rebuilt: restore the data dir from a backup (`golem restore`), "
                  "or move the file aside to start that store afresh and lose what it held")
        findings.append(Finding(path, "SQLite", problem, remedy if problem else ""))
    for path, problem in snapshot_problems(data_dir / "chain"):
        findings.append(Finding(path, "market snapshot", problem,
                                "delete the file: the next start restores an older snapshot "
                                "or replays the market journal from genesis (slower; the "
                                "same chain)"))
    episodes = data_dir / EPISODES_DIR
    try:
        count = verify_episode_store(data_dir)
    except StoreCorrupt as exc:
        findings.append(Finding(episodes, "episode store", str(exc)))  # names the fix
    else:
        if count is not None:
            findings.append(Finding(episodes, "episode store", episodes=count))
    return findings


def integrity_job(data_dir: Path) -> Job:
    """A daily calendar job: SQLite's full integrity_check on every SQLite file of the
    running golem's data dir (the episode store is verified at each start). Damage is
    logged as an error naming the file and the fix; the golem keeps running, since the
    stores it has open keep working until a damaged page is read."""

    async def run() -> JobCounters:
        found = await anyio.to_thread.run_sync(
            lambda: [(p, sqlite_problem(p, deep=True)) for p in sqlite_files(data_dir)])
        damaged = [(path, problem) for path, problem in found if problem]
        for path, problem in damaged:
            log.error("store damaged: stop the golem, run `golem check --deep`, restore "
                      "the file from a backup (`golem restore`)", path=str(path),
                      problem=problem)
        return {"sqlite_checked": len(found), "sqlite_damaged": len(damaged)}

    return Job("integrity-check", DAILY, run)

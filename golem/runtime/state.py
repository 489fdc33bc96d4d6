"""The durable state store: counters, cursors and anything later parts must not lose.

SQLite in WAL mode with ``synchronous=FULL``: a committed write survives a
power cut. Schema changes are numbered migrations applied in order; a store
written by a newer build is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from golem.errors import StateError

if TYPE_CHECKING:
    from golem.config import Config

STATE_FILE = "state.db"

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE loops (
        name TEXT PRIMARY KEY,
        ticks INTEGER NOT NULL DEFAULT 0,
        ok INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0,
        timed_out INTEGER NOT NULL DEFAULT 0,
        cancelled INTEGER NOT NULL DEFAULT 0,
        skipped_overrun INTEGER NOT NULL DEFAULT 0,
        skipped_backoff INTEGER NOT NULL DEFAULT 0,
        consecutive_failures INTEGER NOT NULL DEFAULT 0,
        last_tick_at REAL,
        last_duration_ms REAL,
        last_outcome TEXT,
        next_due REAL
    );
    CREATE TABLE errors (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        golem_time REAL NOT NULL,
        wall_time REAL NOT NULL,
        loop TEXT NOT NULL,
        tick INTEGER NOT NULL,
        kind TEXT NOT NULL,
        message TEXT NOT NULL
    );
    """,
    # 2: the Context Governor's policy revisions and its Beta state (governor/policy_store.py)
    """
    CREATE TABLE context_policy (
        revision INTEGER PRIMARY KEY,
        policy TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE context_beta (
        regime TEXT NOT NULL,
        category TEXT NOT NULL,
        alpha REAL NOT NULL,
        beta REAL NOT NULL,
        revision INTEGER NOT NULL,
        PRIMARY KEY (regime, category)
    );
    """,
)

ERRORS_KEPT = 200


def read_only_rows(path: Path, what: str, sql: str,
                   args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]] | None:
    """Rows of one query on a SQLite file opened read-only (for status and readers that
    must not disturb a running golem); None when the file does not exist yet, or exists
    without any table yet (its writer is creating it). A missing table in a file that has
    others is an error, as is any other SQLite error."""
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            try:
                return conn.execute(sql, args).fetchall()
            except sqlite3.OperationalError:
                if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                    return None
                raise
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise StateError(f"{path}: cannot read {what}: {exc}") from None


def online_copy(source: Path, dest: Path) -> None:
    """A consistent copy of the SQLite file ``source`` at ``dest`` with SQLite's online
    backup API (safe while another process writes it; ``source`` is opened read-only).
    Raises sqlite3.Error; callers name the store in their own error."""
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
    try:
        src.execute("PRAGMA busy_timeout=5000")
        out = sqlite3.connect(dest)
        try:
            src.backup(out)
        finally:
            out.close()
    finally:
        src.close()


class SharedConnection(sqlite3.Connection):
    """A connection the loops' worker threads share. ``durable_write`` holds ``lock`` from
    BEGIN to COMMIT: without it, Gamma committing its capture cursor while Theta journalled
    a transaction on the same connection failed Theta's tick ("cannot start a transaction
    within a transaction")."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lock = threading.RLock()


def connect_shared(path: Path) -> SharedConnection:
    """Autocommit (callers BEGIN IMMEDIATE themselves), usable from worker threads."""
    conn: SharedConnection = sqlite3.connect(path, isolation_level=None,
                                             check_same_thread=False, factory=SharedConnection)
    return conn


def damage(conn: sqlite3.Connection) -> str | None:
    """SQLite's quick_check of an open database: None when it is intact, else the first
    problem it names (pages are read, not the indexes' contents: cheap at open)."""
    row = conn.execute("PRAGMA quick_check(1)").fetchone()
    return None if row is None or row[0] == "ok" else " ".join(str(row[0]).split())


def damaged_message(path: Path, what: str, problem: str) -> str:
    """The one line an operator gets for a damaged SQLite file."""
    return (f"{path}: {what} is damaged ({problem}); the golem will not run on it: restore "
            "the file from a backup, or move it aside to start that store afresh")


def connect_durable(path: Path, what: str, schema: str = "") -> sqlite3.Connection:
    """A SQLite connection for state that must survive a crash: WAL, synchronous=FULL,
    autocommit (callers BEGIN IMMEDIATE themselves), usable from worker threads.
    `schema` (idempotent DDL) is applied. A file SQLite's quick_check finds damaged is
    refused; every failure is a StateError naming the file and `what`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = connect_shared(path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        # a WAL file is reused, never shrunk: keep it small after each checkpoint
        conn.execute("PRAGMA journal_size_limit=1048576")
        conn.execute("PRAGMA busy_timeout=5000")
        problem = damage(conn)
        if problem is None and schema:
            conn.executescript(schema)
    except (OSError, sqlite3.Error) as exc:
        raise StateError(f"{path}: cannot open {what}: {exc}") from None
    if problem is not None:
        conn.close()
        raise StateError(damaged_message(path, what, problem))
    return conn


@dataclass
class LoopCounters:
    """Per-loop progress, persisted so a restart resumes numbering and schedule."""

    name: str
    ticks: int = 0
    ok: int = 0
    failed: int = 0
    timed_out: int = 0
    cancelled: int = 0
    skipped_overrun: int = 0
    skipped_backoff: int = 0
    consecutive_failures: int = 0
    last_tick_at: float | None = None
    last_duration_ms: float | None = None
    last_outcome: str | None = None
    next_due: float | None = None


@dataclass(frozen=True)
class ErrorRecord:
    golem_time: float
    wall_time: float
    loop: str
    tick: int
    kind: str
    message: str


_LOOP_COLUMNS = tuple(f.name for f in fields(LoopCounters))


class StateStore:
    """One connection, used by one thread at a time (the runtime serialises access)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> StateStore:
        path = data_dir / STATE_FILE
        conn = connect_durable(path, "state store")
        try:
            _migrate(conn)
        except sqlite3.Error as exc:
            conn.close()
            raise StateError(f"{path}: cannot open state store: {exc}") from None
        return cls(conn, path)

    @classmethod
    def open_readonly(cls, data_dir: Path) -> StateStore | None:
        """For ``golem status``: None when there is no store; never creates one."""
        path = data_dir / STATE_FILE
        if not path.exists():
            return None
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True,
                                   isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA busy_timeout=5000")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            raise StateError(f"{path}: cannot read state store: {exc}") from None
        if version > len(MIGRATIONS):
            raise StateError(f"{path}: written by a newer golem (schema {version})")
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def get_meta(self, key: str, default: Any = None) -> Any:
        row = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return json.loads(row[0][0]) if row else default

    def all_meta(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self._query("SELECT key, value FROM meta", ())}

    def load_loops(self) -> dict[str, LoopCounters]:
        columns = ", ".join(_LOOP_COLUMNS)  # our own constant names, not input
        rows = self._query(f"SELECT {columns} FROM loops ORDER BY name", ())  # noqa: S608
        return {row[0]: LoopCounters(*row) for row in rows}

    def latest_policy_revision(self) -> tuple[int, float] | None:
        """(revision, golem time) of the newest learnt context policy, for status."""
        rows = self._query("SELECT revision, created_at FROM context_policy "
                           "ORDER BY revision DESC LIMIT 1", ())
        return (int(rows[0][0]), float(rows[0][1])) if rows else None

    def recent_errors(self, limit: int = 10) -> list[ErrorRecord]:
        rows = self._query(
            "SELECT golem_time, wall_time, loop, tick, kind, message FROM errors "
            "ORDER BY id DESC LIMIT ?", (limit,))
        return [ErrorRecord(*row) for row in rows]

    def save(
        self,
        loops: Iterable[LoopCounters] = (),
        meta: Mapping[str, Any] | None = None,
        errors: Iterable[ErrorRecord] = (),
    ) -> None:
        """One transaction: loop counters, meta values and new error records."""
        placeholders = ", ".join("?" for _ in _LOOP_COLUMNS)
        with durable_write(self._conn, self.path) as conn:
            conn.executemany(
                f"INSERT OR REPLACE INTO loops ({', '.join(_LOOP_COLUMNS)}) "  # noqa: S608
                f"VALUES ({placeholders})",
                [tuple(asdict(c).values()) for c in loops],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in (meta or {}).items()],
            )
            new_errors = [(e.golem_time, e.wall_time, e.loop, e.tick, e.kind, e.message)
                          for e in errors]
            if new_errors:
                conn.executemany(
                    "INSERT INTO errors (golem_time, wall_time, loop, tick, kind, message) "
                    "VALUES (?, ?, ?, ?, ?, ?)", new_errors)
                conn.execute(
                    "DELETE FROM errors WHERE id <= (SELECT MAX(id) FROM errors) - ?",
                    (ERRORS_KEPT,))

    def _query(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from exc



@contextlib.contextmanager
def durable_write(conn: sqlite3.Connection, path: Path,
                  what: str = "write") -> Iterator[sqlite3.Connection]:
    """One BEGIN IMMEDIATE ... COMMIT on an autocommit connection, holding a
    SharedConnection's lock throughout (other threads' writes wait their turn). Any
    exception rolls back (so the connection is never left inside a transaction);
    SQLite's own errors come out as StateError naming the file."""
    lock = conn.lock if isinstance(conn, SharedConnection) else contextlib.nullcontext()
    with lock:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StateError(f"{path}: {what} failed: {exc}") from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StateError(f"{path}: {what} failed: {exc}") from None
            raise


def _migrate(conn: sqlite3.Connection) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > len(MIGRATIONS):
        raise sqlite3.DatabaseError(f"written by a newer golem (schema {version})")
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def cli_golem_now(config: Config) -> Callable[[], float]:
    """Golem time for a command run beside (or instead of) the daemon: the wall clock, or a
    simulated golem's last persisted time (frozen), so CLI writes never jump its clock."""
    if config.clock.mode == "real":
        return time.time
    store = StateStore.open_readonly(config.data_dir) if config.data_dir.exists() else None
    persisted = None
    if store is not None:
        try:
            persisted = store.get_meta("golem_time")
        finally:
            store.close()
    at = float(persisted) if persisted is not None else config.clock.start.timestamp()
    return lambda: at

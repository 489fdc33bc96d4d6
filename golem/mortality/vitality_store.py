"""Vitality's durable history (SQLite, <data_dir>/mortality/vitality.db).

Birth time (golem time at the first open), one sample per Delta tick, the phase
transitions, the hazard shocks taken and the first Terminal reading. A restart resumes
from here: the golem keeps its age, its shocks are not re-rolled (a tick's shock is
written with its sample, and the draw is seeded by the tick), and the senescence streak
carries on. Blocking SQLite: call from a worker thread in async code.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.config import MortalitySection
from golem.errors import StateError
from golem.governor.categories import Phase
from golem.mortality.projection import Projection, project_terminal
from golem.mortality.vitality import time_to_terminal
from golem.runtime.duration import format_duration
from golem.runtime.state import connect_durable, durable_write, read_only_rows

STORE_DIR = "mortality"
STORE_DB = "vitality.db"
TREND_POINTS = 12  # samples the projected time to live is fitted on

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value REAL NOT NULL, note TEXT);
CREATE TABLE IF NOT EXISTS samples (
    tick INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    economic REAL NOT NULL,
    epistemic REAL NOT NULL,
    stochastic REAL NOT NULL,
    composite REAL NOT NULL,
    phase TEXT NOT NULL,
    cause TEXT NOT NULL,
    unproven INTEGER NOT NULL,
    senescent_streak INTEGER NOT NULL,
    hayflick REAL NOT NULL,
    shock_factor REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS transitions (
    tick INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    from_phase TEXT,
    to_phase TEXT NOT NULL,
    composite REAL NOT NULL,
    cause TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS shocks (tick INTEGER PRIMARY KEY, t REAL NOT NULL, size REAL NOT NULL);
"""
_SAMPLE_COLS = ("tick, t, economic, epistemic, stochastic, composite, phase, cause, unproven, "
                "senescent_streak, hayflick, shock_factor")


@dataclass(frozen=True)
class Reading:
    """What Theta needs of vitality each tick."""

    phase: Phase
    composite: float
    cause: str


NEWBORN = Reading(Phase.THRIVING, 1.0, "none yet (newborn)")


@dataclass(frozen=True)
class Sample:
    """One Delta tick's vitality. `senescent_streak`: consecutive checks (this one
    included) with predictive fitness below the senescence threshold."""

    tick: int
    t: float
    economic: float
    epistemic: float
    stochastic: float
    composite: float
    phase: Phase
    cause: str
    unproven: bool
    senescent_streak: int
    hayflick: float
    shock_factor: float

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> Sample:
        return cls(int(row[0]), float(row[1]), float(row[2]), float(row[3]), float(row[4]),
                   float(row[5]), Phase(row[6]), str(row[7]), bool(row[8]), int(row[9]),
                   float(row[10]), float(row[11]))


class VitalityStore:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path, now: float) -> VitalityStore:
        """Open (creating it at the first start: that golem time is the birth)."""
        path = data_dir / STORE_DIR / STORE_DB
        store = cls(connect_durable(path, "the vitality store", _SCHEMA), path)
        with durable_write(store._conn, path, "recording the birth") as conn:
            conn.execute("INSERT OR IGNORE INTO meta VALUES ('birth', ?, NULL)", (now,))
        return store

    def close(self) -> None:
        self._conn.close()

    def birth(self) -> float:
        return float(self._read("SELECT value FROM meta WHERE key = 'birth'")[0][0])

    def latest(self, before_tick: int | None = None) -> Sample | None:
        """The newest sample (of a tick before `before_tick`, when given)."""
        rows = self._read(f"SELECT {_SAMPLE_COLS} FROM samples WHERE tick < ? "  # noqa: S608
                          "ORDER BY tick DESC LIMIT 1",
                          (before_tick if before_tick is not None else 2**62,))
        return Sample.from_row(rows[0]) if rows else None

    def latest_phase(self) -> Phase:
        """The newest phase (Thriving before the first sample)."""
        return self.latest_reading().phase

    def latest_reading(self) -> Reading:
        """For Theta: the newest phase, vitality and weakest clock. A newborn (no sample
        yet) is at full vitality: every component reads 1.0."""
        rows = self._read("SELECT phase, composite, cause FROM samples "
                          "ORDER BY tick DESC LIMIT 1")
        if not rows:
            return NEWBORN
        phase, composite, cause = rows[0]
        return Reading(Phase(phase), float(composite), str(cause))

    def recent(self, n: int) -> list[Sample]:
        """The newest n samples, oldest first."""
        rows = self._read(f"SELECT {_SAMPLE_COLS} FROM samples "  # noqa: S608
                          "ORDER BY tick DESC LIMIT ?", (n,))
        return [Sample.from_row(r) for r in reversed(rows)]

    def shocks(self, before_tick: int | None = None) -> list[tuple[int, float]]:
        """Hazard shocks taken, (tick, size), oldest first."""
        rows = self._read("SELECT tick, size FROM shocks WHERE tick < ? ORDER BY tick",
                          (before_tick if before_tick is not None else 2**62,))
        return [(int(t), float(s)) for t, s in rows]

    def transitions(self) -> list[tuple[int, float, str | None, str, float, str]]:
        rows = self._read("SELECT tick, t, from_phase, to_phase, composite, cause "
                          "FROM transitions ORDER BY tick")
        return [(int(r[0]), float(r[1]), r[2], str(r[3]), float(r[4]), str(r[5]))
                for r in rows]

    def record(self, sample: Sample, *, transition_from: Phase | None, changed: bool,
               shock: float | None) -> None:
        """A tick's sample, its phase transition (if the phase changed) and its shock (if
        one arrived) in one transaction; a replayed tick replaces its rows."""
        with durable_write(self._conn, self.path, "recording vitality") as conn:
            conn.execute(f"INSERT OR REPLACE INTO samples ({_SAMPLE_COLS}) VALUES "  # noqa: S608
                         "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         (sample.tick, sample.t, sample.economic, sample.epistemic,
                          sample.stochastic, sample.composite, sample.phase.value, sample.cause,
                          int(sample.unproven), sample.senescent_streak, sample.hayflick,
                          sample.shock_factor))
            conn.execute("DELETE FROM transitions WHERE tick = ?", (sample.tick,))
            if changed:
                conn.execute("INSERT INTO transitions VALUES (?, ?, ?, ?, ?, ?)",
                             (sample.tick, sample.t,
                              transition_from.value if transition_from else None,
                              sample.phase.value, sample.composite, sample.cause))
            conn.execute("DELETE FROM shocks WHERE tick = ?", (sample.tick,))
            if shock is not None:
                conn.execute("INSERT INTO shocks VALUES (?, ?, ?)",
                             (sample.tick, sample.t, shock))

    def mark_terminal(self, tick: int, cause: str) -> bool:
        """Record the first Terminal reading and its cause; False if already recorded."""
        with durable_write(self._conn, self.path, "recording the terminal reading") as conn:
            cur = conn.execute("INSERT OR IGNORE INTO meta VALUES ('terminal_tick', ?, ?)",
                               (tick, cause))
            return cur.rowcount == 1

    def terminal(self) -> tuple[int, str] | None:
        rows = self._read("SELECT value, note FROM meta WHERE key = 'terminal_tick'")
        return (int(rows[0][0]), str(rows[0][1])) if rows else None

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None


def vitality_status(data_dir: Path, mortality: MortalitySection | None = None,
                    ) -> dict[str, Any] | None:
    """For `golem status`, read-only: the newest sample, the projected time to live, birth,
    transitions and shocks; None before the first sample (or the first start). With
    ``mortality`` (the configured clocks) also ``projection``: the time to Terminal on the
    components' own clocks with its early bound (golem.mortality.projection)."""
    path = data_dir / STORE_DIR / STORE_DB
    try:
        rows = read_only_rows(path, "the vitality store", f"SELECT {_SAMPLE_COLS} FROM samples "  # noqa: S608
                              "ORDER BY tick DESC LIMIT ?", (TREND_POINTS,))
        meta = dict((k, (v, n)) for k, v, n in read_only_rows(
            path, "the vitality store", "SELECT key, value, note FROM meta") or [])
        counts = read_only_rows(path, "the vitality store",
                                "SELECT (SELECT COUNT(*) FROM transitions), "
                                "(SELECT COUNT(*) FROM shocks), (SELECT COUNT(*) FROM samples)")
    except StateError:
        return None
    if not rows or "birth" not in meta:
        return {"birth": meta["birth"][0], "latest": None} if "birth" in meta else None
    samples = [Sample.from_row(r) for r in reversed(rows)]
    last = samples[-1]
    terminal = meta.get("terminal_tick")
    transitions, shocks, total = counts[0] if counts else (0, 0, 0)
    return {
        "birth": meta["birth"][0], "age_s": last.t - meta["birth"][0],
        "latest": {"tick": last.tick, "t": last.t, "economic": round(last.economic, 4),
                   "epistemic": round(last.epistemic, 4),
                   "stochastic": round(last.stochastic, 4),
                   "composite": round(last.composite, 4), "phase": last.phase.value,
                   "cause": last.cause, "unproven": last.unproven,
                   "senescent_streak": last.senescent_streak,
                   "hayflick": round(last.hayflick, 4),
                   "shock_factor": round(last.shock_factor, 4)},
        "ttl_s": time_to_terminal([(s.t, s.composite) for s in samples]),
        "terminal": {"tick": int(terminal[0]), "cause": terminal[1]} if terminal else None,
        "transitions": int(transitions), "shocks": int(shocks), "samples": int(total),
        "projection": None if mortality is None else _projection(
            samples, last.t - meta["birth"][0], mortality)}


def vitality_samples(data_dir: Path, limit: int = 10_000) -> list[Sample]:
    """The newest ``limit`` samples, oldest first, read-only (for `golem report`); empty
    before the first sample."""
    rows = read_only_rows(data_dir / STORE_DIR / STORE_DB, "the vitality store",
                          f"SELECT {_SAMPLE_COLS} FROM samples ORDER BY tick DESC "  # noqa: S608
                          "LIMIT ?", (limit,)) or []
    return [Sample.from_row(r) for r in reversed(rows)]


def _projection(samples: list[Sample], age_s: float,
                mortality: MortalitySection) -> dict[str, Any]:
    last = samples[-1]
    p = project_terminal(
        age_s=age_s, lifespan_s=mortality.lifespan_days * 86_400.0, economic=last.economic,
        epistemic=last.epistemic, shock_factor=last.shock_factor,
        hazard_per_day=mortality.hazard_per_day, hazard_shock=mortality.hazard_shock,
        economic_history=[(s.t, s.economic) for s in samples])
    return {"ttl_s": p.ttl_s, "earliest_s": p.earliest_s, "clock": p.clock,
            "expected_shocks": round(p.expected_shocks, 3), "shocks_p90": p.shocks_p90,
            "economic_slope_per_day": p.economic_slope_per_day,
            "lifespan_left_s": p.lifespan_left_s, "text": describe_projection(p, last)}


def describe_projection(p: Projection, last: Sample) -> str:
    """One line for `golem status` and the dashboard."""
    if p.clock == "terminal":
        return "terminal now"
    assert p.ttl_s is not None and p.earliest_s is not None
    why = ("by the Hayflick clock (exact; economic and epistemic held where they are)"
           if p.clock == "hayflick" else
           f"by the economic clock at its recent trend ({p.economic_slope_per_day:+.4f}/day) "
           "with the Hayflick clock")
    shocks = (f"; as soon as ~{format_duration(p.earliest_s)} if {p.shocks_p90} hazard "
              f"shock{'s' if p.shocks_p90 != 1 else ''} land (90th percentile; "
              f"{p.expected_shocks:.2f} expected)" if p.shocks_p90 else
              f"; no hazard shock expected (mean {p.expected_shocks:.2f})")
    unproven = "; the epistemic clock is unproven" if last.unproven else ""
    return f"terminal in ~{format_duration(p.ttl_s)} {why}{shocks}{unproven}"

"""Theta's decision journal (SQLite, data/cognition/decisions.db): every decision cycle
record, and the predictions waiting for their horizon to be scored.

Records are written in one transaction per tick. A prediction is scored once, when
its due tick has passed, against the price Gamma observed then; the score is kept
next to it, so decision quality survives restarts.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.cognition.experts import Scored
from golem.cognition.predictions import (
    Outlook,
    beat_reference,
    observed_direction,
    outlook_brier,
    stated_outlook,
)
from golem.errors import StateError
from golem.runtime import jsondecode
from golem.runtime.state import connect_durable, durable_write, read_only_rows

JOURNAL_DIR = "cognition"
JOURNAL_DB = "decisions.db"
# recent_verdicts reads back at most this many predictions per verdict asked for (a
# window of 100: ~7 golem days of one prediction a minute)
LOOKBACK_PER_VERDICT = 100
KNOWLEDGE_CHUNK = 500  # ticks per statement (SQLite's variable limit is 999 in old builds)
# a decision's own outlook, reference subject and reference outlook: one JSON array
_KNOWLEDGE = ("json_extract(record, '$.knowledge.outlook', '$.knowledge.reference.subject', "
              "'$.knowledge.reference.outlook')")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    tick INTEGER PRIMARY KEY,
    golem_time REAL NOT NULL,
    provider TEXT NOT NULL,
    status TEXT NOT NULL,
    summary TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS predictions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tick INTEGER NOT NULL,
    subject TEXT NOT NULL,
    direction TEXT NOT NULL,
    magnitude REAL NOT NULL,
    confidence REAL NOT NULL,
    due_tick INTEGER NOT NULL,
    baseline REAL NOT NULL,
    actual REAL,
    quality REAL,
    hit INTEGER
);
CREATE INDEX IF NOT EXISTS predictions_due ON predictions (due_tick) WHERE quality IS NULL;
CREATE INDEX IF NOT EXISTS predictions_scored ON predictions (due_tick DESC, id DESC)
    WHERE quality IS NOT NULL;
CREATE INDEX IF NOT EXISTS predictions_tick ON predictions (tick);
CREATE TABLE IF NOT EXISTS outcomes (
    tick INTEGER PRIMARY KEY,
    regime TEXT NOT NULL,
    policy_revision INTEGER NOT NULL,
    injected TEXT NOT NULL,
    referenced TEXT NOT NULL,
    missing TEXT NOT NULL,
    cost_usd REAL NOT NULL,
    quality REAL,
    learned INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outcomes_unlearned ON outcomes (tick)
    WHERE learned = 0 AND quality IS NOT NULL;
CREATE TABLE IF NOT EXISTS loops (name TEXT PRIMARY KEY, last_tick INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS outlooks (
    tick INTEGER PRIMARY KEY,
    knowledge TEXT NOT NULL,
    prior TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Outcome:
    """Loop 1's record of one decision: which categories went in, which were used."""

    tick: int
    regime: str
    policy_revision: int
    injected: frozenset[str]
    referenced: frozenset[str]
    missing: frozenset[str]
    cost_usd: float = 0.0
    quality: float | None = None


@dataclass(frozen=True)
class OpenPrediction:
    id: int
    tick: int
    subject: str
    direction: str
    magnitude: float
    confidence: float
    baseline: float


@dataclass(frozen=True)
class PredictionSituation:
    """A scored prediction as the lab's oracle bound and reference see it
    (JournalReader.prediction_situations)."""

    golem_time: float
    observed: str  # what the feed did over the horizon: down, flat or up
    bucket: str | None  # the trailing-move bucket the decision saw
    reference: Outlook | None  # the no-change prior's outlook


class DecisionJournal:
    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, data_dir: Path) -> DecisionJournal:
        path = data_dir / JOURNAL_DIR / JOURNAL_DB
        return cls(connect_durable(path, "the decision journal", _SCHEMA), path)

    def close(self) -> None:
        self._conn.close()

    def record(self, tick: int, golem_time: float, *, provider: str, status: str,
               summary: str, record: dict[str, Any],
               predictions: list[tuple[str, str, float, float, int, float]],
               outcome: Outcome | None = None,
               outlooks: tuple[Outlook, Outlook] | None = None) -> None:
        """One decision, its predictions (subject, direction, magnitude, confidence, due
        tick, baseline price), its Loop 1 outcome and the offline tier's two forecasters'
        outlooks (knowledge, prior; JSON [down, flat, up]) in one transaction; a replayed
        tick replaces its rows."""
        with durable_write(self._conn, self.path) as conn:
            if outcome is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO outcomes VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 0)",
                    (tick, outcome.regime, outcome.policy_revision,
                     json.dumps(sorted(outcome.injected)), json.dumps(sorted(outcome.referenced)),
                     json.dumps(sorted(outcome.missing)), outcome.cost_usd))
            conn.execute("INSERT OR REPLACE INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                         (tick, golem_time, provider, status, summary, json.dumps(record)))
            conn.execute("DELETE FROM predictions WHERE tick = ?", (tick,))
            conn.execute("DELETE FROM outlooks WHERE tick = ?", (tick,))
            if outlooks is not None:
                conn.execute("INSERT INTO outlooks VALUES (?, ?, ?)",
                             (tick, json.dumps(outlooks[0]), json.dumps(outlooks[1])))
            conn.executemany(
                "INSERT INTO predictions (tick, subject, direction, magnitude, confidence, "
                "due_tick, baseline) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(tick, *p) for p in predictions])

    def due(self, tick: int) -> list[OpenPrediction]:
        rows = self._read(
            # SQLite's planner would rather scan every prediction in id order than sort
            # the few open ones the partial index holds
            "SELECT id, tick, subject, direction, magnitude, confidence, baseline "
            "FROM predictions INDEXED BY predictions_due "
            "WHERE quality IS NULL AND due_tick <= ? ORDER BY id", (tick,))
        return [OpenPrediction(*row) for row in rows]

    def settle(self, scores: list[tuple[int, float, float, bool]]) -> None:
        """(prediction id, actual price, quality, direction hit) for scored predictions;
        each decision's outcome quality becomes the mean of its scored predictions."""
        with durable_write(self._conn, self.path) as conn:
            conn.executemany(
                "UPDATE predictions SET actual = ?, quality = ?, hit = ? WHERE id = ?",
                [(actual, quality, int(hit), pid) for pid, actual, quality, hit in scores])
            conn.executemany(
                "UPDATE outcomes SET quality = (SELECT AVG(p.quality) FROM predictions p "
                "WHERE p.tick = outcomes.tick AND p.quality IS NOT NULL) "
                "WHERE tick = (SELECT tick FROM predictions WHERE id = ?)",
                [(pid,) for pid, *_ in scores])

    def unlearned_outcomes(self) -> list[Outcome]:
        """Scored outcomes Loop 2 has not learnt from yet (scoring lags by the horizon)."""
        rows = self._read(
            "SELECT tick, regime, policy_revision, injected, referenced, missing, cost_usd, "
            "quality FROM outcomes WHERE learned = 0 AND quality IS NOT NULL ORDER BY tick",
            ())
        return [Outcome(r[0], r[1], r[2], frozenset(json.loads(r[3])),
                        frozenset(json.loads(r[4])), frozenset(json.loads(r[5])), r[6], r[7])
                for r in rows]

    def outlook_record(self, limit: int) -> list[Scored]:
        """The newest ``limit`` scored offline predictions with both forecasters'
        outlooks, oldest first (golem.cognition.experts); rows that do not parse are
        skipped."""
        rows = self._read(
            "SELECT o.knowledge, o.prior, p.actual, p.baseline FROM predictions p "
            "JOIN outlooks o ON o.tick = p.tick WHERE p.quality IS NOT NULL "
            "AND p.baseline > 0 ORDER BY p.due_tick DESC, p.id DESC LIMIT ?", (limit,))
        out = []
        for knowledge, prior, actual, baseline in reversed(rows):
            k, p = _outlook(knowledge), _outlook(prior)
            if k is not None and p is not None:
                out.append(Scored(k, p, observed_direction(actual / baseline - 1.0)))
        return out

    def recent_verdicts(self, limit: int) -> list[bool]:
        """The epistemic clock's evidence: the newest ``limit`` verdicts, oldest first.
        A verdict is whether a scored prediction, whose outlook differed from the
        reference outlook its decision recorded for its subject, scored the better
        three-way Brier (``predictions.beat_reference``). Fewer when the journal holds
        fewer; the walk back stops after ``LOOKBACK_PER_VERDICT`` x ``limit`` predictions.

        Only predictions whose horizons do not overlap count: walking back from the
        newest, one is kept when its due tick is no later than the tick of the one kept
        after it. A prediction made every tick over a five-tick horizon shares four
        fifths of its outcome with the next one, so counting them all counted each
        outcome five times. Ties (the prediction said what the reference said) and
        predictions without a reference give no verdict. The window counts verdicts,
        not rows, so every reading rests on the same amount of evidence whatever the
        horizon and however often the golem says what the reference says. The outlook
        judged is the decision's own (the offline tier's) or, for a model's decision,
        the one its prediction states; decisions journalled before references were
        recorded fall back to the offline prior's outlook in ``outlooks``."""
        out: list[bool] = []
        start: int | None = None  # the tick of the newest prediction kept
        offset, page, cap = 0, max(64, 8 * limit), LOOKBACK_PER_VERDICT * limit
        while len(out) < limit and offset < cap:
            # the page's rows are chosen by the index before any record is read
            rows = self._read(
                "SELECT p.tick, p.due_tick, p.subject, p.direction, p.confidence, "
                "p.baseline, p.actual, o.prior "
                "FROM (SELECT * FROM predictions WHERE quality IS NOT NULL "
                "AND baseline > 0 ORDER BY due_tick DESC, id DESC LIMIT ? OFFSET ?) p "
                "JOIN decisions d ON d.tick = p.tick "
                "LEFT JOIN outlooks o ON o.tick = p.tick ORDER BY p.due_tick DESC, p.id DESC",
                (min(page, cap - offset), offset))
            offset += len(rows)
            kept = []
            for row in rows:
                if start is not None and row[1] > start:
                    continue
                start = row[0]
                kept.append(row)
            # Only the kept predictions' decisions are parsed (about one row in five when
            # a prediction is made every tick over a five-tick horizon): a record is
            # ~14 KB of JSON, and parsing every row's was most of this read.
            knowledge = self._knowledge([row[0] for row in kept])
            for tick, _due, subject, direction, confidence, baseline, actual, prior in kept:
                own, ref_subject, ref = _three(knowledge.get(tick))
                reference = _reference(subject, ref_subject, ref, prior)
                if reference is None:
                    continue
                outlook = _outlook_of(own) or stated_outlook(direction, float(confidence))
                verdict = beat_reference(outlook, reference,
                                         observed_direction(float(actual) / float(baseline) - 1.0))
                if verdict is not None:
                    out.append(verdict)
                    if len(out) >= limit:
                        break
            if len(rows) < page:
                break
        return out[::-1]

    def _knowledge(self, ticks: Sequence[int]) -> dict[int, str | None]:
        """_KNOWLEDGE of the decisions at ``ticks`` (one parse of each record for the
        three values)."""
        out: dict[int, str | None] = {}
        unique = list(dict.fromkeys(ticks))
        for i in range(0, len(unique), KNOWLEDGE_CHUNK):
            chunk = unique[i:i + KNOWLEDGE_CHUNK]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT tick, {_KNOWLEDGE} FROM decisions WHERE tick IN ({marks})"  # noqa: S608
            out.update(self._read(sql, tuple(chunk)))
        return out

    def last_tick(self) -> int | None:
        """The tick of the newest decision (None before the first)."""
        rows = self._read("SELECT max(tick) FROM decisions", ())
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    def last_record(self) -> dict[str, Any] | None:
        """The record of the newest decision (None before the first)."""
        rows = self._read("SELECT record FROM decisions ORDER BY tick DESC LIMIT 1", ())
        return jsondecode.loads(rows[0][0]) if rows else None

    def loop_tick(self, name: str) -> int:
        rows = self._read("SELECT last_tick FROM loops WHERE name = ?", (name,))
        return int(rows[0][0]) if rows else 0

    def set_loop_tick(self, name: str, tick: int, learned: tuple[int, ...] = ()) -> None:
        """Record a loop run and mark the outcomes it learnt from, in one transaction."""
        with durable_write(self._conn, self.path) as conn:
            conn.execute("INSERT OR REPLACE INTO loops VALUES (?, ?)", (name, tick))
            conn.executemany("UPDATE outcomes SET learned = 1 WHERE tick = ?",
                             [(t,) for t in learned])

    def _read(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None


class JournalReader:
    """Read-only views of the journal for other rooms (Delta's consolidation, Loop 3,
    episode retention): each read opens the file read-only for its one query, so a running
    golem is not disturbed. A journal not yet created reads as empty; StateError when the
    file cannot be read."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def scored_outcomes(self, recent: int) -> list[Outcome]:
        """The newest ``recent`` scored outcomes, oldest first."""
        rows = self._rows("SELECT tick, regime, policy_revision, injected, referenced, missing,"
                          " cost_usd, quality FROM outcomes WHERE quality IS NOT NULL "
                          "ORDER BY tick DESC LIMIT ?", (recent,))
        return [Outcome(r[0], r[1], r[2], frozenset(json.loads(r[3])),
                        frozenset(json.loads(r[4])), frozenset(json.loads(r[5])), r[6],
                        float(r[7])) for r in reversed(rows)]

    def decision(self, tick: int) -> dict[str, Any] | None:
        """The record of the decision at ``tick``; None when there is none."""
        rows = self._rows("SELECT record FROM decisions WHERE tick = ?", (tick,))
        return jsondecode.loads(rows[0][0]) if rows else None

    def qualities(self, *, before_revision: int | None = None,
                  from_revision: int | None = None, limit: int = 1_000_000) -> list[float]:
        """Scored qualities under policy revisions < ``before_revision`` (the newest
        ``limit``, newest first) or, without it, >= ``from_revision`` (the oldest
        ``limit``, oldest first)."""
        if before_revision is not None:
            rows = self._rows("SELECT quality FROM outcomes WHERE quality IS NOT NULL AND "
                              "policy_revision < ? ORDER BY tick DESC LIMIT ?",
                              (before_revision, limit))
        else:
            rows = self._rows("SELECT quality FROM outcomes WHERE quality IS NOT NULL AND "
                              "policy_revision >= ? ORDER BY tick LIMIT ?",
                              (from_revision or 0, limit))
        return [float(r[0]) for r in rows]

    def citations_after(self, tick: int, *, not_before: float,
                        limit: int) -> list[tuple[int, float, str | None]]:
        """(tick, golem time, citations) of the decisions after ``tick`` made at golem time
        ``not_before`` or later, in tick order, at most ``limit``. ``citations``: the JSON
        array ``[decision.referenced, cited]`` of the stored record (an absent one is
        null), taken out by SQLite so the records are not parsed in Python; None for a
        record that is not valid JSON."""
        rows = self._rows("SELECT tick, golem_time, CASE WHEN json_valid(record) THEN "
                          "json_extract(record, '$.decision.referenced', '$.cited') END "
                          "FROM decisions WHERE tick > ? AND golem_time >= ? ORDER BY tick "
                          "LIMIT ?", (tick, not_before, limit))
        return [(int(t), float(at), citations) for t, at, citations in rows]

    def scored_decisions(self, tick: int, *, limit: int) -> list[tuple[int, float, str]]:
        """(tick, outcome quality, record JSON as stored) of the scored decisions after
        ``tick``, in tick order, at most ``limit``."""
        rows = self._rows("SELECT o.tick, o.quality, d.record FROM outcomes o JOIN decisions d "
                          "ON d.tick = o.tick WHERE o.quality IS NOT NULL AND o.tick > ? "
                          "ORDER BY o.tick LIMIT ?", (tick, limit))
        return [(int(t), float(q), record) for t, q, record in rows]

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The newest ``limit`` decisions, newest first: tick, golem time, provider, status,
        summary, the record as stored, and the Loop 1 outcome (quality None until
        scored; no outcome row: None)."""
        rows = self._rows("SELECT d.tick, d.golem_time, d.provider, d.status, d.summary, "
                          "d.record, o.regime, o.quality, o.cost_usd FROM decisions d LEFT "
                          "JOIN outcomes o ON o.tick = d.tick ORDER BY d.tick DESC LIMIT ?",
                          (limit,))
        return [{"tick": r[0], "golem_time": r[1], "provider": r[2], "status": r[3],
                 "summary": r[4], "record": jsondecode.loads(r[5]),
                 "outcome": None if r[6] is None else
                 {"regime": r[6], "quality": r[7], "cost_usd": r[8]}} for r in rows]

    def prediction_scores(self) -> list[tuple[float, str, float, bool]]:
        """(golem time of the decision, subject, Brier score, direction hit) of every
        scored prediction, in decision order. The Brier score is the three-way one of
        the decision's outlook (predictions.outlook_brier) against what the feed did;
        a decision that recorded no outlook (a model's) is scored on the outlook its
        prediction states (predictions.stated_outlook)."""
        rows = self._rows("SELECT d.golem_time, p.subject, p.direction, p.confidence, "
                          "p.baseline, p.actual, p.hit, "
                          "json_extract(d.record, '$.knowledge.outlook') FROM predictions p "
                          "JOIN decisions d ON d.tick = p.tick WHERE p.quality IS NOT NULL "
                          "ORDER BY p.tick, p.id", ())
        out = []
        for at, subject, direction, confidence, baseline, actual, hit, raw in rows:
            outlook = _outlook(raw) or stated_outlook(direction, float(confidence))
            observed = observed_direction(float(actual) / float(baseline) - 1.0)
            out.append((float(at), str(subject), outlook_brier(outlook, observed), bool(hit)))
        return out

    def prediction_situations(self) -> list[PredictionSituation]:
        """The situation of every scored prediction, in the order and over the rows of
        ``prediction_scores``: the golem time of its decision, what the feed did (the
        scoring's class), the trailing-move bucket the decision saw (its record's
        ``situation``; None where it has none: no tape, or journalled before situations
        were recorded) and the reference outlook the epistemic clock judges it against
        (the no-change prior; None where the decision recorded none)."""
        rows = self._rows("SELECT d.golem_time, p.subject, p.baseline, p.actual, "
                          "json_extract(d.record, '$.situation.bucket', "
                          "'$.knowledge.reference.subject', '$.knowledge.reference.outlook'), "
                          "o.prior FROM predictions p JOIN decisions d ON d.tick = p.tick "
                          "LEFT JOIN outlooks o ON o.tick = p.tick WHERE p.quality IS NOT NULL "
                          "ORDER BY p.tick, p.id", ())
        out = []
        for at, subject, baseline, actual, known, prior in rows:
            bucket, ref_subject, ref = _three(known)
            out.append(PredictionSituation(
                float(at), observed_direction(float(actual) / float(baseline) - 1.0),
                None if bucket is None else str(bucket),
                _reference(subject, ref_subject, ref, prior)))
        return out

    def knowledge_ages(self) -> list[tuple[float, list[float | None]]]:
        """(golem time, the observed_to of each attributed entry) of every decision that
        leaned on learned knowledge, in tick order (None where a record has no time)."""
        rows = self._rows("SELECT golem_time, json_extract(record, '$.knowledge.attribution') "
                          "FROM decisions ORDER BY tick", ())
        out = []
        for at, raw in rows:
            items = json.loads(raw) if raw else []
            if items:
                out.append((float(at), [_time_or_none(i.get("observed_to")) for i in items]))
        return out

    def context_tokens(self) -> list[int]:
        """The assembled workspace's estimated tokens of every decision, in tick order
        (decisions without a workspace, such as a refused tick, are left out)."""
        rows = self._rows("SELECT json_extract(record, '$.workspace.used') FROM decisions "
                          "ORDER BY tick", ())
        return [int(r[0]) for r in rows if r[0] is not None]

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return read_only_rows(self.path, "the decision journal", sql, args) or []


def _outlook(raw: str | None) -> Outlook | None:
    """A journalled outlook (JSON [down, flat, up]), None when absent or malformed."""
    try:
        values = json.loads(raw) if raw else None
    except ValueError:
        return None
    return _outlook_of(values)


def _outlook_of(values: object) -> Outlook | None:
    """An outlook from decoded JSON ([down, flat, up]), None when absent or malformed."""
    if (isinstance(values, list) and len(values) == 3
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)):
        return (float(values[0]), float(values[1]), float(values[2]))
    return None


def _three(raw: str | None) -> tuple[object, object, object]:
    """The decoded JSON array of three values a multi-path json_extract returns (Nones
    when absent or malformed)."""
    try:
        values = json.loads(raw) if raw else None
    except ValueError:
        return None, None, None
    return (values[0], values[1], values[2]) if isinstance(values, list) \
        and len(values) == 3 else (None, None, None)


def _reference(subject: object, ref_subject: object, ref: object,
               prior: str | None) -> Outlook | None:
    """A prediction's reference outlook: the one its decision recorded for its subject
    (decoded JSON), or (decisions journalled before references were) the offline prior's
    in ``outlooks``; None when neither applies."""
    if ref_subject is None:
        return _outlook(prior)
    return _outlook_of(ref) if str(ref_subject).lower() == str(subject).lower() else None


def _time_or_none(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) \
        else None


KNOWLEDGE_SHOWN = 5  # golem status: the knowledge behind this many newest decisions


def latest(data_dir: Path) -> dict[str, Any] | None:
    """For `golem status`: the newest decision and prediction totals, read-only."""
    path = data_dir / JOURNAL_DIR / JOURNAL_DB
    rows = read_only_rows(
        path, "the decision journal",
        "SELECT d.tick, d.golem_time, d.provider, d.status, d.summary, p.scored, p.hits, "
        "p.quality, p.total FROM (SELECT * FROM decisions ORDER BY tick DESC LIMIT 1) d, "
        "(SELECT COUNT(quality) scored, SUM(hit) hits, AVG(quality) quality, COUNT(*) total "
        "FROM predictions) p")
    if not rows:
        return None
    *row, scored, hits, quality, total = rows[0]
    recent = read_only_rows(path, "the decision journal",
                            "SELECT tick, record FROM decisions ORDER BY tick DESC LIMIT ?",
                            (KNOWLEDGE_SHOWN,)) or []
    return {"tick": row[0], "golem_time": row[1], "provider": row[2], "status": row[3],
            "summary": row[4], "predictions": total, "scored": scored, "hits": hits or 0,
            "mean_quality": round(quality, 3) if quality is not None else None,
            "knowledge": [knowledge_of(tick, record) for tick, record in recent]}


def knowledge_of(tick: int, record: str) -> dict[str, Any]:
    """What drove a journalled decision: its prediction and the knowledge record Theta
    wrote (attributed entries with their shares and short texts, the outlook, malformed
    facts skipped); decisions journalled before knowledge was recorded show none."""
    try:
        data = jsondecode.loads(record)
    except ValueError:
        data = {}
    knowledge = data.get("knowledge") if isinstance(data, dict) else None
    decision = data.get("decision") if isinstance(data, dict) else None
    predictions = decision.get("predictions") if isinstance(decision, dict) else None
    first = predictions[0] if isinstance(predictions, list) and predictions else None
    return {"tick": tick, "recorded": isinstance(knowledge, dict),
            "prediction": ({"direction": first.get("direction"),
                            "confidence": first.get("confidence")}
                           if isinstance(first, dict) else None),
            "attribution": list(knowledge.get("attribution") or [])
            if isinstance(knowledge, dict) else [],
            "outlook": knowledge.get("outlook") if isinstance(knowledge, dict) else None,
            "skipped": int(knowledge.get("skipped") or 0) if isinstance(knowledge, dict)
            else 0}

"""Episode <-> Arrow rows for the episodic store, and safe filters over them.

Kept apart from episodes.py so the column layout is read in one place. Filters on
untrusted strings (namespaces, protocols, categories) are built as typed LanceDB
expressions for searches, and as SQL with doubled quotes where LanceDB only takes
SQL (tested against quotes, backslashes and control characters).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

os.environ.setdefault("LANCEDB_LOG", "error")  # before lancedb: its Rust warnings bypass our logs

import numpy as np
import pyarrow as pa
from lancedb.expr import Expr, col, lit
from lancedb.index import FTS, Bitmap, BTree

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import Episode, Pad, Provenance, Source, finite_unit, search_text
from golem.runtime import jsondecode

# Layout 2: one JSON "record" column holds the whole episode except its text and the
# fields later writes change; the other columns exist to be filtered, indexed or updated.
# Columns read per search are the minimum recall needs (ROW_COLUMNS): reading a column
# costs time in every search, whatever its type. The filter columns' values are also in
# the record and never change after a write (episodes_migrate.current_layout tells this
# layout from layout 1, one column per field).
_SCALARS: tuple[tuple[str, pa.DataType, bool], ...] = (
    ("id", pa.string(), False),
    ("namespace", pa.string(), False),
    ("chain_id", pa.int64(), False),
    ("block_number", pa.int64(), False),
    ("observed_at", pa.float64(), False),
    ("category", pa.string(), False),
    ("protocol", pa.string(), True),
    ("text", pa.string(), False),
    ("importance", pa.float64(), True),
    ("quality_verified", pa.bool_(), False),
    ("replay_count", pa.int64(), False),
    ("record", pa.string(), False),  # JSON: every immutable field, the vector's signature
)
UPDATABLE = {"replay_count", "quality_verified", "importance"}
# The replay_count column is written 0 and not read: counts live in replays.db (replays.py),
# and the store adds each row's count (key "replay_count") before from_row.
COLUMN_UPDATABLE = ("importance", "quality_verified")
# What searches and gets read back to rebuild an Episode (no vector).
ROW_COLUMNS: tuple[str, ...] = ("record", "text", *COLUMN_UPDATABLE)
# What retention weighs (EpisodeFacts; curiosity is in the record).
FACT_COLUMNS: tuple[str, ...] = ("id", "observed_at", "category", "record",
                                 *COLUMN_UPDATABLE)
ID_CHUNK = 1000  # ids per IN (...) statement
MAX_IDENTIFIERS, MAX_IDENTIFIER_CHARS = 32, 80  # the full-text index keeps tokens up to 80


def episode_schema(dim: int) -> pa.Schema:
    fields = [pa.field(name, kind, nullable=nullable) for name, kind, nullable in _SCALARS]
    fields.append(pa.field("vector", pa.list_(pa.float32(), dim), nullable=False))
    return pa.schema(fields)


def _record_json(episode: Episode, signature_id: str) -> str:
    prov = episode.provenance
    record = {
        "id": episode.id, "namespace": episode.namespace, "chain_id": episode.chain_id,
        "block_number": episode.block_number, "block_hash": episode.block_hash,
        "log_index": episode.log_index, "tx_hash": episode.tx_hash, "tick": episode.tick,
        "observed_at": float(episode.observed_at), "category": episode.category,
        "protocol": episode.protocol, "payload": episode.payload,
        "curiosity": float(episode.curiosity), "pad": list(map(float, episode.pad.as_tuple())),
        "provenance": {"source": str(prov.source), "generation": prov.generation,
                       "author": prov.author, "process": prov.process,
                       "bloodstain": bool(prov.bloodstain), "verified": bool(prov.verified)},
        "signature": signature_id,
    }
    if episode.identifiers:  # the text column holds search_text: the text, then these
        record["identifiers"] = list(episode.identifiers)
    try:
        return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidMemory(f"episode {episode.id}: payload is not JSON-safe ({exc})") from None


_CURIOSITY_KEY = '"curiosity":'
# record_curiosity's fast reading in LanceDB's SQL: the text between the first
# '"curiosity":' and the next comma, as a number (NULL where that is not one), so a scan
# of every episode's curiosity returns numbers, not the records.
CURIOSITY_SQL = ("TRY_CAST(split_part(split_part(record, '\"curiosity\":', 2), ',', 1) "
                 "AS DOUBLE)")


def record_curiosity(record: str) -> float:
    """An episode's curiosity from the record ``_record_json`` wrote, without parsing the
    rest. Its keys are sorted, so the first ``"curiosity":`` is the top-level key: only
    block_hash, block_number, category and chain_id come before it, and a quote inside a
    string value is escaped (a payload's own "curiosity" comes later). A record it cannot
    read that way is parsed in full."""
    start = record.find(_CURIOSITY_KEY) + len(_CURIOSITY_KEY)
    end = record.find(",", start)
    with contextlib.suppress(ValueError):
        if start >= len(_CURIOSITY_KEY) and end > start:
            return float(record[start:end])
    return float(jsondecode.loads(record)["curiosity"])


def _check(episode: Episode) -> None:
    if not isinstance(episode, Episode):
        raise InvalidMemory(f"expected an Episode, got {type(episode).__name__}")
    if not episode.id or not episode.namespace:
        raise InvalidMemory("episode: id and namespace must be non-empty")
    if not episode.text.strip():
        raise InvalidMemory(f"episode {episode.id}: text is empty")
    if len(episode.identifiers) > MAX_IDENTIFIERS or not all(
            isinstance(i, str) and 0 < len(i) <= MAX_IDENTIFIER_CHARS and i.isprintable()
            and i.split() == [i] for i in episode.identifiers):  # no whitespace in it
        raise InvalidMemory(f"episode {episode.id}: identifiers must be at most "
                            f"{MAX_IDENTIFIERS} printable words of 1-{MAX_IDENTIFIER_CHARS} "
                            "characters")
    numbers = (episode.observed_at, episode.curiosity, *episode.pad.as_tuple())
    if not all(math.isfinite(x) for x in numbers) or (
            episode.importance is not None and not math.isfinite(episode.importance)):
        raise InvalidMemory(f"episode {episode.id}: a score or time is not a finite number")


def to_table(episodes: Sequence[Episode], vectors: np.ndarray, signature_id: str,
             schema: pa.Schema) -> pa.Table:
    """Arrow table for a batch of episodes and their (n, dim) float32 vectors."""
    columns: dict[str, list[Any]] = {name: [] for name, _, _ in _SCALARS}
    for ep in episodes:
        _check(ep)
        row = (ep.id, ep.namespace, ep.chain_id, ep.block_number, float(ep.observed_at),
               ep.category, ep.protocol, search_text(ep),
               None if ep.importance is None else float(ep.importance),
               bool(ep.quality_verified), 0, _record_json(ep, signature_id))
        for (name, _, _), value in zip(_SCALARS, row, strict=True):
            columns[name].append(value)
    dim = vectors.shape[1]
    arrays = [pa.array(columns[name], type=schema.field(name).type) for name, _, _ in _SCALARS]
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    arrays.append(pa.FixedSizeListArray.from_arrays(flat, dim))
    return pa.Table.from_arrays(arrays, schema=schema)


class Found(NamedTuple):
    """One search hit, its row not yet decoded: the score is the cosine for a vector
    search, BM25 for a full-text one."""

    id: str
    score: float
    vector: np.ndarray
    row: dict[str, Any]  # the ROW_COLUMNS values and "replay_count"

    def episode(self) -> Episode:
        return from_row(self.row)


def arrow_vectors(table: pa.Table, dim: int) -> np.ndarray:
    """The (n, dim) float32 matrix of a result's "vector" column, without Python floats."""
    column = table["vector"].combine_chunks()
    return np.asarray(column.flatten().to_numpy(zero_copy_only=False),
                      dtype=np.float32).reshape(-1, dim)


def unit_vectors(vectors: np.ndarray, n: int, dim: int) -> np.ndarray:
    """(n, dim) float32 rows scaled to unit length; InvalidMemory for a wrong shape, NaN or 0."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape != (n, dim):
        raise InvalidMemory(f"vectors: expected shape ({n}, {dim}), got {arr.shape}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if not np.isfinite(arr).all() or (n and float(norms.min()) <= 1e-6):
        raise InvalidMemory("vectors: every vector must be finite and non-zero")
    return np.asarray(arr / np.maximum(norms, 1e-12), dtype=np.float32)


def from_row(row: dict[str, Any]) -> Episode:
    """An Episode from a row of ROW_COLUMNS plus its "replay_count" (other keys are
    ignored)."""
    record = jsondecode.loads(row["record"])
    prov = record["provenance"]
    identifiers = tuple(record.get("identifiers", ()))
    text = row["text"]
    if identifiers:  # the column holds search_text: drop the identifiers line
        text = text[: len(text) - len(" ".join(identifiers)) - 1]
    return Episode(
        id=record["id"], namespace=record["namespace"], chain_id=record["chain_id"],
        block_number=record["block_number"], block_hash=record["block_hash"],
        log_index=record["log_index"], tx_hash=record["tx_hash"], tick=record["tick"],
        observed_at=record["observed_at"], category=record["category"],
        protocol=record["protocol"], text=text, payload=record["payload"],
        curiosity=record["curiosity"], importance=row["importance"],
        quality_verified=row["quality_verified"], replay_count=row["replay_count"],
        pad=Pad(*record["pad"]),
        provenance=Provenance(
            source=Source(prov["source"]), generation=prov["generation"],
            author=prov["author"], process=prov["process"],
            bloodstain=prov["bloodstain"], verified=prov["verified"]),
        identifiers=identifiers)


def sql_str(value: str) -> str:
    """A SQL string literal for LanceDB: quotes doubled; backslashes are literal there."""
    if "\x00" in value:
        raise InvalidMemory("a filter value contains a NUL character")
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


def _utf8(text: str) -> bool:
    """Lone surrogates cannot be stored, so they cannot be matched either."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def search_filter(namespaces: Sequence[str], since: float | None, until: float | None,
                  protocol: str | None, category: str | None) -> Expr:
    """namespace IN (...) [AND since <= observed_at <= until] [AND protocol/category =]."""
    for name in namespaces:
        if not isinstance(name, str) or not name:
            raise InvalidMemory(f"namespace: must be a non-empty string, got {name!r}")
    for label, values in (("namespace", namespaces), ("protocol", [protocol]),
                          ("category", [category])):
        for value in values:
            if value is not None and not _utf8(value):
                raise InvalidMemory(f"{label}: {value!r} is not valid UTF-8 text")
    expr = col("namespace").isin(list(namespaces))
    for bound, name in ((since, "since"), (until, "until")):
        if bound is not None and (isinstance(bound, bool) or not math.isfinite(bound)):
            raise InvalidMemory(f"{name}: must be a finite time, got {bound!r}")
    if since is not None:
        expr = expr & (col("observed_at") >= lit(float(since)))
    if until is not None:
        expr = expr & (col("observed_at") <= lit(float(until)))
    if protocol is not None:
        expr = expr & (col("protocol") == lit(protocol))
    if category is not None:
        expr = expr & (col("category") == lit(category))
    return expr


def sql_value(name: str, value: Any) -> str:
    """A validated SQL literal for one updatable column."""
    if name == "replay_count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidMemory(f"replay_count: must be an integer >= 0, got {value!r}")
        return str(value)
    if name == "quality_verified":
        if not isinstance(value, bool):
            raise InvalidMemory(f"quality_verified: must be a bool, got {value!r}")
        return "true" if value else "false"
    if value is None:
        return "NULL"
    try:
        return repr(finite_unit(value, "importance"))
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None


def create_table(db: Any, name: str, schema: pa.Schema) -> Any:
    """An empty table with its full-text and scalar indexes (optimize() keeps them current;
    rows written since are scanned): the bitmaps and the observed_at B-tree speed the
    searches' prefilters, the id B-tree merge_insert and get."""
    table = db.create_table(name, schema=schema)
    # max_token_length 80 keeps addresses (42) and tx hashes (66) searchable.
    table.create_index("text", config=FTS(max_token_length=80))
    table.create_index("id", config=BTree())
    table.create_index("observed_at", config=BTree())
    for column in ("namespace", "protocol", "category"):
        table.create_index(column, config=Bitmap())
    return table


def id_chunks(ids: Sequence[str], size: int = ID_CHUNK) -> Iterator[list[str]]:
    """The distinct ids, first seen first, in lists of at most ``size``."""
    unique = list(dict.fromkeys(ids))
    for start in range(0, len(unique), size):
        yield unique[start:start + size]

"""On-disk layout of the episodic store: the pointer file, table names, orphan sweeping.

    DIR/store.json                 which table is live, its ModelSignature, index state
    DIR/episodes-<sig>-<rand>.lance  the live LanceDB table (one)

store.json is the single commit point: it is replaced atomically (temp file,
fsync, rename, fsync dir). A table directory it does not name is an unfinished
creation or migration and is removed at open. Inside the live table, a killed
LanceDB write leaves ``.tmp*`` files (lancedb 0.40 leaves them in ``data/``
while a data file streams, in ``_indices/<uuid>/`` while an index is written)
that LanceDB's own cleanup does not remove; they are deleted before the table is
opened. Only the one process holding the data-dir lock may sweep.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.grimoire import episodes_fold
from golem.grimoire.errors import StoreCorrupt
from golem.grimoire.memory_file import fsync_dir
from golem.grimoire.signature import ModelSignature

META_FILE = "store.json"
META_FORMAT = 1
# IVF_RQ (four bits a dimension) sized by target partition size. An index recorded
# without this kind is retrained: "ivf_sq_target_size" (IVF_SQ: twice the bytes, and
# slower searches for the same neighbours) or none (sized by a partition count, which
# LanceDB's optimize() collapses to a handful of partitions).
INDEX_KIND = "ivf_rq4_target_size"
TABLE_PREFIX = "episodes-"
TABLE_SUFFIX = ".lance"
VECTOR_INDEX = "vector_idx"  # LanceDB's default name for the index on "vector"
TEXT_INDEX = episodes_fold.TEXT_INDEX  # the fold's child process names it too


@dataclass(frozen=True)
class StoreMeta:
    table: str  # LanceDB table name (directory is <table>.lance)
    signature: ModelSignature
    index_rows: int | None = None  # row count when the vector index was last trained
    # How that index was built; an index of an older kind is retrained (INDEX_KIND).
    index_kind: str | None = None
    # Rows written since that training, as counted at the last maintenance.
    written_since_index: int = 0
    # The partition count that training formed (None: not recorded; stores written
    # before it was): fewer than sqrt(index_rows) when k-means could not form that many.
    index_partitions: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"format": META_FORMAT, "table": self.table,
                "signature": self.signature.to_dict(), "index_rows": self.index_rows,
                "index_kind": self.index_kind, "written_since_index": self.written_since_index,
                "index_partitions": self.index_partitions}


def new_table_name(signature: ModelSignature) -> str:
    return f"{TABLE_PREFIX}{signature.id}-{secrets.token_hex(4)}"


def read_meta(directory: Path) -> StoreMeta | None:
    """The committed store description, None for a new store; StoreCorrupt if unreadable."""
    path = directory / META_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreCorrupt(f"episode store {path} is unreadable: {exc}") from None
    try:
        data = json.loads(text)
        if data.get("format") != META_FORMAT:
            raise ValueError(f"unknown format {data.get('format')!r}")
        table = data["table"]
        if not (isinstance(table, str) and table.startswith(TABLE_PREFIX) and "/" not in table):
            raise ValueError(f"bad table name {table!r}")
        index_rows = data.get("index_rows")
        if index_rows is not None and (not isinstance(index_rows, int) or index_rows < 0):
            raise ValueError(f"bad index_rows {index_rows!r}")
        kind = data.get("index_kind")
        if kind is not None and not isinstance(kind, str):
            raise ValueError(f"bad index_kind {kind!r}")
        written = data.get("written_since_index", 0)
        if isinstance(written, bool) or not isinstance(written, int) or written < 0:
            raise ValueError(f"bad written_since_index {written!r}")
        partitions = data.get("index_partitions")
        if partitions is not None and (isinstance(partitions, bool)
                                       or not isinstance(partitions, int) or partitions < 1):
            raise ValueError(f"bad index_partitions {partitions!r}")
        return StoreMeta(table, ModelSignature.from_dict(data["signature"]), index_rows, kind,
                         written, partitions)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise StoreCorrupt(f"episode store {path} is corrupt: {exc}") from None


def write_meta(directory: Path, meta: StoreMeta) -> None:
    """Atomic replace: a reader sees the old description or the new one, never a mix."""
    tmp = directory / f".{META_FILE}.tmp-{secrets.token_hex(4)}"
    try:
        with tmp.open("w", encoding="utf-8") as f:
            json.dump(meta.to_dict(), f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(directory / META_FILE)
        fsync_dir(directory)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()




def table_dir(directory: Path, table: str) -> Path:
    return directory / f"{table}{TABLE_SUFFIX}"


def remove_table_dir(directory: Path, table: str) -> None:
    shutil.rmtree(table_dir(directory, table), ignore_errors=True)


def sweep_orphans(directory: Path, live_table: str | None) -> list[Path]:
    """Delete unreferenced tables, stale pointer temp files and ``.tmp*`` files in the live
    table. Returns what was removed."""
    removed: list[Path] = []
    for entry in directory.iterdir():
        name = entry.name
        if name.startswith(f".{META_FILE}.tmp-"):
            entry.unlink(missing_ok=True)
            removed.append(entry)
        elif (name.startswith(TABLE_PREFIX) and name.endswith(TABLE_SUFFIX) and entry.is_dir()
              and name != f"{live_table}{TABLE_SUFFIX}"):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    if live_table is not None:
        root = table_dir(directory, live_table)
        for dirpath, _dirs, files in os.walk(root):
            for name in files:
                if name.startswith(".tmp"):
                    path = Path(dirpath) / name
                    path.unlink(missing_ok=True)
                    removed.append(path)
    return removed


def index_segments(table: Any, name: str) -> int:
    """Segments of the table's index ``name`` (0: none). A search probes every segment of
    the vector index (the trained one plus a delta for each lancedb optimize() that had
    new or rewritten rows) and reads every one of the text index."""
    stats = table.index_stats(name)
    return int(stats.num_indices) if stats is not None else 0


def vector_segments(table: Any) -> int:
    return index_segments(table, VECTOR_INDEX)


def table_stats(table: Any, root: Path) -> dict[str, int]:
    """Rows, fragments, versions, vector and text index segments and bytes on disk of a
    LanceDB table (optimize reports)."""
    stats = table.stats()
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {"rows": int(stats["num_rows"]),
            "fragments": int(stats["fragment_stats"]["num_fragments"]),
            "versions": len(table.list_versions()),
            "vector_index_segments": vector_segments(table),
            "text_index_segments": index_segments(table, TEXT_INDEX), "bytes": size}

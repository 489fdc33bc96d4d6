"""The episodic store: faithful chain events with their vectors, in one LanceDB table.

With episodes_schema.py (row layout, filters, index set-up) the only code importing lancedb.
Synchronous by design: the facade calls it in a worker thread. Writes go through
one lock and are one commit per call (an id already stored is left as it is, so a
re-captured event never duplicates). Search is exact (brute force) until
``index_min_rows``, then an IVF_RQ cosine index (four bits a dimension) is trained, and
retrained as the table grows by a fifth, as a fifth of its rows are written anew (at the
retention cap the count is flat while the rows churn), or as its delta segments pile up;
rows written since are still searched, unindexed. An indexed search reads more rows
than asked and ranks them by their exact cosine (``RERANK_UP_TO``).
Replay counts live beside the table in replays.db (replays.py), not in its rows.
Assumes one writing process (the data-dir lock holder).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")  # Rust warnings would bypass our JSON logs

import lancedb
import numpy as np
import structlog
from lancedb.background_loop import LOOP
from lancedb.expr import Expr
from lancedb.index import IvfRq
from lancedb.table import AsyncTable

from golem.config import GrimoireSection
from golem.grimoire import episodes_layout as layout
from golem.grimoire.episodes_fold import FoldChild, FoldSpec
from golem.grimoire.episodes_migrate import (
    EmbedFn,
    ProgressFn,
    TransformFn,
    copy_episodes,
    current_layout,
)
from golem.grimoire.episodes_schema import (
    CURIOSITY_SQL,
    FACT_COLUMNS,
    ROW_COLUMNS,
    UPDATABLE,
    Found,
    arrow_vectors,
    create_table,
    episode_schema,
    from_row,
    id_chunks,
    record_curiosity,
    search_filter,
    sql_in,
    sql_str,
    sql_value,
    to_table,
    unit_vectors,
)
from golem.grimoire.errors import GrimoireError, InvalidMemory, SignatureMismatch, StoreCorrupt
from golem.grimoire.id_filter import IdFilter
from golem.grimoire.records import Episode, EpisodeFacts, EpisodeRef
from golem.grimoire.replays import ReplayCounts
from golem.grimoire.signature import ModelSignature
from golem.runtime.heap import trim_heap

log = structlog.get_logger("golem.grimoire")
REINDEX_GROWTH = 1.2  # retrain the vector index when the table grew by 20% since training
# ... or when the rows written since training reach this share of the rows it was trained
# on: at the retention cap the count is flat while the rows churn, and an index kept on
# its old centroids slowed every search (benchmarks/README.md, fifteenth session).
REINDEX_CHURN = 0.2
FTS_INDEX = layout.TEXT_INDEX
ID_INDEX = "id_idx"  # LanceDB's default name for the B-tree on "id" (episodes_schema)
# A search probes every segment of the vector index, so searches slow down with each one
# until they are slower than an exact search. Our folds merge new rows into the newest
# segment; a store folded by lancedb's optimize() (a segment a fold) is retrained past
# this many, which leaves one.
MAX_VECTOR_SEGMENTS = 4
# The index's kmeans, lighter than LanceDB's defaults (50 iterations, 256 training
# vectors a partition): benchmarks/README.md, index_training.py, has why.
IVF_MAX_ITERATIONS = 20
IVF_SAMPLE_RATE = 64
FTS_REFRESH_ROWS = 1000
# The index ranks on four bits a dimension: a search for k <= RERANK_UP_TO rows through
# it reads 2k and keeps the k of highest exact cosine (a larger k, a candidate pool for
# ordering by quantities, reads k).
RERANK_UP_TO = 100
# search_vector_admitted remembers the measures of this many rows' texts by address (~250
# bytes each), and reads the texts of at most this many unmeasured rows by address; more
# are read by a search that returns every text (reading 400 texts by address costs more).
MEASURED_ROWS = 4096
UNMEASURED_BY_ADDRESS = 100
# LanceDB's k-means error when the sample holds fewer distinct vectors than partitions
TOO_FEW_CLUSTERS = "non-empty clusters"
# Maintenance merges the rows the vector index does not hold into it once this many
# wait: any merge rewrites the whole index, while a dense search compares the rows it
# does not hold exactly, a cost that grows with them (benchmarks/README.md, eighteenth
# session, has both).
VECTOR_FOLD_ROWS = 3000
# newest_hits: windows back from the golem's now, each four times the last (10 golem
# minutes to ~114 days, then all), and the times one window's scan may bring.
NEWEST_WINDOWS_S: tuple[float | None, ...] = (*(600.0 * 4 ** i for i in range(8)), None)
NEWEST_SCAN = 20_000
_CONFIGURED = GrimoireSection()  # the defaults of a store opened without a config


class EpisodeStore:
    """Episodes of one model signature; see the module docstring for the guarantees."""

    def __init__(self, directory: Path, *, db: Any, meta: layout.StoreMeta,
                 configured: ModelSignature, index_min_rows: int, nprobes: int,
                 cache_mb: tuple[int, int] = (128, 64)) -> None:
        self.directory = directory
        self._cache_mb = cache_mb
        self.index_min_rows = index_min_rows
        self.nprobes = nprobes
        self._db = db
        self._meta = meta
        self._configured = configured
        self._table = self._open_table(meta.table)
        self._write_lock = threading.RLock()
        self._namespaces: set[str] | None = None  # stored namespaces, read on first search
        self._written = 0  # rows appended since the meta's written_since_index was saved
        self._standby: FoldChild | None = None  # started by prepare_fold for the next fold
        # The ids of the rows the id B-tree does not hold (those written or rewritten since
        # the last fold), when known: from a moment the index held every row, kept by every
        # write through this handle. None: unknown, and id lookups scan those rows instead.
        self._unindexed_ids: set[str] | None = None
        self._id_filter: IdFilter | None = None  # every stored id (upsert's), on first use
        # Bumped, under the write lock, before any row may leave the table through this
        # handle (deletes, a table switch): removal_stamp()'s value.
        self._removals = 0
        self._measures = RowMeasures(MEASURED_ROWS)  # search_vector_admitted's, by address
        # Before any layout upgrade: that copy writes the replay_count column as 0.
        self._replays = ReplayCounts.open(directory, self._legacy_replay_counts)
        self._learn_unindexed_ids()

    # ----- opening --------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, signature: ModelSignature, *, index_min_rows: int,
             nprobes: int = 20, for_migration: bool = False,
             sweep_orphans: bool = True,
             index_cache_mb: int = _CONFIGURED.lance_index_cache_mb,
             metadata_cache_mb: int = _CONFIGURED.lance_metadata_cache_mb) -> EpisodeStore:
        """Open or create the store. A store embedded with another model raises
        SignatureMismatch unless ``for_migration`` (then only reembed() may run)."""
        directory = Path(directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            if not directory.is_dir():
                raise NotADirectoryError(str(directory))
            meta = layout.read_meta(directory)
            if sweep_orphans:
                layout.sweep_orphans(directory, meta.table if meta else None)
        except OSError as exc:
            raise StoreCorrupt(f"episode store {directory} is unreadable: {exc}") from None
        if meta is not None and meta.signature != signature and not for_migration:
            raise SignatureMismatch(
                f"episodes in {directory} were embedded with model {meta.signature.label}; "
                f"the configured model is {signature.label}. Vector spaces must not mix: "
                "run `golem memory reembed` to re-embed everything in one migration, or set "
                "grimoire.embed_compute to \"auto\" if the model directory's other graph "
                "made them")
        try:
            db = _connect(directory, (index_cache_mb, metadata_cache_mb))
            if meta is None:
                meta = layout.StoreMeta(layout.new_table_name(signature), signature)
                create_table(db, meta.table, episode_schema(signature.dim))
                layout.write_meta(directory, meta)
        except Exception as exc:  # OSError, or LanceDB refusing the directory
            raise StoreCorrupt(f"episode store {directory} cannot be created: {exc}") from None
        store = cls(directory, db=db, meta=meta, configured=signature,
                    index_min_rows=index_min_rows, nprobes=nprobes,
                    cache_mb=(index_cache_mb, metadata_cache_mb))
        store.verify()
        if not current_layout(store._table):
            # Written by an older version (one column per field): copied once into today's
            # layout, vectors kept; the same crash safety as reembed.
            rows = store.count()
            log.warning("episode store: upgrading its row layout once (about 10 s per "
                        "100k episodes); the old table stays until the copy is complete",
                        store=str(directory), episodes=rows)
            started = time.perf_counter()
            store._rebuild(meta.signature, "row layout upgrade", None, 4096)
            log.info("episode store: row layout upgraded", store=str(directory),
                     episodes=rows, seconds=round(time.perf_counter() - started, 1))
        return store

    @staticmethod
    def stored_signature(directory: Path) -> ModelSignature | None:
        """The signature a store's vectors carry, read-only; None for no store (or one
        whose description is unreadable: opening it says what is wrong)."""
        try:
            meta = layout.read_meta(Path(directory))
        except StoreCorrupt:
            return None
        return None if meta is None else meta.signature

    def verify(self) -> None:
        """Check that the live table's latest version is whole: every data and deletion file
        its manifest names exists and opens (the id column of every fragment is read, about
        35 ms per 100k episodes), and each index it lists answers one query. Called at open.
        Raises StoreCorrupt naming the store, the first problem and the way out."""
        try:
            self._table.search().select(["id"]).to_arrow()
            names = {index.name for index in self._table.list_indices()}
            if layout.VECTOR_INDEX in names:
                probe = np.zeros(self.signature.dim, dtype=np.float32)
                probe[0] = 1.0
                self._table.search(probe).select(["id"]).limit(1).to_arrow()
            if FTS_INDEX in names:
                self._table.search("golem", query_type="fts").select(["id"]).limit(1).to_arrow()
        except Exception as exc:
            raise StoreCorrupt(
                f"episode store {layout.table_dir(self.directory, self._meta.table)} is damaged "
                f"({vendor_problem(exc)}); episodes can be captured again from the chain: "
                "stop the golem and run `golem memory rebuild-episodes`, or put a backup back "
                "with `golem restore`") from None

    def close(self) -> None:
        """Close the replay counts' SQLite file (LanceDB holds no handle to release) and let
        a fold's child started for a fold that never came exit."""
        with self._write_lock:
            self._release_standby()
        self._replays.close()

    def reconnect(self) -> None:
        """Replace the LanceDB connection and its session with fresh ones, giving back the
        memory each compaction or index build leaves in the session beyond its cache bounds
        (benchmarks/episode_maintenance_rss.py), and hands freed heap pages back to the OS.
        The next searches reload the index; searches already running keep the old
        handle."""
        with self._write_lock, self._vendor("reconnect"):
            db = _connect(self.directory, self._cache_mb)
            self._db, self._table = db, self._open_table_in(db, self._meta.table)
            self._learn_unindexed_ids()
        trim_heap()  # the old session's memory, freed, is still the process's until trimmed

    def _open_table(self, name: str) -> Any:
        return self._open_table_in(self._db, name)

    def _open_table_in(self, db: Any, name: str) -> Any:
        path = layout.table_dir(self.directory, name)
        if not path.is_dir():
            raise StoreCorrupt(f"episode store {self.directory}: table {path.name} is missing")
        try:
            table = db.open_table(name)
            vector_type = table.schema.field("vector").type
        except Exception as exc:
            raise StoreCorrupt(
                f"episode store {path} is unreadable ({vendor_problem(exc)}); episodes can be "
                "captured again from the chain: stop the golem and run `golem memory "
                "rebuild-episodes`, or put a backup back with `golem restore`") from None
        if getattr(vector_type, "list_size", None) != self._meta.signature.dim:
            raise StoreCorrupt(f"episode store {path}: vectors are {vector_type}, the recorded "
                               f"signature says {self._meta.signature.dim} dimensions")
        return table

    @property
    def signature(self) -> ModelSignature:
        """The signature the stored vectors carry."""
        return self._meta.signature

    @property
    def needs_migration(self) -> bool:
        return self._meta.signature != self._configured

    def _require_match(self) -> None:
        if self.needs_migration:
            raise SignatureMismatch(f"episodes in {self.directory} still carry "
                                    f"{self.signature.label}; run `golem memory reembed` first")

    @contextlib.contextmanager
    def _vendor(self, what: str) -> Iterator[None]:
        """LanceDB/Arrow exceptions -> GrimoireError naming the store and the operation."""
        try:
            yield
        except GrimoireError:
            raise
        except Exception as exc:
            raise GrimoireError(f"episode store {self.directory}: {what} failed: "
                                f"{vendor_problem(exc)}") from exc

    # ----- writes ---------------------------------------------------------------------------

    def upsert(self, episodes: Sequence[Episode], vectors: np.ndarray) -> int:
        """Insert by id, one commit; an id already stored is left as it is (capture is
        idempotent, and re-capturing an event must not reset what consolidation learned
        about it: replay_count, importance, quality_verified). Within one call the last
        of duplicate ids wins. Returns the number of distinct ids offered, stored or not."""
        self._require_match()
        vectors = unit_vectors(vectors, len(episodes), self.signature.dim)
        for ep in episodes:
            if not isinstance(ep, Episode):
                raise InvalidMemory(f"upsert: expected Episode, got {type(ep).__name__}")
        keep = sorted({ep.id: i for i, ep in enumerate(episodes)}.values())
        if len(keep) != len(episodes):  # one row per id: the last of duplicates
            episodes, vectors = [episodes[i] for i in keep], vectors[keep]
        if not episodes:
            return 0
        carried = {ep.id: ep.replay_count for ep in episodes if ep.replay_count > 0}
        with self._write_lock, self._vendor("upsert"):
            if self._namespaces is not None:  # before the commit: always a superset
                self._namespaces |= {ep.namespace for ep in episodes}
            # Which ids are stored (the id B-tree, and a scan of the rows it does not hold
            # yet), then a plain append of the others: under the write lock, and this
            # process is the only writer, so nothing comes between the two. At 100k rows
            # that is half the time of LanceDB's merge_insert on the id.
            # Only the ids the filter of stored ids may hold are looked up (a LanceDB query
            # per call): capture's new episodes almost never pass it.
            known = self._stored_ids()
            offered = [ep.id for ep in episodes]
            maybe = [i for i, may in zip(offered, known.might_hold(offered), strict=True) if may]
            stored = self._existing(maybe) if maybe else set()
            fresh = [i for i, ep in enumerate(episodes) if ep.id not in stored]
            if fresh:
                known.add(episodes[i].id for i in fresh)  # before the commit: never missing one
                self._table.add(to_table([episodes[i] for i in fresh], vectors[fresh],
                                         self.signature.id, self._table.schema))
                self._written += len(fresh)
                if self._unindexed_ids is not None:
                    self._unindexed_ids.update(episodes[i].id for i in fresh)
            # A new row's count (copied stores; capture brings 0); a stored one keeps its own.
            # A crash between the two commits loses only these counts.
            self._replays.insert_missing({i: n for i, n in carried.items() if i not in stored})
        return len(episodes)

    def _prefilter(self, namespaces: Sequence[str], since: float | None, until: float | None,
                   protocol: str | None, category: str | None) -> Expr | None:
        """The searches' prefilter; None when it would keep every row: the asked namespaces
        hold all there are and nothing else narrows (the usual case: one golem, one
        namespace): a filter costs time in every search. The set of stored namespaces is
        read once under the write lock and grows before each write commits, so it never
        misses one (deletes never shrink it)."""
        where = search_filter(namespaces, since, until, protocol, category)
        if (since, until, protocol, category) != (None, None, None, None):
            return where
        with self._write_lock:
            if self._namespaces is None:
                with self._vendor("namespace scan"):
                    column = self._table.search().select(["namespace"]).to_arrow()["namespace"]
                self._namespaces = set(column.unique().to_pylist())
            stored = set(self._namespaces)
        return None if stored <= set(namespaces) else where

    def update(self, ids: Sequence[str], *, as_of: int | None = None, **fields: Any) -> int:
        """Set replay_count / quality_verified / importance on the given ids; returns how
        many of them exist. ``as_of``: as increment_replay's."""
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise InvalidMemory(f"update: cannot set {', '.join(sorted(unknown))} "
                                f"(only {', '.join(sorted(UPDATABLE))})")
        values_sql = {name: sql_value(name, value) for name, value in fields.items()}
        replays = values_sql.pop("replay_count", None)
        with self._write_lock:
            # Which ids exist, read once (an update does not change it): the replay counts
            # need it, and so does the knowledge of the rows the id B-tree does not hold,
            # since LanceDB writes updated rows anew, out of the B-tree's reach.
            tracked = bool(values_sql) and self._unindexed_ids is not None
            stored = (self._stored_as_of(ids, as_of) if tracked or replays is not None
                      else set())
            done = self._update_sql(ids, values_sql) if values_sql else 0
            if tracked and self._unindexed_ids is not None:
                self._unindexed_ids |= stored
            if replays is not None:
                existing = [i for i in dict.fromkeys(ids) if i in stored]
                with self._vendor("replay count update"):
                    self._replays.set(existing, int(replays))
                done = len(existing)
        return done

    def removal_stamp(self) -> int:
        """A value that changes whenever rows may have left the table through this handle
        (the only writer): ids read from the store after it was taken are all still
        stored while it has not changed (``as_of`` of update and increment_replay)."""
        return self._removals

    def increment_replay(self, ids: Sequence[str], *, as_of: int | None = None) -> int:
        """replay_count += 1 on the given ids that exist (consolidation replay): one
        SQLite commit, no episode row rewritten. Returns how many. ``as_of``: a
        removal_stamp() taken before the reads that found every one of the ids; while no
        row has been removed since, they are counted without looking them up (an id not
        so read would be counted too: the caller's promise)."""
        with self._write_lock:
            stored = self._stored_as_of(ids, as_of)
            existing = [i for i in dict.fromkeys(ids) if i in stored]
            with self._vendor("replay count update"):
                self._replays.increment(existing)
        return len(existing)

    def _stored_as_of(self, ids: Sequence[str], as_of: int | None) -> set[str]:
        """Which of the ids are stored: all of them when ``as_of`` is the current
        removal_stamp() (the caller read them after taking it), else looked up. Call
        under the write lock."""
        return set(ids) if as_of is not None and as_of == self._removals \
            else self._existing(ids)

    def _existing(self, ids: Sequence[str]) -> set[str]:
        """Which of the ids are stored: the id B-tree answers for the rows it holds; for
        the others, the ids this handle knows it wrote since (``_unindexed_ids``), or when
        it does not know them, a scan of those rows (which grows with the small fragments
        written since the last fold: ~4 ms at 6 of them, ~12 at 54)."""
        found: set[str] = set()
        unindexed = self._unindexed_ids
        with self._vendor("id lookup"):
            for chunk in id_chunks(ids):
                query = self._query().where(sql_in("id", chunk)).select(["id"])
                if unindexed is not None:  # only the rows the B-tree holds
                    query = query.fast_search()
                found.update(str(i) for i in _run(query.limit(len(chunk)))["id"].to_pylist())
        if unindexed is not None:
            found.update(i for i in ids if i in unindexed)
        return found

    def _stored_ids(self) -> IdFilter:
        """The filter of every id stored (a Bloom filter: it may also hold ids deleted
        since), read from the table on first use and again once it holds more ids than it
        was sized for; kept by upsert, forgotten at a table switch. Call under the write
        lock: this process is the only writer, so no id reaches the table past it."""
        if self._id_filter is None or self._id_filter.full:
            with self._vendor("id scan"):
                ids = _run(self._query().select(["id"]))["id"].to_pylist()
            self._id_filter = IdFilter.of(ids)
        return self._id_filter

    def _learn_unindexed_ids(self) -> None:
        """Know the rows the id B-tree does not hold when it holds them all (a fold just
        indexed every row, or a store is fresh); else forget what was known. Call under
        the write lock, or before the store is shared, whenever the handle is (re)opened:
        it also forgets the measures remembered by row address, since a table opened anew
        (a table switch) may hold other rows at the same addresses."""
        self._measures.clear()
        stats = self._table.index_stats(ID_INDEX)
        self._unindexed_ids = set() if stats is not None and stats.num_unindexed_rows == 0 \
            else None

    def _update_sql(self, ids: Sequence[str], values_sql: dict[str, str]) -> int:
        self._require_match()
        done = 0
        with self._write_lock, self._vendor("update"):
            for chunk in id_chunks(ids):
                result = self._table.update(where=sql_in("id", chunk), values_sql=values_sql)
                done += int(result.rows_updated)
        return done

    def delete(self, ids: Sequence[str]) -> int:
        done = 0
        with self._write_lock, self._vendor("delete"):
            self._removals += 1
            # Counts first: a crash between leaves a row counted from 0, never a count
            # waiting for a re-captured id.
            self._replays.drop(ids)
            for chunk in id_chunks(ids):
                done += int(self._table.delete(sql_in("id", chunk)).num_deleted_rows)
                self._forget_unindexed(chunk)
        return done

    def delete_owned(self, ids: Sequence[str], namespace: str) -> list[str]:
        """Delete those of ``ids`` stored in ``namespace`` (others' and unknown ids are
        left alone) and return them, first asked first. Reads only the ids, never a
        record: retention forgets thousands at a time."""
        gone: list[str] = []
        with self._write_lock, self._vendor("delete"):
            self._removals += 1
            for chunk in id_chunks(ids):
                where = f"{sql_in('id', chunk)} AND namespace = {sql_str(namespace)}"
                found = {str(r["id"]) for r in self._rows(where, ["id"], len(chunk))}
                if not found:
                    continue
                owned = [i for i in chunk if i in found]
                # Counts first, as delete: a crash between leaves a row counted from 0.
                self._replays.drop(owned)
                self._table.delete(sql_in("id", owned))
                self._forget_unindexed(owned)
                gone += owned
        return gone

    def delete_chain_above(self, chain_id: int, block_number: int) -> list[str]:
        """Remove the episodes of one chain above a block (a reorg orphaned them)."""
        where = f"chain_id = {int(chain_id)} AND block_number > {int(block_number)}"
        with self._write_lock, self._vendor("delete"):
            self._removals += 1
            ids = [str(r["id"]) for r in self._rows(where, ["id"], limit=2**31 - 1)]
            if ids:
                self._replays.drop(ids)
                self._table.delete(where)
                self._forget_unindexed(ids)
        return ids

    def _forget_unindexed(self, deleted: Sequence[str]) -> None:
        if self._unindexed_ids is not None:
            self._unindexed_ids.difference_update(deleted)

    # ----- reads ----------------------------------------------------------------------------

    def search_vector(self, vector: np.ndarray, k: int, namespaces: Sequence[str], *,
                      since: float | None = None, until: float | None = None,
                      protocol: str | None = None, category: str | None = None,
                      ) -> list[tuple[Episode, float]]:
        """Top-k by cosine similarity among rows passing the prefilter."""
        return [(hit.episode(), hit.score) for hit in self.search_vector_hits(
            vector, k, namespaces, since=since, until=until, protocol=protocol,
            category=category)]

    def search_vector_hits(self, vector: np.ndarray, k: int, namespaces: Sequence[str], *,
                           since: float | None = None, until: float | None = None,
                           protocol: str | None = None, category: str | None = None,
                           ) -> list[Found]:
        """search_vector's hits with their rows undecoded: recall decodes only those fusion
        keeps."""
        found = self._dense(vector, k, namespaces, (since, until, protocol, category),
                            ["id", *ROW_COLUMNS])
        self._add_counts([row for row, _, _ in found])
        return [Found(str(row.pop("id")), similarity, vec, row)
                for row, similarity, vec in found]

    def search_vector_admitted(self, vector: np.ndarray, k: int, namespaces: Sequence[str],
                               measure: Callable[[str], float | None],
                               admit: Callable[[float | None], bool], *,
                               protocol: str | None = None, category: str | None = None,
                               since: float | None = None, until: float | None = None,
                               ) -> list[Found]:
        """Of the ``k`` rows search_vector_hits would return, those whose stored text (the
        rendering, then its identifiers line) ``admit`` accepts the ``measure`` of, as
        search_vector_hits returns them (exact cosine, best first).

        ``measure`` must be a pure function of a text: its value for a row is remembered by
        the row's address (up to MEASURED_ROWS of them, until the table is reopened), and
        an address never names another text while a table lives (LanceDB writes changed
        or compacted rows at new addresses and keeps the old ones unused). So the search
        reads the rows' addresses alone (and the vectors, when the index's rows are
        re-ranked: k <= RERANK_UP_TO), the texts only of the rows not measured yet, and
        only the admitted rows in full, by address. Should a write through this handle
        from another thread remove some of them between the reads (the Grimoire
        serialises its calls on one thread, so only another caller could), the search is
        made again by id, reading every text."""
        query = self._query_vector(vector)
        where = self._prefilter(namespaces, since, until, protocol, category)
        if k < 1 or not namespaces:
            return []

        def nearest(columns: list[str], key: str) -> tuple[list[Any], Any]:
            """The k nearest rows' ``key`` values, best first, and the search's table."""
            reranked = self._fetched(k) > k
            found = self._nearest(query, where, k, columns, vectors=reranked,
                                  row_ids=key == "_rowid")
            if reranked:  # the same k rows search_vector_hits keeps
                found = found.take(self._best(arrow_vectors(found, self.signature.dim)
                                              @ query, k))
            return found[key].to_pylist(), found

        def by_address() -> list[int] | None:
            """The admitted rows' addresses, best first; None if a row went meanwhile."""
            addresses: list[int] = []
            values: dict[int, float | None] = {}
            if self._measures.knows(measure):
                addresses, _ = nearest([], "_rowid")
                values = self._measures.known(measure, addresses)
            unknown = [a for a in addresses if a not in values] if values else None
            if unknown is None or len(unknown) > UNMEASURED_BY_ADDRESS:
                # nothing measured yet, or too much: one search reads the texts cheaper
                addresses, found = nearest(["text"], "_rowid")
                values = dict(zip(addresses, map(measure, found["text"].to_pylist()),
                                  strict=True))
                self._measures.learn(measure, values)
            elif unknown:
                found = _run(self._handle().take_row_ids(unknown).select(["text"])
                             .with_row_id())
                learned = dict(zip(found["_rowid"].to_pylist(),
                                   map(measure, found["text"].to_pylist()), strict=True))
                if learned.keys() != set(unknown):
                    return None
                values.update(learned)
                self._measures.learn(measure, learned)
            return [a for a in addresses if admit(values[a])]

        def read(addresses: list[int]) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
            table = _run(self._handle().take_row_ids(addresses)
                         .select(["id", *ROW_COLUMNS, "vector"]))
            return (table.drop_columns(["vector"]).to_pylist(),
                    [arrow_vectors(table, self.signature.dim)])

        with self._vendor("vector search"):
            addresses = by_address()
            rows, vectors = read(addresses) if addresses else ([], [])
            if addresses is None or len(rows) != len(addresses):  # rows went between reads
                ids, found = nearest(["id", "text"], "id")
                admitted = [str(i) for i, t in zip(ids, found["text"].to_pylist(), strict=True)
                            if admit(measure(str(t)))]
                rows, vectors = self._rows_by_id(admitted)
        if not rows:
            return []
        matrix = np.vstack(vectors)
        similarity = np.clip(matrix @ query, -1.0, 1.0)
        self._add_counts(rows)
        order = np.argsort(-similarity, kind="stable")
        return [Found(str(rows[i].pop("id")), float(similarity[i]), matrix[i], rows[i])
                for i in order]

    def _query_vector(self, vector: np.ndarray) -> np.ndarray:
        """The query as a flat float32 vector of the store's dimension; InvalidMemory if
        it is not one (or not finite)."""
        self._require_match()
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape != (self.signature.dim,) or not np.isfinite(query).all():
            raise InvalidMemory(f"query vector: expected {self.signature.dim} finite floats")
        return query

    def _dense(self, vector: np.ndarray, k: int, namespaces: Sequence[str],
               filters: tuple[float | None, float | None, str | None, str | None],
               columns: list[str]) -> list[tuple[dict[str, Any], float, np.ndarray]]:
        """(row, exact cosine, vector), best first."""
        query = self._query_vector(vector)
        where = self._prefilter(namespaces, *filters)
        if k < 1 or not namespaces:
            return []
        with self._vendor("vector search"):
            found = self._nearest(query, where, k, columns)
        # The index's distance is an estimate from quantised vectors, so the similarity is
        # computed here from the stored ones, and the rows re-ranked on it: what LanceDB's
        # refine_factor does, without its second read of the rows.
        vectors = arrow_vectors(found, self.signature.dim)
        similarity = np.clip(vectors @ query, -1.0, 1.0)
        rows = found.drop_columns(["vector", "_distance"]).to_pylist()
        return [(rows[i], float(similarity[i]), vectors[i])
                for i in self._best(similarity, k)]

    @staticmethod
    def _best(similarity: np.ndarray, k: int) -> list[int]:
        """Indices of the k highest similarities, highest first (ties: the earlier row)."""
        return [int(i) for i in np.argsort(-similarity, kind="stable")[:k]]

    def _fetched(self, k: int) -> int:
        """How many rows a search for k reads: twice k through the index for a k up to
        RERANK_UP_TO, else k (an exact search needs no more)."""
        return 2 * k if self._meta.index_rows is not None and k <= RERANK_UP_TO else k

    def _nearest(self, query: np.ndarray, where: Any, k: int, columns: list[str], *,
                 vectors: bool = True, row_ids: bool = False) -> Any:
        """The _fetched(k) nearest rows by the index passing ``where`` as an Arrow table
        (``columns``, then the vector if asked, then ``_distance``). Exactly nprobes
        partitions: with a prefilter, LanceDB's open-ended maximum_nprobes(0) probes every
        partition, comparing every row. Only a filter so selective that those partitions
        hold fewer than k rows probes them all."""
        fetched = self._fetched(k)
        found = self._vector_rows(query, where, fetched, self.nprobes, columns,
                                  vectors=vectors, row_ids=row_ids)
        if found.num_rows < k and self._meta.index_rows is not None:
            found = self._vector_rows(query, where, fetched, 0, columns, vectors=vectors,
                                      row_ids=row_ids)
        return found

    def _vector_rows(self, query: np.ndarray, where: Any, k: int, max_nprobes: int,
                     columns: list[str], *, vectors: bool = True, row_ids: bool = False) -> Any:
        """The search's rows: ``columns``, the vector if asked, ``_distance``, and each row's
        address in this version of the table (``_rowid``) if asked."""
        extra = ["vector", "_distance"] if vectors else ["_distance"]
        search = (self._query().nearest_to(query).column("vector").distance_type("cosine")
                  .minimum_nprobes(self.nprobes).maximum_nprobes(max_nprobes)
                  .select([*columns, *extra]).limit(k))
        if row_ids:
            search = search.with_row_id()
        return _run(search if where is None else search.where(where))

    def search_text(self, query: str, k: int, namespaces: Sequence[str], *,
                    since: float | None = None, until: float | None = None,
                    protocol: str | None = None, category: str | None = None,
                    ) -> list[tuple[Episode, float]]:
        """Top-k by BM25 over the text rendering; rows not yet in the FTS index are searched too."""
        return [(hit.episode(), hit.score) for hit in self.search_text_hits(
            query, k, namespaces, since=since, until=until, protocol=protocol,
            category=category)]

    def search_text_hits(self, query: str, k: int, namespaces: Sequence[str], *,
                         since: float | None = None, until: float | None = None,
                         protocol: str | None = None, category: str | None = None,
                         ) -> list[Found]:
        """Top-k by full text (score BM25) with their rows undecoded and their vectors, so
        recall has every lexical hit's cosine and decodes only the rows fusion keeps. Rows
        come with the search, not from a separate read afterwards (which would add a round
        trip to recall's critical path). Needs no query vector: it runs while the query
        embeds."""
        where = self._prefilter(namespaces, since, until, protocol, category)
        if k < 1 or not namespaces or not query.strip():
            return []
        with self._vendor("text search"):
            search = (self._query().nearest_to_text(query, columns="text")
                      .select(["id", *ROW_COLUMNS, "vector", "_score"]).limit(k))
            found = _run(search if where is None else search.where(where))
        vectors = arrow_vectors(found, self.signature.dim)
        rows = self._add_counts(found.drop_columns(["vector"]).to_pylist())
        return [Found(str(row.pop("id")), float(row.pop("_score")), vec, row)
                for row, vec in zip(rows, vectors, strict=True)]

    def get(self, ids: Sequence[str]) -> list[Episode]:
        """Episodes for the ids that exist, in the order asked."""
        found: dict[str, Episode] = {}
        with self._vendor("get"):
            for chunk in id_chunks(ids):
                rows = self._rows(sql_in("id", chunk), ["id", *ROW_COLUMNS], len(chunk))
                for row in self._add_counts(rows):
                    episode = from_row(row)
                    found[episode.id] = episode
        return [found[i] for i in dict.fromkeys(ids) if i in found]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        self._require_match()
        out: dict[str, np.ndarray] = {}
        with self._vendor("vectors"):
            for chunk in id_chunks(ids):
                for row in self._rows(sql_in("id", chunk), ["id", "vector"], len(chunk)):
                    out[row["id"]] = np.asarray(row["vector"], dtype=np.float32)
        return out

    def _add_counts(self, rows: list[dict[str, Any]],
                    counts: dict[str, int] | None = None) -> list[dict[str, Any]]:
        """Give rows (with their "id") their replay counts, as from_row wants them."""
        if counts is None:
            with self._vendor("replay count read"):
                counts = self._replays.get([str(r["id"]) for r in rows])
        for row in rows:
            row["replay_count"] = counts.get(row["id"], 0)
        return rows

    def _legacy_replay_counts(self) -> list[tuple[str, int]]:
        """The counts a store written by an older version kept in its own replay_count
        column (replays.db takes them once, when it is created)."""
        with self._vendor("replay count copy"):
            rows = self._rows("replay_count > 0", ["id", "replay_count"], 2**31 - 1)
        return [(str(r["id"]), int(r["replay_count"])) for r in rows]

    def _rows(self, where: str, columns: list[str], limit: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = _run(self._query().where(where).select(columns)
                                          .limit(limit)).to_pylist()
        return rows

    def _query(self) -> Any:
        """A query on the table's asynchronous handle, run by ``_run``."""
        return self._handle().query()

    def _handle(self) -> AsyncTable:
        """The table's asynchronous handle (the one inside the synchronous table, so it
        sees every commit)."""
        handle = getattr(self._table, "_table", None)
        if not isinstance(handle, AsyncTable):  # lancedb is pinned; a new one needs a look
            raise GrimoireError(f"lancedb {lancedb.__version__}: the table has no "
                                "asynchronous handle; this version is not supported")
        return handle

    def _rows_by_id(self, ids: list[str]) -> tuple[list[dict[str, Any]], list[np.ndarray]]:
        """The rows of ``ids`` (those that exist) with their vectors, in no order."""
        rows: list[dict[str, Any]] = []
        vectors: list[np.ndarray] = []
        for chunk in id_chunks(ids):
            table = _run(self._query().where(sql_in("id", chunk))
                         .select(["id", *ROW_COLUMNS, "vector"]).limit(len(chunk)))
            vectors.append(arrow_vectors(table, self.signature.dim))
            rows += table.drop_columns(["vector"]).to_pylist()
        return rows, vectors

    def count(self, namespaces: Sequence[str] | None = None) -> int:
        if namespaces is not None and not namespaces:
            return 0
        with self._vendor("count"):
            where = None if namespaces is None else sql_in("namespace", namespaces)
            return int(self._table.count_rows(where))

    def iter_all(self, batch_size: int = 1024) -> Iterator[list[Episode]]:
        """Every episode, in batches (a snapshot of the table at the first read)."""
        with self._vendor("scan"):
            counts = self._replays.all()
            reader = self._table.search().select(["id", *ROW_COLUMNS]).to_batches(batch_size)
            for batch in reader:
                yield [from_row(r) for r in self._add_counts(batch.to_pylist(), counts)]

    def newest_hits(self, vector: np.ndarray, k: int, namespaces: Sequence[str], *,
                    until: float, protocol: str | None, category: str | None,
                    ) -> list[Found]:
        """The ``k`` newest episodes of a protocol and category observed at or before
        ``until`` (ties at the k-th time may add a few), with their exact cosine to
        ``vector``, newest first. LanceDB cannot sort, so the times alone are read over
        windows reaching back NEWEST_WINDOWS_S from ``until`` until one holds ``k``, then
        the rows from the k-th newest time on. A window holding more than NEWEST_SCAN
        rows is read in part, so its k are some of the newest, not exactly the newest."""
        self._require_match()
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if k < 1 or not namespaces:
            return []
        times: Any = None
        with self._vendor("newest scan"):
            for window in NEWEST_WINDOWS_S:
                since = None if window is None else until - window
                times = _run(self._query().where(search_filter(
                    namespaces, since, until, protocol, category)).select(["observed_at"])
                    .limit(NEWEST_SCAN))["observed_at"].to_numpy()
                if len(times) >= k:
                    break
            if times is None or len(times) == 0:
                return []
            cutoff = float(np.sort(times)[::-1][min(k, len(times)) - 1])
            rows = _run(self._query().where(search_filter(
                namespaces, cutoff, until, protocol, category))
                .select(["id", *ROW_COLUMNS, "observed_at", "vector"]).limit(2 * k))
        vectors = arrow_vectors(rows, self.signature.dim)
        similarity = np.clip(vectors @ query, -1.0, 1.0)
        observed = rows["observed_at"].to_numpy()
        found = self._add_counts(rows.drop_columns(["vector", "observed_at"]).to_pylist())
        order = np.argsort(-observed, kind="stable")[:k]
        return [Found(str(found[i].pop("id")), float(similarity[i]), vectors[i], found[i])
                for i in order]

    def since(self, namespaces: Sequence[str], observed_after: float, until: float,
              limit: int, *, verified_only: bool = False) -> list[Episode]:
        """Episodes with observed_after < observed_at <= until (a consolidation window),
        sorted oldest first; past ``limit`` rows, the first ``limit`` in storage (capture)
        order. ``verified_only``: quality-verified ones only (replay candidates)."""

        if not namespaces or limit < 1:
            return []
        clause = _window_clause(namespaces, observed_after, until, verified_only)
        with self._vendor("window scan"):
            rows = self._add_counts(self._rows(clause, ["id", *ROW_COLUMNS], limit))
        return sorted((from_row(r) for r in rows), key=lambda e: (e.observed_at, e.id))

    def since_refs(self, namespaces: Sequence[str], observed_after: float, until: float,
                   limit: int, *, verified_only: bool = False) -> list[EpisodeRef]:
        """The episodes ``since`` would return, as references (id, time, importance,
        replay count), without reading or decoding their records."""
        if not namespaces or limit < 1:
            return []
        clause = _window_clause(namespaces, observed_after, until, verified_only)
        with self._vendor("window scan"):
            rows = self._add_counts(self._rows(clause, ["id", "observed_at", "importance"],
                                               limit))
        refs = [EpisodeRef(r["id"], float(r["observed_at"]), r["importance"],
                           int(r["replay_count"])) for r in rows]
        return sorted(refs, key=lambda e: (e.observed_at, e.id))

    def facts(self, namespaces: Sequence[str], observed_after: float, until: float,
              limit: int) -> list[EpisodeFacts]:
        """What retention weighs of the episodes ``since`` would return, in its order:
        the columns and each record's curiosity, read column-wise without building any
        Episode. The curiosity is read from the record in the query (CURIOSITY_SQL), so
        the records are not returned; only a record that reading fails is read and
        parsed here (record_curiosity), and both readings agree."""
        if not namespaces or limit < 1:
            return []
        clause = _window_clause(namespaces, observed_after, until, False)
        columns = {c: c for c in FACT_COLUMNS if c != "record"}
        with self._vendor("window scan"):
            table = _run(self._query().where(clause)
                         .select({**columns, "record_curiosity": CURIOSITY_SQL}).limit(limit))
            ids = [str(i) for i in table.column("id").to_pylist()]
            counts = self._replays.get(ids)
            curiosity = table.column("record_curiosity").to_pylist()
            unread = [i for i, value in zip(ids, curiosity, strict=True) if value is None]
            records = [row for chunk in id_chunks(unread)
                       for row in self._rows(sql_in("id", chunk), ["id", "record"], len(chunk))]
        parsed = {str(row["id"]): record_curiosity(str(row["record"])) for row in records}
        curiosity = [parsed[i] if value is None else float(value)
                     for i, value in zip(ids, curiosity, strict=True)]
        out = [EpisodeFacts(i, float(at), str(cat), cur, imp, bool(ok), counts.get(i, 0))
               for i, at, cat, cur, imp, ok in zip(
                   ids, table.column("observed_at").to_pylist(),
                   table.column("category").to_pylist(), curiosity,
                   table.column("importance").to_pylist(),
                   table.column("quality_verified").to_pylist(), strict=True)]
        return sorted(out, key=lambda e: (e.observed_at, e.id))

    # ----- maintenance ----------------------------------------------------------------------

    def maybe_build_index(self, older_than_s: float = 3600.0, *,
                          max_versions: int | None = None) -> bool:
        """Keep search fast; call it from a maintenance loop. Trains the IVF_RQ cosine index
        once the table holds index_min_rows, and retrains it on 20% growth, once the rows
        written since training reach REINDEX_CHURN of the rows it was trained on (counted
        in the store's meta at each call; a crash loses the count since the last call),
        past MAX_VECTOR_SEGMENTS delta segments, or when its kind is not INDEX_KIND; folds rows
        written since the last optimize into the indexes once there are more than
        FTS_REFRESH_ROWS of them (unindexed rows are still found, but every text search
        scans them), with an ``optimize(older_than_s, max_versions=...)``. Reconnects when
        it did work. Returns whether it did any work."""
        self._require_match()
        did = False
        with self._write_lock, self._vendor("index build"):
            if self._fold_due():
                self._optimize(older_than_s, max_versions, VECTOR_FOLD_ROWS)
                did = True
            rows = int(self._table.count_rows())
            trained = self._meta.index_rows
            stale = trained is not None and self._meta.index_kind != layout.INDEX_KIND
            segments = layout.vector_segments(self._table)
            written = self._meta.written_since_index + self._written
            if rows >= self.index_min_rows and (
                    trained is None or stale or rows >= trained * REINDEX_GROWTH
                    or written >= trained * REINDEX_CHURN
                    or segments > MAX_VECTOR_SEGMENTS):
                log.info("training the episode vector index", rows=rows, trained_rows=trained,
                         written_since=written, segments=segments)
                partitions = self._train_vector_index(rows)
                self._set_meta(layout.StoreMeta(self._meta.table, self._meta.signature, rows,
                                                layout.INDEX_KIND, index_partitions=partitions))
                did = True
            elif self._written and trained is not None:  # before training, nothing to count
                self._set_meta(dataclasses.replace(self._meta, written_since_index=written))
            self._written = 0
            self._release_standby()  # started for a fold that turned out not to be due
            if did:
                self.reconnect()
        return did

    def prepare_fold(self) -> bool:
        """When maybe_build_index would fold now, start the fold's child already, so that
        it loads pylance while the caller does other work (episodes_fold.FoldChild); the
        next fold uses it, and maybe_build_index lets it go if none came. Returns whether
        one was started."""
        self._require_match()
        with self._write_lock, self._vendor("fold preparation"):
            if self._standby is not None or not self._fold_due():
                return False
            self._standby = FoldChild()
        return True

    def _fold_due(self) -> bool:
        """Whether maybe_build_index folds: more than FTS_REFRESH_ROWS rows wait outside
        the text index."""
        text_index = self._table.index_stats(FTS_INDEX)
        return text_index is not None and text_index.num_unindexed_rows > FTS_REFRESH_ROWS

    def _release_standby(self) -> None:
        child, self._standby = self._standby, None
        if child is not None:
            child.release()

    def _train_vector_index(self, rows: int) -> int:
        """Train the IVF_RQ index with about first_partitions(...) partitions; returns the
        count it formed. When k-means cannot form that many clusters (a store of
        near-duplicate vectors: shapes repeat, so an old golem's table holds a few thousand
        distinct vectors), train again with half as many, down to one, and say so; any
        other vendor failure propagates."""
        partitions = first_partitions(rows, self._meta.index_rows, self._meta.index_partitions)
        while True:
            try:
                # A target partition size, not a count: optimize() re-partitions toward
                # the target, and with the default target it merges the partitions into a
                # handful, so every search would scan all rows.
                self._table.create_index("vector", config=vector_index(rows, partitions),
                                         replace=True)
                return partitions
            except Exception as exc:
                if partitions == 1 or TOO_FEW_CLUSTERS not in str(exc):
                    raise
                log.warning("too many near-duplicate vectors for the partition count; "
                            "training with fewer partitions", rows=rows,
                            partitions=partitions, retry_partitions=partitions // 2)
                partitions //= 2

    def optimize(self, older_than_s: float = 3600.0, *,
                 max_versions: int | None = None) -> dict[str, Any]:
        """Compact fragments, fold every new row into the indexes (the vector index too,
        whatever VECTOR_FOLD_ROWS), drop versions older than ``older_than_s``, all but the
        newest ``max_versions`` versions (None: no count bound) and leftover ``.tmp*``
        files, then reconnect. Returns before/after stats. Raises ValueError on a
        negative age or a count below 1."""
        if not older_than_s >= 0:
            raise ValueError(f"older_than_s: must be >= 0, got {older_than_s}")
        if max_versions is not None and max_versions < 1:
            raise ValueError(f"max_versions: must be >= 1, got {max_versions}")
        with self._write_lock:
            report = self._optimize(older_than_s, max_versions, 1)
            self.reconnect()
        return report

    def _optimize(self, older_than_s: float, max_versions: int | None,
                  vector_rows: int) -> dict[str, Any]:
        with self._write_lock, self._vendor("optimize"):
            before = self._stats()
            started = time.perf_counter()
            swept = layout.sweep_orphans(self.directory, self._meta.table)
            self._fold(timedelta(seconds=older_than_s), max_versions, vector_rows)
            after = self._stats()
        return {"before": before, "after": after, "orphans_removed": len(swept),
                "seconds": round(time.perf_counter() - started, 3)}

    def _fold(self, age: timedelta, max_versions: int | None, vector_rows: int) -> None:
        """One fold (episodes_fold.fold, in a child process: prepare_fold's, if it started
        one): new fragments compacted, new rows into the indexes, the vector index's once
        ``vector_rows`` wait for it (it gains no delta segment and is not retrained);
        versions older than ``age`` or beyond the newest ``max_versions`` dropped. Raises
        FoldFailed (the caller maps it) when the child does not commit."""
        index_mb, metadata_mb = self._cache_mb
        vector = self._table.index_stats(layout.VECTOR_INDEX)
        child, self._standby = self._standby or FoldChild(), None
        child.run(FoldSpec(
            table_dir=str(layout.table_dir(self.directory, self._meta.table)),
            index_cache_mb=index_mb, metadata_cache_mb=metadata_mb,
            older_than_s=age.total_seconds(), max_versions=max_versions,
            vector_index=layout.VECTOR_INDEX,
            fold_vector=vector is None or vector.num_unindexed_rows >= vector_rows))
        self._table.checkout_latest()

    def reembed(self, embed_fn: EmbedFn, batch_size: int = 256, *,
                transform: TransformFn | None = None,
                progress: ProgressFn | None = None) -> int:
        """Copy every row into a new table with the configured model's vectors, then switch
        to it with one atomic pointer write. ``transform`` makes an episode again (its text
        re-rendered); when the stored vectors are already the configured model's, only the
        episodes whose text changed are embedded, the rest keep their vectors. A failure,
        an interruption or a crash before the switch leaves the old store as it was (the
        unfinished copy is removed, now or at the next open), so running it again is safe.
        Writes wait meanwhile; run it with the golem stopped (the old table is deleted).
        ``progress(done, total)`` after every batch. Returns the rows copied."""
        return self._rebuild(self._configured, "reembed", embed_fn, batch_size,
                             transform=transform, reuse_vectors=not self.needs_migration,
                             progress=progress)

    def _rebuild(self, target: ModelSignature, what: str, embed_fn: EmbedFn | None,
                 batch_size: int, *, transform: TransformFn | None = None,
                 reuse_vectors: bool = False, progress: ProgressFn | None = None) -> int:
        """Copy every row into a new table in today's layout (re-embedded with embed_fn if
        given) and switch to it; see reembed for the guarantees."""
        with self._write_lock:
            name = layout.new_table_name(target)
            try:
                new = create_table(self._db, name, episode_schema(target.dim))
                written = copy_episodes(self._table, new, target, batch_size, embed_fn,
                                        transform=transform, reuse_vectors=reuse_vectors,
                                        progress=progress)
                new_meta = layout.StoreMeta(name, target, None)
                layout.write_meta(self.directory, new_meta)  # the commit point
            except BaseException as exc:
                if not self._committed(name):
                    layout.remove_table_dir(self.directory, name)
                if isinstance(exc, Exception) and not isinstance(exc, GrimoireError):
                    raise GrimoireError(f"{what} of {self.directory} failed, the store is "
                                        f"unchanged: {type(exc).__name__}: {exc}") from exc
                raise
            old, self._meta = self._meta.table, new_meta
            self._removals += 1  # the new table holds the ids the old one did, or fewer
            self._table = self._open_table(name)
            self._learn_unindexed_ids()
            self._id_filter = None
            layout.remove_table_dir(self.directory, old)
            if not self.needs_migration:
                self.maybe_build_index()
        return written

    def _stats(self) -> dict[str, int]:
        return layout.table_stats(self._table, layout.table_dir(self.directory, self._meta.table))

    def _committed(self, table: str) -> bool:
        """Whether store.json already names ``table`` (a failure after the rename)."""
        try:
            meta = layout.read_meta(self.directory)
        except GrimoireError:
            return False
        return meta is not None and meta.table == table

    def _set_meta(self, meta: layout.StoreMeta) -> None:
        layout.write_meta(self.directory, meta)
        self._meta = meta


def first_partitions(rows: int, last_rows: int | None, last_partitions: int | None) -> int:
    """The partition count a training of ``rows`` rows tries first: about sqrt(rows), or,
    when the last training (of ``last_rows`` rows) formed only ``last_partitions``
    clusters, that count grown with the rows as sqrt(rows) grows, so a store of
    near-duplicate vectors does not pay a failed k-means at every training (a third of
    a training at 100k rows). At least 1."""
    full = max(1, round(math.sqrt(rows)))
    if not last_rows or not last_partitions:
        return full
    return max(1, min(full, round(last_partitions * math.sqrt(rows / last_rows))))


def vector_index(rows: int, partitions: int, *, max_iterations: int = IVF_MAX_ITERATIONS,
                 sample_rate: int = IVF_SAMPLE_RATE) -> IvfRq:
    """The vector index the store trains on ``rows`` rows: IVF_RQ (four bits a
    dimension), cosine, about ``partitions`` partitions."""
    return IvfRq(distance_type="cosine", num_bits=4,
                 target_partition_size=max(1, rows // max(1, partitions)),
                 max_iterations=max_iterations, sample_rate=sample_rate)


def _connect(directory: Path, cache_mb: tuple[int, int]) -> Any:
    """A connection with bounded caches: LanceDB's defaults (6 GB index, 1 GB metadata) let
    every small write's manifest and fragment metadata accumulate, so RSS grows with the
    writes; bounded, it plateaus."""
    index_mb, metadata_mb = cache_mb
    return lancedb.connect(str(directory), session=lancedb.Session(
        index_cache_size_bytes=index_mb << 20, metadata_cache_size_bytes=metadata_mb << 20))


def vendor_problem(exc: BaseException) -> str:
    """The first line of a LanceDB error without the Rust source location it ends with."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return re.sub(r",\s*/\S+\.rs:\d+:\d+$", "", text)


def _run(query: Any) -> Any:
    """Run a query on LanceDB's event loop in one hop. Its synchronous builder makes several
    round trips to that loop per query (schema reads among them), each a thread switch
    in every search."""
    return LOOP.run(query.to_arrow())  # type: ignore[no-untyped-call]


def _window_clause(namespaces: Sequence[str], observed_after: float, until: float,
                   verified_only: bool) -> str:
    clause = (f"{sql_in('namespace', namespaces)} AND observed_at > "
              f"{_time_sql(observed_after)} AND observed_at <= {_time_sql(until)}")
    return clause + " AND quality_verified = true" if verified_only else clause


def _time_sql(value: float) -> str:
    """A finite time as a SQL float literal (InvalidMemory otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidMemory(f"time bound: must be a finite number, got {value!r}")
    return repr(float(value))


class RowMeasures:
    """Values of pure functions of rows' texts, by (function, row address): at most
    ``size`` of them, the least recently used out first. Thread-safe."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._values: OrderedDict[tuple[Callable[[str], float | None], int], float | None] \
            = OrderedDict()
        self._held: dict[Callable[[str], float | None], int] = {}  # values per function
        self._lock = threading.Lock()

    def knows(self, measure: Callable[[str], float | None]) -> bool:
        """Whether any row's value of ``measure`` is held."""
        with self._lock:
            return measure in self._held

    def known(self, measure: Callable[[str], float | None],
              addresses: Sequence[int]) -> dict[int, float | None]:
        """The held values of ``measure`` among ``addresses``, each marked recently used."""
        out: dict[int, float | None] = {}
        with self._lock:
            for address in addresses:
                key = (measure, address)
                if key in self._values:
                    self._values.move_to_end(key)
                    out[address] = self._values[key]
        return out

    def learn(self, measure: Callable[[str], float | None],
              values: dict[int, float | None]) -> None:
        with self._lock:
            for address, value in values.items():
                key = (measure, address)
                if key not in self._values:
                    self._held[measure] = self._held.get(measure, 0) + 1
                self._values[key] = value
                self._values.move_to_end(key)
            while len(self._values) > self._size:
                (gone, _), _ = self._values.popitem(last=False)
                self._held[gone] -= 1
                if not self._held[gone]:
                    del self._held[gone]

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._held.clear()

"""The semantic store's vectors: validation, float32 blobs and the in-memory matrix.

Exact cosine search runs in numpy over one matrix of unit vectors per namespace,
loaded once from SQLite and then kept current after each committed write (rows
replaced, appended, dropped or re-statused), so a write never forces a full
reload. No I/O here: the store hands in the rows to build from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from golem.grimoire.errors import InvalidMemory, StoreCorrupt
from golem.grimoire.records import SemanticEntry
from golem.grimoire.semantic_schema import Filters

Vector = npt.NDArray[np.float32]
# Loads (id, status, entry_type, memory_type, importance, embedding) rows of a namespace.
RowLoader = Callable[[str], Sequence[tuple[Any, ...]]]


def vector_matrix(vectors: Any, count: int, dim: int) -> Vector:
    """Validate a (count, dim) batch of finite vectors; returns float32."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1 and count == 1:
        array = array.reshape(1, -1)
    if array.shape != (count, dim):
        raise InvalidMemory(f"vectors: expected shape ({count}, {dim}), got {array.shape}")
    if not np.isfinite(array).all():
        raise InvalidMemory("vectors: contain NaN or infinite values")
    return array


def blob(vector: Vector) -> bytes:
    """The stored form of a vector: little-endian float32."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(data: bytes, dim: int, where: str) -> Vector:
    """A stored vector back, refusing one of the wrong size as corrupt."""
    if len(data) != 4 * dim:
        raise StoreCorrupt(f"{where}: stored vector of {len(data)} bytes, "
                           f"expected {dim} float32")
    return np.frombuffer(data, dtype="<f4")


def top_k(scores: npt.NDArray[np.float32], k: int,
          ids: npt.NDArray[np.str_] | None = None) -> npt.NDArray[np.intp]:
    """Indices of the k best scores, best first; equal scores are ordered by id, so the
    answer does not depend on row order (a cache and a fresh load must agree)."""
    if ids is None or scores.size <= k:
        best = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        if ids is None:
            return best[np.argsort(-scores[best], kind="stable")]
        return best[np.lexsort((ids[best], -scores[best]))]
    # keep every row tied with the k-th score, then break ties by id
    kth = np.partition(-scores, k - 1)[k - 1]
    best = np.flatnonzero(-scores <= kth)
    return best[np.lexsort((ids[best], -scores[best]))][:k]


@dataclass(frozen=True)
class NamespaceMatrix:
    """Unit vectors and filter columns of one namespace, for exact cosine in numpy.

    Kept current after each committed write (rows replaced, appended, dropped or
    re-statused) so a write never forces a full reload of the namespace.
    """

    ids: npt.NDArray[np.str_]
    unit: Vector
    status: npt.NDArray[np.str_]
    entry_type: npt.NDArray[np.str_]
    memory_type: npt.NDArray[np.str_]
    importance: npt.NDArray[np.float64]

    @classmethod
    def build(cls, rows: Sequence[tuple[Any, ...]], dim: int, where: str) -> NamespaceMatrix:
        """From (id, status, entry_type, memory_type, importance, embedding) rows."""
        blobs = [row[5] for row in rows]
        if any(len(blob) != 4 * dim for blob in blobs):
            raise StoreCorrupt(f"{where}: a stored vector is not {dim} float32 values")
        matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(rows), dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit = (matrix / np.where(norms == 0.0, 1.0, norms)).astype(np.float32)
        columns = [[row[i] for row in rows] for i in range(5)]
        status, entry_type, memory_type = (np.array(c, dtype="<U32") for c in columns[1:4])
        return cls(np.array(columns[0], dtype=str), unit, status, entry_type, memory_type,
                   np.array(columns[4], dtype=np.float64))

    @staticmethod
    def row(entry: SemanticEntry, blob: bytes) -> tuple[Any, ...]:
        return (entry.id, entry.status.value, entry.entry_type.value, entry.memory_type.value,
                entry.importance, blob)

    def without(self, ids: Sequence[str]) -> NamespaceMatrix:
        keep = ~np.isin(self.ids, list(ids))
        return NamespaceMatrix(*(column[keep] for column in self._columns()))

    def upsert(self, rows: Sequence[tuple[Any, ...]], dim: int, where: str) -> NamespaceMatrix:
        latest = {row[0]: row for row in rows}  # the last write of an id wins, as in SQL
        fresh = NamespaceMatrix.build(list(latest.values()), dim, where)
        kept = self.without(list(latest))._columns()
        return NamespaceMatrix(*(np.concatenate([a, b]) for a, b in
                                 zip(kept, fresh._columns(), strict=True)))

    def set_status(self, ids: Sequence[str], status: str) -> None:
        self.status[np.isin(self.ids, list(ids))] = status

    def _columns(self) -> tuple[Any, ...]:
        return (self.ids, self.unit, self.status, self.entry_type, self.memory_type,
                self.importance)

    def passing(self, filters: Filters) -> npt.NDArray[np.bool_]:
        """Which rows pass (statuses, entry/memory types, min importance)."""
        statuses, entry_types, memory_types, min_importance = filters
        mask = np.ones(len(self.ids), dtype=bool)
        for column, allowed in ((self.status, statuses), (self.entry_type, entry_types),
                                (self.memory_type, memory_types)):
            if allowed is not None:
                mask &= np.isin(column, [str(v) for v in allowed])
        if min_importance is not None:
            mask &= self.importance >= min_importance
        return mask

    def search(self, query: Vector, filters: Filters,
               ) -> tuple[npt.NDArray[np.str_], npt.NDArray[np.float32]]:
        """Ids and cosine scores of the rows passing the filters."""
        rows = np.flatnonzero(self.passing(filters))
        if 4 * rows.size < len(self.ids):
            return self.ids[rows], self.unit[rows] @ query
        return self.ids[rows], (self.unit @ query)[rows]


class VectorCache:
    """The loaded NamespaceMatrix of each namespace searched so far.

    Only namespaces already loaded are maintained; the others load on first search.
    ``version`` grows at every change the store reports (put, status, drop, clear), loaded
    namespace or not: what was computed from the store at one version holds until it
    moves.
    """

    def __init__(self, load: RowLoader, where: str) -> None:
        self._load = load
        self._where = where
        self._matrices: dict[str, NamespaceMatrix] = {}
        self.version = 0

    def matrix(self, namespace: str, dim: int) -> NamespaceMatrix:
        cached = self._matrices.get(namespace)
        if cached is None:
            cached = NamespaceMatrix.build(self._load(namespace), dim,
                                           f"{self._where} [{namespace}]")
            self._matrices[namespace] = cached
        return cached

    def search(self, query: Vector, k: int, namespaces: Sequence[str], filters: Filters,
               dim: int) -> list[tuple[str, float]]:
        """Exact cosine top-k (id, score) over the namespaces; query need not be unit."""
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            raise InvalidMemory("query vector: has zero norm")
        if k <= 0 or not namespaces:
            return []
        ids, scores = [], []
        for namespace in dict.fromkeys(namespaces):
            hit_ids, hit_scores = self.matrix(namespace, dim).search(query / norm, filters)
            ids.append(hit_ids)
            scores.append(hit_scores)
        all_ids, all_scores = np.concatenate(ids), np.concatenate(scores)
        top = top_k(all_scores, k, all_ids)
        return list(zip(all_ids[top].tolist(), all_scores[top].tolist(), strict=True))

    def admitted(self, namespaces: Sequence[str], filters: Filters, dim: int) -> set[str]:
        """Ids of the namespaces' entries passing the filters, as search applies them (for
        the lexical lists, ranked elsewhere; ids are unique across namespaces)."""
        admitted: set[str] = set()
        for namespace in dict.fromkeys(namespaces):
            matrix = self.matrix(namespace, dim)
            admitted.update(matrix.ids[matrix.passing(filters)].tolist())
        return admitted

    def cosines(self, query: Vector, ids: Sequence[str], namespaces: Sequence[str],
                dim: int) -> dict[str, float]:
        """Cosine of each given id's stored vector (ids not in these namespaces are left out)."""
        norm = float(np.linalg.norm(query))
        if norm == 0.0:
            raise InvalidMemory("query vector: has zero norm")
        out: dict[str, float] = {}
        if not ids:
            return out
        for namespace in dict.fromkeys(namespaces):
            matrix = self.matrix(namespace, dim)
            rows = np.flatnonzero(np.isin(matrix.ids, list(ids)))
            scores = matrix.unit[rows] @ (query / norm)
            out.update(zip(matrix.ids[rows].tolist(), scores.tolist(), strict=True))
        return out

    def put(self, entries: Sequence[SemanticEntry], blobs: Sequence[bytes], dim: int) -> None:
        """Bring cached namespace matrices up to date after a committed put."""
        self.version += 1
        for namespace, matrix in list(self._matrices.items()):
            rows = [NamespaceMatrix.row(e, b) for e, b in zip(entries, blobs, strict=True)
                    if e.namespace == namespace]
            if rows:
                self._matrices[namespace] = matrix.upsert(rows, dim, self._where)

    def set_status(self, ids: Sequence[str], status: str) -> None:
        self.version += 1
        for matrix in self._matrices.values():
            matrix.set_status(ids, status)

    def drop(self, ids: Sequence[str]) -> None:
        self.version += 1
        for namespace, matrix in list(self._matrices.items()):
            self._matrices[namespace] = matrix.without(ids)

    def clear(self) -> None:
        self.version += 1
        self._matrices.clear()

"""BM25 over the semantic store's entries, in memory: what its FTS5 index computes, faster.

SQLite's FTS5 ranks by computing bm25 for every matching row, and a Theta query OR-ing a
dozen common market words matches nearly every entry: each lexical list costs a pass in
SQL over the whole store. Here the same scores come from numpy over posting arrays:
FTS5's formula (fts5_aux.c, k1 = 1.2, b = 0.75, column weights text 1.0, tags 0.5,
idf = ln((N - n + 0.5) / (n + 0.5)) floored at 1e-6, each quoted query word a phrase),
its statistics over every entry of every namespace and status, and tokens from FTS5's
own tokenizer (the caller hands them in), so the lists are FTS5's. No I/O here: the
store feeds it tokens after each committed write.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

K1, B = 1.2, 0.75
TEXT_WEIGHT, TAGS_WEIGHT = 1.0, 0.5
IDF_FLOOR = 1e-6


class Lexicon:
    """Postings of every entry: token -> {slot: weighted count}; arrays built per token
    on first use after a change, so a write costs only the tokens it touches."""

    def __init__(self) -> None:
        self._slot: dict[str, int] = {}  # entry id -> slot
        self._ids: list[str] = []
        self._namespaces: list[str] = []
        self._length = np.zeros(0, dtype=np.float64)  # tokens in text + tags; 0 = free slot
        self._free: list[int] = []
        self._tokens: dict[int, dict[str, float]] = {}  # slot -> weighted counts
        self._postings: dict[str, dict[int, float]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        self._total_tokens = 0.0
        self._order: npt.NDArray[np.intp] | None = None

    def __len__(self) -> int:
        return len(self._slot)

    def put(self, docs: Iterable[tuple[str, str, Sequence[str], Sequence[str]]]) -> None:
        """Add or replace (id, namespace, text tokens, tags tokens) documents."""
        for entry_id, namespace, text, tags in docs:
            self.drop([entry_id])
            weighted: dict[str, float] = {}
            for tokens, weight in ((text, TEXT_WEIGHT), (tags, TAGS_WEIGHT)):
                for token in tokens:
                    weighted[token] = weighted.get(token, 0.0) + weight
            slot = self._free.pop() if self._free else self._grow()
            self._slot[entry_id] = slot
            self._ids[slot], self._namespaces[slot] = entry_id, namespace
            self._length[slot] = len(text) + len(tags)
            self._total_tokens += self._length[slot]
            self._tokens[slot] = weighted
            self._order = None
            for token, count in weighted.items():
                self._postings.setdefault(token, {})[slot] = count
                self._arrays.pop(token, None)

    def drop(self, ids: Iterable[str]) -> None:
        for entry_id in ids:
            slot = self._slot.pop(entry_id, None)
            if slot is None:
                continue
            for token in self._tokens.pop(slot):
                postings = self._postings[token]
                del postings[slot]
                if not postings:
                    del self._postings[token]
                self._arrays.pop(token, None)
            self._total_tokens -= self._length[slot]
            self._length[slot] = 0.0
            self._free.append(slot)
            self._order = None

    def search(self, phrases: Sequence[str]) -> Ranking:
        """The query's BM25 over every entry: iterating the result yields each entry
        matching any phrase (one token each) as (id, namespace, score), best first, equal
        scores by id (the SQL's ORDER BY bm25, id), sorted only when iterated; its
        ``score`` gives any one entry's score."""
        rows = len(self._slot)
        scores = np.zeros(len(self._length), dtype=np.float64)
        matched = np.zeros(len(self._length), dtype=bool)
        if rows and phrases:
            avgdl = self._total_tokens / rows
            norm = K1 * (1.0 - B + B * self._length / avgdl) if avgdl > 0 else \
                np.full(len(self._length), K1 * (1.0 - B))
            for token in phrases:
                found = self._array(token)
                if found is None:
                    continue
                slots, freq = found
                idf = max(math.log((rows - len(slots) + 0.5) / (len(slots) + 0.5)), IDF_FLOOR)
                # fts5_aux.c's order of operations, so the scores (and ties) are FTS5's
                scores[slots] += idf * ((freq * (K1 + 1.0)) / (freq + norm[slots]))
                matched[slots] = True
        return Ranking(self, scores, matched)

    def _id_order(self) -> npt.NDArray[np.intp]:
        """Each slot's place in id order (the tie-break), recomputed after a write."""
        if self._order is None or len(self._order) != len(self._length):
            order = np.zeros(len(self._length), dtype=np.intp)
            by_id = sorted(self._slot.items())
            order[[slot for _, slot in by_id]] = np.arange(len(by_id))
            self._order = order
        return self._order

    def _array(self, token: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]] | None:
        cached = self._arrays.get(token)
        if cached is None:
            postings = self._postings.get(token)
            if postings is None:
                return None
            cached = (np.fromiter(postings.keys(), dtype=np.intp, count=len(postings)),
                      np.fromiter(postings.values(), dtype=np.float64, count=len(postings)))
            self._arrays[token] = cached
        return cached

    def _grow(self) -> int:
        slot = len(self._ids)
        self._ids.append("")
        self._namespaces.append("")
        if slot >= len(self._length):
            self._length = np.concatenate([self._length, np.zeros(max(64, slot), np.float64)])
        return slot


class Ranking:
    """One query's scores over a Lexicon, valid until the lexicon's next write."""

    def __init__(self, lexicon: Lexicon, scores: npt.NDArray[np.float64],
                 matched: npt.NDArray[np.bool_]) -> None:
        self._lexicon = lexicon
        self._scores = scores
        self._matched = matched

    def __iter__(self) -> Iterator[tuple[str, str, float]]:
        """Matching entries as (id, namespace, score), best first, equal scores by id."""
        lex, scores = self._lexicon, self._scores
        hits = np.flatnonzero(self._matched)
        for i in np.lexsort((lex._id_order()[hits], -scores[hits])):
            slot = int(hits[i])
            yield lex._ids[slot], lex._namespaces[slot], float(scores[slot])

    def score(self, entry_id: str) -> float:
        """The entry's BM25 score; 0.0 when it matches no phrase or is not in the lexicon."""
        slot = self._lexicon._slot.get(entry_id)
        if slot is None or slot >= len(self._matched) or not self._matched[slot]:
            return 0.0
        return float(self._scores[slot])

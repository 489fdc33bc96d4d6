"""Lexical search of the semantic store: BM25 through SQLite FTS5.

The MATCH expression is built here from arbitrary user text, quoted word by
word, so no query can raise an FTS5 syntax error or use an operator.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any

from golem.grimoire import semantic_schema as schema
from golem.grimoire.records import SemanticEntry
from golem.grimoire.semantic_db import SemanticDb
from golem.grimoire.semantic_schema import Filters, row_entry, where_clause

MAX_QUERY_TOKENS = 32
WORD_CACHE = 4096  # query words whose tokens are remembered
_TOKEN = re.compile(r"[^\W_]+")


def query_words(query: str) -> list[str]:
    """The distinct words of a query, as match_expression quotes them (at most 32)."""
    words: list[str] = []
    for word in _TOKEN.findall(query.lower()):
        if word[:64] not in words:
            words.append(word[:64])
        if len(words) == MAX_QUERY_TOKENS:
            break
    return words


def match_expression(query: str) -> str | None:
    """A safe FTS5 MATCH string: each word quoted, OR-ed; None when there are no words.

    Quoting makes every operator (AND, OR, NOT, NEAR, ``*``, ``^``, ``col:``) a
    plain word, so user text can neither raise a syntax error nor widen the search.
    """
    words = query_words(query)
    return " OR ".join(f'"{w}"' for w in words) if words else None


def search_text(db: SemanticDb, query: str, k: int, namespaces: Sequence[str],
                filters: Filters) -> list[tuple[SemanticEntry, float]]:
    """BM25 over text and tags; the score is -bm25 (higher is better)."""
    rows = _matches(db, query, k, namespaces, filters, columns=schema.select_entry("e"))
    return [(row_entry(row[:-1]), float(row[-1])) for row in rows]


def search_text_ids(db: SemanticDb, query: str, k: int, namespaces: Sequence[str],
                    filters: Filters) -> list[tuple[str, float]]:
    """search_text's (id, score) only: recall reads each entry once for all its lists."""
    return [(str(row[0]), float(row[1]))
            for row in _matches(db, query, k, namespaces, filters, columns="e.id")]


def _matches(db: SemanticDb, query: str, k: int, namespaces: Sequence[str], filters: Filters,
             *, columns: str) -> list[tuple[Any, ...]]:
    expression = match_expression(query)
    if expression is None or k <= 0 or not namespaces:
        return []
    where, args = where_clause(namespaces, filters)
    return db.query(
        f"SELECT {columns}, -bm25(entries_fts, 1.0, 0.5) "  # noqa: S608
        "FROM entries_fts JOIN entries e ON e.seq = entries_fts.rowid "
        f"WHERE entries_fts MATCH ? AND {where} "
        "ORDER BY bm25(entries_fts, 1.0, 0.5), e.id LIMIT ?", (expression, *args, k))


class Tokenizer:
    """FTS5's own tokenizer (entries_fts's configuration) on a private in-memory table, so
    the in-memory lexicon indexes and matches exactly the tokens entries_fts does."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        self._conn.execute(
            f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{schema.FTS_TOKENIZE}')")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self._lock = threading.Lock()
        self._words: dict[str, tuple[str, ...]] = {}  # query word -> tokens

    def close(self) -> None:
        self._conn.close()

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = [[] for _ in texts]
        if not texts:
            return out
        with self._lock:
            try:
                self._conn.executemany("INSERT INTO t (rowid, x) VALUES (?, ?)",
                                       [(i + 1, text) for i, text in enumerate(texts)])
                for doc, term in self._conn.execute("SELECT doc, term FROM v"):
                    out[doc - 1].append(term)
            finally:
                self._conn.execute("DELETE FROM t")
        return out

    def phrases(self, query: str) -> list[str] | None:
        """The one token of each query word (a word with none matches nothing); None when
        a word is several tokens (a phrase, which only FTS5 itself matches)."""
        words = query_words(query)
        missing = [w for w in words if w not in self._words]
        if missing:
            if len(self._words) > WORD_CACHE:
                self._words.clear()
            self._words.update(zip(missing, map(tuple, self.tokenize(missing)), strict=True))
        tokens = [self._words[w] for w in words]
        if any(len(t) > 1 for t in tokens):
            return None
        return [t[0] for t in tokens if t]

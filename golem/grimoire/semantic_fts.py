"""Lexical search of the semantic store: BM25 through SQLite FTS5.

The MATCH expression is built here from arbitrary user text, quoted word by
word, so no query can raise an FTS5 syntax error or use an operator.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from golem.grimoire import semantic_schema as schema
from golem.grimoire.records import SemanticEntry
from golem.grimoire.semantic_db import SemanticDb
from golem.grimoire.semantic_schema import Filters, row_entry, where_clause

MAX_QUERY_TOKENS = 32
_TOKEN = re.compile(r"[^\W_]+")


def match_expression(query: str) -> str | None:
    """A safe FTS5 MATCH string: each word quoted, OR-ed; None when there are no words.

    Quoting makes every operator (AND, OR, NOT, NEAR, ``*``, ``^``, ``col:``) a
    plain word, so user text can neither raise a syntax error nor widen the search.
    """
    words: list[str] = []
    for word in _TOKEN.findall(query.lower()):
        if word not in words:
            words.append(word[:64])
        if len(words) == MAX_QUERY_TOKENS:
            break
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

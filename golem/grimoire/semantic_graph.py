"""The semantic store's causal graph: cause -> effect edges and bounded traversal.

Edges live inside one namespace (both ends must be its entries). Traversal is a
recursive CTE with a hard depth cap and row bound, and never visits a node twice
on one path, so cycles and dense graphs cannot run away.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

from golem.grimoire import semantic_schema as schema
from golem.grimoire.errors import InvalidMemory, NamespaceRefused
from golem.grimoire.records import CausalEdge
from golem.grimoire.semantic_db import SemanticDb

MAX_DEPTH = 6  # causal traversal never goes deeper, whatever the caller asks
MAX_WALK_ROWS = 20_000  # bound on paths explored by one traversal


def add_edge(db: SemanticDb, edge: CausalEdge) -> None:
    """Upsert cause -> effect; both ends must be entries of the edge's namespace."""
    schema.unit(edge.confidence, "edge confidence")
    if not math.isfinite(edge.lag_s) or edge.cause_id == edge.effect_id:
        raise InvalidMemory(f"edge {edge.cause_id} -> {edge.effect_id}: bad lag or self-loop")
    with db.write() as conn:
        owners = dict(db.by_ids("SELECT id, namespace FROM entries WHERE id IN",
                                [edge.cause_id, edge.effect_id], conn))
        for end in (edge.cause_id, edge.effect_id):
            if end not in owners:
                raise InvalidMemory(f"edge: no semantic entry {end!r}")
            if owners[end] != edge.namespace:
                raise NamespaceRefused(f"edge in {edge.namespace!r}: {end} is not in it")
        conn.execute(
            "INSERT INTO causal_edges (namespace, cause_id, effect_id, lag_s, confidence) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (namespace, cause_id, effect_id) DO UPDATE "
            "SET lag_s = excluded.lag_s, confidence = excluded.confidence",
            (edge.namespace, edge.cause_id, edge.effect_id, edge.lag_s, edge.confidence))


def edges_from(db: SemanticDb, entry_id: str) -> list[CausalEdge]:
    rows = db.query("SELECT namespace, cause_id, effect_id, lag_s, confidence FROM "
                    "causal_edges WHERE cause_id = ? ORDER BY effect_id", (entry_id,))
    return [CausalEdge(*row) for row in rows]


def edge_count(db: SemanticDb, namespace: str) -> int:
    return int(db.query("SELECT COUNT(*) FROM causal_edges WHERE namespace = ?",
                        (namespace,))[0][0])


def causal_neighbors(
    db: SemanticDb, entry_id: str, max_depth: int, namespaces: Sequence[str],
    direction: str = "out",
) -> list[tuple[str, int, tuple[str, ...]]]:
    """(entry id, depth, path from entry_id) within max_depth (capped at MAX_DEPTH)."""
    depth = min(max_depth, MAX_DEPTH)
    spaces = list(dict.fromkeys(namespaces))
    sql = causal_walk_sql(direction, len(spaces))
    owner = dict(db.by_ids("SELECT id, namespace FROM entries WHERE id IN", [entry_id]))
    if depth < 1 or owner.get(entry_id) not in spaces:
        return []
    args = spaces * (2 if direction == "both" else 1)
    rows = db.query(sql, (*args, entry_id, entry_id, depth))
    return [(node, int(d), tuple(json.loads(path))) for node, d, path in rows]


def causal_walk_sql(direction: str, namespace_count: int) -> str:
    """Recursive CTE: bounded depth, no node twice on one path (cycle-safe)."""
    marks = ", ".join("?" for _ in range(namespace_count))
    forward = f"SELECT cause_id AS src, effect_id AS dst FROM causal_edges WHERE namespace IN ({marks})"  # noqa: S608,E501
    backward = f"SELECT effect_id AS src, cause_id AS dst FROM causal_edges WHERE namespace IN ({marks})"  # noqa: S608,E501
    adjacency = {"out": forward, "in": backward, "both": f"{forward} UNION {backward}"}
    if direction not in adjacency:
        raise ValueError(f"direction: must be 'out', 'in' or 'both', got {direction!r}")
    return (
        f"WITH RECURSIVE adj(src, dst) AS ({adjacency[direction]}), "  # noqa: S608
        "walk(node, depth, path) AS ("
        " SELECT ?, 0, json_array(?)"
        " UNION ALL"
        " SELECT adj.dst, walk.depth + 1, json_insert(walk.path, '$[#]', adj.dst)"
        " FROM walk JOIN adj ON adj.src = walk.node"
        " WHERE walk.depth < ?"
        " AND NOT EXISTS (SELECT 1 FROM json_each(walk.path) WHERE json_each.value = adj.dst)"
        f" LIMIT {MAX_WALK_ROWS})"
        " SELECT node, MIN(depth), path FROM walk WHERE depth > 0"
        " GROUP BY node ORDER BY MIN(depth), node"
    )

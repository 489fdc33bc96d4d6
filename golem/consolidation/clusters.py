"""Group replayed episodes: by protocol and pool first, then by meaning within a group.

Within a (protocol, pool) group, leader clustering on unit vectors: an episode joins
the first cluster whose leader is at least ``threshold`` cosine-similar, else it
leads a new one. One pass, O(n x clusters), deterministic for a given input order.
Pure: numpy arrays in, id lists out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

DEFAULT_THRESHOLD = 0.8
NO_POOL = "-"


@dataclass(frozen=True)
class Cluster:
    protocol: str
    pool: str
    ids: tuple[str, ...]


def group_key(protocol: str | None, payload: Mapping[str, Any]) -> tuple[str, str]:
    """(protocol, pool address lower-cased); "-" when missing."""
    address = payload.get("address")
    pool = address.lower() if isinstance(address, str) and address else NO_POOL
    return protocol or NO_POOL, pool


def _unit_rows(matrix: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.asarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


def leader_clusters(ids: Sequence[str], vectors: npt.NDArray[np.float32],
                    threshold: float = DEFAULT_THRESHOLD) -> list[list[str]]:
    """Split ``ids`` (rows of ``vectors``) into similarity clusters, in input order."""
    if not ids:
        return []
    unit = _unit_rows(np.asarray(vectors, dtype=np.float32))
    leaders: list[int] = []
    members: list[list[str]] = []
    for row, episode_id in enumerate(ids):
        if leaders:
            sims = unit[leaders] @ unit[row]
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                members[best].append(episode_id)
                continue
        leaders.append(row)
        members.append([episode_id])
    return members


def cluster(episodes: Sequence[tuple[str, str | None, Mapping[str, Any]]],
            vectors: Mapping[str, npt.NDArray[np.float32]],
            threshold: float = DEFAULT_THRESHOLD) -> list[Cluster]:
    """Clusters of (id, protocol, payload) records; an id without a vector joins its
    group's first cluster (vectors only refine the grouping)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for episode_id, protocol, payload in episodes:
        groups.setdefault(group_key(protocol, payload), []).append(episode_id)
    out: list[Cluster] = []
    for (protocol, pool), ids in sorted(groups.items()):
        with_vec = [i for i in ids if i in vectors]
        without = [i for i in ids if i not in vectors]
        parts = (leader_clusters(with_vec, np.stack([vectors[i] for i in with_vec]), threshold)
                 if with_vec else [])
        if without:
            parts = [parts[0] + without, *parts[1:]] if parts else [without]
        out.extend(Cluster(protocol, pool, tuple(p)) for p in parts)
    return out

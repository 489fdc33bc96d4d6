"""The curator's compress and cross-reference steps (seed 000; seed 003 "deduplicate").

Pure. Near-duplicates are two ACTIVE entries of one namespace with the same
entry type and fact kind that either carry the same ``fact["key"]`` or, when not
both keyed, have stored vectors at least ``duplicate_cosine`` apart and neither
name different subjects nor disagree in polarity (those are contradictions, not
copies). The stronger one is kept and absorbs the other's evidence; the other is
archived. Cross-references: entries that rest on the same source episodes list
each other in ``fact["curator_related"]``.

Changes are patches, applied by the adapter to a fresh read of the entry so a
concurrent reinforcement is never overwritten by this snapshot.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from golem.consolidation.curator import CuratorParams
from golem.consolidation.curator_signals import MERGED_FROM
from golem.grimoire import contradiction
from golem.grimoire.records import SemanticEntry, Status

PAIR_BLOCK = 512  # rows per similarity block
RELATED = "curator_related"  # fact key: ids sharing source episodes, most shared first
Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Merge:
    keeper_id: str
    absorbed_id: str
    reason: str


@dataclass(frozen=True)
class EntryPatch:
    """Evidence folded into an entry and its cross-references; None leaves a part alone."""

    entry_id: str
    add_episode_count: int = 0
    add_source_episodes: tuple[str, ...] = ()
    observed_from: float | None = None
    observed_to: float | None = None
    merged_from: tuple[str, ...] = ()
    related: tuple[str, ...] | None = None


def strength(e: SemanticEntry) -> tuple[Any, ...]:
    """Sort key, strongest first: anchored, verified, confidence, use, support, age, id."""
    return (not e.anchored, not e.provenance.verified, -e.confidence, -e.successful_recalls,
            -e.episode_count, -e.access_count, e.created_at, e.id)


def _unit(v: Any) -> Vector:
    a = np.asarray(v, dtype=np.float32).ravel()
    n = float(np.linalg.norm(a))
    return a / n if n > 0 else a


def _key(e: SemanticEntry) -> str | None:
    key = e.fact.get("key")
    return str(key) if key not in (None, "") else None


def find_duplicates(entries: Iterable[SemanticEntry], vectors: Mapping[str, Any],
                    namespace: str, params: CuratorParams) -> list[Merge]:
    """Greedy leader clustering per (entry type, fact kind), strongest first: every
    absorbed entry matches its keeper directly (no chains of near-matches)."""
    groups: dict[tuple[str, str], list[SemanticEntry]] = defaultdict(list)
    for e in entries:
        if e.namespace == namespace and e.status == Status.ACTIVE:
            groups[(e.entry_type.value, e.fact_kind.value if e.fact_kind else "")].append(e)
    merges: list[Merge] = []
    for group in groups.values():
        ordered = sorted(group, key=strength)
        near = _similar_pairs(ordered, vectors, params.duplicate_cosine)
        keeper: dict[int, bool] = {}
        by_key: dict[str, SemanticEntry] = {}
        for r, e in enumerate(ordered):
            key = _key(e)
            found = _match(e, key, [(ordered[j], sim) for j, sim in near.get(r, ())
                                    if keeper.get(j)], by_key)
            if found is not None and not e.anchored:
                merges.append(Merge(found[0].id, e.id, found[1]))
                continue
            keeper[r] = True
            if key is not None:
                by_key.setdefault(key, e)
    return merges


def _similar_pairs(ordered: Sequence[SemanticEntry], vectors: Mapping[str, Any],
                   threshold: float) -> dict[int, list[tuple[int, float]]]:
    """For each row, the earlier (stronger) rows at least ``threshold`` similar, most
    similar first; blocked matrix products, so a large group stays cheap."""
    dim = max((np.asarray(vectors[e.id]).size for e in ordered if e.id in vectors), default=0)
    units = np.zeros((len(ordered), dim), dtype=np.float32)
    for r, e in enumerate(ordered):
        if e.id in vectors and np.asarray(vectors[e.id]).size == dim:
            units[r] = _unit(vectors[e.id])
    out: dict[int, list[tuple[int, float]]] = {}
    for lo in range(0, len(ordered), PAIR_BLOCK):
        sims = units[lo:lo + PAIR_BLOCK] @ units[:lo + PAIR_BLOCK].T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if c < lo + r:
                out.setdefault(lo + r, []).append((c, float(sims[r, c])))
    for pairs in out.values():
        pairs.sort(key=lambda p: (-p[1], p[0]))
    return out


def _match(e: SemanticEntry, key: str | None, candidates: Sequence[tuple[SemanticEntry, float]],
           by_key: Mapping[str, SemanticEntry]) -> tuple[SemanticEntry, str] | None:
    if key is not None and key in by_key:
        return by_key[key], f"near-duplicate of {by_key[key].id}: same fact key {key!r}"
    for k, sim in candidates:
        if key is not None and _key(k) is not None:
            continue  # two keyed facts with different keys are different facts
        if not contradiction.different_subjects(e, k) and (
                contradiction.negated(e.text) == contradiction.negated(k.text)):
            return k, f"near-duplicate of {k.id}: cosine {sim:.3f}"
    return None


def fold(merges: Sequence[Merge], entries: Mapping[str, SemanticEntry]) -> list[EntryPatch]:
    """One patch per keeper: episode counts (shared source episodes counted once),
    source episodes, observed range, and the absorbed ids (folded only once ever)."""
    by_keeper: dict[str, list[SemanticEntry]] = defaultdict(list)
    for m in merges:
        by_keeper[m.keeper_id].append(entries[m.absorbed_id])
    patches = []
    for keeper_id, absorbed in by_keeper.items():
        keeper = entries[keeper_id]
        done = {str(i) for i in keeper.fact.get(MERGED_FROM, ()) or ()}
        seen = set(keeper.source_episodes)
        count, new_sources, ids = 0, list[str](), list[str]()
        lo, hi = keeper.observed_from, keeper.observed_to
        for e in absorbed:
            ids += [i for i in (e.id, *map(str, e.fact.get(MERGED_FROM, ()) or ()))
                    if i not in done and i not in ids]
            if e.id in done:
                continue  # its evidence is already in the keeper
            shared = seen & set(e.source_episodes)
            count += max(e.episode_count - len(shared), 0)
            fresh = [s for s in e.source_episodes if s not in seen]
            new_sources += fresh
            seen.update(fresh)
            lo = _extreme(min, lo, e.observed_from)
            hi = _extreme(max, hi, e.observed_to)
        patches.append(EntryPatch(keeper_id, count, tuple(new_sources), lo, hi, tuple(ids)))
    return patches


def _extreme(pick: Any, a: float | None, b: float | None) -> float | None:
    values = [v for v in (a, b) if v is not None]
    return pick(values) if values else None


def cross_references(entries: Iterable[SemanticEntry], namespace: str,
                     params: CuratorParams) -> list[EntryPatch]:
    """ACTIVE entries sharing source episodes list each other (most shared first, then
    id); a patch only where the stored list differs."""
    active = [e for e in entries if e.namespace == namespace and e.status == Status.ACTIVE]
    holders: dict[str, list[str]] = defaultdict(list)
    for e in active:
        for s in set(e.source_episodes):
            holders[s].append(e.id)
    patches = []
    for e in active:
        shared = Counter(i for s in set(e.source_episodes) for i in holders[s] if i != e.id)
        related = tuple(i for i, _ in sorted(shared.items(), key=lambda kv: (-kv[1], kv[0]))
                        [:params.max_related])
        if list(related) != list(e.fact.get(RELATED, []) or []):
            patches.append(EntryPatch(e.id, related=related))
    return patches


def apply_patch(entry: SemanticEntry, patch: EntryPatch) -> SemanticEntry:
    """The entry with the patch folded in (to a fresh read; idempotent for merged ids)."""
    fact = dict(entry.fact)
    done = [str(i) for i in fact.get(MERGED_FROM, ()) or ()]
    new_ids = [i for i in patch.merged_from if i not in done]
    folds = bool(new_ids) or not patch.merged_from
    if new_ids:
        fact[MERGED_FROM] = done + new_ids
    if patch.related is not None:
        if patch.related:
            fact[RELATED] = list(patch.related)
        else:
            fact.pop(RELATED, None)
    sources = list(entry.source_episodes)
    if folds:
        have = set(sources)
        sources += [s for s in patch.add_source_episodes if s not in have]
    return replace(
        entry, fact=fact, source_episodes=tuple(sources),
        episode_count=entry.episode_count + (patch.add_episode_count if folds else 0),
        observed_from=_extreme(min, entry.observed_from, patch.observed_from),
        observed_to=_extreme(max, entry.observed_to, patch.observed_to))

"""How recall works, step by step (runs in the store worker thread).

1. Candidates: a dense (vector) list and a lexical (full-text) list from each store,
   prefiltered by namespace and the caller's filters.
   The episode table returns ids only; the rows fusion keeps are read in one take.
2. Fusion: reciprocal rank fusion of the four lists decides the candidate pool.
3. Scoring: every candidate gets the four-factor score (semantic, temporal,
   importance, emotional congruence) times its provenance weight and confidence.
4. Anti-knowledge close to the query is collected separately and always returned.
5. Hard refusal: if the most similar candidate is below the threshold, the result
   is a Refusal, not a weak list.
6. Access is recorded on the entries returned (it feeds their importance).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from golem.grimoire import recall as rc
from golem.grimoire.errors import GrimoireError
from golem.grimoire.fusion import rrf
from golem.grimoire.records import EntryType, Pad, SemanticEntry, Status
from golem.grimoire.scoring import (
    FourFactorWeights,
    last_touched,
    memory_importance,
    refusal,
    score_candidate,
)

if TYPE_CHECKING:
    from golem.grimoire.grimoire import Grimoire

DAY_S = 86400.0
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="golem-recall")


def run_recall(g: Grimoire, req: rc.RecallRequest) -> rc.RecallResult:
    cfg = g.cfg
    query, vector, k, namespaces = req.query, req.vector, req.k, req.namespaces
    filters, pad, now = req.filters, req.pad, req.now
    n = max(cfg.candidates, k)
    ns = list(namespaces)
    pool: dict[str, rc.Candidate] = {}
    lists: list[list[str]] = []

    def take(kind: rc.HitKind, found: Sequence[tuple[SemanticEntry | str, float]],
             dense: bool) -> None:
        """One ranked list: entries come as records, episodes as ids (read later)."""
        ranked = []
        for rank, (found_item, score) in enumerate(found, 1):
            item_id = found_item if isinstance(found_item, str) else found_item.id
            cand = pool.setdefault(f"{kind}:{item_id}", rc.Candidate(kind, item_id))
            if not isinstance(found_item, str):
                cand.record = found_item
            if dense:
                cand.dense_rank = rank
                cand.similarity = score
            else:
                cand.lexical_rank = rank
            ranked.append(cand.key)
        lists.append(ranked)

    f = filters
    # The episode table's two searches run in worker threads (LanceDB releases the GIL)
    # while the semantic store is searched here.
    dense_eps = None
    text_eps = req.episode_text
    if "episode" in f.kinds:
        dense_eps = _POOL.submit(g.episodes.search_vector_ids, vector, n, ns, since=f.since,
                                 until=f.until, protocol=f.protocol, category=f.category)
        if text_eps is None:
            text_eps = start_episode_text(g, query, n, ns, f)
    if "entry" in f.kinds:
        take("entry", g.semantic.search_vector(
            vector, n, ns, statuses=f.statuses, entry_types=f.entry_types,
            memory_types=f.memory_types, min_importance=f.min_importance), dense=True)
        take("entry", g.semantic.search_text(
            query, n, ns, statuses=f.statuses, entry_types=f.entry_types,
            memory_types=f.memory_types, min_importance=f.min_importance), dense=False)
    # Anti-knowledge needs only the semantic store: look it up while the episode
    # searches finish (it was ~2 ms on the critical path after scoring).
    weights = FourFactorWeights.from_config(cfg)
    anti = _anti_knowledge(g, req, weights)
    addresses: dict[str, int] = {}
    if dense_eps is not None and text_eps is not None:
        dense, lexical = dense_eps.result(), text_eps.result()
        take("episode", [(i, similarity) for i, similarity, _ in dense], dense=True)
        take("episode", [(i, bm25) for i, bm25, _ in lexical], dense=False)
        addresses = {i: address for i, _, address in [*lexical, *dense]}

    # Fusion decides the pool: only the best-fused candidates are scored in full.
    fused = rrf(lists)[: max(3 * k, cfg.candidates)]
    shortlist = [pool[key] for key, _ in fused]
    for cand, (_key, score) in zip(shortlist, fused, strict=True):
        cand.fused = score
    shortlist = _read_episodes(g, vector, shortlist, addresses)
    _fill_similarity(g, vector, shortlist)

    scored = [_hit(c, now, pad, weights, cfg.temporal_half_life_s) for c in shortlist]
    scored.sort(key=lambda h: (-h.score.final, h.id))
    best = max((c.similarity for c in pool.values()), default=None)
    reason = refusal(best, cfg.refusal_threshold)
    _record_access(g, [*scored[:k], *anti], now, refused=reason is not None)
    if reason is not None:
        return rc.Refusal(query=query, namespaces=namespaces, reason=reason,
                          best_similarity=best, threshold=cfg.refusal_threshold,
                          anti_knowledge=tuple(anti))
    return rc.Recall(query=query, namespaces=namespaces, hits=tuple(scored[:k]),
                     anti_knowledge=tuple(anti), best_similarity=best or 0.0)


def start_episode_text(g: Grimoire, query: str, n: int, ns: Sequence[str],
                       f: rc.RecallFilters) -> Future[list[tuple[str, float, int]]]:
    """Start the episode full-text search in a worker thread (it needs no query vector)."""
    return _POOL.submit(g.episodes.search_text_ids, query, n, list(ns),
                        since=f.since, until=f.until, protocol=f.protocol, category=f.category)


def _read_episodes(g: Grimoire, vector: np.ndarray, shortlist: list[rc.Candidate],
                   addresses: dict[str, int]) -> list[rc.Candidate]:
    """Read the episodes fusion kept, in one take (the searches returned ids: reading rows
    costs ~0.3-0.5 ms each, and about half the 60 found are dropped); lexical-only ones get
    their cosine from the vector read with them. One deleted since the search drops out.
    Episodes not kept stay unread; a lexical-only one keeps similarity 0, which never
    hides the best similarity (the refusal test): its cosine is below the dense hits'."""
    missing = [c for c in shortlist if c.record is None]
    if not missing:
        return shortlist
    found = g.episodes.search_rows([(c.id, addresses[c.id]) for c in missing])
    for cand in missing:
        if cand.id in found:
            cand.record, episode_vector = found[cand.id]
            if cand.dense_rank is None:
                cand.similarity = rc.cosine(vector, episode_vector)
    return [c for c in shortlist if c.record is not None]


def _fill_similarity(g: Grimoire, vector: np.ndarray, pool: Sequence[rc.Candidate]) -> None:
    """Lexical-only semantic entries have no cosine yet: fetch their vectors (in memory)."""
    missing = [c for c in pool if c.dense_rank is None and c.kind == "entry"]
    entries = g.semantic.vectors([c.id for c in missing])
    for cand in missing:
        vec = entries.get(cand.id)
        if vec is not None:
            cand.similarity = rc.cosine(vector, vec)


def _hit(c: rc.Candidate, now: float, pad: Pad | None, weights: FourFactorWeights,
         half_life: float) -> rc.Hit:
    record = c.record
    if record is None:
        raise GrimoireError(f"recall: candidate {c.key} was never read")  # a bug, not data
    if isinstance(record, SemanticEntry):
        created = record.created_at
        touched = last_touched(record.last_accessed, record.last_reinforced)
        importance = memory_importance(max(now - created, 0.0) / DAY_S, record.access_count,
                                       record.importance)
        confidence = record.confidence
    else:
        created = touched = record.observed_at
        importance = record.importance if record.importance is not None else record.curiosity
        importance = min(max(importance, 0.0), 1.0)
        confidence = 1.0  # an episode is an observation, not a claim
    score = score_candidate(
        cosine=c.similarity, last_touched=touched, created_at=created, now=now,
        importance=importance, entry_pad=record.pad, current_pad=rc.current_pad(pad),
        provenance=record.provenance, temporal_half_life_s=half_life, weights=weights,
        dense_rank=c.dense_rank, lexical_rank=c.lexical_rank, fused_rrf=c.fused,
        confidence=confidence,
    )
    return rc.Hit(kind=c.kind, id=record.id, namespace=record.namespace, text=record.text,
                  similarity=c.similarity, score=score, provenance=record.provenance,
                  record=record)


def _anti_knowledge(g: Grimoire, req: rc.RecallRequest,
                    weights: FourFactorWeights) -> list[rc.Hit]:
    """Warnings that bear on the query: similar enough, or matching its words."""
    cfg = g.cfg
    query, vector, ns, now, pad = req.query, req.vector, list(req.namespaces), req.now, req.pad
    statuses, types = (Status.ACTIVE,), (EntryType.ANTI_KNOWLEDGE,)
    pool: dict[str, rc.Candidate] = {}
    dense = g.semantic.search_vector(vector, 20, ns, statuses=statuses, entry_types=types)
    for rank, (entry, sim) in enumerate(dense, 1):
        if sim >= cfg.anti_knowledge_relevance:
            pool[entry.id] = rc.Candidate("entry", entry.id, entry, similarity=sim,
                                          dense_rank=rank)
    lexical = g.semantic.search_text(query, 20, ns, statuses=statuses, entry_types=types)
    vectors = g.semantic.vectors([e.id for e, _ in lexical if e.id not in pool])
    for rank, (entry, _score) in enumerate(lexical, 1):
        cand = pool.get(entry.id)
        if cand is None:
            vec = vectors.get(entry.id)
            sim = rc.cosine(vector, vec) if vec is not None else 0.0
            cand = pool[entry.id] = rc.Candidate("entry", entry.id, entry, similarity=sim)
        cand.lexical_rank = rank
    hits = [_hit(c, now, pad, weights, cfg.temporal_half_life_s) for c in pool.values()]
    hits.sort(key=lambda h: (-h.score.final, h.id))
    return hits


def _record_access(g: Grimoire, hits: Sequence[rc.Hit], now: float, refused: bool) -> None:
    """Entries shown to the caller were accessed (refused answers show only warnings)."""
    ids = [h.id for h in hits if h.kind == "entry" and (not refused or h.is_anti_knowledge)]
    if ids:
        g.semantic.record_access(list(dict.fromkeys(ids)), now)

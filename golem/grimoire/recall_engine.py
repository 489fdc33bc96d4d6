"""How recall works, step by step (runs in the store worker thread).

1. Candidates: a dense (vector) list and a lexical (full-text) list from each store,
   prefiltered by namespace and the caller's filters, each hit with its cosine. The
   episode searches bring their rows along undecoded; the semantic store gives ids.
2. Fusion: reciprocal rank fusion of the four lists decides the candidate pool; only
   the pool's episodes are decoded. The entries found are read while the episode
   searches still run.
3. Scoring: every candidate gets the four-factor score (semantic, temporal,
   importance, emotional congruence) times its provenance weight and confidence.
4. Anti-knowledge close to the query is collected separately and always returned.
5. Hard refusal: if the most similar candidate is below the threshold, the result
   is a Refusal, not a weak list.
6. Access is recorded on the entries returned (it feeds their importance).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from golem.grimoire import recall as rc
from golem.grimoire.decay import half_lives_from_config
from golem.grimoire.episodes_schema import Found
from golem.grimoire.errors import GrimoireError
from golem.grimoire.fusion import rrf
from golem.grimoire.query_words import TimeWindow, asks_why, hex_identifiers
from golem.grimoire.records import DecayClass, EntryType, Episode, Pad, SemanticEntry, Status
from golem.grimoire.scoring import (
    HOP_DISCOUNT,
    FourFactorWeights,
    last_touched,
    memory_importance,
    refusal,
    score_candidate,
)
from golem.grimoire.semantic import ListHit
from golem.grimoire.semantic_schema import Filters

if TYPE_CHECKING:
    from golem.config import GrimoireSection
    from golem.grimoire.episodes import EpisodeStore
    from golem.grimoire.semantic import SemanticStore

DAY_S = 86400.0
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="golem-recall")
ANTI_K = 20  # anti-knowledge candidates per list
HOP_SOURCES = 3  # top entry hits whose direct causes a why-question follows
ANTI_FILTERS: Filters = ((Status.ACTIVE,), (EntryType.ANTI_KNOWLEDGE,), None, None)


@dataclass(frozen=True)
class RecallStores:
    """What recall reads: the Grimoire's settings and its two stores (the facade's own)."""

    cfg: GrimoireSection
    episodes: EpisodeStore
    semantic: SemanticStore


def run_recall(g: RecallStores, req: rc.RecallRequest) -> rc.RecallResult:
    """One recall over ``g`` (steps above). Call on the stores' thread."""
    cfg = g.cfg
    query, vector, k, namespaces = req.query, req.vector, req.k, req.namespaces
    f, pad, now = req.filters, req.pad, req.now
    n = max(cfg.candidates, k)
    ns = list(namespaces)
    lists = _Lists()
    # The episode table's two searches run in worker threads (LanceDB releases the GIL)
    # while the semantic store is searched here.
    dense_eps = None
    text_eps = req.episode_text
    if "episode" in f.kinds:
        dense_eps = _POOL.submit(g.episodes.search_vector_hits, vector, n, ns, since=f.since,
                                 until=f.until, protocol=f.protocol, category=f.category)
        if text_eps is None:
            text_eps = start_episode_text(g, query, n, ns, f)
    # One pass over the semantic store (ids only) for the caller's lists and
    # anti-knowledge's. Anti-knowledge is always looked for, whatever the filters.
    wants = [(ANTI_K, ANTI_FILTERS)]
    if "entry" in f.kinds:
        wants.append((n, (f.statuses, f.entry_types, f.memory_types, f.min_importance)))
    (anti_dense, anti_lexical), *entry_lists = g.semantic.search_lists(vector, query, ns, wants)
    for dense_entries, lexical_entries in entry_lists:
        lists.take("entry", dense_entries, dense=True)
        lists.take("entry", lexical_entries, dense=False)
    anti_pool = _anti_candidates(anti_dense, anti_lexical, cfg.anti_knowledge_relevance)
    # Read the entries now, while the episode searches run: after fusion this thread would
    # read them on the critical path (fusion keeps nearly all of them at small k).
    entries = {e.id: e for e in g.semantic.get(
        list(dict.fromkeys([*(c.id for c in lists.pool.values()), *anti_pool])))}
    episode_rows: dict[str, Found] = {}
    if dense_eps is not None and text_eps is not None:
        dense, lexical = dense_eps.result(), text_eps.result()
        lists.take("episode", [(hit.id, hit.score, hit.score) for hit in dense], dense=True)
        # every lexical hit came with its vector: its cosine is exact
        lists.take("episode", [(hit.id, hit.score, rc.cosine(vector, hit.vector))
                               for hit in lexical], dense=False)
        episode_rows = {hit.id: hit for hit in [*lexical, *dense]}
    pool = lists.pool
    calibrate_dense(list(pool.values()))

    # Fusion decides the pool: only the best-fused candidates are read and scored in full.
    fused = rrf(lists.ranked)[: max(3 * k, cfg.candidates)]
    shortlist = [pool[key] for key, _ in fused]
    for cand, (_key, score) in zip(shortlist, fused, strict=True):
        cand.fused = score
    shortlist, anti_found = _read(shortlist, list(anti_pool.values()), entries, episode_rows)
    weights = FourFactorWeights.from_config(cfg)
    half_lives = _HalfLives(half_lives_from_config(cfg), cfg.temporal_half_life_s)
    anti = sorted((_hit(c, now, pad, weights, half_lives) for c in anti_found),
                  key=lambda h: (-h.score.final, h.id))

    scored = [_hit(c, now, pad, weights, half_lives, window=req.window) for c in shortlist]
    scored.sort(key=lambda h: (-h.score.final, h.id))
    if asks_why(query):
        scored = _with_causes(g, scored, k=k, ns=ns, now=now, pad=pad, weights=weights,
                              half_lives=half_lives)
    best = max((c.similarity for c in pool.values()), default=None)
    # A hex identifier the query names exactly and an episode holds is evidence enough:
    # renderings name addresses by alias, so its cosine says little.
    exact = names_exactly(hex_identifiers(query), scored[:k])
    reason = None if exact else refusal(best, cfg.refusal_threshold)
    _record_access(g, [*scored[:k], *anti], now, refused=reason is not None)
    if reason is not None:
        return rc.Refusal(query=query, namespaces=namespaces, reason=reason,
                          best_similarity=best, threshold=cfg.refusal_threshold,
                          anti_knowledge=tuple(anti))
    return rc.Recall(query=query, namespaces=namespaces, hits=tuple(scored[:k]),
                     anti_knowledge=tuple(anti), best_similarity=best or 0.0)


@dataclass(frozen=True)
class _HalfLives:
    """Recency half-lives: an entry's by its decay class (a structural fact does not fade
    like a tactical one), an episode's from grimoire.temporal_half_life_s."""

    entries: Mapping[DecayClass, float]
    episodes: float


def names_exactly(wanted: frozenset[str], hits: Sequence[rc.Hit]) -> bool:
    """Whether an episode among ``hits`` holds one of the ``wanted`` identifiers (lowercase):
    in its identifiers, or (written before identifiers existed) in its text."""
    if not wanted:
        return False
    for hit in hits:
        record = hit.record
        if isinstance(record, Episode) and (
                wanted & {i.lower() for i in record.identifiers}
                or any(w in record.text.lower() for w in wanted)):
            return True
    return False


def over_best(score: float, best: float) -> float:
    """Calibrated evidence in [0, 1]: a list's score over its best (0 when none is > 0)."""
    return min(max(score / best, 0.0), 1.0) if best > 0 else 0.0


def calibrate_dense(pool: Sequence[rc.Candidate]) -> None:
    """Dense evidence: each candidate's cosine over the best cosine in the pool (entries
    and episodes alike: one embedding model), negatives 0."""
    best = max((c.similarity for c in pool), default=0.0)
    for cand in pool:
        cand.dense = over_best(cand.similarity, best)


class _Lists:
    """The ranked candidate lists and the one pool of candidates they share."""

    def __init__(self) -> None:
        self.pool: dict[str, rc.Candidate] = {}
        self.ranked: list[list[str]] = []

    def take(self, kind: rc.HitKind, found: Sequence[tuple[str, float, float]],
             dense: bool) -> None:
        """One ranked list of (id, score, cosine); records are read after fusion. Each
        candidate's full-text evidence is its score over its list's best (the entries'
        lexicon and the episodes' index score BM25 on different scales); dense evidence
        is calibrated once every list is in (calibrate_dense), since all cosines come
        from one model."""
        ranked = []
        best = max((score for _, score, _ in found), default=0.0)
        for rank, (item_id, score, similarity) in enumerate(found, 1):
            cand = self.pool.setdefault(f"{kind}:{item_id}", rc.Candidate(kind, item_id))
            cand.similarity = similarity
            if dense:
                cand.dense_rank = rank
            else:
                cand.lexical_rank = rank
                cand.lexical = over_best(score, best)
            ranked.append(cand.key)
        self.ranked.append(ranked)


def start_episode_text(g: RecallStores, query: str, n: int, ns: Sequence[str],
                       f: rc.RecallFilters) -> Future[list[Found]]:
    """Start the episode full-text search in a worker thread (it needs no query vector)."""
    return _POOL.submit(g.episodes.search_text_hits, query, n, list(ns),
                        since=f.since, until=f.until, protocol=f.protocol, category=f.category)


def _read(shortlist: list[rc.Candidate], anti: list[rc.Candidate],
          entries: dict[str, SemanticEntry], episode_rows: dict[str, Found],
          ) -> tuple[list[rc.Candidate], list[rc.Candidate]]:
    """Decode the episodes fusion kept (their rows came with the searches) and attach the
    entries read. An entry deleted since its search drops out."""
    for cand in [*shortlist, *anti]:
        cand.record = (entries.get(cand.id) if cand.kind == "entry"
                       else episode_rows[cand.id].episode())
    return ([c for c in shortlist if c.record is not None],
            [c for c in anti if c.record is not None])


def _hit(c: rc.Candidate, now: float, pad: Pad | None, weights: FourFactorWeights,
         half_lives: _HalfLives, *, window: TimeWindow | None = None) -> rc.Hit:
    record = c.record
    if record is None:
        raise GrimoireError(f"recall: candidate {c.key} was never read")  # a bug, not data
    if isinstance(record, SemanticEntry):
        half_life = half_lives.entries[record.decay_class]
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
        half_life = half_lives.episodes
    when = record.created_at if isinstance(record, SemanticEntry) else record.observed_at
    score = score_candidate(
        cosine=c.similarity, dense=c.dense, lexical=c.lexical, last_touched=touched,
        in_window=None if window is None else window.contains(when),
        created_at=created, now=now,
        importance=importance, entry_pad=record.pad, current_pad=rc.current_pad(pad),
        provenance=record.provenance, temporal_half_life_s=half_life, weights=weights,
        dense_rank=c.dense_rank, lexical_rank=c.lexical_rank, fused_rrf=c.fused,
        confidence=confidence,
    )
    return rc.Hit(kind=c.kind, id=record.id, namespace=record.namespace, text=record.text,
                  similarity=c.similarity, score=score, provenance=record.provenance,
                  record=record)


def _anti_candidates(dense: Sequence[ListHit], lexical: Sequence[ListHit],
                     relevance: float) -> dict[str, rc.Candidate]:
    """Warnings that bear on the query: similar enough, or matching its words."""
    pool: dict[str, rc.Candidate] = {}
    best_sim = max((sim for _, sim, _ in dense), default=0.0)
    for rank, (entry_id, sim, _) in enumerate(dense, 1):
        if sim >= relevance:
            pool[entry_id] = rc.Candidate("entry", entry_id, similarity=sim, dense_rank=rank,
                                          dense=over_best(sim, best_sim))
    best_text = max((score for _, score, _ in lexical), default=0.0)
    for rank, (entry_id, score, sim) in enumerate(lexical, 1):
        cand = pool.get(entry_id)
        if cand is None:
            cand = pool[entry_id] = rc.Candidate("entry", entry_id, similarity=sim)
        cand.lexical_rank = rank
        cand.lexical = over_best(score, best_text)
    return pool


def _with_causes(g: RecallStores, scored: list[rc.Hit], *, k: int, ns: list[str],
                 now: float, pad: Pad | None, weights: FourFactorWeights,
                 half_lives: _HalfLives) -> list[rc.Hit]:
    """A why-question: the direct causes (one causal link back) of the top entry hits are
    what it asks for, so each ranks right after its effect, marked ``hop_from``, with the
    better of its own relevance and HOP_DISCOUNT of the effect's. Bounded: at most
    HOP_SOURCES effects, one hop; a cause already ranked above its effect stays there."""
    position = {h.id: i for i, h in enumerate(scored)}
    causes: dict[str, rc.Hit] = {}
    for hit in [h for h in scored[:k] if h.kind == "entry"][:HOP_SOURCES]:
        for cause_id, _depth, _path in g.semantic.causal_neighbors(hit.id, 1, ns, "in"):
            if cause_id not in causes and position.get(cause_id, len(scored)) > position[hit.id]:
                causes[cause_id] = hit
    if not causes:
        return scored
    after: dict[str, list[rc.Hit]] = {}
    for entry in g.semantic.get(list(causes)):
        effect = causes[entry.id]
        ranked_hit = scored[position[entry.id]] if entry.id in position else None
        own = ranked_hit.score.relevance if ranked_hit else 0.0
        evidence = max(effect.score.relevance * HOP_DISCOUNT, own)
        # its own cosine when a list found it, else its effect's, discounted like relevance
        similarity = ranked_hit.similarity if ranked_hit else effect.similarity * HOP_DISCOUNT
        cand = rc.Candidate("entry", entry.id, record=entry, similarity=similarity,
                            dense=evidence, lexical=evidence)
        hit = _hit(cand, now, pad, weights, half_lives)
        after.setdefault(effect.id, []).append(
            replace(hit, score=replace(hit.score, hop_from=effect.id)))
    moved = {h.id for hits in after.values() for h in hits}
    ranked: list[rc.Hit] = []
    for hit in scored:
        if hit.id in moved:
            continue
        ranked.append(hit)
        ranked.extend(sorted(after.get(hit.id, ()), key=lambda h: (-h.score.final, h.id)))
    return ranked


def _record_access(g: RecallStores, hits: Sequence[rc.Hit], now: float, refused: bool) -> None:
    """Entries shown to the caller were accessed (refused answers show only warnings)."""
    ids = [h.id for h in hits if h.kind == "entry" and (not refused or h.is_anti_knowledge)]
    if ids:
        g.semantic.record_access(list(dict.fromkeys(ids)), now)

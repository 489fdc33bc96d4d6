"""How recall works, step by step (runs in the store worker thread).

1. Candidates: a dense (vector) list and a lexical (full-text) list from each store,
   prefiltered by namespace and the caller's filters, each hit with its cosine. The
   episode searches bring their rows along undecoded; the semantic store gives ids.
   A time window the query names (a calendar phrase or an event anchor) runs the
   episode searches again inside it.
2. Shortlist: each candidate's relevance (calibrated dense and full-text evidence);
   only the most relevant are decoded and scored (reciprocal rank fusion breaks ties).
   The entries found are read while the episode searches still run.
3. Scoring: relevance first, reordered within a bounded span by recency, importance
   and emotional congruence, times provenance weight and confidence. An order or a
   threshold the query names then ranks the top hit's kind by the numbers its records
   state (golem.grimoire.quantities); a why-question follows one causal link back.
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

import numpy as np

from golem.grimoire import recall as rc
from golem.grimoire.decay import half_lives_from_config
from golem.grimoire.episodes_schema import Found
from golem.grimoire.errors import GrimoireError
from golem.grimoire.fusion import rrf
from golem.grimoire.quantities import Measured, arrange, compared, first_move, move_admits
from golem.grimoire.query_numbers import Anchor, Intent
from golem.grimoire.query_words import TimeWindow, asks_why, hex_identifiers, topic_text
from golem.grimoire.records import DecayClass, EntryType, Episode, Pad, SemanticEntry, Status
from golem.grimoire.scoring import (
    HOP_DISCOUNT,
    FourFactorWeights,
    last_touched,
    memory_importance,
    refusal,
    relevance_of,
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
# How many episodes of the compared kind's category an order or a threshold compares (the
# lists bring the best few of them only).
QUANTITY_CANDIDATES = 400
# An anchor event ("the last liquidation") is any episode its words find whose relevance
# is at least this share of the best one's.
ANCHOR_SHARE = 0.9
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
    wide = (intent := req.intent) is not None and intent.ranks_by_quantity
    n = max(cfg.candidates, k)
    ns = list(namespaces)
    lists = CandidateLists()
    # The episode table's two searches run in worker threads (LanceDB releases the GIL)
    # while the semantic store is searched here.
    dense_eps = None
    text_eps = req.episode_text
    topic = topic_text(query)  # what the full-text searches match
    if "episode" in f.kinds:
        dense_eps = _POOL.submit(g.episodes.search_vector_hits, vector, n, ns, since=f.since,
                                 until=f.until, protocol=f.protocol, category=f.category)
        if text_eps is None:
            text_eps = start_episode_text(g, topic, n, ns, f)
    windowed = _start_windowed(g, req, n, topic)
    # One pass over the semantic store (ids only) for the caller's lists and
    # anti-knowledge's. Anti-knowledge is always looked for, whatever the filters.
    wants = [(ANTI_K, ANTI_FILTERS)]
    if "entry" in f.kinds:
        wants.append((n, (f.statuses, f.entry_types, f.memory_types, f.min_importance)))
    (anti_dense, anti_lexical, _), *entry_lists = g.semantic.search_lists(vector, topic, ns,
                                                                          wants)
    for dense_entries, lexical_entries, dense_lexical in entry_lists:
        lists.take("entry", dense_entries, dense=True)
        lists.take("entry", lexical_entries, dense=False, unlisted=dense_lexical)
    anti_pool = _anti_candidates(anti_dense, anti_lexical, cfg.anti_knowledge_relevance)
    # Read the entries now, while the episode searches run: after fusion this thread would
    # read them on the critical path (fusion keeps nearly all of them at small k).
    entries = {e.id: e for e in g.semantic.get(
        list(dict.fromkeys([*(c.id for c in lists.pool.values()), *anti_pool])))}
    episode_rows: dict[str, Found] = {}
    in_window: list[str] = []
    if dense_eps is not None and text_eps is not None:
        dense, lexical = dense_eps.result(), text_eps.result()
        lists.take("episode", [(hit.id, hit.score, hit.score) for hit in dense], dense=True)
        # every lexical hit came with its vector: its cosine is exact
        lists.take("episode", [(hit.id, hit.score, rc.cosine(vector, hit.vector))
                               for hit in lexical], dense=False)
        episode_rows = {hit.id: hit for hit in [*lexical, *dense]}
        in_window = _take_windowed(lists, windowed, vector, lexical, episode_rows)
    pool = lists.pool
    calibrate_dense(list(pool.values()))

    # Relevance decides the shortlist: only the most relevant candidates are read and
    # scored in full (fusion's rank sum, kept in the breakdown, breaks ties); with a
    # window, the most relevant in it too.
    shortlist = _shortlist(lists, in_window, max(3 * k, cfg.candidates))
    shortlist, anti_found = _read(shortlist, list(anti_pool.values()), entries, episode_rows)
    weights = FourFactorWeights.from_config(cfg)
    half_lives = _HalfLives(half_lives_from_config(cfg), cfg.temporal_half_life_s)
    anti = sorted((_hit(c, now, pad, weights, half_lives) for c in anti_found),
                  key=lambda h: (-h.score.final, h.id))

    scored = [_hit(c, now, pad, weights, half_lives, window=req.window) for c in shortlist]
    scored.sort(key=lambda h: (-h.score.final, h.id))
    if wide and intent is not None:
        scored = _arranged(sorted(
            [*scored, *(_hit(c, now, pad, weights, half_lives, window=req.window)
                        for c in _same_kind(g, scored, vector, intent, ns=ns, f=f, pool=pool,
                                            newest_before=_newest_before(intent, f, now)))],
            key=lambda h: (-h.score.final, h.id)), intent)
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


def _shortlist(lists: CandidateLists, in_window: Sequence[str], size: int) -> list[rc.Candidate]:
    """shortlist_by_relevance over the pool, and over the window's candidates when the
    query names one."""
    pool = lists.pool
    shortlist = shortlist_by_relevance(pool, rrf(lists.ranked), size)
    if in_window:
        chosen = {c.key for c in shortlist}
        shortlist += [c for c in shortlist_by_relevance(
            {key: pool[key] for key in in_window}, [], size) if c.key not in chosen]
    return shortlist


def _start_windowed(g: RecallStores, req: rc.RecallRequest, n: int,
                    topic: str) -> tuple[Future[list[Found]], Future[list[Found]]] | None:
    """When the query names a time window: the episode searches again within it (the
    unwindowed lists can miss every episode in a short window)."""
    f, window = req.filters, req.window
    if window is None or "episode" not in f.kinds:
        return None
    since = max(window.since, f.since) if f.since is not None else window.since
    until = min(window.until, f.until) if f.until is not None else window.until
    if since >= until:
        return None
    ns = list(req.namespaces)
    return (_POOL.submit(g.episodes.search_vector_hits, req.vector, n, ns, since=since,
                         until=until, protocol=f.protocol, category=f.category),
            _POOL.submit(g.episodes.search_text_hits, topic, n, ns, since=since,
                         until=until, protocol=f.protocol, category=f.category))


def _take_windowed(lists: CandidateLists, windowed: tuple[Future[list[Found]], Future[list[Found]]]
                   | None, vector: np.ndarray, lexical: Sequence[Found],
                   rows: dict[str, Found]) -> list[str]:
    """Add the windowed searches' episodes to the pool (their full-text evidence over
    the unwindowed list's best, which is at least theirs); the keys they found."""
    if windowed is None:
        return []
    dense, text = windowed[0].result(), windowed[1].result()
    best = max((h.score for h in [*lexical, *text]), default=0.0)
    keys = []
    for hit in dense:
        cand = lists.pool.setdefault(f"episode:{hit.id}", rc.Candidate("episode", hit.id))
        cand.similarity = hit.score
        keys.append(cand.key)
    for hit in text:
        cand = lists.pool.setdefault(f"episode:{hit.id}", rc.Candidate("episode", hit.id))
        cand.similarity = rc.cosine(vector, hit.vector)
        cand.lexical = max(cand.lexical, over_best(hit.score, best))
        keys.append(cand.key)
    for hit in [*dense, *text]:
        rows.setdefault(hit.id, hit)
    return list(dict.fromkeys(keys))


def shortlist_by_relevance(pool: Mapping[str, rc.Candidate], fused: Sequence[tuple[str, float]],
                           size: int) -> list[rc.Candidate]:
    """The ``size`` candidates of ``pool`` with the highest relevance_of(dense, lexical)
    (their calibrated evidence), ties broken by their fused rank; each gets its fused
    score. A candidate that only one list found competes on its evidence from both: a
    lexical hit's cosine is known, so its dense evidence is too."""
    for key, score in fused:
        pool[key].fused = score
    order = {key: i for i, (key, _score) in enumerate(fused)}
    relevance = {c.key: relevance_of(c.dense, c.lexical) for c in pool.values()}
    ranked = sorted(pool.values(), key=lambda c: (-relevance[c.key],
                                                  order.get(c.key, len(order))))
    return ranked[:size]


def _arranged(scored: list[rc.Hit], intent: Intent) -> list[rc.Hit]:
    """``scored`` with the query's order and threshold applied (quantities.arrange); the
    hits it moved to the front say so in their breakdown."""
    ranked, quantities, front = arrange(scored, _measured, intent, intent.rest)
    words = "; ".join(w.phrase for w in (intent.order, intent.threshold) if w is not None)
    return [replace(h, score=replace(h.score, ranked_by=words, quantity=q)) if i < front else h
            for i, (h, q) in enumerate(zip(ranked, quantities, strict=True))]


def _newest_before(intent: Intent, f: rc.RecallFilters, now: float) -> float | None:
    """For a newest-first order ("the last", "the latest"): the time the newest records
    are read back from (the filters' ``until``, else now); None for any other query."""
    order = intent.order
    if order is None or order.key != "time" or not order.descending:
        return None
    return now if f.until is None else min(f.until, now)


def _same_kind(g: RecallStores, scored: Sequence[rc.Hit], vector: np.ndarray,
               intent: Intent, *,
               ns: list[str], f: rc.RecallFilters, pool: Mapping[str, rc.Candidate],
               newest_before: float | None = None) -> list[rc.Candidate]:
    """When the hit an order or a threshold compares (quantities.compared) is an episode:
    up to QUANTITY_CANDIDATES more episodes of its category and protocol, nearest the
    query first, beyond those ``scored`` (an order or threshold must compare the records
    of that kind, not only the ones whose words match best); with ``newest_before``, the
    QUANTITY_CANDIDATES newest of them observed by then too (EpisodeStore.newest_hits:
    "the last fall" of a month's answers is rarely among the nearest 400). One the lists
    found keeps its evidence from them; another's dense evidence is its cosine over the
    pool's best, its lexical evidence 0. For a threshold on a move, only the episodes
    whose text passes it (those that fail would only crowd the unranked rest)."""
    if not scored:
        return []
    record = scored[compared([_measured(h) for h in scored], intent)].record
    if not isinstance(record, Episode) or "episode" not in f.kinds:
        return []
    best = max((c.similarity for c in pool.values()), default=0.0)
    admit = move_admits(intent)
    if admit is None:
        found = g.episodes.search_vector_hits(vector, QUANTITY_CANDIDATES, ns, since=f.since,
                                              until=f.until, protocol=record.protocol,
                                              category=record.category)
    else:  # only the rows that pass are read in full
        found = g.episodes.search_vector_admitted(
            vector, QUANTITY_CANDIDATES, ns, first_move, admit, since=f.since, until=f.until,
            protocol=record.protocol, category=record.category)
    if newest_before is not None:
        found += [hit for hit in g.episodes.newest_hits(
            vector, QUANTITY_CANDIDATES, ns, until=newest_before, protocol=record.protocol,
            category=record.category) if f.since is None or hit.episode().observed_at >= f.since]
    known = {f"{h.kind}:{h.id}" for h in scored}
    extra = []
    for hit in found:
        key = f"episode:{hit.id}"
        if key in known or (admit is not None and not admit(first_move(hit.row["text"]))):
            continue
        cand = pool.get(key) or rc.Candidate("episode", hit.id, similarity=hit.score,
                                            dense=over_best(hit.score, best))
        cand.record = hit.episode()
        extra.append(cand)
        known.add(key)
    return extra


def anchor_window(g: RecallStores, anchor: Anchor, vector: np.ndarray, ns: Sequence[str],
                  now: float) -> TimeWindow | None:
    """The window an event anchor names ("after the last liquidation"): from the anchor's
    time to ``now`` (inclusive of the anchor's moment), or before it. The anchor's time
    is the newest (or, for "the first", the oldest) episode among those the anchor's
    words find whose relevance (dense and full-text evidence, as recall's) is at least
    ANCHOR_SHARE of the best; None when nothing is found or the best cosine is below the
    refusal threshold and no word matched."""
    n = g.cfg.candidates
    dense = g.episodes.search_vector_hits(vector, n, list(ns))
    text = g.episodes.search_text_hits(anchor.words, n, list(ns))
    cosine = {h.id: h.score for h in dense} | {h.id: rc.cosine(vector, h.vector) for h in text}
    rows = {h.id: h for h in [*dense, *text]}
    if not cosine or (not text and max(cosine.values()) < g.cfg.refusal_threshold):
        return None
    best_cos = max(cosine.values())
    best_text = max((h.score for h in text), default=0.0)
    lexical = {h.id: over_best(h.score, best_text) for h in text}
    relevance = {i: relevance_of(over_best(c, best_cos), lexical.get(i, 0.0))
                 for i, c in cosine.items()}
    top = max(relevance.values())
    times = [rows[i].episode().observed_at for i, r in relevance.items()
             if r >= ANCHOR_SHARE * top]
    at = max(times) if anchor.last else min(times)
    if anchor.after:
        return TimeWindow(at, now + 1.0, anchor.phrase)
    return TimeWindow(0.0, at, anchor.phrase)


def _measured(hit: rc.Hit) -> Measured:
    record = hit.record
    if isinstance(record, SemanticEntry):
        return Measured(hit.score.relevance, record.created_at, hit.text,
                        f"entry:{record.entry_type.value}", structural=False)
    kind = (f"episode:{record.category}:{record.payload.get('event', '')}:"
            f"{str(record.payload.get('address', '')).lower()}")
    return Measured(hit.score.relevance, record.observed_at, hit.text, kind)


class CandidateLists:
    """The ranked candidate lists and the one pool of candidates they share."""

    def __init__(self) -> None:
        self.pool: dict[str, rc.Candidate] = {}
        self.ranked: list[list[str]] = []

    def take(self, kind: rc.HitKind, found: Sequence[tuple[str, float, float]],
             dense: bool, unlisted: Mapping[str, float] | None = None) -> None:
        """One ranked list of (id, score, cosine); records are read after fusion. Each
        candidate's full-text evidence is its score over its list's best (the entries'
        lexicon and the episodes' index score BM25 on different scales); dense evidence
        is calibrated once every list is in (calibrate_dense), since all cosines come
        from one model. ``unlisted``: full-text scores of candidates already in the pool
        that this (full-text) list's top-k left out; they get the same evidence, no rank."""
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
        for item_id, score in (unlisted or {}).items():
            listed = self.pool.get(f"{kind}:{item_id}")
            if listed is not None:
                listed.lexical = max(listed.lexical, over_best(score, best))


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

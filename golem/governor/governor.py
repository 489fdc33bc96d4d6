"""The Context Governor for one Theta tick: gather candidates, score, allocate, assemble.

Candidates come from the Grimoire's one recall path (episodes, insights,
heuristics, warnings and anti-knowledge, causal links, strategy fragments) and
from live state the tick hands in (market snapshot, mortality, affect, tools,
owner instructions, strategy, the policy cage). Each is scored with the EFE
attention score; the policy's effective allocation for the current phase and
regime splits the budget; assembly does the rest (pure). Escalated episodes are
fetched by id, so what Gamma flagged reaches the workspace even when the recall
query would not have found it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from golem.governor.assembly import AssemblySettings, assemble
from golem.governor.attention import AttentionInputs, attention_score
from golem.governor.budget import phase_budget
from golem.governor.categories import Category, MarketRegime, Phase
from golem.governor.policy import ContextPolicy
from golem.governor.workspace import Candidate, CognitiveWorkspace, Knowledge
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.recall import Hit
from golem.grimoire.records import EntryType, Episode, SemanticEntry

RECALL_K = 30
MAX_ANTI_KNOWLEDGE = 5  # attached anti-knowledge is hard context: keep it bounded

_ENTRY_CATEGORY: Mapping[EntryType, Category] = {
    EntryType.INSIGHT: Category.INSIGHTS,
    EntryType.HEURISTIC: Category.PLAYBOOK,
    EntryType.WARNING: Category.INVARIANTS,
    EntryType.ANTI_KNOWLEDGE: Category.INVARIANTS,
    EntryType.CAUSAL_LINK: Category.CAUSAL_EDGES,
    EntryType.STRATEGY_FRAGMENT: Category.STRATEGY,
}


@dataclass(frozen=True)
class LiveItem:
    """A piece of live state for the workspace; `key` makes a stable state:// source."""

    key: str
    category: Category
    text: str
    importance: float = 0.8
    untrusted: bool = False


@dataclass(frozen=True)
class Assembly:
    workspace: CognitiveWorkspace
    allocations: Mapping[Category, float]
    policy_revision: int
    regime_override: bool
    recall_refused: bool


def category_of(hit: Hit) -> Category:
    if hit.kind == "episode":
        return Category.EPISODES
    entry_type = getattr(hit.record, "entry_type", None)
    return _ENTRY_CATEGORY.get(entry_type, Category.INSIGHTS) if entry_type else \
        Category.INSIGHTS


def hit_candidate(hit: Hit, vitality: float, escalated: bool = False) -> Candidate:
    category = category_of(hit)
    curiosity = hit.record.curiosity if isinstance(hit.record, Episode) else 0.0
    score = attention_score(AttentionInputs(
        category, relevance=_unit(hit.similarity), importance=_unit(hit.score.importance),
        confidence=_unit(hit.score.confidence), recency=_unit(hit.score.temporal),
        curiosity=_unit(max(curiosity, 0.8 if escalated else 0.0)),
        affect=_unit(hit.score.emotional)), vitality)
    record = hit.record
    knowledge = (Knowledge(record.fact_kind.value, record.fact, record.confidence,
                           record.observed_to)
                 if isinstance(record, SemanticEntry) and record.fact_kind and record.fact
                 else None)
    return Candidate(id=hit.id, category=category, source=hit.uri, text=hit.text,
                     score=score.total, untrusted=hit.kind == "episode", knowledge=knowledge)


def live_candidate(item: LiveItem, vitality: float) -> Candidate:
    score = attention_score(AttentionInputs(item.category, relevance=1.0,
                                            importance=_unit(item.importance)), vitality)
    return Candidate(id=f"state:{item.key}", category=item.category,
                     source=f"state://{item.key}", text=item.text, score=score.total,
                     untrusted=item.untrusted)


class ContextGovernor:
    """Selects and allocates; it is not a retriever (recall is the Grimoire's)."""

    def __init__(self, grimoire: Grimoire, total_budget: int, *,
                 phase_scaled: bool = False, recall: bool = True) -> None:
        """``total_budget``: the configured (base) token budget. ``phase_scaled``: each
        assembly's budget is the base scaled by the phase it is given (seed 000; on when
        mortality is), else the base whatever the phase. ``recall`` off: assemblies hold
        live items and escalated episodes only, and the Grimoire is never queried."""
        self.grimoire = grimoire
        self.total_budget = total_budget
        self.phase_scaled = phase_scaled
        self.recall = recall
        self.previous: CognitiveWorkspace | None = None

    async def assemble(self, policy: ContextPolicy, *, query: str, live: Sequence[LiveItem],
                       escalated_ids: Sequence[str], phase: Phase, regime: MarketRegime,
                       vitality: float = 1.0,
                       escalated_episodes: Mapping[str, Episode] | None = None) -> Assembly:
        """``escalated_episodes``: those of the escalated ids the caller holds already
        (Gamma hands them over); the others are read from the Grimoire."""
        hits: list[Hit] = []
        refused = False
        if self.recall:
            result = await self.grimoire.recall(query, k=min(RECALL_K, 10 * policy.retrieval
                                                             .max_episode_count))
            refused = result.refused
            if not result.refused:  # the most similar anti-knowledge rides along, a few
                hits = list(result.hits)
                seen_ids = {x.id for x in hits}
                extra = sorted((h for h in result.anti_knowledge if h.id not in seen_ids),
                               key=lambda h: -h.similarity)
                hits += extra[:MAX_ANTI_KNOWLEDGE]
        escalated = set(escalated_ids)
        candidates = [hit_candidate(h, vitality, h.id in escalated) for h in hits
                      if h.similarity >= policy.retrieval.similarity_threshold
                      or h.id in escalated or h.is_anti_knowledge]
        seen = {c.id for c in candidates}
        known = escalated_episodes or {}
        for episode in await self._episodes([i for i in escalated_ids if i not in seen], known):
            candidates.append(Candidate(
                id=episode.id, category=Category.EPISODES,
                source=f"grimoire://{episode.namespace}/episode/{episode.id}",
                text=episode.text, untrusted=True,
                score=attention_score(AttentionInputs(
                    Category.EPISODES, relevance=0.5, importance=_unit(episode.importance or 0.5),
                    curiosity=max(0.8, _unit(episode.curiosity))), vitality).total))
        candidates += [live_candidate(item, vitality) for item in live]
        allocations = policy.effective(phase=phase, regime=regime)
        budget = phase_budget(self.total_budget, phase) if self.phase_scaled \
            else self.total_budget
        workspace = assemble(candidates, allocations, budget,
                             AssemblySettings.from_retrieval(policy.retrieval), self.previous)
        self.previous = workspace
        return Assembly(workspace, allocations, policy.revision,
                        regime in policy.regime_overrides, refused)

    async def _episodes(self, ids: Sequence[str], known: Mapping[str, Episode]) -> list[Episode]:
        """At most 10, in order; a store read only for those not handed in."""
        ids = list(ids[:10])
        missing = [i for i in ids if i not in known]
        read = {e.id: e for e in await self.grimoire.episodes_by_ids(missing)} if missing else {}
        return [e for e in (known.get(i) or read.get(i) for i in ids) if e is not None]


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))

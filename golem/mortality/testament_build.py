"""Building a testament from the Grimoire: selection, the Weismann barrier, the bottleneck.

What crosses (docs/testament.md):
- anti-knowledge, every status but pruned, regardless of confidence;
- bloodstains: the golem's own failures with their conditions (reverts, failed or
  money-losing actions, grouped by what failed) and refuted dream hypotheses;
- causal links and procedural facts (procedural text re-rendered without amounts);
- other semantic facts at or above ``min_confidence``; inherited knowledge the golem
  still holds (staged or active) crosses at its own confidence, one generation further;
- the most important chain episodes as one-line summaries (never payloads).
What does not: raw episodes, working-memory notes, ephemeral entries, unconfirmed own
candidates, money figures and parameter fields (testament_format's barrier).
When over ``max_entries``, anti-knowledge goes first, then bloodstains, then the rest
by value (kind weight x mean of confidence and importance x 0.85^generation).
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from golem.consolidation.curator_signals import is_dream
from golem.grimoire.decay import is_anti_knowledge
from golem.grimoire.payloads import OUTCOME_CATEGORY, REVERT_CATEGORY
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    Episode,
    FactKind,
    SemanticEntry,
    Source,
    Status,
)
from golem.mortality import testament_format as fmt
from golem.mortality import testament_model as tm
from golem.mortality.categories import REFLECTION_CATEGORIES

if TYPE_CHECKING:
    from golem.grimoire.grimoire import Grimoire
    from golem.mortality.lineage import Lineage

K = tm.EntryKind
_WEIGHT = {K.CAUSAL_LINK: 1.0, K.PROCEDURAL: 1.0, K.FACT: 0.9, K.EPISODE_SUMMARY: 0.6}
_CONDITION_KEYS = ("action", "function", "address", "token", "pool", "protocol", "result")
_SUMMARY_CHARS = 240


def testament_id(golem_id: str, died_at: float, generation: int) -> str:
    key = f"{golem_id}\x00{died_at!r}\x00{generation}".encode()
    return "t-" + hashlib.sha256(key).hexdigest()[:24]


def clip_bytes(text: str, limit: int, marker: str = "\n[... compressed: truncated]") -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (on a character boundary)."""
    if len(text.encode()) <= limit:
        return text
    room = max(limit - len(marker.encode()), 0)
    return text.encode()[:room].decode(errors="ignore") + marker


def normalize_reflection(reflection: dict[str, list[str]]) -> dict[str, list[str]]:
    unknown = sorted(set(reflection) - set(REFLECTION_CATEGORIES))
    if unknown:
        raise tm.TestamentError(f"reflection: unknown categories {unknown}")
    return {k: [s.strip()[:tm.MAX_ENTRY_CHARS] for s in reflection.get(k, []) if s.strip()]
            for k in REFLECTION_CATEGORIES}


def entry_of(e: SemanticEntry, min_confidence: float) -> tm.TestamentEntry | None:
    """The testament form of a semantic entry, or None when it does not cross."""
    if e.status == Status.PRUNED:
        if not is_dream(e):
            return None
        return _make(e, K.BLOODSTAIN, f"Refuted hypothesis: {e.text}", bloodstain=True,
                     conditions={"refuted": True, "observed_to": e.observed_to})
    kind = crossing_kind(e, min_confidence)
    if kind is None:
        return None
    return _make(e, kind, procedural_text(e) if kind == K.PROCEDURAL else e.text)


def crossing_kind(e: SemanticEntry, min_confidence: float) -> tm.EntryKind | None:
    """How a (not pruned) entry crosses, or None when it stays behind."""
    if e.status == Status.QUARANTINED or e.decay_class == DecayClass.EPHEMERAL:
        return None
    if is_anti_knowledge(e):
        return K.ANTI_KNOWLEDGE
    inherited = e.provenance.source != Source.SELF or e.generation > 0
    stays = e.status == Status.ARCHIVED or (e.status == Status.STAGED and not inherited)
    if e.entry_type == EntryType.CAUSAL_LINK or e.fact_kind == FactKind.CAUSAL_RELATION:
        kind = K.CAUSAL_LINK
    elif e.fact_kind == FactKind.PROCEDURAL or e.entry_type == EntryType.STRATEGY_FRAGMENT:
        kind = K.PROCEDURAL
    else:
        kind = K.FACT
    if stays or (kind == K.FACT and not inherited and e.confidence < min_confidence):
        return None
    return kind


def procedural_text(e: SemanticEntry) -> str:
    """Success rate and the sign of the outcome; the amount stays behind."""
    f = e.fact
    n, ok = f.get("attempts"), f.get("succeeded")
    if isinstance(n, int) and isinstance(ok, int) and n > 0 and "strategy" in f:
        mean = f.get("pnl_mean_usd")
        sign = ("" if not isinstance(mean, int | float) else
                "; on average it lost money" if mean < 0 else
                "; on average it made money" if mean > 0 else "; on average it broke even")
        return f"Action '{f['strategy']}' succeeded {ok} of {n} times ({ok / n:.0%}){sign}."
    return e.text


def _make(e: SemanticEntry, kind: tm.EntryKind, text: str, *, bloodstain: bool = False,
          conditions: dict[str, Any] | None = None) -> tm.TestamentEntry:
    return tm.TestamentEntry(
        kind=kind, text=fmt.barrier_text(text)[:tm.MAX_ENTRY_CHARS],
        confidence=e.confidence, importance=e.importance, generation=e.generation,
        entry_type=e.entry_type.value, fact_kind=e.fact_kind.value if e.fact_kind else None,
        category=e.category.value if e.category else None, fact=fmt.barrier_fact(e.fact),
        bloodstain=bloodstain or e.provenance.bloodstain,
        conditions=fmt.barrier_fact({k: v for k, v in (conditions or {}).items()
                                     if v is not None}),
        source_id=e.id)


def failure_key(ep: Episode) -> tuple[str, ...] | None:
    """What failed, for an own action episode that failed or lost money; else None."""
    p = ep.payload
    lost = isinstance(p.get("pnl_usd"), int | float) and float(p["pnl_usd"]) < 0
    if ep.category == REVERT_CATEGORY:
        what = "reverted"
    elif ep.category == OUTCOME_CATEGORY and (p.get("result") != "ok" or lost):
        what = "lost money" if p.get("result") == "ok" else str(p.get("result") or "failed")
    else:
        return None
    return (ep.category, what, *(str(p.get(k) or "") for k in _CONDITION_KEYS))


def bloodstains(groups: dict[tuple[str, ...], list[Episode]]) -> list[tm.TestamentEntry]:
    """One bloodstain per distinct failure, with where, how often and when."""
    out = []
    for key, eps in sorted(groups.items()):
        what, cond = key[1], dict(zip(_CONDITION_KEYS, key[2:], strict=True))
        cond = {k: v for k, v in cond.items() if v}
        where = ", ".join(f"{k} {v}" for k, v in cond.items() if k != "result")
        n = len(eps)
        text = (f"Bloodstain: {cond.get('action') or 'an action'} {what}"
                f"{' (' + where + ')' if where else ''}; {n} time{'s' * (n != 1)}.")
        times = [e.observed_at for e in eps]
        out.append(tm.TestamentEntry(
            kind=K.BLOODSTAIN, text=text, confidence=min(0.95, 0.6 + 0.05 * n),
            importance=min(1.0, 0.8 + 0.02 * n), bloodstain=True,
            conditions={**cond, "category": key[0], "outcome": what, "occurrences": n,
                        "first_at": min(times), "last_at": max(times),
                        "last_block": max(e.block_number for e in eps)},
            source_id=max(eps, key=lambda e: (e.observed_at, e.id)).id))
    return out


def episode_summary(ep: Episode) -> tm.TestamentEntry:
    head = ep.category + (f" on {ep.protocol}" if ep.protocol else "")
    text = fmt.mask_numbers(fmt.barrier_text(" ".join(ep.text.split())))[:_SUMMARY_CHARS]
    return tm.TestamentEntry(
        kind=K.EPISODE_SUMMARY, text=f"{head} at block {ep.block_number}: {text}",
        confidence=0.8 if ep.quality_verified else 0.5, importance=_importance(ep),
        generation=ep.provenance.generation, source_id=ep.id)


def _importance(ep: Episode) -> float:
    value = ep.importance if ep.importance is not None else ep.curiosity
    return min(max(float(value), 0.0), 1.0)


def scan_episodes(batches: Iterable[list[Episode]], namespace: str,
                  keep: int) -> tuple[list[Episode], dict[tuple[str, ...], list[Episode]], int]:
    """The ``keep`` most important chain episodes, the failure groups, and the count."""
    top: list[tuple[float, str, Episode]] = []
    groups: dict[tuple[str, ...], list[Episode]] = {}
    seen = 0
    for batch in batches:
        for ep in batch:
            if ep.namespace != namespace:
                continue
            seen += 1
            key = failure_key(ep)
            if key is not None:
                groups.setdefault(key, []).append(ep)
            elif ep.category not in (OUTCOME_CATEGORY, REVERT_CATEGORY) and keep > 0:
                item = (_importance(ep), ep.id, ep)
                if len(top) < keep:
                    heapq.heappush(top, item)
                else:
                    heapq.heappushpop(top, item)
    return [ep for _, _, ep in sorted(top, reverse=True)], groups, seen


def bottleneck(entries: list[tm.TestamentEntry], max_entries: int,
               ) -> tuple[list[tm.TestamentEntry], dict[str, int]]:
    """Keep the most valuable ``max_entries``; returns them and the dropped count by kind."""
    def rank(e: tm.TestamentEntry) -> tuple[int, float, str]:
        tier = 0 if e.kind == K.ANTI_KNOWLEDGE else 1 if e.kind == K.BLOODSTAIN else 2
        value = (_WEIGHT.get(e.kind, 1.0) * (e.confidence + e.importance) / 2
                 * 0.85 ** e.generation)
        return (tier, -value, e.source_id)

    ordered = sorted(entries, key=rank)
    dropped: dict[str, int] = {}
    for e in ordered[max_entries:]:
        dropped[e.kind.value] = dropped.get(e.kind.value, 0) + 1
    return ordered[:max_entries], dropped


async def build(
    grimoire: Grimoire, *, lineage: Lineage, cause: str, died_at: float,
    reflection: dict[str, list[str]], reflection_text: str, reflection_source: str,
    playbook_md: str, memory_md: str, min_confidence: float, max_entries: int,
) -> tm.Testament:
    if not 1 <= max_entries <= tm.MAX_ENTRIES:
        raise tm.TestamentError(f"max_entries: must be in [1, {tm.MAX_ENTRIES}]")
    ns = grimoire.namespace
    keep = max(1, max_entries // 8)

    own = await grimoire.entries()
    top, groups, seen = await grimoire.scan_episodes(
        lambda batches: scan_episodes(batches, ns, keep))
    candidates = [t for t in (entry_of(e, min_confidence) for e in own) if t is not None]
    candidates += bloodstains(groups) + [episode_summary(ep) for ep in top]
    kept, dropped = bottleneck(candidates, max_entries)
    stats = {"semantic_entries": len(own), "episodes_scanned": seen,
             "candidates": len(candidates), "dropped_by_bottleneck": dropped,
             "min_confidence": min_confidence}
    return tm.Testament(
        version=tm.TESTAMENT_VERSION,
        testament_id=testament_id(lineage.golem_id, died_at, lineage.generation),
        golem_name=lineage.name, namespace=lineage.namespace, golem_id=lineage.golem_id,
        generation=lineage.generation, parent_testament_id=lineage.parent_testament_id,
        died_at=died_at, cause=cause[:1000], provenance=tm.PROVENANCE,
        reflection=normalize_reflection(reflection),
        reflection_text=clip_bytes(reflection_text, tm.MAX_REFLECTION_BYTES),
        reflection_source=reflection_source or "offline", entries=tuple(kept),
        max_entries=max_entries,
        playbook_md=clip_bytes(playbook_md, tm.MAX_SNAPSHOT_CHARS),
        memory_md=clip_bytes(memory_md, tm.MAX_SNAPSHOT_CHARS), stats=stats)

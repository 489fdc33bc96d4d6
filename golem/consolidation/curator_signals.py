"""The signals the curator's verdicts read off an entry; pure, the caller gives ``now``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from golem.grimoire.decay import decayed_confidence, is_anti_knowledge, reference_time
from golem.grimoire.records import DecayClass, SemanticEntry, Source

DAY_S = 86400.0
MERGED_FROM = "curator_merged_from"  # fact key: ids folded into this entry


@dataclass(frozen=True)
class Scope:
    """What this golem watches; knowledge tied only to other chains/protocols is cold."""

    chains: frozenset[int] = frozenset()
    protocols: frozenset[str] = frozenset()


def merged_into(entries: Iterable[SemanticEntry]) -> dict[str, str]:
    """absorbed id -> keeper id, from the keepers' fact[MERGED_FROM]."""
    out: dict[str, str] = {}
    for e in entries:
        for absorbed in e.fact.get(MERGED_FROM, ()) or ():
            out[str(absorbed)] = e.id
    return out


def effective_confidence(entry: SemanticEntry, now: float,
                         half_lives: Mapping[DecayClass, float] | None, floor: float) -> float:
    """Stored confidence, or the decayed one at ``now`` when half-lives are given (the
    decay module's closed form, so it agrees with the next decay pass)."""
    if half_lives is None or entry.decay_class not in half_lives:
        return entry.confidence
    ref = entry.reinforced_confidence if entry.reinforced_confidence is not None \
        else entry.confidence
    decayed = decayed_confidence(ref, now - reference_time(entry),
                                 half_lives[entry.decay_class], entry.episode_count,
                                 is_anti_knowledge=is_anti_knowledge(entry),
                                 anchored=entry.anchored, floor=floor)
    return min(entry.confidence, decayed)


def last_used(entry: SemanticEntry) -> float:
    """Creation, last access or last reinforcement, whichever is latest."""
    return max(t for t in (entry.created_at, entry.last_accessed, entry.last_reinforced)
               if t is not None)


def is_dream(entry: SemanticEntry) -> bool:
    process = entry.provenance.process
    return process == "dream" or process.startswith("dream:")


def is_model_candidate(entry: SemanticEntry) -> bool:
    """Written by a model's consolidation pass (staged until later evidence backs it)."""
    return entry.provenance.process == "model-consolidation"


def is_inherited(entry: SemanticEntry, namespace: str) -> bool:
    """Knowledge this golem did not learn itself (seed 000 provenance tiers)."""
    prov = entry.provenance
    return (prov.source != Source.SELF or prov.generation > 0
            or bool(prov.author and prov.author != namespace))


def out_of_scope(entry: SemanticEntry, scope: Scope) -> bool:
    """Names chains (or protocols) and none of them is one this golem watches."""
    meta = entry.metadata
    chains = bool(scope.chains and meta.chains and not set(meta.chains) & scope.chains)
    wanted = {p.lower() for p in scope.protocols}
    protocols = bool(wanted and meta.protocols
                     and not {p.lower() for p in meta.protocols} & wanted)
    return chains or protocols


def days(seconds: float) -> str:
    return f"{seconds / DAY_S:.3g}d"

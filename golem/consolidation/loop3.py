"""Loop 3 of the Context Governor, the pure part (seed 002): counterfactual context policies.

During a dream, the worst-scored Theta ticks are re-assembled under alternative
allocations; what would have entered or dropped is scored by an offline proxy, and a
promising alternative becomes a ContextPolicyMutation staged at confidence 0.2. A trial
applies it as a new policy revision; waking performance then validates or refutes it.

The offline proxy is not a decision replay: without a model nothing can say what the
golem would have decided. It scores two honest signals, see ``offline_evaluation``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from golem.governor.categories import HARD, Category
from golem.governor.feedback import GOOD_QUALITY, capped_shares
from golem.governor.policy import ContextPolicy, normalise

STAGED_CONFIDENCE = 0.2  # seed 002: dream mutations start at low confidence


@dataclass(frozen=True)
class TickOutcome:
    """One scored Theta tick, as Loop 1 recorded it."""

    tick: int
    quality: float
    regime: str
    policy_revision: int
    injected: frozenset[str] = frozenset()
    referenced: frozenset[str] = frozenset()
    missing: frozenset[str] = frozenset()


def worst_ticks(outcomes: Iterable[TickOutcome], n: int = 3,
                below: float = GOOD_QUALITY) -> list[TickOutcome]:
    """The ``n`` lowest-quality ticks that were poor outcomes (quality < ``below``)."""
    poor = [o for o in outcomes if o.quality < below]
    return sorted(poor, key=lambda o: (o.quality, o.tick))[:max(0, n)]


def category_lifts(outcomes: Iterable[TickOutcome], exclude: Iterable[int] = (),
                   min_samples: int = 5) -> dict[Category, float]:
    """Per category: mean quality of ticks whose decision used it (referenced) minus the
    mean of ticks that did not; 0 unless both sides have ``min_samples``. A correlation
    over Loop 1's records, not a causal effect."""
    skip = set(exclude)
    rows = [o for o in outcomes if o.tick not in skip]
    lifts: dict[Category, float] = {}
    for cat in Category:
        used = [o.quality for o in rows if cat.value in o.referenced]
        other = [o.quality for o in rows if cat.value not in o.referenced]
        if len(used) >= min_samples and len(other) >= min_samples:
            lifts[cat] = math.fsum(used) / len(used) - math.fsum(other) / len(other)
        else:
            lifts[cat] = 0.0
    return lifts


@dataclass(frozen=True)
class Alternative:
    """A requested change to the base shares (before capping) and why."""

    name: str
    steps: Mapping[Category, float]
    rationale: str


def alternatives(shares: Mapping[Category, float], missing: Iterable[str],
                 lifts: Mapping[Category, float], *, boost: float = 0.02,
                 trade: float = 0.06, floor: float = 0.02) -> list[Alternative]:
    """(a) boost what the model said was missing, (b) trade playbook budget for causal
    edges (seed 002), (c) move budget from the soft category whose use goes with the worst
    quality to the one whose use goes with the best (Loop 1's lifts)."""
    base = normalise(shares)
    out = []
    valid = {c.value for c in Category}
    wanted = sorted({Category(m) for m in missing if m in valid})
    if wanted:
        out.append(Alternative("boost_missing", {c: boost for c in wanted},
                               "boost categories the model reported missing: "
                               + ", ".join(c.value for c in wanted)))
    moved = min(base[Category.PLAYBOOK] - floor, trade)
    if moved > 0:
        out.append(Alternative(
            "playbook_to_causal", {Category.PLAYBOOK: -moved, Category.CAUSAL_EDGES: moved},
            f"trade {moved:.3f} of playbook budget for causal edges"))
    soft = [c for c in Category if c not in HARD]
    best = max(soft, key=lambda c: (lifts.get(c, 0.0), c.value))
    worst = min((c for c in soft if base[c] > floor),
                key=lambda c: (lifts.get(c, 0.0), c.value), default=None)
    if worst is not None and worst is not best and lifts.get(best, 0.0) > 0.0 > lifts.get(
            worst, 0.0):
        out.append(Alternative("follow_lift", {worst: -boost, best: boost},
                               f"move budget from {worst.value} (lift {lifts[worst]:+.3f}) "
                               f"to {best.value} (lift {lifts[best]:+.3f})"))
    return out


def shifted(shares: Mapping[Category, float], steps: Mapping[Category, float],
            cap: float) -> tuple[dict[Category, float], dict[Category, float]]:
    """(new shares, applied delta): ``steps`` applied within ``cap`` per category,
    still a distribution (feedback.capped_shares)."""
    old = normalise(shares)
    new = capped_shares(old, steps, cap)
    return new, {c: new[c] - old[c] for c in Category}


@dataclass(frozen=True)
class CategoryUse:
    included: int = 0
    used: int = 0


@dataclass(frozen=True)
class Counterfactual:
    """One worst tick re-assembled under one alternative, next to the current policy's."""

    tick: int
    quality: float
    missing: frozenset[str]
    alternative: Alternative
    delta: Mapping[Category, float]
    original: Mapping[Category, CategoryUse]
    altered: Mapping[Category, CategoryUse]
    entered: tuple[str, ...]
    dropped: tuple[str, ...]
    budget: int


@dataclass(frozen=True)
class Evaluation:
    gain: float
    detail: str


def offline_evaluation(cf: Counterfactual, lifts: Mapping[Category, float],
                       missing_weight: float = 0.5) -> Evaluation:
    """gain = missing_weight x (share of the tick's missing categories that gain tokens)
    + sum over categories of lift x (token change / budget).

    Both terms are zero when the alternative changes nothing that reaches the model
    (e.g. memory holds nothing more of a boosted category), so only a workspace that
    really differs can earn a mutation.
    """
    wanted = [c for c in Category if c.value in cf.missing]
    covered = [c for c in wanted if cf.altered.get(c, CategoryUse()).used
               > cf.original.get(c, CategoryUse()).used]
    coverage = len(covered) / len(wanted) if wanted else 0.0
    association = math.fsum(
        lifts.get(c, 0.0) * (cf.altered.get(c, CategoryUse()).used
                             - cf.original.get(c, CategoryUse()).used) / max(1, cf.budget)
        for c in Category)
    gain = missing_weight * coverage + association
    return Evaluation(gain, f"covers {len(covered)}/{len(wanted)} missing; association "
                            f"{association:+.4f}; {len(cf.entered)} in, {len(cf.dropped)} out")


class MutationStatus(StrEnum):
    STAGED = "staged"
    TRIAL = "trial"
    VALIDATED = "validated"
    REFUTED = "refuted"


@dataclass(frozen=True)
class ContextPolicyMutation:
    id: str
    name: str
    delta: Mapping[str, float]
    rationale: str
    confidence: float
    status: MutationStatus
    created_tick: int
    source_ticks: tuple[int, ...]
    gain: float
    applied: Mapping[str, float] = field(default_factory=dict)
    trial_revision: int | None = None
    trial_tick: int | None = None
    reverted_revision: int | None = None
    detail: str = ""


def mutation_id(name: str, source_ticks: Sequence[int], delta: Mapping[str, float]) -> str:
    body = json.dumps([name, sorted(source_ticks), {k: round(v, 6) for k, v in
                                                      sorted(delta.items())}])
    return "cpm-" + hashlib.sha256(body.encode()).hexdigest()[:24]


def propose(scored: Iterable[tuple[Counterfactual, Evaluation]], tick: int,
            min_gain: float, max_new: int = 1) -> list[ContextPolicyMutation]:
    """Per alternative kind, the ticks where it cleared ``min_gain`` make one mutation
    (mean delta, mean gain), best first."""
    groups: dict[str, list[tuple[Counterfactual, Evaluation]]] = {}
    for cf, ev in scored:
        if ev.gain >= min_gain and any(abs(v) > 1e-9 for v in cf.delta.values()):
            groups.setdefault(cf.alternative.name, []).append((cf, ev))
    out = []
    for name, rows in groups.items():
        delta = {c.value: round(math.fsum(cf.delta.get(c, 0.0) for cf, _ in rows) / len(rows),
                                6) for c in Category}
        delta = {k: v for k, v in delta.items() if v != 0.0}
        ticks = tuple(sorted({cf.tick for cf, _ in rows}))
        gain = math.fsum(ev.gain for _, ev in rows) / len(rows)
        why = "; ".join(sorted({cf.alternative.rationale for cf, _ in rows}))
        detail = " | ".join(f"tick {cf.tick}: {ev.detail}" for cf, ev in rows)
        out.append(ContextPolicyMutation(
            mutation_id(name, ticks, delta), name, delta, f"{why} ({detail})",
            STAGED_CONFIDENCE, MutationStatus.STAGED, tick, ticks, round(gain, 6)))
    out.sort(key=lambda m: (-m.gain, m.id))
    return out[:max(0, max_new)]


def applied_policy(policy: ContextPolicy, delta: Mapping[str, float], cap: float,
                   revision: int) -> tuple[ContextPolicy, dict[str, float]]:
    """The next revision with ``delta`` applied (capped, normalised) and what moved."""
    new, moved = shifted(policy.allocations, {Category(k): v for k, v in delta.items()}, cap)
    return (replace(policy, revision=revision, allocations=new),
            {c.value: v for c, v in moved.items() if abs(v) > 1e-12})


@dataclass(frozen=True)
class TrialRule:
    """When waking performance has spoken (documented defaults)."""

    min_ticks: int = 10  # scored ticks needed on each side
    margin: float = 0.05  # mean-quality difference that counts
    max_trial_ticks: int = 60  # inconclusive this long: refuted (must earn its place)
    baseline_window: int = 30  # scored ticks before the trial revision
    validated_confidence_gain: float = 0.4


def judge(baseline: Sequence[float], trial: Sequence[float],
          rule: TrialRule) -> tuple[MutationStatus | None, str]:
    """VALIDATED when the trial mean beats the baseline by ``margin``; REFUTED when it
    falls short by it, or stays inside it for ``max_trial_ticks``; else None (wait)."""
    if len(baseline) < rule.min_ticks or len(trial) < rule.min_ticks:
        return None, f"waiting: {len(baseline)} baseline, {len(trial)} trial ticks scored"
    before = math.fsum(baseline) / len(baseline)
    after = math.fsum(trial) / len(trial)
    diff = after - before
    detail = (f"trial mean {after:.3f} over {len(trial)} ticks vs baseline {before:.3f} "
              f"over {len(baseline)} ({diff:+.3f}, margin {rule.margin})")
    if diff >= rule.margin:
        return MutationStatus.VALIDATED, detail
    if diff <= -rule.margin:
        return MutationStatus.REFUTED, detail
    if len(trial) >= rule.max_trial_ticks:
        return MutationStatus.REFUTED, "inconclusive: " + detail
    return None, "waiting: " + detail


@dataclass(frozen=True)
class Loop3Settings:
    worst: int = 3  # seed: top-3 worst outcomes per dream
    poor_below: float = 0.5  # a poor outcome (feedback.GOOD_QUALITY)
    recent: int = 500  # scored outcomes considered
    lift_min_samples: int = 5
    boost: float = 0.02  # seed: +0.02 per missing category
    trade: float = 0.06  # seed: at most 0.06 playbook -> causal edges
    cap: float = 0.06  # most a mutation moves one category
    min_gain: float = 0.1  # offline proxy gain needed to stage
    max_new: int = 1  # mutations staged per dream
    max_staged: int = 3  # pending staged mutations kept at most
    missing_weight: float = 0.5
    rule: TrialRule = field(default_factory=TrialRule)


@dataclass(frozen=True)
class Loop3Report:
    counterfactuals: int = 0
    staged: int = 0
    trialled: int = 0
    validated: int = 0
    refuted: int = 0

"""The Governor's feedback math (seed 002 S4): Loop 1's "referenced" rule, Loop 2's learning.

Pure. Loop 2 keeps a Beta(2, 2) per category per regime (good outcome with the category
in context: alpha + 1; bad: beta + 1), proposes per-category steps from reference rates,
missing-context signals and those Beta means, and moves the base allocations toward them
by at most ``max_delta`` per category while keeping them a distribution. Small capped
steps keep one unlucky window from reshaping what the golem sees.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

from golem.governor.categories import Category, MarketRegime
from golem.governor.policy import ContextPolicy, normalise

PRIOR = (2.0, 2.0)
GOOD_QUALITY = 0.5  # seed: a decision with quality > 0.5 is a good outcome
MAX_DELTA = 0.02  # seed: max allocation change per category per Loop 2 cycle
ALLOCATION_FLOOR = 0.01  # seed: no learned category falls below this share
RARE_RATE, FREQUENT_RATE = 0.1, 0.6  # seed's reference-rate bands
RARE_STEP, FREQUENT_STEP = -0.015, 0.02
MISSING_STEP = 0.005  # per missing-context signal naming the category
BETA_GAIN = 0.04  # Beta mean 1.0 -> +0.02, 0.0 -> -0.02
REFERENCE_SIMILARITY = 0.8  # seed: paraphrase when cosine > 0.8


@dataclass(frozen=True)
class FeedbackSample:
    """What Loop 2 needs from one Loop 1 OutcomeRecord.

    ``referenced`` holds the categories that influenced the decision (citations, or
    ``referenced_mask`` without them); ``quality`` is None until the prediction is scored.
    """

    regime: MarketRegime
    injected: frozenset[Category]
    referenced: frozenset[Category] = frozenset()
    quality: float | None = None
    missing: tuple[Category, ...] = ()


@dataclass(frozen=True)
class BetaTable:
    """Beta(alpha, beta) per (regime, category); absent pairs are the Beta(2, 2) prior."""

    params: Mapping[tuple[MarketRegime, Category], tuple[float, float]] = field(
        default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        for key, (a, b) in self.params.items():
            if not (math.isfinite(a) and math.isfinite(b) and a > 0 and b > 0):
                raise ValueError(f"Beta{(a, b)} for {key} is not a valid distribution")
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def get(self, regime: MarketRegime, category: Category) -> tuple[float, float]:
        return self.params.get((regime, category), PRIOR)

    def mean(self, regime: MarketRegime, category: Category) -> float:
        """Expected value of the category in this regime (seed ``value()``)."""
        a, b = self.get(regime, category)
        return a / (a + b)

    def updated(self, samples: Iterable[FeedbackSample]) -> BetaTable:
        """Every scored sample counts once for each category it injected."""
        params = dict(self.params)
        for s in samples:
            if s.quality is None:
                continue
            good = s.quality > GOOD_QUALITY
            for cat in s.injected:
                a, b = params.get((s.regime, cat), PRIOR)
                params[(s.regime, cat)] = (a + 1.0, b) if good else (a, b + 1.0)
        return BetaTable(params)


@dataclass(frozen=True)
class PolicyUpdate:
    """One Loop 2 cycle's result; ``delta`` is new minus old (normalised) base shares."""

    policy: ContextPolicy
    betas: BetaTable
    delta: Mapping[Category, float]
    proposed: Mapping[Category, float]

    def delta_dict(self) -> dict[str, float]:
        """For the context:policy_updated event."""
        return {c.value: round(v, 6) for c, v in self.delta.items() if v != 0.0}


def proposed_steps(samples: Iterable[FeedbackSample], betas: BetaTable,
                   regime: MarketRegime) -> dict[Category, float]:
    """Uncapped step per category: seed's reference-rate rule, missing-context boosts,
    plus how far the regime's Beta mean sits from a coin flip."""
    injected = dict.fromkeys(Category, 0)
    referenced = dict.fromkeys(Category, 0)
    steps = {c: BETA_GAIN * (betas.mean(regime, c) - 0.5) for c in Category}
    for s in samples:
        for cat in s.injected:
            injected[cat] += 1
            referenced[cat] += cat in s.referenced
        for cat in s.missing:
            steps[cat] += MISSING_STEP
    for cat, n in injected.items():
        if n:
            rate = referenced[cat] / n
            if rate < RARE_RATE:
                steps[cat] += RARE_STEP
            elif rate > FREQUENT_RATE:
                steps[cat] += FREQUENT_STEP
    return steps


def capped_shares(old: Mapping[Category, float], steps: Mapping[Category, float],
                  max_delta: float = MAX_DELTA) -> dict[Category, float]:
    """The distribution nearest ``old + steps`` whose every share moved <= max_delta.

    A common shift (found by bisection) is taken off every target before clipping to
    the box, so the result sums to 1 without renormalising past the cap.
    """
    base = normalise(old)
    target = {c: base[c] + steps.get(c, 0.0) for c in Category}
    lo = {c: min(base[c], max(base[c] - max_delta, ALLOCATION_FLOOR)) for c in Category}
    hi = {c: min(1.0, base[c] + max_delta) for c in Category}

    def total(shift: float) -> float:
        return math.fsum(min(hi[c], max(lo[c], target[c] - shift)) for c in Category)

    left = min(target[c] - hi[c] for c in Category)  # total(left) = sum(hi) >= 1
    right = max(target[c] - lo[c] for c in Category)  # total(right) = sum(lo) <= 1
    for _ in range(200):
        mid = (left + right) / 2.0
        if total(mid) > 1.0:
            left = mid
        else:
            right = mid
    shift = (left + right) / 2.0
    return {c: min(hi[c], max(lo[c], target[c] - shift)) for c in Category}


def run_loop2(policy: ContextPolicy, betas: BetaTable, samples: Iterable[FeedbackSample],
              regime: MarketRegime, max_delta: float = MAX_DELTA) -> PolicyUpdate:
    """Fold the window's samples into the Betas and make the next policy revision.

    ``regime`` picks whose Betas steer the step (the regime the window was lived in).
    """
    window = list(samples)
    new_betas = betas.updated(window)
    steps = proposed_steps(window, new_betas, regime)
    old = normalise(policy.allocations)
    new = capped_shares(old, steps, max_delta)
    return PolicyUpdate(
        policy=replace(policy, revision=policy.revision + 1, allocations=new),
        betas=new_betas,
        delta=MappingProxyType({c: new[c] - old[c] for c in Category}),
        proposed=MappingProxyType(steps),
    )


FloatArray = NDArray[np.floating]


def max_similarity(entries: FloatArray, sentences: FloatArray) -> NDArray[np.float64]:
    """Per injected entry vector, its best cosine against the response's sentence vectors."""
    e = np.asarray(entries, dtype=np.float64)
    s = np.asarray(sentences, dtype=np.float64)
    if e.ndim != 2 or s.ndim != 2 or (e.size and s.size and e.shape[1] != s.shape[1]):
        raise ValueError(f"need (n, d) and (m, d) vectors, got {e.shape} and {s.shape}")
    if e.shape[0] == 0 or s.shape[0] == 0:
        return np.zeros(e.shape[0], dtype=np.float64)
    e_norm = np.linalg.norm(e, axis=1, keepdims=True)
    s_norm = np.linalg.norm(s, axis=1, keepdims=True)
    e_unit = np.divide(e, e_norm, out=np.zeros_like(e), where=e_norm > 0)
    s_unit = np.divide(s, s_norm, out=np.zeros_like(s), where=s_norm > 0)
    best: NDArray[np.float64] = (e_unit @ s_unit.T).max(axis=1)
    return best


def referenced_mask(entries: FloatArray, sentences: FloatArray,
                    threshold: float = REFERENCE_SIMILARITY) -> NDArray[np.bool_]:
    """Loop 1 without citations: an entry was referenced when some sentence paraphrases it."""
    mask: NDArray[np.bool_] = max_similarity(entries, sentences) > threshold
    return mask

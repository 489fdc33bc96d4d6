"""Paired effects between two arms (pure): the difference per seed, its bootstrap 95%
interval, and the Wilcoxon signed-rank test.

``paired_effect(arm, reference)`` pairs the two arms' values seed by seed (a seed missing
from either side is left out and counted) and reports the mean of ``arm - reference``.
The interval is scipy's percentile bootstrap of that mean (10,000 resamples, a fixed
generator seed so a report is reproducible); the p-value is scipy's two-sided Wilcoxon
signed-rank test on the differences (exact for small samples). With fewer than two
pairs there is no interval; when every difference is zero the test has nothing to rank
and p is 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

RESAMPLES = 10_000
BOOTSTRAP_SEED = 20261126


@dataclass(frozen=True)
class Effect:
    n: int  # pairs
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    unpaired: int  # seeds present in only one arm, or without a value

    @property
    def excludes_zero(self) -> bool:
        return (self.ci_low is not None and self.ci_high is not None
                and (self.ci_low > 0 or self.ci_high < 0))


def paired_effect(arm: Mapping[int, float | None],
                  reference: Mapping[int, float | None]) -> Effect:
    """Mean of arm - reference over the seeds both have a value for."""
    seeds = sorted(set(arm) | set(reference))
    pairs = [(arm[s], reference[s]) for s in seeds if s in arm and s in reference]
    diffs = np.array([a - r for a, r in pairs if a is not None and r is not None
                      and math.isfinite(a) and math.isfinite(r)], dtype=float)
    unpaired = len(seeds) - len(diffs)
    if len(diffs) == 0:
        return Effect(0, None, None, None, None, unpaired)
    mean = float(diffs.mean())
    low = high = p = None
    if len(diffs) >= 2:
        if np.all(diffs == diffs[0]):  # no spread: every resample gives the same mean
            low = high = mean
        else:
            ci = stats.bootstrap((diffs,), np.mean, confidence_level=0.95,
                                 n_resamples=RESAMPLES, method="percentile",
                                 rng=np.random.default_rng(BOOTSTRAP_SEED)).confidence_interval
            low, high = float(ci.low), float(ci.high)
        p = 1.0 if np.all(diffs == 0) else float(stats.wilcoxon(diffs).pvalue)
    return Effect(len(diffs), mean, low, high, p, unpaired)

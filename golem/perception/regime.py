"""Per-feature regime detection: stationary, transition, new regime.

The seed keeps a regime indicator ``0 = stationary, 1 = transition,
2 = new regime`` (seed 002 l.1548). We drive it with a two-sided CUSUM of the
feature against a slow reference (mean and variance with weight
``max(1/n, 1 - ref_decay)``, so a step is not absorbed before it is seen):

    z = (x - ref_mean) / sqrt(ref_var)
    S+ = max(0, S+ + z - k)        S- = max(0, S- - z - k)

An alarm (``S+ > h`` or ``S- > h``; the sums start after ``warmup`` observations) means the
mean moved: the feature enters TRANSITION, both sums restart and the reference
mean restarts at the new value (keeping its variance as a prior). Once
``settle_count`` consecutive observations sit within ``settle_z`` of the new
reference, the feature is in a NEW_REGIME; it keeps that label for ``hold``
observations, then is STATIONARY. With k = 1, h = 8 the in-control run length
of Gaussian noise is ~10^7 observations (Siegmund); a step of d sigma alarms
after about ``h / (d - k)`` observations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum


class Regime(StrEnum):
    """Channel regime, ordered by how much attention it deserves."""

    STATIONARY = "stationary"
    TRANSITION = "transition"
    NEW_REGIME = "new_regime"


_RANK = {Regime.STATIONARY: 0, Regime.NEW_REGIME: 1, Regime.TRANSITION: 2}

# Deviations beyond this many sigmas count as this many: one wild value alarms,
# but cannot leave a sum so large that it takes ages to drain.
Z_CLIP = 50.0
MIN_VARIANCE = 1e-8


@dataclass(frozen=True)
class RegimeConfig:
    """CUSUM slack ``k`` and alarm level ``h``, the reference memory and the settling rule."""

    k: float = 1.0
    h: float = 8.0
    ref_decay: float = 0.99
    warmup: int = 20
    settle_z: float = 2.0
    settle_count: int = 8
    hold: int = 20


_FIELDS = ("s_pos", "s_neg", "calm", "age", "changes", "ref_mean", "ref_var", "ref_n")


@dataclass(frozen=True)
class RegimeDetector:
    """CUSUM state for one feature; ``age`` counts observations in ``regime``."""

    regime: Regime = Regime.STATIONARY
    s_pos: float = 0.0
    s_neg: float = 0.0
    calm: int = 0
    age: int = 0
    changes: int = 0
    ref_mean: float = 0.0
    ref_var: float = 1.0
    ref_n: int = 0

    def step(self, x: float, cfg: RegimeConfig) -> RegimeDetector:
        """Feed one feature value; return the next state."""
        if self.ref_n == 0:
            return replace(self, ref_mean=x, ref_n=1, age=self.age + 1)
        d = x - self.ref_mean
        z = max(-Z_CLIP, min(Z_CLIP, d / math.sqrt(self.ref_var)))
        w = max(1.0 / (self.ref_n + 1), 1.0 - cfg.ref_decay)
        if self.ref_n == 1 and self.changes == 0:
            # the first spread comes from the data, not the unit prior: features live on
            # any scale (a log-price moves by 1e-3, a rate by 10), and a prior of 1.0
            # would blind the detector for hundreds of observations
            ref_var = max(MIN_VARIANCE, d * d)
        else:
            ref_var = max(MIN_VARIANCE, (1.0 - w) * self.ref_var + w * d * d)
        nxt = replace(
            self,
            ref_mean=self.ref_mean + w * d,
            ref_var=ref_var,
            ref_n=self.ref_n + 1,
            age=self.age + 1,
        )
        if self.regime is Regime.TRANSITION:
            calm = self.calm + 1 if abs(z) < cfg.settle_z else 0
            if calm >= cfg.settle_count:
                return replace(nxt, regime=Regime.NEW_REGIME, calm=0, age=0)
            return replace(nxt, calm=calm)
        warm = self.ref_n >= cfg.warmup  # before that the reference is still being learnt
        s_pos = max(0.0, self.s_pos + z - cfg.k) if warm else 0.0
        s_neg = max(0.0, self.s_neg - z - cfg.k) if warm else 0.0
        if s_pos > cfg.h or s_neg > cfg.h:
            return replace(
                nxt,
                regime=Regime.TRANSITION,
                s_pos=0.0,
                s_neg=0.0,
                calm=0,
                age=0,
                changes=self.changes + 1,
                ref_mean=x,
                ref_var=self.ref_var,
                ref_n=1,
            )
        nxt = replace(nxt, s_pos=s_pos, s_neg=s_neg)
        if self.regime is Regime.NEW_REGIME and nxt.age >= cfg.hold:
            return replace(nxt, regime=Regime.STATIONARY, age=0)
        return nxt

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"regime": self.regime.value}
        out.update({f: getattr(self, f) for f in _FIELDS})
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> RegimeDetector:
        return cls(
            regime=Regime(str(d["regime"])),
            s_pos=num(d["s_pos"]),
            s_neg=num(d["s_neg"]),
            calm=int(num(d["calm"])),
            age=int(num(d["age"])),
            changes=int(num(d["changes"])),
            ref_mean=num(d["ref_mean"]),
            ref_var=num(d["ref_var"]),
            ref_n=int(num(d["ref_n"])),
        )


def worst(regimes: list[Regime]) -> Regime:
    """The regime that deserves most attention (TRANSITION > NEW_REGIME > STATIONARY)."""
    return max(regimes, key=_RANK.__getitem__, default=Regime.STATIONARY)


def num(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"expected a number, got {v!r}")
    return float(v)

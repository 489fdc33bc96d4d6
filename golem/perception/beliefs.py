"""The belief state: per (protocol, pool) channel, per feature (seed 002 l.1539-1625).

Each continuous feature (log size, log gas, price move, ...) keeps an EMA
prediction (``alpha``, seed l.1618), a :class:`PrecisionEstimate` (inverse
variance of recent prediction errors, seed l.1415-1453) and a Normal-Gamma
model for Bayesian surprise. Event rates use Gamma-Poisson, binary outcomes
(a revert) Beta-Bernoulli. Everything is a frozen value: ``observe`` returns
the next state and what was seen, and ``to_dict``/``from_dict`` give a JSON-safe
form the caller persists so beliefs survive restarts.

Features should be on a log or ratio scale: the precision starts at unit
variance, as in the seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from golem.perception.regime import Regime, RegimeConfig, RegimeDetector, num, worst
from golem.perception.surprise import BetaBernoulli, GammaPoisson, NormalGamma

MAX_PRECISION = 1e6  # seed l.1447: clamp to prevent numerical explosion
MIN_VARIANCE = 1e-8  # seed l.1446
MAX_ABS_FEATURE = 1e15  # features are logs or ratios; anything larger is bad input
FORMAT_VERSION = 1


@dataclass(frozen=True)
class BeliefConfig:
    """EMA ``alpha`` (seed l.1618), precision ``decay`` (seed l.1606), model forgetting."""

    alpha: float = 0.1
    precision_decay: float = 0.95
    model_decay: float = 0.99
    regime: RegimeConfig = field(default_factory=RegimeConfig)


@dataclass(frozen=True)
class PrecisionEstimate:
    """Running moments of prediction errors; precision = 1 / variance (seed l.1418)."""

    mean_sq_error: float = 1.0  # unit variance: uninformative start
    mean_error: float = 0.0
    n_eff: float = 0.0

    def updated(self, error: float, decay: float) -> PrecisionEstimate:
        return PrecisionEstimate(
            mean_sq_error=decay * self.mean_sq_error + (1.0 - decay) * error * error,
            mean_error=decay * self.mean_error + (1.0 - decay) * error,
            n_eff=decay * self.n_eff + 1.0,
        )

    @property
    def precision(self) -> float:
        variance = max(self.mean_sq_error - self.mean_error**2, MIN_VARIANCE)
        return min(1.0 / variance, MAX_PRECISION)

    @property
    def is_calibrated(self) -> bool:
        """High precision and low bias (seed l.1450)."""
        return self.n_eff > 10.0 and abs(self.mean_error) < 2.0 * math.sqrt(self.mean_sq_error)


@dataclass(frozen=True)
class FeatureObservation:
    """One feature value against the prediction made before it arrived."""

    value: float
    prediction: float | None
    error: float
    precision: float
    weighted_error: float  # seed l.1411: precision * (observation - prediction)
    z: float  # error * sqrt(precision): the dimensionless form used for curiosity
    surprise: float  # KL(posterior || prior), nats
    regime: Regime


@dataclass(frozen=True)
class FeatureBelief:
    prediction: float | None = None
    precision: PrecisionEstimate = field(default_factory=PrecisionEstimate)
    model: NormalGamma | None = None
    detector: RegimeDetector = field(default_factory=RegimeDetector)

    def observe(self, x: float, cfg: BeliefConfig) -> tuple[FeatureBelief, FeatureObservation]:
        if not math.isfinite(x) or abs(x) > MAX_ABS_FEATURE:
            raise ValueError(f"feature value must be finite and below 1e15 in size, got {x}")
        p = self.precision.precision
        prior = (self.model or NormalGamma(mean=x)).discounted(cfg.model_decay)
        posterior = prior.updated(x)
        if self.prediction is None:
            error, z, prediction = 0.0, 1.0, x  # seed l.1572: no prediction = 1.0
        else:
            error = x - self.prediction
            z = error * math.sqrt(p)
            prediction = (1.0 - cfg.alpha) * self.prediction + cfg.alpha * x
        detector = self.detector.step(x, cfg.regime)
        nxt = FeatureBelief(
            prediction=prediction,
            precision=self.precision.updated(error, cfg.precision_decay),
            model=posterior,
            detector=detector,
        )
        seen = FeatureObservation(
            value=x,
            prediction=self.prediction,
            error=error,
            precision=p,
            weighted_error=p * error,
            z=z,
            surprise=posterior.kl_from(prior),
            regime=detector.regime,
        )
        return nxt, seen


@dataclass(frozen=True)
class ChannelObservation:
    """What one event told a channel: per-feature detail and the aggregates triage uses."""

    channel: str
    tick: int
    features: Mapping[str, FeatureObservation]
    rate_surprise: Mapping[str, float]
    flag_surprise: Mapping[str, float]
    surprise: float  # sum of all KLs for this event, nats
    max_abs_z: float  # the largest precision-weighted error among features
    precision: float  # channel precision before the event (geometric mean)
    regime: Regime


@dataclass(frozen=True)
class ChannelBelief:
    features: Mapping[str, FeatureBelief] = field(default_factory=dict)
    rates: Mapping[str, GammaPoisson] = field(default_factory=dict)
    flags: Mapping[str, BetaBernoulli] = field(default_factory=dict)
    last_tick: int = 0

    @property
    def precision(self) -> float:
        """Geometric mean of feature precisions; 1.0 when unknown (seed l.1614)."""
        ps = [f.precision.precision for f in self.features.values()]
        return math.exp(sum(map(math.log, ps)) / len(ps)) if ps else 1.0

    @property
    def regime(self) -> Regime:
        return worst([f.detector.regime for f in self.features.values()])


def channel_key(protocol: str, pool: str) -> str:
    """The channel id: one per (protocol, pool)."""
    return f"{protocol}:{pool.lower()}"


@dataclass(frozen=True)
class BeliefState:
    """All channels' beliefs; replace it with what :meth:`observe` returns."""

    config: BeliefConfig = field(default_factory=BeliefConfig)
    channels: Mapping[str, ChannelBelief] = field(default_factory=dict)

    def observe(
        self,
        protocol: str,
        pool: str,
        *,
        tick: int,
        continuous: Mapping[str, float] | None = None,
        counts: Mapping[str, tuple[float, float]] | None = None,
        flags: Mapping[str, bool] | None = None,
    ) -> tuple[BeliefState, ChannelObservation]:
        """Update one channel with an event's features.

        ``counts`` maps a rate name to ``(events, exposure_ticks)``; ``flags``
        maps an outcome name to whether it happened.
        """
        key = channel_key(protocol, pool)
        old = self.channels.get(key, ChannelBelief())
        cfg = self.config
        feats = dict(old.features)
        seen: dict[str, FeatureObservation] = {}
        for name, x in (continuous or {}).items():
            feats[name], seen[name] = feats.get(name, FeatureBelief()).observe(x, cfg)
        rates, rate_s = dict(old.rates), {}
        for name, (n, exposure) in (counts or {}).items():
            prior = rates.get(name, GammaPoisson()).discounted(cfg.model_decay)
            rates[name] = prior.updated(n, exposure)
            rate_s[name] = rates[name].kl_from(prior)
        flag_models, flag_s = dict(old.flags), {}
        for name, outcome in (flags or {}).items():
            fprior = flag_models.get(name, BetaBernoulli()).discounted(cfg.model_decay)
            flag_models[name] = fprior.updated(outcome)
            flag_s[name] = flag_models[name].kl_from(fprior)
        new = ChannelBelief(feats, rates, flag_models, max(old.last_tick, tick))
        surprise = (
            sum(o.surprise for o in seen.values()) + sum(rate_s.values()) + sum(flag_s.values())
        )
        obs = ChannelObservation(
            channel=key,
            tick=tick,
            features=seen,
            rate_surprise=rate_s,
            flag_surprise=flag_s,
            surprise=surprise,
            max_abs_z=max((abs(o.z) for o in seen.values()), default=0.0),
            precision=old.precision,
            regime=new.regime,
        )
        return replace(self, channels={**self.channels, key: new}), obs

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (config is not stored: it comes from the config file)."""
        return {
            "version": FORMAT_VERSION,
            "channels": {k: _chan_out(c) for k, c in self.channels.items()},
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], config: BeliefConfig | None = None) -> BeliefState:
        if d.get("version") != FORMAT_VERSION:
            raise ValueError(f"unknown belief state version {d.get('version')!r}")
        chans = {str(k): _chan_in(v) for k, v in d["channels"].items()}
        return cls(config=config or BeliefConfig(), channels=chans)


def _floats(obj: object, names: tuple[str, ...]) -> dict[str, float]:
    return {n: getattr(obj, n) for n in names}


_NG = ("mean", "kappa", "a", "b")
_PE = ("mean_sq_error", "mean_error", "n_eff")


def _chan_out(c: ChannelBelief) -> dict[str, Any]:
    return {
        "features": {
            n: {
                "prediction": f.prediction,
                "precision": _floats(f.precision, _PE),
                "model": None if f.model is None else _floats(f.model, _NG),
                "detector": f.detector.to_dict(),
            }
            for n, f in c.features.items()
        },
        "rates": {n: _floats(r, ("a", "b")) for n, r in c.rates.items()},
        "flags": {n: _floats(f, ("alpha", "beta")) for n, f in c.flags.items()},
        "last_tick": c.last_tick,
    }


def _nums(d: Mapping[str, Any], names: tuple[str, ...]) -> dict[str, float]:
    return {n: num(d[n]) for n in names}


def _chan_in(d: Mapping[str, Any]) -> ChannelBelief:
    feats = {
        str(n): FeatureBelief(
            prediction=None if f["prediction"] is None else num(f["prediction"]),
            precision=PrecisionEstimate(**_nums(f["precision"], _PE)),
            model=None if f["model"] is None else NormalGamma(**_nums(f["model"], _NG)),
            detector=RegimeDetector.from_dict(f["detector"]),
        )
        for n, f in d["features"].items()
    }
    rates = {str(n): GammaPoisson(**_nums(r, ("a", "b"))) for n, r in d["rates"].items()}
    flags = {str(n): BetaBernoulli(**_nums(f, ("alpha", "beta"))) for n, f in d["flags"].items()}
    return ChannelBelief(feats, rates, flags, int(num(d["last_tick"])))

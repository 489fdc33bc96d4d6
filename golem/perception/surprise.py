"""Bayesian surprise from conjugate models (seed 002, BayesianSurpriseDomain).

Bayesian surprise is how far one observation moves beliefs:
``surprise = D_KL(posterior || prior)`` in nats (seed 002 l.1252, 1292, 1401).
Each model is a frozen value; ``updated(x)`` returns the posterior and
``surprise(prior, posterior)`` the KL. Conjugacy keeps both closed form, so a
Gamma tick stays cheap. ``discounted(rho)`` is a power-prior forgetting step
(evidence scaled by ``rho``, mean kept) so that surprise does not fade to zero
over a long life (the seed's ``decay_gamma`` / ``decay_theta``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

# Smallest pseudo-count a model may forget down to: keeps every prior proper.
MIN_EVIDENCE = 0.5
# Smallest Gamma rate: a perfectly constant feature must not drive b to 0.
MIN_RATE = 1e-12


def digamma(x: float) -> float:
    """psi(x) for x > 0: recurrence up to 10, then the asymptotic series."""
    if not x > 0.0:
        raise ValueError(f"digamma needs x > 0, got {x}")
    acc = 0.0
    while x < 10.0:
        acc -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return acc + math.log(x) - 0.5 / x - series


def _finite(x: float, name: str) -> float:
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return float(x)


def kl_gamma(a1: float, b1: float, a0: float, b0: float) -> float:
    """KL(Gamma(a1, rate b1) || Gamma(a0, rate b0)).

    ``(a1-a0) psi(a1) - lnG(a1) + lnG(a0) + a0 (ln b1 - ln b0) + a1 (b0-b1)/b1``.
    """
    kl = (
        (a1 - a0) * digamma(a1)
        - math.lgamma(a1)
        + math.lgamma(a0)
        + a0 * (math.log(b1) - math.log(b0))
        + a1 * (b0 - b1) / b1
    )
    return max(0.0, kl)


@dataclass(frozen=True)
class NormalKnownVariance:
    """Normal mean ``mu ~ N(mean, 1/tau)`` with known observation precision ``lam``.

    Update: ``tau' = tau + lam``, ``mean' = (tau mean + lam x) / tau'``.
    KL: ``0.5 (tau0/tau1 - 1 + ln(tau1/tau0) + tau0 (mean1 - mean0)^2)``.
    """

    mean: float = 0.0
    tau: float = 1.0
    lam: float = 1.0

    def updated(self, x: float) -> NormalKnownVariance:
        x = _finite(x, "observation")
        tau = self.tau + self.lam
        return replace(self, mean=(self.tau * self.mean + self.lam * x) / tau, tau=tau)

    def discounted(self, rho: float) -> NormalKnownVariance:
        return replace(self, tau=max(self.tau * rho, MIN_EVIDENCE * self.lam))

    def kl_from(self, prior: NormalKnownVariance) -> float:
        t0, t1 = prior.tau, self.tau
        d = self.mean - prior.mean
        return max(0.0, 0.5 * (t0 / t1 - 1.0 + math.log(t1 / t0) + t0 * d * d))


@dataclass(frozen=True)
class NormalGamma:
    """Normal-Gamma over (mu, tau) for a continuous feature of unknown scale.

    ``tau ~ Gamma(a, rate b)``, ``mu | tau ~ N(mean, 1/(kappa tau))``.
    Update: ``kappa' = kappa + 1``, ``mean' = (kappa mean + x)/kappa'``,
    ``a' = a + 1/2``, ``b' = b + kappa (x - mean)^2 / (2 kappa')``.
    KL(NG1 || NG0) = KL_Gamma(a1, b1 || a0, b0)
    ``+ 0.5 (kappa0/kappa1 - 1 - ln(kappa0/kappa1)) + 0.5 kappa0 (a1/b1) (mean1-mean0)^2``.
    """

    mean: float = 0.0
    kappa: float = 1.0
    a: float = 1.0
    b: float = 1.0

    def updated(self, x: float) -> NormalGamma:
        x = _finite(x, "observation")
        kappa = self.kappa + 1.0
        d = x - self.mean
        return NormalGamma(
            mean=(self.kappa * self.mean + x) / kappa,
            kappa=kappa,
            a=self.a + 0.5,
            b=self.b + self.kappa * d * d / (2.0 * kappa),
        )

    def discounted(self, rho: float) -> NormalGamma:
        a = max(self.a * rho, MIN_EVIDENCE)
        b = max(self.b * a / self.a, MIN_RATE)
        return replace(self, kappa=max(self.kappa * rho, MIN_EVIDENCE), a=a, b=b)

    def kl_from(self, prior: NormalGamma) -> float:
        k0, k1 = prior.kappa, self.kappa
        d = self.mean - prior.mean
        normal = 0.5 * (k0 / k1 - 1.0 - math.log(k0 / k1)) + 0.5 * k0 * (self.a / self.b) * d * d
        return max(0.0, kl_gamma(self.a, self.b, prior.a, prior.b) + normal)


@dataclass(frozen=True)
class GammaPoisson:
    """Event rate ``lambda ~ Gamma(a, rate b)``; n events seen over ``exposure`` ticks.

    Update: ``a' = a + n``, ``b' = b + exposure``. KL is :func:`kl_gamma`.
    """

    a: float = 1.0
    b: float = 1.0

    def updated(self, count: float, exposure: float = 1.0) -> GammaPoisson:
        count, exposure = _finite(count, "count"), _finite(exposure, "exposure")
        if count < 0 or exposure <= 0:
            raise ValueError(f"need count >= 0 and exposure > 0, got {count}, {exposure}")
        return GammaPoisson(a=self.a + count, b=self.b + exposure)

    def discounted(self, rho: float) -> GammaPoisson:
        a = max(self.a * rho, MIN_EVIDENCE)
        return GammaPoisson(a=a, b=max(self.b * a / self.a, MIN_RATE))

    def kl_from(self, prior: GammaPoisson) -> float:
        return kl_gamma(self.a, self.b, prior.a, prior.b)


@dataclass(frozen=True)
class BetaBernoulli:
    """Binary outcome (e.g. a revert) with ``p ~ Beta(alpha, beta)``.

    Update: success -> ``alpha + 1``, failure -> ``beta + 1``.
    KL(Beta(a1, b1) || Beta(a0, b0)) = ``ln B(a0, b0) - ln B(a1, b1)
    + (a1-a0) psi(a1) + (b1-b0) psi(b1) + (a0-a1+b0-b1) psi(a1+b1)``.
    """

    alpha: float = 1.0
    beta: float = 1.0

    def updated(self, outcome: bool) -> BetaBernoulli:
        if outcome:
            return BetaBernoulli(alpha=self.alpha + 1.0, beta=self.beta)
        return BetaBernoulli(alpha=self.alpha, beta=self.beta + 1.0)

    def discounted(self, rho: float) -> BetaBernoulli:
        scale = min(1.0, max(rho, 2.0 * MIN_EVIDENCE / (self.alpha + self.beta)))
        return BetaBernoulli(alpha=self.alpha * scale, beta=self.beta * scale)

    def kl_from(self, prior: BetaBernoulli) -> float:
        a0, b0, a1, b1 = prior.alpha, prior.beta, self.alpha, self.beta
        kl = (
            _log_beta(a0, b0)
            - _log_beta(a1, b1)
            + (a1 - a0) * digamma(a1)
            + (b1 - b0) * digamma(b1)
            + (a0 - a1 + b0 - b1) * digamma(a1 + b1)
        )
        return max(0.0, kl)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)

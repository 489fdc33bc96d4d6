"""The vocabulary the Governor allocates over (seed 002 S2.3-S2.4): context categories,
market regimes, behavioural phases and task types, with the seed's default allocations
and overrides. Plain data: the policy (policy.py) composes and learns from these.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType


class Category(StrEnum):
    INVARIANTS = "invariants"
    STRATEGY = "strategy"
    PLAYBOOK = "playbook"
    EPISODES = "episodes"
    INSIGHTS = "insights"
    CAUSAL_EDGES = "causal_edges"
    CONTRARIAN = "contrarian"
    DREAM_HYPOTHESES = "dream_hypotheses"
    TOOL_STATE = "tool_state"
    DEFI_SNAPSHOT = "defi_snapshot"
    MORTALITY = "mortality"
    AFFECT = "affect"
    OWNER_CONTROL = "owner_control"


# Hard context is never compacted under pressure: the policy cage, warnings and
# anti-knowledge (all in INVARIANTS), positions and market state (DEFI_SNAPSHOT), the
# phase and vitality (MORTALITY) and the owner's instructions (OWNER_CONTROL).
HARD: frozenset[Category] = frozenset({
    Category.INVARIANTS, Category.DEFI_SNAPSHOT, Category.MORTALITY, Category.OWNER_CONTROL})


class MarketRegime(StrEnum):
    """The market as the Governor sees it (the seed's BearHighVol is our CRASH)."""

    CALM = "calm"
    TRENDING = "trending"
    VOLATILE = "volatile"
    CRASH = "crash"


class Phase(StrEnum):
    """Behavioural phases by vitality (golem.mortality.vitality): Thriving > 0.7 ...
    Terminal < 0.1."""

    THRIVING = "thriving"
    STABLE = "stable"
    CONSERVATION = "conservation"
    DECLINING = "declining"
    TERMINAL = "terminal"


class TaskType(StrEnum):
    SWAP = "swap"
    LP_REBALANCE = "lp_rebalance"
    RISK_CHECK = "risk_check"
    VAULT_DEPOSIT = "vault_deposit"
    VAULT_WITHDRAW = "vault_withdraw"
    STRATEGY_REVIEW = "strategy_review"
    DREAM = "dream"
    SIM = "sim"


Allocation = Mapping[Category, float]

C = Category
DEFAULT_ALLOCATIONS: Allocation = MappingProxyType({
    C.INVARIANTS: 0.15, C.STRATEGY: 0.10, C.PLAYBOOK: 0.15, C.EPISODES: 0.12,
    C.INSIGHTS: 0.10, C.CAUSAL_EDGES: 0.08, C.CONTRARIAN: 0.04, C.DREAM_HYPOTHESES: 0.03,
    C.TOOL_STATE: 0.03, C.DEFI_SNAPSHOT: 0.08, C.MORTALITY: 0.04, C.AFFECT: 0.03,
    C.OWNER_CONTROL: 0.04,
})  # sums to 0.99 as in the seed; normalised at assembly

DEFAULT_REGIME_OVERRIDES: Mapping[MarketRegime, Allocation] = MappingProxyType({
    MarketRegime.VOLATILE: {C.DEFI_SNAPSHOT: 0.10, C.EPISODES: 0.08, C.CONTRARIAN: 0.02},
    MarketRegime.CRASH: {C.MORTALITY: 0.06, C.CONTRARIAN: 0.01, C.DREAM_HYPOTHESES: 0.01},
})

DEFAULT_PHASE_OVERRIDES: Mapping[Phase, Allocation] = MappingProxyType({
    Phase.CONSERVATION: {C.MORTALITY: 0.06, C.EPISODES: 0.06, C.CONTRARIAN: 0.01,
                         C.DREAM_HYPOTHESES: 0.0},
    Phase.DECLINING: {C.MORTALITY: 0.08, C.INVARIANTS: 0.20, C.EPISODES: 0.04,
                      C.INSIGHTS: 0.04, C.CONTRARIAN: 0.0, C.DREAM_HYPOTHESES: 0.0,
                      C.AFFECT: 0.0},
    Phase.TERMINAL: {C.INVARIANTS: 0.30, C.MORTALITY: 0.10},
})

"""Perception: beliefs, Bayesian surprise, curiosity, regimes and EFE routing (pure code)."""

from golem.perception.beliefs import (
    BeliefConfig,
    BeliefState,
    ChannelBelief,
    ChannelObservation,
    FeatureBelief,
    FeatureObservation,
    PrecisionEstimate,
    channel_key,
)
from golem.perception.curiosity import curiosity_score, precision_modulated_threshold
from golem.perception.regime import Regime, RegimeConfig, RegimeDetector
from golem.perception.routing import (
    EfeScore,
    RoutingAction,
    RoutingConfig,
    RoutingDecision,
    information_gain,
    route,
    route_observation,
)

__all__ = [
    "BeliefConfig",
    "BeliefState",
    "ChannelBelief",
    "ChannelObservation",
    "EfeScore",
    "FeatureBelief",
    "FeatureObservation",
    "PrecisionEstimate",
    "Regime",
    "RegimeConfig",
    "RegimeDetector",
    "RoutingAction",
    "RoutingConfig",
    "RoutingDecision",
    "channel_key",
    "curiosity_score",
    "information_gain",
    "precision_modulated_threshold",
    "route",
    "route_observation",
]

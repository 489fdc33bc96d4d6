"""The workspace token budget by behavioural phase (seed 000 "Token budget allocation").

The configured ``theta_context.total_budget`` is the seed's base budget: the whole of it
while the golem thrives, then Stable 0.8x, Declining 0.6x, Terminal 0.4x (the seed has no
Conservation: we take the midpoint, 0.7x). A golem without mortality has no phase to
scale by and keeps the configured budget (the Governor scales only when built with
``phase_scaled``, which wiring sets when mortality is on). Pure.
"""

from __future__ import annotations

from golem.governor.categories import Phase

SEED_SCALE: dict[Phase, float] = {
    Phase.THRIVING: 1.0, Phase.STABLE: 0.8, Phase.CONSERVATION: 0.7,
    Phase.DECLINING: 0.6, Phase.TERMINAL: 0.4}
MIN_BUDGET = 500  # the smallest total the config accepts


def phase_budget(configured: int, phase: Phase) -> int:
    """The workspace's total token budget in `phase`, never below MIN_BUDGET (or below the
    configured budget, when that is smaller still)."""
    return max(min(MIN_BUDGET, configured), round(configured * SEED_SCALE[phase]))

"""The policy cage: deterministic checks every proposed action passes before it may act (pure).

The model proposes; this decides. Checks are cheap and explicit: allowlisted
contracts and assets, a cap per action and per position, a drawdown limit, and
no unlimited approvals. Every rejection carries all of its reasons, so the
decision record says exactly why an action did not go ahead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from golem.actions.proposal import ProposedAction

UNLIMITED = 2**256 - 1


@dataclass(frozen=True)
class Cage:
    allowed_contracts: frozenset[str]
    allowed_assets: frozenset[str]  # symbols or addresses, compared case-insensitively
    max_notional_usd: float  # per action
    max_position_usd: float  # per asset after the action
    max_drawdown: float  # fraction of peak equity; beyond it only risk-reducing actions
    max_approval: float  # token units; an approval above it (or unlimited) is refused


@dataclass(frozen=True)
class Portfolio:
    positions_usd: Mapping[str, float]
    equity_usd: float
    peak_equity_usd: float


@dataclass(frozen=True)
class Verdict:
    action: ProposedAction
    accepted: bool
    reasons: tuple[str, ...]


RISK_REDUCING = frozenset({"remove_liquidity", "withdraw", "hold"})


def check(action: ProposedAction, cage: Cage, portfolio: Portfolio) -> Verdict:
    """Accept `action` only if no rule objects; otherwise name every objection."""
    if action.kind == "hold":
        return Verdict(action, True, ())
    reasons: list[str] = []
    contracts = {c.lower() for c in cage.allowed_contracts}
    assets = {a.lower() for a in cage.allowed_assets}
    if action.contract.lower() not in contracts:
        reasons.append(f"contract {action.contract or '(none)'} is not on the allowlist")
    for asset in (action.asset_in, action.asset_out):
        if asset and asset.lower() not in assets:
            reasons.append(f"asset {asset} is not on the allowlist")
    if action.notional_usd > cage.max_notional_usd:
        reasons.append(f"notional ${action.notional_usd:,.2f} exceeds the per-action cap "
                       f"${cage.max_notional_usd:,.2f}")
    if action.kind == "approve" and (action.amount >= UNLIMITED
                                     or action.amount > cage.max_approval):
        reasons.append("unlimited or oversized approvals are refused "
                       f"(cap {cage.max_approval:g} units)")
    if action.asset_out and action.kind not in RISK_REDUCING:
        held = portfolio.positions_usd.get(action.asset_out.lower(), 0.0)
        if held + action.notional_usd > cage.max_position_usd:
            reasons.append(f"position in {action.asset_out} would reach "
                           f"${held + action.notional_usd:,.2f}, above the cap "
                           f"${cage.max_position_usd:,.2f}")
    drawdown = drawdown_of(portfolio)
    if drawdown > cage.max_drawdown and action.kind not in RISK_REDUCING:
        reasons.append(f"drawdown {drawdown:.1%} is past the limit {cage.max_drawdown:.1%}: "
                       "only risk-reducing actions are allowed")
    return Verdict(action, not reasons, tuple(reasons))


def drawdown_of(portfolio: Portfolio) -> float:
    if portfolio.peak_equity_usd <= 0:
        return 0.0
    return max(0.0, 1.0 - portfolio.equity_usd / portfolio.peak_equity_usd)

"""The policy cage: each rule refuses on its own, and every reason is reported."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem.actions.cage import UNLIMITED, Cage, Portfolio, check
from golem.actions.proposal import ProposedAction

CAGE = Cage(allowed_contracts=frozenset({"0xPool"}), allowed_assets=frozenset({"WETH", "USDC"}),
            max_notional_usd=5_000, max_position_usd=20_000, max_drawdown=0.2,
            max_approval=10_000)
CALM = Portfolio({"usdc": 10_000.0}, equity_usd=50_000, peak_equity_usd=52_000)
SWAP = ProposedAction("swap", "0xpool", "WETH", "USDC", 1.0, 2_000.0, "rebalance")


def test_an_ordinary_swap_passes() -> None:
    verdict = check(SWAP, CAGE, CALM)
    assert verdict.accepted and verdict.reasons == ()


def test_each_rule_refuses_with_its_reason() -> None:
    cases = {
        "not on the allowlist": ProposedAction("swap", "0xother", "WETH", "USDC", 1, 100),
        "asset HONEY": ProposedAction("swap", "0xpool", "WETH", "HONEY", 1, 100),
        "per-action cap": ProposedAction("swap", "0xpool", "WETH", "USDC", 9, 9_000),
        "position in USDC": ProposedAction("swap", "0xpool", "WETH", "USDC", 3, 4_500),
        "unlimited": ProposedAction("approve", "0xpool", "USDC", "", float(UNLIMITED), 0),
    }
    rich = Portfolio({"usdc": 18_000.0}, 50_000, 52_000)
    for reason, action in cases.items():
        verdict = check(action, CAGE, rich)
        assert not verdict.accepted
        assert any(reason in r for r in verdict.reasons), (reason, verdict.reasons)


def test_past_the_drawdown_limit_only_risk_reducing_actions_pass() -> None:
    crashed = Portfolio({}, equity_usd=30_000, peak_equity_usd=50_000)
    assert not check(SWAP, CAGE, crashed).accepted
    out = ProposedAction("withdraw", "0xpool", "USDC", "", 100, 100)
    assert check(out, CAGE, crashed).accepted
    assert check(ProposedAction("hold"), CAGE, crashed).accepted


@given(st.floats(0, 1e7), st.floats(0, 1e6), st.floats(1, 1e6), st.floats(0, 1e6))
def test_accepted_actions_respect_the_caps(notional: float, held: float, peak: float,
                                           equity: float) -> None:
    action = ProposedAction("swap", "0xpool", "WETH", "USDC", 1, notional)
    verdict = check(action, CAGE, Portfolio({"usdc": held}, equity, peak))
    if verdict.accepted:
        assert notional <= CAGE.max_notional_usd
        assert held + notional <= CAGE.max_position_usd
        assert equity >= peak * (1 - CAGE.max_drawdown) - 1e-9

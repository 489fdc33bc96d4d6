"""The offline tier's trades: small, only on a learned edge, never past a warning (pure)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from golem.actions.proposal import ProposedAction
from golem.cognition.offline import (
    MIN_TRADE_USD,
    TRADE_CAP_SHARE,
    TRADE_WALLET_SHARE,
    Entry,
    Situation,
    decide,
)
from golem.governor.workspace import Knowledge
from golem.perception.market import PricePoint, move_bucket

POOL = "0x6d411e0a54382ed43f02410ce1c7a7c122afa6e1"
HOLDINGS = (("USDC", 50.0), ("WETH", 50.0))


def prices(*values: float) -> tuple[PricePoint, ...]:
    return tuple(PricePoint(1000.0 + 10 * i, v) for i, v in enumerate(values))


def learned(bucket: str, mean: float) -> Entry:
    """A learned outcome: after a move of this bucket the feed moved ``mean`` on average."""
    fact = {"feed": "ETH/USD", "regime": "", "bucket": bucket, "n": 200, "mean": mean,
            "stddev": 0.004, "p_up": 0.95 if mean > 0 else 0.05}
    return Entry(f"grimoire://g/entry/{bucket}", "insights", f"After ETH/USD {bucket} ...",
                 Knowledge("conditional_outcome", fact, 0.8))


# what this golem learned: moves of 1.5% or more continue, smaller ones do nothing
CONTINUES = (learned("rose_hard", 0.02), learned("fell_hard", -0.02), learned("flat", 0.0))


def situation(*values: float, entries: tuple[Entry, ...] = CONTINUES,
              holdings: tuple[tuple[str, float], ...] = HOLDINGS, pool: str = POOL,
              cap: float = 40.0) -> Situation:
    return Situation("ETH/USD", prices(*values), entries, 0, holdings, pool, cap)


def only_action(s: Situation) -> ProposedAction:
    (action,) = decide(s).actions
    return action


def test_a_learned_continuation_buys_weth_small_on_a_rise_and_sells_it_on_a_fall() -> None:
    buy = only_action(situation(2000, 2020, 2050))
    assert (buy.kind, buy.contract, buy.asset_in, buy.asset_out) == ("swap", POOL, "USDC",
                                                                     "WETH")
    assert 0 < buy.notional_usd <= min(TRADE_CAP_SHARE * 40.0, TRADE_WALLET_SHARE * 50.0)
    sell = only_action(situation(2000, 1980, 1950))
    assert (sell.asset_in, sell.asset_out) == ("WETH", "USDC")
    assert "Acting" in decide(situation(2000, 1980, 1950)).analysis


def test_nothing_learned_no_edge_no_pool_or_too_little_money_holds() -> None:
    assert only_action(situation(2000, 2020, 2050, entries=())).kind == "hold"
    assert only_action(situation(2000, 2005, 2010)).kind == "hold"
    assert only_action(situation(2000, 2050, pool="")).kind == "hold"
    assert only_action(situation(2000, 2050, holdings=(("USDC", 5.0),))).kind == "hold"
    assert only_action(situation(2000, 2050, cap=2.0)).kind == "hold"
    assert only_action(situation(2000)).kind == "hold"


def test_a_warning_about_the_trade_holds_but_an_unrelated_one_does_not() -> None:
    weth = Entry("grimoire://g/w/1", "invariants", "Warning: WETH liquidity vanished")
    honey = Entry("grimoire://g/w/2", "invariants", "Warning: HONEY sells revert")
    assert only_action(situation(2000, 2050, entries=(*CONTINUES, weth))).kind == "hold"
    assert only_action(situation(2000, 2050, entries=(*CONTINUES, honey))).kind == "swap"


@given(st.lists(st.floats(min_value=100, max_value=10_000), min_size=2, max_size=12),
       st.floats(min_value=0, max_value=1e6), st.floats(min_value=0, max_value=1e6),
       st.floats(min_value=0, max_value=1e4))
def test_a_trade_never_exceeds_its_shares_of_the_cap_and_the_wallet(
        values: list[float], usdc: float, weth: float, cap: float) -> None:
    s = situation(*values, holdings=(("USDC", usdc), ("WETH", weth)), cap=cap)
    action = only_action(s)
    if action.kind == "hold":
        return
    paid = usdc if action.asset_in == "USDC" else weth
    assert MIN_TRADE_USD <= action.notional_usd <= TRADE_CAP_SHARE * cap + 0.01
    assert action.notional_usd <= TRADE_WALLET_SHARE * paid + 0.01
    assert (action.asset_in == "USDC") == (values[-1] > values[0])
    assert move_bucket(values[-1] / values[0] - 1.0) in ("rose_hard", "fell_hard")

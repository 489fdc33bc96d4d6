"""Executing accepted actions on the simulated chain, checked against chain state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.actions.cage import Cage, check
from golem.actions.execution import DRY_RUN, OK, REFUSED, REVERTED, ExecutionResult, Executor
from golem.actions.plans import quote
from golem.actions.positions import PositionBook, Valuer, read_book
from golem.actions.proposal import ProposedAction as PA
from golem.actions.wallet import Wallet, simulated_key
from golem.chain.changes import FEE, FactChanges
from golem.chain.compile import load_artifacts
from golem.chain.cursor import CaptureStore
from golem.chain.fees import V2_FEE_PIPS
from golem.chain.market import E18, MAX_UINT, USDC_UNIT, Market
from golem.chain.source import SimulatedSource
from golem.chain.transactions import nonce_of
from golem.cognition.theta import NO_POSITIONS
from golem.config import load_config
from golem.consolidation.facts import procedural
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import OUTCOME_CATEGORY

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
T0 = 1_800_000_000.0
SEED = 7
ABI = {name: a.abi for name, a in load_artifacts().items()}


def cage(market: Market, **kw: Any) -> Cage:
    values: dict[str, Any] = {"max_notional_usd": 50.0, "max_position_usd": 500.0,
                              "max_drawdown": 0.5, "max_approval": 1e6, **kw}
    return Cage(frozenset(market.contracts), frozenset({"WETH", "USDC", "HONEY"}), **values)


class Sim:
    """A funded golem wallet on the simulated market, journalled in `folder`."""

    def __init__(self, folder: Path, *, dry_run: bool = False,
                 changes: FactChanges | None = None, **cage_kw: Any) -> None:
        self.folder = folder
        self.store = CaptureStore.open(folder)
        self.source = SimulatedSource.create(SEED, T0, self.store, changes=changes)
        self.wallet = Wallet(simulated_key(SEED))
        self.source.advance(T0 + 10, 10)
        self.source.fund_wallet(self.wallet.address, 100.0, T0 + 15)
        self.m = self.source.market
        self.book = PositionBook.open(folder)
        self.ex = Executor(self.source, self.wallet,
                           Valuer(self.source.evm, self.m, self.wallet.address), self.book,
                           cage(self.m, **cage_kw), dry_run, 0.01, 500_000)
        self.now = T0 + 20

    def run(self, *actions: PA) -> list[ExecutionResult]:
        self.now += 10
        return anyio.run(lambda: self.ex.execute(list(actions), tick=1, now=self.now))

    def close_all(self) -> list[ExecutionResult]:
        self.now += 10
        return anyio.run(lambda: self.ex.close_all(tick=2, now=self.now))

    def call(self, address: str, kind: str, fn: str, *args: Any) -> Any:
        return self.source.evm.call(address, ABI[kind], fn, *args)

    def balance(self, token: str) -> int:
        return int(self.call(token, "ERC20", "balanceOf", self.wallet.address))

    def nonce(self) -> int:
        return nonce_of(self.source.evm, self.wallet.address)

    def close(self) -> None:
        self.book.close()
        self.store.close()


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    s = Sim(tmp_path)
    yield s
    s.close()


def test_funding_gives_the_starting_budget_half_usdc_half_weth(sim: Sim) -> None:
    assert sim.balance(sim.m.usdc.address) == 50 * USDC_UNIT
    equity = anyio.run(sim.ex.equity_usd)
    assert equity == pytest.approx(100.0, abs=0.01)
    assert sim.source.evm.balance(sim.wallet.address) > 0  # gas
    assert not sim.source.fund_wallet(sim.wallet.address, 100.0, sim.now)  # only once


def test_a_swap_moves_balances_and_reserves_by_the_quote(sim: Sim) -> None:
    pair, usdc, weth = sim.m.pair_weth_usdc, sim.m.usdc.address, sim.m.weth.address
    r_weth, r_usdc, _ = sim.call(pair, "PairV2", "getReserves")
    weth_before = sim.balance(weth)
    [result] = sim.run(PA("swap", pair, "USDC", "WETH", amount=10.0))
    assert result.status == OK and len(result.tx_hashes) == 2
    out = quote(10 * USDC_UNIT, r_usdc, r_weth)
    assert sim.balance(usdc) == 40 * USDC_UNIT
    assert sim.balance(weth) == weth_before + out
    assert tuple(sim.call(pair, "PairV2", "getReserves"))[:2] == (r_weth - out,
                                                                 r_usdc + 10 * USDC_UNIT)
    assert result.pnl_usd < 0  # the fee, realised at entry
    [row] = sim.book.executions()
    assert row["status"] == OK and row["kind"] == "swap"


def test_after_a_fee_change_the_golems_swap_is_quoted_at_the_new_fee(tmp_path: Path) -> None:
    """The market's owner sets the WETH/USDC pool's fee to 0.5% (golem.chain.changes); the
    golem's swap there is quoted at the pool's fee as it reads it, so it goes through and
    gets exactly the quote at 0.5%, less than V2's 0.3% would have given."""
    sim = Sim(tmp_path, changes=FactChanges(fee_change_at_s=5.0, fee_change_to=0.005))
    try:
        assert anyio.run(sim.ex.trade_fee) == pytest.approx(0.003)  # what Theta prices in
        sim.source.advance(sim.now + 5, 5.0)  # 15 s after birth: the fee changes
        assert anyio.run(sim.ex.trade_fee) == pytest.approx(0.005)
        assert [c.kind for c in sim.source.fact_changes] == [FEE]
        pair, weth = sim.m.pair_weth_usdc, sim.m.weth.address
        assert sim.ex.valuer.fee(pair) == 5_000
        assert sim.ex.valuer.fee(sim.m.usdc.address) == V2_FEE_PIPS  # no fee(): V2's
        r_weth, r_usdc, _ = sim.call(pair, "PairV2", "getReserves")
        weth_before = sim.balance(weth)
        [result] = sim.run(PA("swap", pair, "USDC", "WETH", amount=10.0))
        assert result.status == OK, result.detail
        out = quote(10 * USDC_UNIT, r_usdc, r_weth, 5_000)
        assert sim.balance(weth) == weth_before + out
        assert out < quote(10 * USDC_UNIT, r_usdc, r_weth)
    finally:
        sim.close()


def test_a_swap_beyond_max_slippage_is_refused_before_signing(sim: Sim) -> None:
    nonce = sim.nonce()
    sim.ex.max_slippage = 0.003  # the fee alone is 0.3%; this pool is shallow
    [result] = sim.run(PA("swap", sim.m.pair_honey_weth, "WETH", "HONEY", amount=0.02))
    assert result.status == REFUSED and "max_slippage" in result.detail
    assert sim.nonce() == nonce


def test_liquidity_in_and_out_of_a_pair(sim: Sim) -> None:
    pair = sim.m.pair_weth_usdc
    supply = sim.call(pair, "PairV2", "totalSupply")
    [added] = sim.run(PA("add_liquidity", pair, "USDC", amount=10.0))
    assert added.status == OK
    shares = sim.call(pair, "PairV2", "balanceOf", sim.wallet.address)
    assert shares > 0 and sim.call(pair, "PairV2", "totalSupply") == supply + shares
    assert sim.balance(sim.m.usdc.address) == 40 * USDC_UNIT
    [removed] = sim.run(PA("remove_liquidity", pair))
    assert removed.status == OK
    assert sim.call(pair, "PairV2", "balanceOf", sim.wallet.address) == 0
    assert sim.balance(sim.m.usdc.address) == pytest.approx(50 * USDC_UNIT, abs=2)
    [again] = sim.run(PA("remove_liquidity", pair))
    assert again.status == REFUSED and "no liquidity" in again.detail
    sim.ex.accepting = lambda: False  # the death protocol's Acceptance: no new positions
    [dying] = sim.run(PA("add_liquidity", pair, "USDC", amount=1.0))
    assert dying.status == REFUSED and "no new positions" in dying.detail


def test_supply_and_withdraw_on_the_lending_pool(sim: Sim) -> None:
    lending, usdc, weth = sim.m.lending, sim.m.usdc.address, sim.m.weth.address
    weth_held = sim.balance(weth)
    results = sim.run(PA("supply", lending, "USDC", amount=5.0),
                      PA("supply", lending, "WETH", amount=0.01))
    assert [r.status for r in results] == [OK, OK]
    assert sim.call(lending, "LendingPool", "liquidityOf", sim.wallet.address) == 5 * USDC_UNIT
    assert sim.call(lending, "LendingPool", "collateralOf", sim.wallet.address) == E18 // 100
    assert sim.call(usdc, "ERC20", "allowance", sim.wallet.address, lending) == 0  # exact
    results = sim.run(PA("withdraw", lending, asset_out="USDC", amount=2.0),
                      PA("withdraw", lending, asset_out="WETH"))
    assert [r.status for r in results] == [OK, OK]
    assert sim.call(lending, "LendingPool", "liquidityOf", sim.wallet.address) == 3 * USDC_UNIT
    assert sim.call(lending, "LendingPool", "collateralOf", sim.wallet.address) == 0
    assert sim.balance(usdc) == 47 * USDC_UNIT and sim.balance(weth) == weth_held


def test_withdraw_keeps_a_borrower_healthy(sim: Sim) -> None:
    """The contract's new withdraw: collateral backing a debt stays put."""
    evm, m = sim.source.evm, sim.m
    who = m.borrowers[0]
    lp = ABI["LendingPool"]
    assert evm.transact(m.lending, lp, "supply", m.weth.address, 2 * E18, who, 0,
                        sender=who).ok
    price = sim.call(m.oracle_eth_usd, "OracleFeed", "latestAnswer") / 1e8
    debt = int(2 * price * 0.7 * USDC_UNIT)
    assert evm.transact(m.lending, lp, "borrow", m.usdc.address, debt, 2, 0, who,
                        sender=who).ok
    assert not evm.transact(m.lending, lp, "withdraw", m.weth.address, E18, who,
                            sender=who).ok  # would leave the health factor below 1
    assert evm.transact(m.lending, lp, "withdraw", m.weth.address, E18 // 20, who,
                        sender=who).ok
    assert sim.call(m.lending, "LendingPool", "healthFactor", who) >= E18
    assert not evm.transact(m.lending, lp, "withdraw", m.weth.address, MAX_UINT, who,
                            sender=who).ok


def test_dry_run_signs_and_sends_nothing(tmp_path: Path) -> None:
    sim = Sim(tmp_path, dry_run=True)
    try:
        nonce, usdc = sim.nonce(), sim.balance(sim.m.usdc.address)
        head = sim.source.evm.head()
        [result] = sim.run(PA("swap", sim.m.pair_weth_usdc, "USDC", "WETH", amount=10.0))
        assert result.status == DRY_RUN and "swap 10 USDC" in result.detail
        assert result.tx_hashes == ()
        assert sim.nonce() == nonce and sim.balance(sim.m.usdc.address) == usdc
        assert sim.source.evm.head() == head
        assert sim.store.sim_golem_txs()[-1][2] == "fund"  # nothing journalled either
        assert all(r.status == DRY_RUN for r in sim.close_all())
        assert sim.nonce() == nonce
    finally:
        sim.close()


def test_the_cage_is_checked_again_with_the_current_portfolio(tmp_path: Path) -> None:
    sim = Sim(tmp_path, max_position_usd=55.0)  # the wallet already holds ~$50 of WETH
    try:
        buy = PA("swap", sim.m.pair_weth_usdc, "USDC", "WETH", notional_usd=10.0)
        assert check(buy, sim.ex.cage, NO_POSITIONS).accepted  # Theta's view without positions
        nonce = sim.nonce()
        [result] = sim.run(buy)
        assert result.status == REFUSED and "position in WETH" in result.detail
        assert sim.nonce() == nonce
        [small] = sim.run(PA("swap", sim.m.pair_weth_usdc, "USDC", "WETH", notional_usd=2.0))
        assert small.status == OK and sim.nonce() == nonce + 2
    finally:
        sim.close()


def test_close_all_leaves_only_usdc_and_a_second_call_does_nothing(sim: Sim) -> None:
    m = sim.m
    results = sim.run(PA("add_liquidity", m.pair_weth_usdc, "USDC", amount=10.0),
                      PA("supply", m.lending, "WETH", amount=0.005),
                      PA("supply", m.lending, "USDC", amount=3.0),
                      PA("swap", m.pair_honey_weth, "WETH", "HONEY", amount=0.0001))
    assert all(r.status == OK for r in results)
    equity = anyio.run(sim.ex.equity_usd)
    done = sim.close_all()
    kinds = sorted(r.action.kind for r in done)
    assert kinds == ["remove_liquidity", "swap", "swap", "withdraw", "withdraw"]
    honey = next(r for r in done if r.action.asset_in == "HONEY")
    assert honey.status == REVERTED  # the honeypot keeps its HONEY
    snap = anyio.run(sim.ex.snapshot)
    assert {h.label for h in snap.holdings} == {"USDC", "HONEY"}
    assert sim.balance(m.weth.address) == 0
    assert sim.call(m.pair_weth_usdc, "PairV2", "balanceOf", sim.wallet.address) == 0
    assert sim.call(m.lending, "LendingPool", "collateralOf", sim.wallet.address) == 0
    assert sim.call(m.lending, "LendingPool", "liquidityOf", sim.wallet.address) == 0
    assert anyio.run(sim.ex.equity_usd) == pytest.approx(equity, rel=0.01)
    nonce = sim.nonce()
    report = anyio.run(lambda: sim.ex.settle(sim.now + 5))  # what the death protocol calls
    assert report["settled"] is False and [h["holding"] for h in report["left"]] == ["HONEY"]
    again = sim.close_all()
    assert [(r.action.asset_in, r.status) for r in again] == [("HONEY", REVERTED)]
    assert sim.nonce() == nonce  # the honeypot sell is refused at preflight: nothing sent
    assert read_book(sim.folder)["executions"]["reverted"] == 3
    pnl = sim.book.pnl(snap)
    assert pnl["realised_usd"] + pnl["unrealised_usd"] == pytest.approx(
        snap.equity_usd - pnl["funded_usd"], abs=1e-6)


def test_a_restart_replays_the_golems_transactions_to_the_same_head(tmp_path: Path) -> None:
    sim = Sim(tmp_path)
    m = sim.m
    sim.run(PA("swap", m.pair_weth_usdc, "USDC", "WETH", amount=10.0))
    sim.source.advance(sim.now + 10, 10)
    sim.run(PA("add_liquidity", m.pair_weth_usdc, "USDC", amount=5.0),
            PA("supply", m.lending, "WETH", amount=0.001))
    sim.source.advance(sim.now + 20, 10)
    head, usdc = sim.source.evm.head(), sim.balance(m.usdc.address)
    sim.close()
    store = CaptureStore.open(tmp_path)
    try:
        again = SimulatedSource.create(SEED, T0 + 999, store)
        assert again.evm.head() == head
        assert again.evm.call(m.usdc.address, ABI["ERC20"], "balanceOf",
                              Wallet(simulated_key(SEED)).address) == usdc
        assert not again.fund_wallet(Wallet(simulated_key(SEED)).address, 100.0, T0 + 999)
    finally:
        store.close()


def test_a_revert_is_remembered_as_a_strategy_outcome(tmp_path: Path) -> None:
    """Buying HONEY works, selling it reverts: both become episodes consolidation reads."""
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-x", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL)}}))
    config = load_config(path)
    sim = Sim(tmp_path / "chain")
    m = sim.m

    async def main() -> list[Any]:
        g = await Grimoire.open(config, now=lambda: T0)
        try:
            sim.ex.grimoire, sim.ex.namespace = g, g.namespace
            await sim.ex.execute([PA("swap", m.pair_honey_weth, "WETH", "HONEY", amount=0.001)],
                                 tick=3, now=T0 + 40)
            sold = await sim.ex.execute(
                [PA("swap", m.pair_honey_weth, "HONEY", "WETH", amount=1.0, reason="exit")],
                tick=4, now=T0 + 50)
            assert [r.status for r in sold] == [REVERTED]
            return await g.scan_episodes(lambda batches: [
                e for batch in batches for e in batch if e.category == OUTCOME_CATEGORY])
        finally:
            await g.close()

    try:
        nonce = sim.nonce()
        episodes = sorted(anyio.run(main), key=lambda e: e.tick)
        assert sim.nonce() == nonce + 2  # the buy's two transactions; the sell never left
    finally:
        sim.close()
    bought, sold = episodes
    assert bought.payload["result"] == OK and sold.payload["result"] == REVERTED
    assert "transfer would revert" in sold.payload["detail"]
    assert sold.payload["function"] == "swap" and sold.payload["address"] == (
        m.pair_honey_weth.lower())
    assert sold.payload["token"] == m.honey.address and sold.tick == 4
    assert bought.tx_hash and bought.block_hash.startswith("0x") and sold.namespace == "golem-x"
    assert "reverted" in sold.text and bought.id != sold.id
    facts = procedural([*episodes, *episodes[:1]], min_outcomes=3)
    assert facts and facts[0].fact["attempts"] == 3 and facts[0].fact["succeeded"] == 2


def test_a_tick_run_again_after_a_kill_does_not_act_twice(sim: Sim) -> None:
    """Theta ticking again through a golem time a killed run had reached (its schedule is
    saved every flush interval) finds the tick's executions in the book: nothing is
    sent; the same tick number at another golem time is another tick."""
    pair = sim.m.pair_weth_usdc
    [first] = sim.run(PA("swap", pair, "USDC", "WETH", amount=10.0))
    assert first.status == OK
    nonce, usdc = sim.nonce(), sim.balance(sim.m.usdc.address)
    again = anyio.run(lambda: sim.ex.execute([PA("swap", pair, "USDC", "WETH", amount=5.0)],
                                             tick=1, now=sim.now))
    assert again == [] and sim.nonce() == nonce
    assert sim.balance(sim.m.usdc.address) == usdc and len(sim.book.executions()) == 1
    [later] = sim.run(PA("swap", pair, "USDC", "WETH", amount=5.0))  # tick 1, a later time
    assert later.status == OK and sim.nonce() > nonce

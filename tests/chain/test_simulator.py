"""The simulated market on a real in-process EVM: deployment, events, regimes, determinism."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from itertools import pairwise

import pytest

from golem.chain.compile import load_artifacts
from golem.chain.decoding import RawLog, decode
from golem.chain.evm import ChainError
from golem.chain.market import Market, deploy_market
from golem.chain.revm import RevmEvm
from golem.chain.simulator import (
    BUSY,
    POOLS,
    REGIMES,
    TRANSITIONS,
    Activity,
    MarketSimulator,
    StepReport,
)

T0 = 1_800_000_000
DT = 10.0


@dataclass
class Run:
    evm: RevmEvm
    market: Market
    sim: MarketSimulator
    reports: list[StepReport]
    logs: list[RawLog]


def simulate(seed: int, steps: int, crash_at: int | None = None,
             activity: Activity = BUSY) -> Run:
    evm = RevmEvm()
    market = deploy_market(evm, seed)
    start = evm.head().number + 1
    sim = MarketSimulator(evm, market, seed, activity=activity)
    reports = []
    for i in range(steps):
        if i == crash_at:
            sim.force_regime("crash")
        reports.append(sim.step(T0 + DT * i, DT))
    return Run(evm, market, sim, reports, evm.get_logs(start, evm.head().number))


@pytest.fixture(scope="module")
def run_a() -> Run:
    return simulate(seed=7, steps=30)


def fingerprint(logs: list[RawLog]) -> list[tuple[int, str, tuple[str, ...], str]]:
    return [(log.block_number, log.address, log.topics, log.data) for log in logs]


def test_transition_matrix_rows_are_distributions() -> None:
    assert set(TRANSITIONS) == set(REGIMES)
    for row in TRANSITIONS.values():
        assert len(row) == len(REGIMES)
        assert abs(sum(row) - 1.0) < 1e-12
        assert min(row) >= 0


def test_evm_reverts_are_results_and_block_time_follows_the_caller() -> None:
    evm = RevmEvm()
    erc20 = load_artifacts()["ERC20"]
    owner, alice = evm.accounts[:2]
    assert evm.set_next_block_time(T0) == T0
    token = evm.deploy(erc20, "T", "T", 6, sender=owner)
    assert evm.head().timestamp == T0
    minted = evm.transact(token, erc20.abi, "mint", alice, 5, sender=owner)
    assert minted.ok and len(minted.logs) == 1
    assert decode(minted.logs[0]).name == "Transfer"
    assert minted.logs[0].chain_id == 31337
    refused = evm.transact(token, erc20.abi, "mint", alice, 5, sender=alice)
    assert not refused.ok and refused.logs == ()
    receipt = evm.receipt(refused.tx_hash)
    assert receipt is not None and not receipt.ok and receipt.sender == alice
    assert "only owner" in refused.error
    assert evm.call(token, erc20.abi, "balanceOf", alice) == 5
    head = evm.head()
    assert head.timestamp == T0 + 2  # one block per transaction, one second apart
    assert evm.set_next_block_time(T0) == head.timestamp + 1  # never backwards
    assert evm.mine().timestamp == head.timestamp + 1
    with pytest.raises(ChainError):
        evm.call(evm.accounts[3], erc20.abi, "balanceOf", alice)  # not a contract


def test_market_deploys_with_liquidity(run_a: Run) -> None:
    m, evm = run_a.market, run_a.evm
    data = json.loads(json.dumps(m.to_dict()))
    assert data["usdc"]["decimals"] == 6 and data["weth"]["decimals"] == 18
    assert len(set(m.contracts)) == 10
    abi = {name: a.abi for name, a in load_artifacts().items()}
    for pair in (m.pair_weth_usdc, m.pair_wbtc_usdc, m.pair_honey_weth):
        r0, r1, _ = evm.call(pair, abi["PairV2"], "getReserves")
        assert r0 > 0 and r1 > 0
    assert evm.call(m.honey.address, abi["Honeypot"], "pool") == m.pair_honey_weth
    assert evm.call(m.oracle_eth_usd, abi["OracleFeed"], "latestAnswer") > 0


def test_steps_emit_the_known_events(run_a: Run) -> None:
    decoded = [decode(log) for log in run_a.logs]
    assert all(d.known for d in decoded)
    seen = Counter((d.protocol, d.name) for d in decoded)
    for key in [("Uniswap V2", "Swap"), ("Uniswap V2", "Sync"), ("Uniswap V3", "Swap"),
                ("Chainlink", "AnswerUpdated"), ("Aave V3", "Supply"), ("Aave V3", "Borrow"),
                ("ERC20", "Transfer")]:
        assert seen[key] > 0, key
    assert seen[("Chainlink", "AnswerUpdated")] == 30  # one oracle update per step
    assert all(0 < r.tx_count <= 10 for r in run_a.reports)  # bounded by dt


def test_block_time_follows_the_golem_clock(run_a: Run) -> None:
    for i, report in enumerate(run_a.reports):
        first = run_a.evm.block(report.first_block)
        last = run_a.evm.block(report.last_block)
        assert first.timestamp == T0 + DT * i
        assert last.timestamp < T0 + DT * (i + 1)


def test_honeypot_sells_revert_and_are_reported(run_a: Run) -> None:
    sells = [h for r in run_a.reports for action, h in r.reverted if action == "honeypot_sell"]
    assert sells
    for tx_hash in sells:
        receipt = run_a.evm.receipt(tx_hash)
        assert receipt is not None and not receipt.ok
    assert {log.tx_hash for log in run_a.logs}.isdisjoint(sells)
    assert all(action == "honeypot_sell" for r in run_a.reports for action, _ in r.reverted)


def test_ground_truth_records_every_switch(run_a: Run) -> None:
    truth = run_a.sim.ground_truth
    assert truth[0].golem_time == T0 and truth[0].regime == "calm"
    assert [s for r in run_a.reports for s in r.switches] == truth
    by_time = {s.golem_time: s for s in truth}
    previous = None
    for report in run_a.reports:
        switched = report.regime != previous
        assert (report.golem_time in by_time) == switched
        if switched:
            assert by_time[report.golem_time].block_number == report.first_block
            assert by_time[report.golem_time].regime == report.regime
        previous = report.regime
    assert len(truth) >= 2  # seed 7 leaves calm within 30 steps


def test_crash_leads_to_liquidations() -> None:
    run = simulate(seed=3, steps=12, crash_at=5)
    assert [s.regime for s in run.sim.ground_truth][:2] == ["calm", "crash"]
    assert run.sim.ground_truth[1].golem_time == T0 + 5 * DT
    names = Counter(decode(log).name for log in run.logs)
    assert names["LiquidationCall"] >= 1
    assert run.reports[5].regime == "crash"
    assert run.reports[5].oracle_price < run.reports[4].oracle_price


def test_same_seed_same_chain_other_seed_other_chain(run_a: Run) -> None:
    again = simulate(seed=7, steps=15)
    cut = run_a.reports[14].last_block
    assert again.logs == [x for x in run_a.logs if x.block_number <= cut]  # hashes included
    assert again.evm.head() == run_a.evm.block(cut)
    assert again.sim.ground_truth == [s for s in run_a.sim.ground_truth if s.block_number <= cut]
    other = simulate(seed=8, steps=10)
    cut = run_a.reports[9].last_block
    assert fingerprint(other.logs) != fingerprint([x for x in run_a.logs if x.block_number <= cut])


def test_the_pools_market_is_quieter_and_as_reproducible() -> None:
    busy = simulate(seed=5, steps=120)
    pools = simulate(seed=5, steps=120, activity=POOLS)
    names = Counter(decode(log).name for log in pools.logs)
    assert names["AnswerUpdated"] == 120  # the feed still answers every step
    assert Counter(decode(log).name for log in busy.logs)["AnswerUpdated"] == 120
    assert len(pools.logs) < 0.6 * len(busy.logs)
    assert simulate(seed=5, steps=120, activity=POOLS).logs == pools.logs


def test_a_chainlink_style_feed_answers_on_deviation_or_heartbeat() -> None:
    feed = Activity("feed", dict.fromkeys(REGIMES, 0.0), oracle_deviation=0.005,
                    oracle_heartbeat_s=300.0)
    run = simulate(seed=5, steps=200, activity=feed)
    answers = [(log.block_number, decode(log).args) for log in run.logs
               if decode(log).name == "AnswerUpdated"]
    assert 1 < len(answers) < 200
    for (_, before), (_, after) in pairwise(answers):
        moved = abs(after["current"] / before["current"] - 1)
        waited = after["updatedAt"] - before["updatedAt"]
        assert moved >= 0.005 or waited >= 300


def test_a_provider_short_of_a_token_sends_no_deposit_that_would_revert() -> None:
    """Liquidity providers that have spent their USDC withdraw or wait: a deposit they
    cannot fund is never sent, so the only reverts left are the honeypot's sells."""
    evm = RevmEvm()
    market = deploy_market(evm, 3)
    erc20 = load_artifacts()["ERC20"].abi
    for lp in market.lps:
        held = evm.call(market.usdc.address, erc20, "balanceOf", lp)
        assert evm.transact(market.usdc.address, erc20, "transfer", market.owner, held,
                            sender=lp).ok
    sim = MarketSimulator(evm, market, 3, activity=BUSY)
    calls: Counter[str] = Counter()
    reports = [sim.step(T0 + DT * i, DT) for i in range(40)]
    for r in reports:
        calls.update(action for action, _ in r.reverted)
    assert set(calls) <= {"honeypot_sell"}, calls
    assert all(evm.call(market.usdc.address, erc20, "balanceOf", lp) == 0
               for lp in market.lps)

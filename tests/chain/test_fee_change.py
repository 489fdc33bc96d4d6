"""A swap fee that changes mid-life, on the real in-process EVM with the market's real
contracts: the WETH/USDC V2 pool's fee is set by its owner at its time with a real
transaction, every actor's swap after it pays the new fee (and none reverts), its log
decodes and renders, it is ground truth, a restart across it rebuilds the same chain,
and bad values are refused."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from golem.chain.changes import FEE, FactChanges
from golem.chain.cursor import CaptureStore
from golem.chain.decoding import RAMSES
from golem.chain.fees import V2_FEE_PIPS, amount_out, fee_percent, fee_pips
from golem.chain.names import market_names
from golem.chain.options import fact_changes
from golem.chain.render import render
from golem.chain.source import SimulatedSource
from golem.config import parse_config
from golem.errors import ConfigError

from .test_changes import DT, T0, Run, simulate
from .test_market_snapshots import commit_cursor, drive

FEE_AT = 300.0
NEW_FEE = 10_000  # pips: 1%


@pytest.fixture(scope="module")
def run() -> Run:
    return simulate(3, 80, FactChanges(fee_change_at_s=FEE_AT, fee_change_to=0.01))


def _fee_logs(run: Run) -> list[Any]:
    return [(raw, ev) for raw, ev in run.logs if ev.name == "FeeAdjustment"]


def test_the_owner_sets_the_fee_once_at_its_time(run: Run) -> None:
    assert run.sim.changes is not None
    [change] = run.sim.changes.happened
    step = next(r for r in run.reports if r.golem_time == change.golem_time)
    assert (change.golem_time - T0, change.kind) == (FEE_AT, FEE)
    assert change.block_number == step.first_block
    m = run.market
    assert change.details == {"pool": m.pair_weth_usdc, "fee_before": 0.003, "fee_after": 0.01}
    [(raw, event)] = _fee_logs(run)  # one FeeAdjustment in the whole run, the owner's
    assert raw.block_number == change.block_number and raw.address == m.pair_weth_usdc
    assert event.protocol == RAMSES and event.args == {"oldFee": V2_FEE_PIPS, "newFee": NEW_FEE}
    receipt = run.evm.receipt(raw.tx_hash)
    assert receipt is not None and receipt.ok and receipt.sender == m.owner
    assert run.sim.evm.call(m.pair_weth_usdc, run.sim.abi["PairV2"], "fee") == NEW_FEE
    for other in (m.pair_wbtc_usdc, m.pair_honey_weth):  # the other pools keep V2's fee
        assert run.sim.evm.call(other, run.sim.abi["PairV2"], "fee") == V2_FEE_PIPS


def test_every_swap_pays_the_pools_fee_of_its_time_and_none_reverts(run: Run) -> None:
    """Each Swap's reserves before it (its own Sync, less what it added) and its amounts:
    what came out is exactly the quote at the fee of its time (V2's before the change,
    the new one after), and after the change less than V2's fee would have given."""
    m, changed = run.market, _fee_logs(run)[0][0].block_number
    swaps = [(raw, ev) for raw, ev in run.logs
             if raw.address == m.pair_weth_usdc and ev.name in ("Sync", "Swap")]
    checked = {"before": 0, "after": 0}
    for (sync_raw, sync), (raw, swap) in pairwise(swaps):
        if swap.name != "Swap":
            continue
        assert sync.name == "Sync" and sync_raw.tx_hash == raw.tx_hash
        a, reserves = swap.args, (sync.args["reserve0"], sync.args["reserve1"])
        side = 0 if a["amount0In"] else 1  # the token that went in
        paid, got = a[f"amount{side}In"], a[f"amount{1 - side}Out"]
        r_in, r_out = reserves[side] - paid, reserves[1 - side] + got
        fee = NEW_FEE if raw.block_number > changed else V2_FEE_PIPS
        assert got == amount_out(paid, r_in, r_out, fee)
        if fee == NEW_FEE:
            assert got < amount_out(paid, r_in, r_out, V2_FEE_PIPS)
        checked["after" if fee == NEW_FEE else "before"] += 1
    assert checked["before"] > 20 and checked["after"] > 20, checked
    actions = {a for r in run.reports for a, _ in r.reverted}
    assert actions <= {"honeypot_sell"}  # HONEY's sells (a honeypot from the start) only


def test_the_fee_log_renders_with_the_pool_named_and_both_fees() -> None:
    run = simulate(3, 12, FactChanges(fee_change_at_s=50.0, fee_change_to=0.0025))
    [(_, event)] = _fee_logs(run)
    line = render(event, {}, market_names(run.market))
    assert line.text == ("Ramses V3 fee adjustment: fee of the WETH/USDC pool set from "
                         "0.30% to 0.25%")
    assert line.identifiers == (run.market.pair_weth_usdc,)
    assert [fee_percent(p) for p in (0, 5, 3000, 10_000, 2**24 - 1)] == [
        "0.00%", "0.0005%", "0.30%", "1.00%", "1677.7215%"]


def test_a_restart_across_the_fee_change_rebuilds_the_same_chain(tmp_path: Path) -> None:
    """Restarted from a snapshot and the journal's tail before the change and again after
    it (the restored pool already charges the new fee), the market goes on as the
    uninterrupted one; the data dir refuses another fee, or no change."""
    changes = FactChanges(fee_change_at_s=300.0, fee_change_to=0.01)  # at step 31
    alone = SimulatedSource.create(3, T0, changes=changes, compact_every=100)
    store = CaptureStore.open(tmp_path / "chain")
    try:
        source = SimulatedSource.create(3, T0, store, changes=changes, compact_every=100)
        t = drive([alone, source], T0, 25)
        commit_cursor(source, source.evm.head().number - 3)
        again = SimulatedSource.create(3, T0, store, changes=changes, compact_every=100)
        assert again.restored_from is not None and again.restored_from < 31
        assert again.evm.head() == alone.evm.head() and again.fact_changes == []
        t = drive([alone, again], t, 55)
        assert again.evm.head() == alone.evm.head()
        assert [c.kind for c in again.fact_changes] == [FEE]
        assert again.fact_changes == alone.fact_changes
        commit_cursor(again, again.evm.head().number - 3)
        third = SimulatedSource.create(3, T0, store, changes=changes, compact_every=100)
        assert third.restored_from is not None and third.restored_from > 31
        assert third.evm.head() == alone.evm.head()
        assert third.fact_changes == alone.fact_changes
        drive([alone, third], t, 30)
        assert third.evm.head() == alone.evm.head()
        assert third.fact_changes == alone.fact_changes  # not made again
        for other in (None, FactChanges(fee_change_at_s=300.0, fee_change_to=0.02)):
            with pytest.raises(ConfigError, match="changes"):
                SimulatedSource.create(3, T0, store, changes=other, compact_every=100)
    finally:
        store.close()


def test_the_config_builds_the_fee_change_and_refuses_bad_values() -> None:
    cfg = parse_config("[chain.changes]\nfee_change_at_s = 18000.0\nfee_change_to = 0.005\n")
    built = fact_changes(cfg.chain.changes)
    assert built is not None and built.fee_change_pips == 5_000
    assert built.describe().endswith(",fee_change_at_s:18000.0,fee_change_to:0.005")
    # without a fee change the market describes itself as before the option existed
    assert FactChanges(drain_at_s=5.0).describe() == (
        "stale_oracle_at_s:0.0,stale_oracle_for_s:0.0,drain_at_s:5.0,drain_share:0.8,"
        "honeypot_at_s:0.0")
    assert fact_changes(parse_config("[chain.changes]\nfee_change_to = 0.02\n")
                        .chain.changes) is None  # a fee without a time is no change
    bad = {"fee_change_at_s = -1.0": "chain.changes.fee_change_at_s: must be >= 0",
           "fee_change_to = 0.2": "chain.changes.fee_change_to: must be <= 0.1",
           "fee_change_to = -0.001": "chain.changes.fee_change_to: must be >= 0",
           "fee_change_to = 0.00015": "chain.changes.fee_change_to: must be a whole number",
           "fee_change_to = \"1%\"": "chain.changes.fee_change_to: must be a number",
           "fee_change_at_s = 60.0\nfee_change_to = 0.003":
               "chain.changes.fee_change_to: must differ from the pool's fee"}
    for lines, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            parse_config(f"[chain.changes]\n{lines}\n")
    for fraction in (0.00015, 0.11, -0.01, float("nan")):
        with pytest.raises(ValueError, match="fee_change_to"):
            FactChanges(fee_change_at_s=60.0, fee_change_to=fraction)
    with pytest.raises(ValueError, match="differ"):
        FactChanges(fee_change_at_s=60.0, fee_change_to=0.003)
    assert [fee_pips(f) for f in (0.0, 0.0001, 0.0025, 0.1)] == [0, 100, 2_500, 100_000]


def test_the_fee_change_is_due_once_and_its_state_survives() -> None:
    changes = FactChanges(fee_change_at_s=100.0, fee_change_to=0.01)
    assert changes.due(T0) == [] and changes.due(T0 + 99.0) == []
    assert changes.due(T0 + 100.0) == [FEE]
    copy = FactChanges(fee_change_at_s=100.0, fee_change_to=0.01)
    copy.restore_state(changes.state())
    assert copy.due(T0 + 110.0) == [FEE]  # not taken yet: still due
    changes.done(FEE)
    copy.restore_state(changes.state())
    assert copy.due(T0 + DT * 20) == []

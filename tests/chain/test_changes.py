"""Facts that change mid-life in the simulated market, on the real in-process EVM with
the market's real contracts: a stale oracle, a drained pool, a token that turns into a
honeypot; each at its time, visible in the chain's logs and receipts, recorded as ground
truth, kept across a restart, and absent from the default market."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from golem.chain.changes import DRAINED, RESUMED, STALE, TURNED, FactChanges
from golem.chain.cursor import CaptureStore
from golem.chain.decoding import DecodedEvent, RawLog, decode
from golem.chain.market import Market, deploy_market
from golem.chain.options import fact_changes
from golem.chain.revm import RevmEvm
from golem.chain.simulator import MarketSimulator, StepReport
from golem.chain.source import SimulatedSource
from golem.config import parse_config
from golem.errors import ConfigError
from golem.gamma.capture import read_fact_changes

from .test_market_snapshots import commit_cursor, drive

T0 = 1_800_000_000
DT = 10.0
STALE_AT, STALE_FOR, DRAIN_AT, TURN_AT = 200.0, 150.0, 500.0, 700.0
CHANGES = FactChanges(stale_oracle_at_s=STALE_AT, stale_oracle_for_s=STALE_FOR,
                      drain_at_s=DRAIN_AT, drain_share=0.8, honeypot_at_s=TURN_AT)


@dataclass
class Run:
    evm: RevmEvm
    market: Market
    sim: MarketSimulator
    reports: list[StepReport]
    logs: list[tuple[RawLog, DecodedEvent]]


def simulate(seed: int, steps: int, changes: FactChanges | None) -> Run:
    evm = RevmEvm()
    market = deploy_market(evm, seed)
    start = evm.head().number + 1
    sim = MarketSimulator(evm, market, seed, regime="volatile", changes=changes)
    reports = [sim.step(T0 + DT * i, DT) for i in range(steps)]
    logs = [(raw, decode(raw)) for raw in evm.get_logs(start, evm.head().number)]
    return Run(evm, market, sim, reports, logs)


@pytest.fixture(scope="module")
def run() -> Run:
    return simulate(3, 120, FactChanges(**{k: getattr(CHANGES, k) for k in (
        "stale_oracle_at_s", "stale_oracle_for_s", "drain_at_s", "drain_share",
        "honeypot_at_s")}))


def change(run: Run, kind: str) -> Any:
    assert run.sim.changes is not None
    found = [c for c in run.sim.changes.happened if c.kind == kind]
    assert len(found) == 1, (kind, run.sim.changes.happened)
    return found[0]


def test_each_change_happens_once_at_its_time(run: Run) -> None:
    assert run.sim.changes is not None
    assert [(c.golem_time - T0, c.kind) for c in run.sim.changes.happened] == [
        (STALE_AT, STALE), (STALE_AT + STALE_FOR, RESUMED), (DRAIN_AT, DRAINED),
        (TURN_AT, TURNED)]
    for c in run.sim.changes.happened:  # the change's block is its step's first block
        step = next(r for r in run.reports if r.golem_time == c.golem_time)
        assert c.block_number == step.first_block


def test_the_oracle_is_silent_through_the_stale_window_and_only_then(run: Run) -> None:
    m = run.market
    answers = [raw.block_number for raw, ev in run.logs
               if ev.name == "AnswerUpdated" and raw.address == m.oracle_eth_usd]
    silent_from = change(run, STALE).block_number
    silent_to = change(run, RESUMED).block_number
    assert not [b for b in answers if silent_from <= b < silent_to]
    # before and after the window the feed answers on every step (the busy market)
    steps_outside = [r for r in run.reports
                     if not STALE_AT <= r.golem_time - T0 < STALE_AT + STALE_FOR]
    assert len(answers) == len(steps_outside)
    assert silent_to in answers  # resumes on the first step after the window
    assert change(run, STALE).details["until"] == T0 + STALE_AT + STALE_FOR
    assert change(run, RESUMED).details["silent_s"] == STALE_FOR


def test_the_drain_is_a_real_burn_that_leaves_a_fifth_of_the_pool(run: Run) -> None:
    m, drained = run.market, change(run, DRAINED)
    step = next(r for r in run.reports if r.golem_time == drained.golem_time)
    in_step = [(raw, ev) for raw, ev in run.logs
               if step.first_block <= raw.block_number <= step.last_block
               and raw.address == m.pair_weth_usdc]
    # the step's first transactions: the owner burns all its shares, then adds a fifth back
    assert [ev.name for _, ev in in_step[:4]] == ["Sync", "Burn", "Sync", "Mint"]
    burnt, synced = in_step[1][1].args, in_step[2][1].args
    assert burnt["sender"] == m.owner and burnt["to"] == m.owner
    before, after = drained.details["reserves_before"], drained.details["reserves_after"]
    assert [synced["reserve0"], synced["reserve1"]] == after
    for b, a in zip(before, after, strict=True):
        assert a == pytest.approx(0.2 * b, rel=1e-6)
    assert drained.details["share"] == pytest.approx(0.8, abs=1e-6)
    assert burnt["amount0"] > 0.8 * before[0]  # the owner held most of the pool


def test_honey_sells_go_through_before_the_turn_and_revert_after(run: Run) -> None:
    m = run.market
    turned = change(run, TURNED)
    sells = [raw.block_number for raw, ev in run.logs
             if raw.address == m.honey.address and ev.name == "Transfer"
             and ev.args["to"] == m.pair_honey_weth]
    swaps = [raw.block_number for raw, ev in run.logs
             if raw.address == m.pair_honey_weth and ev.name == "Swap"
             and ev.args["amount0In"] > 0]  # token0 is HONEY (market.deploy_market)
    assert sells and max(sells) < turned.block_number
    assert len(swaps) == len(sells)  # each sell's transfer is followed by its swap
    reverted = [(r.golem_time, h) for r in run.reports for action, h in r.reverted]
    assert reverted and all(t >= turned.golem_time for t, _ in reverted)
    for _, tx_hash in reverted:  # the receipts: failed transfers to the HONEY token
        receipt = run.evm.receipt(tx_hash)
        assert receipt is not None and not receipt.ok and receipt.to == m.honey.address
    assert {a for r in run.reports for a, _ in r.reverted} == {"honeypot_sell"}


def test_without_changes_honey_is_a_honeypot_from_the_start() -> None:
    """The default market (no changes, or none asked for) is the market as it was: its
    honeypot sells revert from the first one, and the chain is the same either way."""
    plain, none_asked = simulate(3, 40, None), simulate(3, 40, FactChanges())
    assert none_asked.sim.changes is None
    assert plain.evm.head() == none_asked.evm.head()
    assert "changes" not in plain.sim.state()
    reverted = [a for r in plain.reports for a, _ in r.reverted]
    assert reverted and set(reverted) == {"honeypot_sell"}
    assert not [1 for raw, ev in plain.logs if raw.address == plain.market.honey.address
                and ev.name == "Transfer"
                and ev.args["to"] == plain.market.pair_honey_weth]


def test_the_changes_survive_a_restart_and_a_data_dir_keeps_them(tmp_path: Path) -> None:
    """Restored from a snapshot plus the journal's tail, the changed market goes on as the
    uninterrupted one (the changes already made are not made again, the ones to come come
    at their time); reopening the data dir with other changes, or none, is refused."""
    changes = FactChanges(stale_oracle_at_s=300, stale_oracle_for_s=1200, drain_at_s=700,
                          honeypot_at_s=1400)
    alone = SimulatedSource.create(3, T0, changes=changes, compact_every=300)
    store = CaptureStore.open(tmp_path / "chain")
    try:
        source = SimulatedSource.create(3, T0, store, changes=changes, compact_every=300)
        t = drive([alone, source], T0, 110)  # a compaction and snapshot, inside the window
        commit_cursor(source, source.evm.head().number - 3)
        again = SimulatedSource.create(3, T0, store, changes=changes, compact_every=300)
        assert again.restored_from is not None
        assert again.evm.head() == alone.evm.head()
        assert again.fact_changes == alone.fact_changes
        assert [c.kind for c in again.fact_changes] == [STALE, DRAINED]
        drive([alone, again], t, 60)
        assert again.evm.head() == alone.evm.head()
        assert [c.kind for c in again.fact_changes] == [STALE, DRAINED, TURNED, RESUMED]
        assert again.fact_changes == alone.fact_changes
        for other in (None, FactChanges(stale_oracle_at_s=300, stale_oracle_for_s=1200,
                                        drain_at_s=700, honeypot_at_s=1600)):
            with pytest.raises(ConfigError, match="changes"):
                SimulatedSource.create(3, T0, store, changes=other, compact_every=300)
    finally:
        store.close()
    state = json.loads(json.dumps(alone.simulator.state()))
    copy = FactChanges()
    copy.restore_state(state["changes"])
    assert copy.happened == alone.fact_changes


def test_the_config_section_builds_the_changes_and_refuses_bad_values() -> None:
    cfg = parse_config("[chain.changes]\nstale_oracle_at_s = 3600.0\n"
                       "stale_oracle_for_s = 900.0\ndrain_at_s = 7200.0\n"
                       "drain_share = 0.5\nhoneypot_at_s = 14400.0\n")
    built = fact_changes(cfg.chain.changes)
    assert built is not None and built.describe() == (
        "stale_oracle_at_s:3600.0,stale_oracle_for_s:900.0,drain_at_s:7200.0,"
        "drain_share:0.5,honeypot_at_s:14400.0")
    assert fact_changes(parse_config("").chain.changes) is None  # off by default
    bad = {"drain_share = 1.0": "chain.changes.drain_share",
           "drain_share = 0.0": "chain.changes.drain_share",
           "drain_at_s = -5.0": "chain.changes.drain_at_s",
           "honeypot_at_s = \"soon\"": "chain.changes.honeypot_at_s",
           "stale_oracle_at_s = 60.0": "chain.changes.stale_oracle_for_s: must be > 0",
           "stale_oracle_for_s = 60.0": "chain.changes.stale_oracle_at_s: must be > 0",
           "fee_at_s = 60.0": "chain.changes.fee_at_s: unknown key"}
    for line, message in bad.items():
        with pytest.raises(ConfigError, match=message):
            parse_config(f"[chain.changes]\n{line}\n")


def test_the_reader_returns_the_rows_the_capture_writes(tmp_path: Path) -> None:
    """`read_fact_changes` on a ground-truth file in capture's format (one JSON row a
    change, as GammaCapture writes them); a damaged line is skipped, no file is none."""
    assert read_fact_changes(tmp_path) == []
    folder = tmp_path / "chain"
    folder.mkdir()
    rows = simulate(3, 30, FactChanges(drain_at_s=100.0)).sim.changes
    assert rows is not None and len(rows.happened) == 1
    lines = [json.dumps(c.to_dict(), sort_keys=True) for c in rows.happened]
    (folder / "fact_changes.jsonl").write_text("\n".join([*lines, "{not json", "[]"]) + "\n")
    got = read_fact_changes(tmp_path)
    assert [(t, k) for t, k, _ in got] == [(T0 + 100.0, DRAINED)]
    assert got[0][2]["pool"] == rows.happened[0].details["pool"]

"""Restarting the simulated market from a snapshot plus the journal's tail, and refusing a
journal that does not replay: on the real EVM with the market's real contracts, and the
real capture store (SQLite)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from golem.chain.abi import encode_call
from golem.chain.compile import load_artifacts
from golem.chain.cursor import CaptureStore
from golem.chain.market import deploy_market
from golem.chain.reorg import BlockWindow, Header
from golem.chain.revm import RevmEvm
from golem.chain.simulator import MarketSimulator
from golem.chain.snapshots import snapshot_files, snapshot_problems
from golem.chain.source import SimulatedSource
from golem.errors import EXIT_DATAERR, DataError
from golem.integrity.check import check_data_dir

from .test_revm import ME, tx

T0 = 1_800_000_000
SEED = 11
EVERY = 300  # blocks between compactions: one every ~80 market steps
ABI = {name: a.abi for name, a in load_artifacts().items()}


@contextmanager
def opened(folder: Path) -> Iterator[SimulatedSource]:
    folder.mkdir(parents=True, exist_ok=True)
    store = CaptureStore.open(folder)
    try:
        yield SimulatedSource.create(SEED, T0, store, compact_every=EVERY)
    finally:
        store.close()


def commit_cursor(source: SimulatedSource, block: int) -> None:
    """What capture does: commit its window (here one block) as the cursor."""
    assert source.store is not None
    head = source.evm.block(block)
    window = BlockWindow(4, (Header(head.number, head.hash, head.parent_hash),))
    source.store.commit(source.chain_id, window, source.first_block, 0.0)


def kept_from(evm: RevmEvm) -> int:
    """The lowest block a chain still holds."""
    lo = 0
    while True:
        try:
            evm.block(lo)
            return lo
        except Exception:
            lo += 1


def blocks(evm: RevmEvm, lo: int) -> list[tuple[Any, ...]]:
    return [(evm.block(n), evm.block_receipts(n)) for n in range(lo, evm.head().number + 1)]


def drive(sources: list[SimulatedSource], t: float, steps: int, act_every: int = 0) -> float:
    """The same steps (and golem transactions, signed on the first chain) on every chain."""
    for i in range(steps):
        t += 10.0
        for s in sources:
            s.advance(t, 10.0)
        if act_every and i % act_every == act_every // 2:
            first = sources[0]
            raw = tx(first.evm, first.market.usdc.address,
                     encode_call(ABI["ERC20"], "transfer", first.market.whale, 1))
            for s in sources:
                assert s.submit(raw, t).ok
    return t


def test_a_chain_restored_from_a_snapshot_and_the_tail_is_the_uninterrupted_chain(
        tmp_path: Path) -> None:
    store = CaptureStore.open(tmp_path / "alone")
    try:
        alone = SimulatedSource.create(SEED, T0, store, compact_every=EVERY)
        alone.fund_wallet(ME, 100.0, T0)
        with opened(tmp_path / "b") as b:
            b.fund_wallet(ME, 100.0, T0)
            t = drive([alone, b], T0, 100, act_every=15)
            commit_cursor(b, b.evm.head().number - 3)
        restored, tails = [], []
        for rounds in range(4):
            with opened(tmp_path / "b") as b:
                restored.append(b.restored_from)
                assert b.evm.head() == alone.evm.head()
                assert b.evm.state_dump() == alone.evm.state_dump()
                assert b.steps_done == alone.steps_done and b.funded == alone.funded
                assert blocks(b.evm, kept_from(b.evm)) == blocks(alone.evm, kept_from(b.evm))
                assert b.store is not None
                tails.append(len([x for x in b.store.journal_golem_txs()
                                  if x.after_step >= (b.restored_from or 0)]))
                # the last round (over 300 blocks: a compaction) leaves capture behind the
                # newest snapshot: the restart takes an older one, its tail crosses one
                t = drive([alone, b], t, 70 if rounds < 3 else 100, act_every=15)
                commit_cursor(b, b.evm.head().number - 3 if rounds < 3 else kept_from(b.evm))
        with opened(tmp_path / "b") as b:
            assert b.evm.head() == alone.evm.head()
            assert b.evm.state_dump() == alone.evm.state_dump()
            assert blocks(b.evm, kept_from(b.evm)) == blocks(alone.evm, kept_from(b.evm))
            last = b.restored_from
            newest = int(snapshot_files(tmp_path / "b")[0].stem.split("-")[1])
            drive([alone, b], t, 100, act_every=15)  # and both go on the same: compaction too
            assert blocks(b.evm, kept_from(b.evm)) == blocks(alone.evm, kept_from(b.evm))
            assert b.simulator.ground_truth == alone.simulator.ground_truth
    finally:
        store.close()
    assert alone.evm.head().number > 3 * EVERY
    assert all(r is not None for r in restored[1:]), restored  # snapshots were used
    assert any(tails[1:]), "no golem transaction in a replayed tail"
    assert last is not None and last < newest  # an older snapshot than the newest


def test_a_data_dir_without_snapshots_replays_from_genesis(tmp_path: Path) -> None:
    """Snapshots gone (or a data dir from before them, or of the first revm rules, which
    never has any): the whole journal replays to the same chain; revm 2 writes them."""
    with opened(tmp_path) as a:
        t = drive([a], T0, 120)
        commit_cursor(a, a.evm.head().number - 3)
        head = a.evm.head()
    files = snapshot_files(tmp_path)
    assert len(files) >= 1
    for f in files:
        f.unlink()
    with opened(tmp_path) as a:
        assert a.restored_from is None and a.evm.head() == head
    assert [f.name for f in snapshot_files(tmp_path)] == [f.name for f in files]
    # the first revm chain compacted inside market steps: it never snapshots
    old = tmp_path / "old"
    with opened(old) as a:
        assert a.store is not None
        a.store.set_sim_meta("evm", f"revm 1 compact_every={EVERY}")
    with opened(old) as a:
        assert a.rules.startswith("revm 1")
        t = drive([a], T0, 120)
        commit_cursor(a, a.evm.head().number - 3)
        head = a.evm.head()
    assert snapshot_files(old) == []
    with opened(old) as a:
        assert a.restored_from is None and a.evm.head() == head
    fresh = RevmEvm(compact_every=EVERY)  # the old rule: compaction at the block itself
    assert not fresh.compact_if_due()
    assert t > T0


def test_a_damaged_snapshot_is_passed_over_and_reported(tmp_path: Path) -> None:
    with opened(tmp_path / "chain") as a:
        drive([a], T0, 250)
        commit_cursor(a, a.evm.head().number - 3)
        head = a.evm.head()
    newest, older = snapshot_files(tmp_path / "chain")[:2]
    data = bytearray(newest.read_bytes())
    data[-10] ^= 0xFF
    newest.write_bytes(bytes(data))
    with opened(tmp_path / "chain") as a:
        assert a.evm.head() == head
        assert a.restored_from == int(older.stem.split("-")[1])
    assert [p for p, _ in snapshot_problems(tmp_path / "chain")] == [newest]
    found = [f for f in check_data_dir(tmp_path, deep=False) if not f.ok]
    assert [f.path for f in found] == [newest]
    assert "checksum" in found[0].problem and "delete" in found[0].remedy


def test_the_same_golem_time_is_never_stepped_twice(tmp_path: Path) -> None:
    """A restart after a kill may tick again through golem times the journal holds: no
    step, and the next step's dt is the time since the last journalled one."""
    with opened(tmp_path) as a:
        drive([a], T0, 5)
        head = a.evm.head()
        assert a.advance(T0 + 50, 10.0).tx_count == 0 and a.advance(T0 + 20, 10.0).tx_count == 0
        assert a.evm.head() == head
    with opened(tmp_path) as a:
        a.advance(T0 + 50, 10.0)
        a.advance(T0 + 80, 10.0)  # 30 s after the last step, whatever the caller says
        assert a.store is not None
        steps = a.store.journal_steps()
    assert [s.golem_time - T0 for s in steps] == [10, 20, 30, 40, 50, 80]
    assert steps[-1].dt == 30.0


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of 200 market steps with golem transactions (after steps 21, 61, 101,
    141, 181), capture's cursor 3 blocks below the head, no snapshot."""
    folder = tmp_path_factory.mktemp("journal")
    with opened(folder) as a:
        a.fund_wallet(ME, 100.0, T0)
        drive([a], T0, 200, act_every=40)
        commit_cursor(a, a.evm.head().number - 3)
    for f in snapshot_files(folder):
        f.unlink()
    return folder


def damaged(journal: Path, tmp_path: Path, sql: str, *, cursor_at: int | None = None) -> str:
    """The journal, damaged by `sql`: the error its replay stops with."""
    folder = tmp_path / f"d{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    source = sqlite3.connect(journal / "capture.db")
    target = sqlite3.connect(folder / "capture.db")
    source.backup(target)
    source.close()
    with target:
        target.execute(sql)
    target.close()
    if cursor_at is not None:
        with opened(journal) as a:  # the pristine chain, to take the block from
            block = a.evm.block(a.evm.head().number - cursor_at)
        store = CaptureStore.open(folder)
        window = BlockWindow(4, (Header(block.number, block.hash, block.parent_hash),))
        store.commit(a.chain_id, window, a.first_block, 0.0)
        store.close()
    for f in snapshot_files(journal):
        f.unlink()
    with pytest.raises(DataError) as caught, opened(folder):
        pass
    assert caught.value.exit_code == EXIT_DATAERR == 65
    return str(caught.value)


def test_a_journal_that_does_not_replay_stops_with_the_step_named(
        journal: Path, tmp_path: Path) -> None:
    edited = damaged(journal, tmp_path,
                     "UPDATE sim_steps SET golem_time = golem_time + 3 WHERE seq = 50")
    assert "at market step 51 (journal row 51" in edited and "edited or deleted" in edited
    dt = damaged(journal, tmp_path, "UPDATE sim_steps SET dt = 20 WHERE seq = 120")
    assert "at market step 121 (journal row 121" in dt
    deleted = damaged(journal, tmp_path, "DELETE FROM sim_steps WHERE seq = 77")
    assert "at market step 77 (journal row 78" in deleted
    tx_edit = damaged(journal, tmp_path, "UPDATE sim_golem_txs SET data = X'00' WHERE seq = 2")
    assert "at market step 22 (journal row 22" in tx_edit  # the first one followed step 21
    tx_gone = damaged(journal, tmp_path, "DELETE FROM sim_golem_txs WHERE seq = 3")
    assert "edited or deleted" in tx_gone
    cut = damaged(journal, tmp_path, "DELETE FROM sim_steps WHERE seq > 190")
    assert "capture's cursor is at block" in cut and "cut off its end" in cut
    cut_tx = damaged(journal, tmp_path, "DELETE FROM sim_steps WHERE seq > 175", cursor_at=400)
    assert "follows market step 181, but the journal ends after step 175" in cut_tx
    # a last row edited: only capture's committed blocks can tell, and they do
    last = damaged(journal, tmp_path, "UPDATE sim_steps SET dt = 13 WHERE seq = 200", cursor_at=0)
    assert "capture committed block" in last or "capture's cursor is at block" in last


def test_a_snapshot_past_the_journals_end_is_a_cut_journal(tmp_path: Path) -> None:
    with opened(tmp_path) as a:
        drive([a], T0, 120)
        commit_cursor(a, a.evm.head().number - 3)
    newest = snapshot_files(tmp_path)[0]
    steps = int(newest.stem.split("-")[1])
    conn = sqlite3.connect(tmp_path / "capture.db")
    with conn:
        conn.execute("DELETE FROM sim_steps WHERE seq > ?", (steps - 5,))
    conn.close()
    with pytest.raises(DataError, match=f"taken after market step {steps} .* rows were "
                                        "deleted"), opened(tmp_path):
        pass


def test_the_market_drivers_whole_state_is_in_its_snapshot() -> None:
    """Every attribute of a MarketSimulator comes back from `state`, but those that are
    the chain itself or fixed at construction (a new attribute fails here until `state`
    and `restore_state` carry it)."""
    evm = RevmEvm()
    market = deploy_market(evm, SEED)
    sim = MarketSimulator(evm, market, SEED)
    for i in range(30):
        sim.step(T0 + 10.0 * i, 10.0)
    again = MarketSimulator(evm, market, SEED + 1, regime="crash")
    again.restore_state(json.loads(json.dumps(sim.state())))
    fixed = {"evm", "market", "abi", "_report"}
    assert set(vars(again)) == set(vars(sim))
    assert {k: v for k, v in vars(again).items() if k not in fixed and k != "rng"} == \
        {k: v for k, v in vars(sim).items() if k not in fixed and k != "rng"}
    assert again.rng.getstate() == sim.rng.getstate()

"""Reverted transactions to watched contracts become revert episodes, then anti-knowledge:
the simulated market's honeypot sells, in process and on anvil."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
import structlog

from golem.chain.cursor import CaptureStore
from golem.chain.evm import Evm, Receipt
from golem.chain.market import Market, deploy_market
from golem.chain.reader import FailedTx, InProcessReader
from golem.chain.rpc import RpcReader
from golem.chain.rpc_evm import RpcEvm
from golem.chain.simulator import MarketSimulator
from golem.chain.source import SimulatedSource
from golem.chain.tokens import TokenDirectory
from golem.config import Config, load_config
from golem.consolidation.engine import ConsolidationEngine
from golem.events import EventBus
from golem.gamma.capture import GammaCapture
from golem.gamma.reverts import revert_episodes
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import REVERT_CATEGORY
from golem.grimoire.records import EntryType, Episode, FactKind, episode_id, tx_episode_id
from golem.runtime.handlers import TickContext
from golem.testing.anvil import AnvilNode

from ..conftest import REPO, config_text

T = TypeVar("T")
MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
T0 = 1_800_000_000.0
SEED = 3  # seed 3 tries honeypot sells at steps 20, 24 and 26
SELLS = 3
TRANSFER = "0xa9059cbb"


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend_options={"use_uvloop": True})


@dataclass
class Chain:
    source: SimulatedSource
    sells: list[tuple[int, str]]  # (step, tx hash) of each reverted honeypot sell


def drive(evm: Evm, market: Market, sells: int, steps: int = 60) -> list[tuple[int, str]]:
    sim = MarketSimulator(evm, market, SEED)
    out: list[tuple[int, str]] = []
    for i in range(steps):
        report = sim.step(T0 + 10.0 * i, 10.0)
        out += [(i, tx) for action, tx in report.reverted if action == "honeypot_sell"]
        assert all(action == "honeypot_sell" for action, _ in report.reverted)
        if len(out) >= sells:
            return out
    raise AssertionError(f"seed {SEED}: only {len(out)} honeypot sells in {steps} steps")


@pytest.fixture(scope="module")
def chain() -> Chain:
    """The simulated market driven until three honeypot sells have reverted (~30 steps)."""
    source = SimulatedSource.create(SEED, T0)
    sells = drive(source.evm, source.market, SELLS)
    for _ in range(2):  # confirmations: capture stops two blocks below the head
        source.evm.mine()
    return Chain(source, sells)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL, 32)


def make_config(tmp_path: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL)}}))
    return load_config(path)


def receipt_of(evm: Evm, tx_hash: str) -> Receipt:
    receipt = evm.receipt(tx_hash)
    assert receipt is not None, tx_hash
    return receipt


def expected_ids(chain: Chain) -> set[str]:
    evm = chain.source.evm
    out = set()
    for _, tx in chain.sells:
        r = receipt_of(evm, tx)
        out.add(tx_episode_id(evm.chain_id, r.block_hash, r.tx_index))
    return out


class StepClock:
    """Golem time that moves a minute per tick (past any backoff)."""

    simulated = True

    def __init__(self, t: float) -> None:
        self.t = t

    def now(self) -> float:
        return self.t


async def capture_from(g: Grimoire, chain: Chain, config: Config, store_dir: Path,
                       first_block: int) -> list[dict[str, int | float]]:
    """One GammaCapture with its own cursor store, ticked until it reaches the head."""
    src = chain.source
    store = CaptureStore.open(store_dir)
    clock = StepClock(T0 + 3600)
    capture = GammaCapture(g, src.reader, src.watch, store, config.data_dir, config.chain,
                           first_block=first_block)
    counters = []
    try:
        for tick in range(1, 10):
            ctx = TickContext("gamma", tick, clock.now(), clock.now() + 60,
                              clock, EventBus(clock.now), 1,  # type: ignore[arg-type]
                              structlog.get_logger())
            out = await capture(ctx)
            clock.t += 60.0
            assert out is not None
            counters.append(dict(out))
            if out.get("cursor") == src.evm.head().number - config.chain.confirmations:
                return counters
    finally:
        store.close()
    raise AssertionError(f"capture did not reach the head: {counters}")


async def reverts_in(g: Grimoire) -> list[Episode]:
    return await g.scan_episodes(lambda batches: [e for batch in batches for e in batch
                                                  if e.category == REVERT_CATEGORY])


def test_honeypot_sells_become_revert_episodes_once_then_anti_knowledge(
        chain: Chain, tmp_path: Path, embedder: Embedder) -> None:
    config = make_config(tmp_path)
    evm, market = chain.source.evm, chain.source.market
    honey, pool = market.honey.address.lower(), market.pair_honey_weth.lower()
    first_sell_block = receipt_of(evm, chain.sells[0][1]).block_number
    now = T0 + 3600

    async def main() -> dict[str, Any]:
        g = await Grimoire.open(config, now=lambda: now, embedder=embedder)
        try:
            ticks = await capture_from(g, chain, config, tmp_path / "c1", first_sell_block - 2)
            episodes = await reverts_in(g)
            total = await g.episode_count()
            # a second capture of the last sell's blocks, with its own cursor: nothing new
            last_sell = receipt_of(evm, chain.sells[-1][1]).block_number
            again = await capture_from(g, chain, config, tmp_path / "c2", last_sell - 1)
            total_again = await g.episode_count()
            engine = ConsolidationEngine(g, tmp_path / "state")
            report = await engine.run(tick=1, now=now + 60)
            engine.close()
            anti = await g.entries(where=lambda e: e.entry_type is EntryType.ANTI_KNOWLEDGE)
            return {"ticks": ticks, "episodes": episodes, "total": total, "again": again,
                    "total_again": total_again, "report": report, "anti": anti}
        finally:
            await g.close()

    out = run(main)
    episodes: list[Episode] = out["episodes"]
    assert {e.id for e in episodes} == expected_ids(chain)
    assert len(episodes) == SELLS
    assert sum(int(t.get("reverts", 0)) for t in out["ticks"]) == SELLS
    for e in episodes:
        p = e.payload
        assert (p["event"], p["address"], p["function"], p["token"], p["action"]) == (
            "Reverted", honey, "transfer", honey, "sell")
        assert p["recipient"] == pool and p["selector"] == TRANSFER and p["symbol"] == "HONEY"
        assert p["tx_hash"] in {tx for _, tx in chain.sells} and e.tx_hash == p["tx_hash"]
        assert e.text.startswith("Reverted: transfer on the HONEY token by account ")
        assert e.text.endswith(f", a sell into pool {pool[2:6].lower()}") and "0x" not in e.text
        assert {honey, pool, p["tx_hash"]} <= set(e.identifiers)  # exact, for full text
        assert e.block_number >= first_sell_block and e.provenance.process == "gamma"
        # never the id of a log of the same block
        assert e.id not in {episode_id(e.chain_id, e.block_hash, i) for i in range(64)}
    assert sum(int(t.get("reverts", 0)) for t in out["again"]) == 1
    assert out["total_again"] == out["total"]  # the re-captured blocks wrote nothing new

    assert out["report"].rejected == 0
    (anti,) = out["anti"]
    assert anti.fact_kind is FactKind.ANTI_KNOWLEDGE
    assert (anti.fact["address"], anti.fact["function"], anti.fact["token"],
            anti.fact["action"], anti.fact["reverts"]) == (honey, "transfer", honey, "sell",
                                                           SELLS)
    assert anti.text.startswith(f"Selling {honey} through transfer")


def test_a_revert_from_another_branch_is_dropped_and_a_reorg_deletes_it(
        chain: Chain, tmp_path: Path, embedder: Embedder) -> None:
    evm = chain.source.evm
    r = receipt_of(evm, chain.sells[0][1])
    number, block_hash = r.block_number, r.block_hash
    reader = InProcessReader(evm)
    directory = TokenDirectory(reader.eth_call)
    watched = chain.source.watch.addresses
    config = make_config(tmp_path)

    async def main() -> tuple[list[Episode], list[Episode], int, int]:
        def episodes(verified: dict[int, str]) -> Awaitable[list[Episode]]:
            return revert_episodes(reader, directory, watched, number - 1, number + 1,
                                   verified=verified, namespace="golem-a", tick=1, now=T0)

        moved = await episodes({number: "0x" + "ab" * 32})
        kept = await episodes({number: block_hash})
        g = await Grimoire.open(config, now=lambda: T0, embedder=embedder)
        try:
            await g.add_episodes(kept)
            above = await g.drop_chain_episodes(evm.chain_id, number)
            gone = await g.drop_chain_episodes(evm.chain_id, number - 1)
        finally:
            await g.close()
        return moved, kept, above, gone

    moved, kept, above, gone = run(main)
    assert moved == [] and len(kept) == 1 and kept[0].block_number == number
    assert (above, gone) == (0, 1)  # a rewind to below its block forgets it


def shape(txs: list[FailedTx], market: Market) -> list[tuple[str, str, int]]:
    return [(t.selector, "honey" if t.to == market.honey.address.lower() else t.to,
             len(t.input)) for t in txs]


def test_rpc_reader_finds_the_same_failed_transactions_on_anvil(
        chain: Chain, anvil: AnvilNode) -> None:
    evm = RpcEvm(anvil.http_url)
    market = deploy_market(evm, seed=SEED)
    first = evm.head().number + 1
    sells = drive(evm, market, 1)
    src = chain.source

    async def main() -> tuple[list[FailedTx], list[FailedTx], list[FailedTx]]:
        reader = RpcReader(anvil.http_url, 5.0)
        try:
            rpc = await reader.failed_transactions(first, evm.head().number, market.contracts)
            none = await reader.failed_transactions(first, evm.head().number, [market.lending])
            # a tx known to have succeeded (it logged) is not looked up
            none += await reader.failed_transactions(first, evm.head().number,
                                                     market.contracts, [sells[0][1].upper()])
        finally:
            await reader.aclose()
        local = await src.reader.failed_transactions(src.first_block, src.evm.head().number,
                                                     src.watch.addresses)
        return rpc, none, local

    rpc, none, local = run(main)
    assert [t.tx_hash for t in rpc] == [tx for _, tx in sells] and none == []
    assert [t.tx_hash for t in local] == [tx for _, tx in chain.sells]
    # the same step of the same seed fails the same way on both chains
    assert sells[0][0] == chain.sells[0][0]
    assert shape(rpc, market) == shape(local[:1], src.market)
    for t in rpc:
        r = evm.w3.eth.get_transaction_receipt(t.tx_hash)  # type: ignore[arg-type]
        assert r["status"] == 0 and int(r["blockNumber"]) == t.block_number
        assert t.block_hash == evm.block(t.block_number).hash and t.chain_id == 31337
        assert t.sender in {a.lower() for a in market.noise_traders}

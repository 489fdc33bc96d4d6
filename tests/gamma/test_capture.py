"""Gamma capture end to end: the simulated market, perception, the Grimoire, restarts."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import anyio
import pytest

from golem.chain.cursor import CaptureStore
from golem.chain.names import OWN_WALLET
from golem.config import Config, load_config
from golem.gamma.capture import GammaCapture
from golem.gamma.rendering import capture_names
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import Episode, episode_id, tx_episode_id
from golem.logging import configure_logging
from golem.perception.beliefs import BeliefState
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from ..conftest import REPO, config_text, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


def _run(config: Config, seconds: float) -> GammaCapture:
    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=seconds, setup=setup)
    configure_logging("warning", "json", io.StringIO())
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    assert [h.name for h in registry.for_loop("gamma")] == ["chain-capture"]
    capture = registry.for_loop("gamma")[0]
    assert isinstance(capture, GammaCapture)
    return capture



def _confirmed_watched(capture: GammaCapture) -> set[str]:
    """Episode ids the chain says capture owes: watched logs from the first market block
    up to the committed cursor (blocks above it are not confirmed yet)."""
    assert capture.market is not None and capture.follower is not None
    evm, cursor = capture.market.evm, capture.follower.cursor
    assert cursor is not None
    logs = evm.get_logs(capture.market.first_block, cursor)
    failed = anyio.run(capture.reader.failed_transactions, capture.market.first_block, cursor,
                       capture.watch.addresses)
    return {episode_id(log.chain_id, log.block_hash, log.log_index) for log in logs
            if capture.watch.matches(log.address, log.topics[0] if log.topics else None)} | {
        tx_episode_id(t.chain_id, t.block_hash, t.tx_index) for t in failed}


def _set_of(config: Config) -> set[str]:
    ids = stored_episode_ids(config)
    assert len(ids) == len(set(ids)), "an episode stored twice"
    return set(ids)


@pytest.mark.timeout(300)  # two daemon runs and a market deployment: ~95 s on quiet cores
def test_capture_writes_every_confirmed_watched_log_once_and_survives_a_restart(
        tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": 7},
                                 "grimoire": {"model_dir": str(MODEL)},
                                 "logging": {"format": "json", "level": "warning"}}))
    config = load_config(path)
    first = _run(config, 200)
    assert first.market is not None and first.follower is not None
    expected = _confirmed_watched(first)
    assert _set_of(config) == expected and len(expected) > 30
    # the cursor sits `confirmations` below the head: the newest blocks wait
    head = first.market.evm.head().number
    assert first.follower.cursor == head - config.chain.confirmations
    hashes = [first.market.evm.block(n).hash for n in range(1, head + 1)]
    # A crash cut the regime file's last write short: half a line, no newline.
    truth_file = config.data_dir / "chain" / "ground_truth.jsonl"
    written = truth_file.read_bytes()
    assert written.count(b"\n") == len(first.market.ground_truth) >= 2
    truth_file.write_bytes(written[:written.rfind(b"\n", 0, -1) + 1] + b'{"golem_ti')
    inode = truth_file.stat().st_ino

    second = _run(config, 100)  # replays the journalled market, then goes on
    assert second.market is not None and second.follower is not None
    assert [second.market.evm.block(n).hash for n in range(1, head + 1)] == hashes
    expected = _confirmed_watched(second)
    assert _set_of(config) == expected
    store = CaptureStore.open(config.data_dir / "chain")
    try:
        window, _ = store.load(second.market.chain_id, config.chain.reorg_window)
    finally:
        store.close()
    assert window.cursor == second.follower.cursor

    async def recall() -> None:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            result = await g.recall("a Uniswap V2 swap of WETH for USDC", k=3,
                                    namespace=g.namespace)
            assert not result.refused
            assert any("swap on the WETH/USDC pool" in h.text for h in result.hits)
            top = result.hits[0].record
            assert top.payload["route"] in ("escalate", "update_silently", "discard")
            # The sentences name things; the exact addresses stay findable by full text.
            assert isinstance(top, Episode) and "0x" not in top.text
            trader = next(i for i in top.identifiers
                          if i.lower() not in (pool.lower(), top.tx_hash))
            exact = await g.recall(trader, k=10, namespace=g.namespace)
            assert exact.hits and all(isinstance(h.record, Episode)
                                      and trader in h.record.identifiers
                                      for h in exact.hits[:3])
        finally:
            await g.close()

    pool = second.market.market.pair_weth_usdc
    anyio.run(recall)
    chain_dir = config.data_dir / "chain"
    written = json.loads((chain_dir / "names.json").read_text())
    assert written[pool.lower()] == "the WETH/USDC pool"
    # A data dir from before names.json: the seed's market, deployed again, names the same
    # venues the running golem named (what `golem memory reembed` falls back on).
    again = capture_names(dataclasses.replace(config, golem=dataclasses.replace(
        config.golem, data_dir=tmp_path / "no-names")))
    venues = {a: n for a, n in written.items() if n != OWN_WALLET}
    assert len(venues) >= 10 and again.known() == venues
    beliefs = BeliefState.from_dict(json.loads((chain_dir / "beliefs.json").read_text()))
    assert len(beliefs.channels) >= 4
    truth = [json.loads(line) for line in
             (chain_dir / "ground_truth.jsonl").read_text().splitlines()]
    # every switch once, the one the crash cut written again; new ones appended, the file
    # not rewritten (rewriting it at each switch cost more the older the golem)
    assert [(t["golem_time"], t["block_number"], t["regime"]) for t in truth] == [
        (s.golem_time, s.block_number, s.regime) for s in second.market.ground_truth]
    assert truth_file.stat().st_ino == inode
    assert truth[0]["regime"] == "calm"
    assert truth[0]["block_number"] == second.market.first_block + 3  # after wallet funding
    assert [t["golem_time"] for t in truth] == sorted(t["golem_time"] for t in truth)

"""Gamma in RPC mode against a real node (anvil): HTTP polling, WebSocket subscriptions,
confirmations, and reorgs (snapshot, revert, mine a different branch)."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import anyio

from golem.chain.market import Market, deploy_market
from golem.chain.rpc import WsReader
from golem.chain.rpc_evm import RpcEvm
from golem.chain.simulator import MarketSimulator
from golem.config import Config, load_config
from golem.gamma.capture import CaptureHalted, GammaCapture
from golem.grimoire.records import episode_id
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.status import collect_status
from golem.testing.anvil import AnvilNode
from golem.wiring import setup

from ..conftest import REPO, config_text, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
CONFIRMATIONS = 2
T0 = 1_700_000_100.0


def _config(tmp_path: Path, url: str, market: Market, first_block: int,
            **chain: Any) -> Config:
    path = tmp_path / "golem.toml"
    real = chain.pop("real_clock", False)
    text = config_text({
        "golem": {"data_dir": "data", "seed": 7},
        "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "warning"},
        **({"clock": {"mode": "real"}, "gamma": {"interval_s": 0.2, "deadline_s": 10,
                                                 "backoff_max_s": 0}} if real else {}),
        # logs only: what _owed counts (reverts over RPC: tests/gamma/test_reverts.py)
        "chain": {"mode": "rpc", "confirmations": CONFIRMATIONS, "capture_reverts": False,
                  **chain,
                  "rpc": {"url": url, "chain_id": 31337, "start_block": first_block,
                          "addresses": list(market.contracts), "timeout_s": 5}},
    })
    path.write_text(text)
    return load_config(path)


def _run(config: Config, seconds: float, expect_exit: int = 0) -> tuple[GammaCapture, Daemon]:
    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=seconds, setup=setup)
    configure_logging("warning", "json", io.StringIO())
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == expect_exit
    capture = registry.for_loop("gamma")[0]
    assert isinstance(capture, GammaCapture)
    return capture, daemon



def _owed(evm: RpcEvm, market: Market, first_block: int) -> set[str]:
    """Watched logs of every confirmed block from first_block: what capture must hold."""
    top = evm.head().number - CONFIRMATIONS
    watched = {a.lower() for a in market.contracts}
    return {episode_id(log.chain_id, log.block_hash, log.log_index)
            for log in evm.get_logs(first_block, top) if log.address.lower() in watched}


def _market(anvil: AnvilNode) -> tuple[RpcEvm, Market, MarketSimulator, int]:
    evm = RpcEvm(anvil.http_url)
    market = deploy_market(evm, seed=7)
    return evm, market, MarketSimulator(evm, market, seed=7), evm.head().number + 1


def _steps(sim: MarketSimulator, start: float, count: int) -> float:
    for i in range(count):
        sim.step(start + 10.0 * i, 10.0)
    return start + 10.0 * count


def test_http_capture_takes_confirmed_blocks_only_and_resumes(
        anvil: AnvilNode, tmp_path: Path) -> None:
    evm, market, sim, first = _market(anvil)
    t = _steps(sim, T0, 6)
    config = _config(tmp_path, anvil.http_url, market, first)
    capture, _ = _run(config, 30)
    owed = _owed(evm, market, first)
    stored = stored_episode_ids(config)
    assert len(stored) == len(set(stored)) and set(stored) == owed and len(owed) > 10
    assert capture.follower is not None
    assert capture.follower.cursor == evm.head().number - CONFIRMATIONS
    # the two newest blocks wait for confirmations; the restart picks them up with the
    # rest, a few whole blocks per tick (the per-tick log bound)
    _steps(sim, t, 4)
    config = _config(tmp_path, anvil.http_url, market, first, max_logs_per_tick=5)
    owed_before = len(owed)
    capture, daemon = _run(config, 120)
    assert capture.follower is not None
    assert capture.follower.cursor == evm.head().number - CONFIRMATIONS
    new_logs = len(_owed(evm, market, first)) - owed_before
    assert daemon.loops[0].counters.ok >= new_logs // 8  # a handful of logs per tick
    stored = stored_episode_ids(config)
    assert len(stored) == len(set(stored)) and set(stored) == _owed(evm, market, first)
    chain = collect_status(config)["chain"]
    assert chain["mode"] == "rpc" and chain["url"] == anvil.http_url
    assert chain["watching"] == len(market.contracts)
    (cursor,) = chain["cursors"]
    assert (cursor["chain_id"], cursor["first_block"]) == (31337, first)
    assert cursor["cursor"] == evm.head().number - CONFIRMATIONS


def test_websocket_capture_serves_live_blocks_from_subscriptions(
        anvil: AnvilNode, tmp_path: Path) -> None:
    evm, market, sim, first = _market(anvil)
    _steps(sim, T0, 2)
    config = _config(tmp_path, anvil.ws_url, market, first, real_clock=True)
    stop = threading.Event()

    def drive() -> None:
        t = T0 + 100
        while not stop.is_set():
            sim.step(t, 10.0)
            t += 10.0
            time.sleep(0.05)

    driver = threading.Thread(target=drive)
    driver.start()
    try:
        capture, _ = _run(config, 4)
    finally:
        stop.set()
        driver.join()
    reader = capture.reader
    assert isinstance(reader, WsReader)
    assert reader.served_from_subscription > 0  # live blocks came from eth_subscribe
    assert reader.served_by_request > 0  # the backlog before subscribing came from getLogs
    for _ in range(CONFIRMATIONS):
        evm.mine()
    _run(config, 2)  # catch up to the confirmed head
    stored = stored_episode_ids(config)
    assert len(stored) == len(set(stored)) and set(stored) == _owed(evm, market, first)


def test_reorg_inside_the_window_deletes_and_recaptures(
        anvil: AnvilNode, tmp_path: Path) -> None:
    evm, market, sim, first = _market(anvil)
    t = _steps(sim, T0, 4)
    snapshot = evm.snapshot()
    fork_block = evm.head().number
    t_fork = _steps(sim, t, 4)  # branch A
    config = _config(tmp_path, anvil.http_url, market, first)
    _run(config, 30)
    orphaned = _owed(evm, market, fork_block + 1)
    assert orphaned and orphaned <= set(stored_episode_ids(config))
    evm.revert(snapshot)
    _steps(sim, t_fork + 1000, 6)  # branch B: other times and trades, and longer
    assert evm.head().number > fork_block + 4
    _run(config, 30)
    lines = (config.data_dir / "events.jsonl").read_text().splitlines()
    (reorg,) = [e for e in map(json.loads, lines) if e["kind"] == "chain:reorg"]
    assert reorg["common_ancestor"] == fork_block
    assert reorg["episodes_deleted"] == len(orphaned) and reorg["depth"] >= 1
    stored = stored_episode_ids(config)
    assert len(stored) == len(set(stored)) and set(stored) == _owed(evm, market, first)
    assert not orphaned & set(stored)


def test_reorg_deeper_than_the_window_halts_capture(
        anvil: AnvilNode, tmp_path: Path) -> None:
    evm, market, sim, first = _market(anvil)
    t = _steps(sim, T0, 2)
    snapshot = evm.snapshot()
    t = _steps(sim, t, 6)
    config = _config(tmp_path, anvil.http_url, market, first, reorg_window=3)
    _, daemon = _run(config, 30)
    ok_before = daemon.loops[0].counters.ok
    before = set(stored_episode_ids(config))
    evm.revert(snapshot)
    _steps(sim, t + 1000, 10)
    capture, daemon = _run(config, 30)
    assert capture.halted and "beyond the reorg window" in capture.halted
    assert set(stored_episode_ids(config)) == before  # history is not rewritten
    gamma = daemon.loops[0].counters
    assert gamma.failed >= 2  # every tick after the halt fails loudly
    assert gamma.ok == ok_before  # counters carry over restarts: no tick succeeded since
    events = (config.data_dir / "events.jsonl").read_text()
    assert "chain:halted" in events and CaptureHalted.__name__ in events

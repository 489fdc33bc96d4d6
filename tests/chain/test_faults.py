"""Capture over RPC against a node that misbehaves: nothing lost, nothing doubled, no crash.

The golem's capture (chain.mode = "rpc") talks to a real anvil through FaultyNode,
a proxy that injects faults; the market is driven on anvil directly. Every test
ends by comparing the stored episode ids with the watched logs anvil has in the
confirmed blocks from start_block to the cursor.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from anyio.lowlevel import EventLoopToken, current_token

from golem.chain.market import Market, deploy_market
from golem.chain.rpc import WsReader
from golem.chain.rpc_evm import RpcEvm
from golem.chain.simulator import MarketSimulator
from golem.config import Config, load_config
from golem.gamma.capture import GammaCapture
from golem.grimoire.records import episode_id
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon, SetupContext
from golem.runtime.handlers import HandlerRegistry
from golem.testing.anvil import AnvilNode
from golem.testing.faulty_node import FaultyNode
from golem.wiring import setup

from ..conftest import REPO, config_text, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
SEED = 11
CONFIRMATIONS = 2
BACKING_OFF = "chain node unavailable; backing off"
SUBSCRIBED = "subscribed to new heads and logs"
MAX_RUN_S = 30.0  # a backstop: each run stops as soon as its test is done


@dataclass
class Rig:
    evm: RpcEvm
    market: Market
    sim: MarketSimulator
    node: FaultyNode
    start_block: int
    tmp_path: Path
    golem_time: float = 1_800_000_000.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def drive(self, steps: int) -> None:
        with self.lock:
            for _ in range(steps):
                self.sim.step(self.golem_time, 10.0)
                self.golem_time += 10.0

    def config(self, url: str, **rpc: Any) -> Config:
        path = self.tmp_path / "golem.toml"
        path.write_text(config_text({
            "golem": {"data_dir": "data", "seed": SEED},
            "grimoire": {"model_dir": str(MODEL)},
            "logging": {"format": "json", "level": "info"},
            "clock": {"mode": "real"},
            "gamma": {"interval_s": 0.2, "deadline_s": 5, "backoff_max_s": 0},
            # logs only: what these tests check (reverts: tests/gamma/test_reverts.py)
            "chain": {"mode": "rpc", "confirmations": CONFIRMATIONS, "capture_reverts": False},
            "chain.rpc": {"url": url, "addresses": list(self.market.contracts),
                          "start_block": self.start_block, "timeout_s": 1.0,
                          "backoff_base_s": 0.1, "backoff_max_s": 0.4, **rpc},
        }))
        return load_config(path)


@pytest.fixture
def rig(anvil: AnvilNode, tmp_path: Path) -> Iterator[Rig]:
    evm = RpcEvm(anvil.http_url)
    market = deploy_market(evm, SEED)
    start_block = evm.head().number + 1
    with FaultyNode(anvil.http_url) as node:
        yield Rig(evm, market, MarketSimulator(evm, market, SEED), node, start_block, tmp_path)


@dataclass
class Run:
    capture: GammaCapture
    records: list[dict[str, Any]]

    def events(self, text: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("event") == text]


class Live:
    """The running golem as the side thread sees it: its log so far and its capture."""

    def __init__(self, rig: Rig, registry: HandlerRegistry) -> None:
        self.rig = rig
        self.registry = registry
        self.stream = io.StringIO()

    def wait_log(self, event: str, count: int = 1) -> None:
        wait_until(lambda: self.stream.getvalue().count(f'"event": "{event}"') >= count,
                   f"{event!r} logged {count} time(s)")

    def cursor(self) -> int | None:
        handlers = self.registry.for_loop("gamma")
        capture = handlers[0] if handlers else None
        if not isinstance(capture, GammaCapture) or capture.follower is None:
            return None
        return capture.follower.cursor

    def wait_caught_up(self) -> None:
        """Until capture's cursor is the confirmed head of anvil (the market must be idle)."""
        target = self.rig.evm.head().number - CONFIRMATIONS
        wait_until(lambda: self.cursor() == target, f"cursor at {target}")


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout} s: {what}"
        time.sleep(0.02)


def run_capture(rig: Rig, config: Config,
                during: Callable[[Live], None] = Live.wait_caught_up) -> Run:
    """A Daemon in-process (real clock) while `during` runs in a thread; the daemon stops
    once `during` returns and capture has caught up with anvil (MAX_RUN_S at most)."""
    tokens: list[EventLoopToken] = []

    async def setup_noting_the_loop(ctx: SetupContext, stack: AsyncExitStack) -> None:
        tokens.append(current_token())  # so the side thread can stop the daemon
        await setup(ctx, stack)

    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=MAX_RUN_S, setup=setup_noting_the_loop)
    live = Live(rig, registry)
    configure_logging("info", "json", live.stream)
    errors: list[BaseException] = []

    def side() -> None:
        try:
            live.wait_log("golem started")
            during(live)
            live.wait_caught_up()
        except BaseException as exc:  # re-raised in the test thread
            errors.append(exc)
        finally:
            with contextlib.suppress(RuntimeError, IndexError):  # stopped, or never started
                anyio.from_thread.run_sync(daemon.request_stop, "test done", token=tokens[0])

    thread = threading.Thread(target=side)
    thread.start()
    try:
        code = anyio.run(daemon.run, backend_options={"use_uvloop": True})
    finally:
        thread.join(30)
    if errors:
        raise errors[0]
    records = [json.loads(line) for line in live.stream.getvalue().splitlines() if line]
    failed = [r for r in records if r.get("level") in ("error", "critical")]
    assert code == 0 and not failed, failed
    (capture,) = registry.for_loop("gamma")
    assert isinstance(capture, GammaCapture)
    return Run(capture, records)



def owed_and_stored(rig: Rig, config: Config, run: Run) -> tuple[set[str], list[str]]:
    """(ids of anvil's watched logs in blocks start_block..cursor, ids stored)."""
    follower = run.capture.follower
    assert follower is not None and follower.cursor is not None
    logs = rig.evm.get_logs(rig.start_block, follower.cursor)
    owed = {episode_id(log.chain_id, log.block_hash, log.log_index) for log in logs
            if run.capture.watch.matches(log.address, log.topics[0] if log.topics else None)}
    return owed, stored_episode_ids(config)


def assert_complete(rig: Rig, config: Config, run: Run) -> None:
    """Stored ids == watched logs of anvil's blocks start_block..cursor, and caught up."""
    assert run.capture.follower is not None
    assert run.capture.follower.cursor == rig.evm.head().number - CONFIRMATIONS
    owed, stored = owed_and_stored(rig, config, run)
    assert len(stored) == len(set(stored)), "duplicate episode ids"
    assert set(stored) == owed
    assert len(owed) > 5


def test_node_down_at_start_then_up(rig: Rig) -> None:
    rig.drive(4)
    rig.node.set_down(True)
    config = rig.config(rig.node.http_url)

    def later(live: Live) -> None:
        live.wait_log(BACKING_OFF, 2)  # capture is running and finds the node down
        rig.node.set_down(False)

    run = run_capture(rig, config, later)
    assert len(run.events(BACKING_OFF)) >= 2
    assert "unreachable" in run.events(BACKING_OFF)[0]["error"]
    assert rig.node.requests["eth_getLogs"] >= 1
    assert_complete(rig, config, run)


def test_range_refusals_halve_the_span_and_lose_nothing(rig: Rig) -> None:
    rig.drive(6)
    head = rig.evm.head().number
    per_block = max(len(rig.evm.get_logs(n, n)) for n in range(rig.start_block, head + 1))
    rig.node.max_log_span = 3  # "query exceeds max block range 3"
    rig.node.max_log_results = per_block  # "query returned more than N results"
    config = rig.config(rig.node.http_url, max_log_span=64)
    run = run_capture(rig, config)
    assert rig.node.faults["range_refused"] >= 1
    assert rig.node.faults["too_many_results"] + rig.node.faults["range_refused"] >= 3
    assert not run.events(BACKING_OFF)  # halving is the answer, not an outage
    assert run.capture.follower is not None and run.capture.follower.planner.span <= 3
    assert_complete(rig, config, run)


def test_bursts_of_503_dropped_connections_and_timeouts(rig: Rig) -> None:
    rig.drive(3)
    rig.node.fail_next(3, "503")
    config = rig.config(rig.node.http_url)

    def meanwhile(live: Live) -> None:
        wait_until(lambda: rig.node.failures_pending == 0, "the 503s")
        rig.drive(2)
        rig.node.fail_next(3, "drop")
        wait_until(lambda: rig.node.failures_pending == 0, "the dropped connections")
        rig.drive(2)
        rig.node.set_delay(1.3, count=1)  # past timeout_s = 1
        wait_until(lambda: rig.node.faults["delayed"] == 1, "the slow answer")
        rig.drive(1)

    run = run_capture(rig, config, meanwhile)
    assert rig.node.faults["http_503"] == 3 and rig.node.faults["dropped"] == 3
    errors = [r["error"] for r in run.events(BACKING_OFF)]
    assert sum("HTTP 503" in e for e in errors) == 3
    assert sum("disconnected" in e.lower() for e in errors) == 3, errors
    assert sum("no answer from" in e for e in errors) >= 1, errors
    assert_complete(rig, config, run)


def test_malformed_logs_are_node_faults_and_are_retried(rig: Rig) -> None:
    rig.drive(3)
    rig.node.malform_next_log("no_block_hash")
    config = rig.config(rig.node.http_url)

    def meanwhile(live: Live) -> None:
        live.wait_caught_up()
        # before the blocks: capture may fetch their logs as soon as they are mined
        rig.node.malform_next_log("bad_hex")
        rig.drive(2)

    run = run_capture(rig, config, meanwhile)
    assert rig.node.faults["malformed_log"] == 2
    errors = [r["error"] for r in run.events(BACKING_OFF)]
    assert len(errors) == 2, errors
    assert "malformed log from the node" in errors[0] and "blockHash" in errors[0]
    assert "malformed log from the node" in errors[1] and "logIndex" in errors[1]
    assert_complete(rig, config, run)


def test_head_going_backwards_writes_nothing_until_it_recovers(rig: Rig) -> None:
    rig.drive(3)
    config = rig.config(rig.node.http_url)
    seen: dict[str, int] = {}

    def meanwhile(live: Live) -> None:
        live.wait_caught_up()
        cursor = live.cursor()
        assert cursor is not None
        rig.node.report_head_behind(30)  # far below the cursor: a lagging or faulty node
        polled = rig.node.faults["head_behind"]
        wait_until(lambda: rig.node.faults["head_behind"] > polled, "a backwards head")
        before = rig.node.requests.copy()
        rig.drive(3)  # the real chain moves on meanwhile
        wait_until(lambda: rig.node.faults["head_behind"] >= polled + 4, "more polls")
        after = rig.node.requests.copy()
        rig.node.report_head_behind(0)
        seen["cursor"], seen["cursor_after"] = cursor, live.cursor() or 0
        seen["headers"] = after["eth_getBlockByNumber"] - before["eth_getBlockByNumber"]
        seen["logs"] = after["eth_getLogs"] - before["eth_getLogs"]

    run = run_capture(rig, config, meanwhile)
    assert seen["headers"] == 0 and seen["logs"] == 0  # nothing captured meanwhile ...
    assert seen["cursor_after"] == seen["cursor"]  # ... nor committed
    assert rig.evm.head().number > seen["cursor"] + CONFIRMATIONS
    assert_complete(rig, config, run)


def test_websocket_drops_reconnect_and_resubscribe(rig: Rig) -> None:
    rig.drive(2)
    config = rig.config(rig.node.ws_url)
    dropped: list[int] = []

    def meanwhile(live: Live) -> None:
        for cycle, steps in ((1, 3), (2, 1)):
            # New blocks make capture (re)subscribe; the next range still starts below the
            # head seen at subscribing, so eth_getLogs reads it; later ones can come from
            # the subscription.
            for _ in range(steps):
                rig.drive(1)
                live.wait_caught_up()
            live.wait_log(SUBSCRIBED, cycle)
            dropped.append(rig.node.drop_websockets())
        rig.drive(2)  # new blocks: capture reconnects and resubscribes to read them
        live.wait_log(SUBSCRIBED, 3)

    run = run_capture(rig, config, meanwhile)
    assert dropped == [1, 1]
    assert len(run.events(SUBSCRIBED)) == 3
    assert rig.node.requests["eth_subscribe"] == 6  # newHeads + logs, once per connection
    reader = run.capture.reader
    assert isinstance(reader, WsReader) and reader.ws.generation == 3
    # after each (re)subscription eth_getLogs read the first range
    assert reader.served_from_subscription >= 1 and reader.served_by_request >= 3
    assert_complete(rig, config, run)


def test_a_malformed_log_notification_is_not_lost(rig: Rig) -> None:
    rig.drive(2)
    config = rig.config(rig.node.ws_url)

    def meanwhile(live: Live) -> None:
        rig.drive(1)  # capture subscribes to read these blocks
        live.wait_caught_up()
        rig.drive(1)  # read by eth_getLogs: it starts below the head seen at subscribing
        live.wait_caught_up()
        rig.node.malform_next_log_notification("no_block_hash")
        rig.drive(1)  # a log reaches the subscription without its blockHash; its range
        live.wait_caught_up()  # is then confirmed while subscribed

    run = run_capture(rig, config, meanwhile)
    assert rig.node.faults["malformed_log_notification"] == 1
    assert len(run.events("unusable subscription message dropped; its blocks will be "
                          "fetched with eth_getLogs")) == 1
    reader = run.capture.reader
    assert isinstance(reader, WsReader) and reader.served_from_subscription >= 1
    assert run.capture.follower is not None
    assert run.capture.follower.cursor == rig.evm.head().number - CONFIRMATIONS
    owed, stored = owed_and_stored(rig, config, run)
    # the dropped notification's blocks come from eth_getLogs instead (was a real loss)
    assert set(stored) == owed and len(stored) == len(set(stored))

"""kill -9 chaos for chain capture: no episode lost, none duplicated, whenever the golem dies.

A real anvil outlives the golem. The market is deployed on it and a driver
thread keeps it moving (a MarketSimulator step every 50-100 ms wall). The golem
is the real CLI in a subprocess, capturing the node over RPC every 0.2 s on the
real clock, in rounds of at most 12 blocks. Each run is left to commit one
round, then to capture for a random 0.1-1.5 s more (seeded), then SIGKILLed,
`kills` times over. The market is held back while it is more than two rounds
ahead of the committed cursor, so the backlog (and the final catch-up) stays
small however slow the machine is. Then the market stops, `confirmations` empty
blocks settle the last market block, and one more run catches up to the
confirmed head and stops cleanly on SIGTERM.

The stored episode ids must then be exactly the chain's watched logs from the
start block to the confirmed head (no loss), each stored once (no duplicates),
and the committed cursor must be the confirmed head.
"""

from __future__ import annotations

import random
import signal
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from golem.chain.cursor import CaptureStore
from golem.chain.decoding import RawLog
from golem.chain.market import deploy_market
from golem.chain.rpc_evm import RpcEvm
from golem.chain.simulator import MarketSimulator
from golem.config import Config, load_config
from golem.grimoire.records import episode_id
from golem.testing.anvil import AnvilNode

from .conftest import ANVIL_GENESIS as GENESIS
from .conftest import REPO, child_env, config_text, golem_cmd, stored_episode_ids

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
CONFIRMATIONS = 2
DT = 10.0  # golem seconds per market step
BLOCKS_PER_ROUND = 12
MAX_LAG = 2 * BLOCKS_PER_ROUND  # blocks the market may run ahead of the capture cursor


class MarketDriver(threading.Thread):
    """Steps the market every 50-100 ms wall, golem time DT further each step.

    Held back while the chain is more than MAX_LAG blocks past the capture cursor
    (`cursor()`): on a busy 2-core machine the market outruns capture, and an
    unbounded backlog would only make the final catch-up slow.
    """

    def __init__(self, sim: MarketSimulator, start: float, seed: int,
                 cursor: Callable[[], int]) -> None:
        super().__init__(name="market-driver", daemon=True)
        self.sim, self.time, self.cursor = sim, start, cursor
        self.rng = random.Random(seed)
        self.halt = threading.Event()
        self.steps = self.held = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.halt.wait(self.rng.uniform(0.05, 0.1)):
                if self.sim.evm.head().number - self.cursor() > MAX_LAG:
                    self.held += 1
                    continue
                self.time += DT
                self.sim.step(self.time, DT)
                self.steps += 1
        except BaseException as exc:
            self.error = exc

    def stop(self) -> None:
        self.halt.set()
        self.join(timeout=30)
        assert not self.is_alive(), "the market driver did not stop"
        if self.error is not None:
            raise AssertionError(f"the market driver failed: {self.error!r}") from self.error


def _write_config(tmp_path: Path, url: str, addresses: tuple[str, ...],
                  start_block: int) -> Path:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": 11},
        "clock": {"mode": "real"},
        # small rounds: each commits within a few hundred ms, so kills land between and
        # inside rounds rather than always in one long catch-up round
        "chain": {"mode": "rpc", "confirmations": CONFIRMATIONS, "capture_reverts": False,
                  "max_blocks_per_tick": BLOCKS_PER_ROUND},  # logs only: what is checked
        "chain.rpc": {"url": url, "chain_id": 31337, "timeout_s": 5, "backoff_base_s": 0.2,
                      "backoff_max_s": 1, "start_block": start_block,
                      "addresses": list(addresses)},
        "gamma": {"interval_s": 0.2, "deadline_s": 20, "backoff_max_s": 2},
        "grimoire": {"model_dir": str(MODEL)},
        "runtime": {"shutdown_grace_s": 20},
        "logging": {"format": "json", "level": "info"},
    }))
    return path


def _start(config_path: Path, log_path: Path) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as out:  # the child keeps its own descriptor
        return subprocess.Popen(golem_cmd("run", "--config", str(config_path)),
                                stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, env=child_env())


def _tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def _wait_for(what: str, done: Callable[[], bool], proc: subprocess.Popen[bytes],
              log_path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if proc.poll() is not None:
            raise AssertionError(f"golem exited {proc.returncode} before {what}; "
                                 f"{log_path}:\n{_tail(log_path)}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"no {what} within {timeout} s; {log_path}:\n{_tail(log_path)}")
        time.sleep(0.05)


def _cursor(config: Config) -> int | None:
    """The committed cursor in data/chain/capture.db (WAL: safe beside a running golem)."""
    folder = config.data_dir / "chain"
    if not (folder / "capture.db").exists():
        return None
    store = CaptureStore.open(folder)
    try:
        window, _ = store.load(31337, config.chain.reorg_window)
    finally:
        store.close()
    return window.cursor


def _moved(config: Config, before: int | None) -> Callable[[], bool]:
    return lambda: _cursor(config) not in (None, before)



def _where(ids: set[str], by_id: dict[str, RawLog]) -> list[str]:
    return sorted(f"{i} (block {by_id[i].block_number}, log {by_id[i].log_index})"
                  if i in by_id else i for i in ids)


@pytest.mark.parametrize("kills", [
    3,
    pytest.param(50, marks=[pytest.mark.slow, pytest.mark.timeout(900)]),
])
def test_kill_9_during_capture_loses_and_duplicates_nothing(
        tmp_path: Path, anvil: AnvilNode, kills: int) -> None:
    seed = 4000 + kills
    rng = random.Random(seed)
    evm = RpcEvm(anvil.http_url)
    evm.set_next_block_time(GENESIS + 100)
    market = deploy_market(evm, seed=seed)
    start_block = evm.head().number + 1
    config_path = _write_config(tmp_path, anvil.http_url, market.contracts, start_block)
    config = load_config(config_path)
    logs = tmp_path / "logs"
    logs.mkdir()

    driver = MarketDriver(MarketSimulator(evm, market, seed=seed),
                          float(evm.head().timestamp), seed,
                          lambda: _cursor(config) or start_block - 1)
    driver.start()
    cursors: list[int | None] = []
    try:
        for i in range(kills):
            log_path = logs / f"run-{i:02d}.log"
            before = cursors[-1] if cursors else None
            proc = _start(config_path, log_path)
            try:
                # capturing: this run has committed a round (model loaded, node answering)
                _wait_for("a committed capture round", _moved(config, before), proc, log_path)
                time.sleep(rng.uniform(0.1, 1.5))
                proc.send_signal(signal.SIGKILL)
                assert proc.wait(timeout=30) == -signal.SIGKILL, _tail(log_path)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            cursors.append(_cursor(config))
    finally:
        driver.stop()

    for _ in range(CONFIRMATIONS):
        evm.mine()  # the last market block becomes confirmed
    head = evm.head().number
    confirmed = head - CONFIRMATIONS
    log_path = logs / "final.log"
    proc = _start(config_path, log_path)
    try:
        _wait_for(f"catch-up to block {confirmed}", lambda: _cursor(config) == confirmed,
                  proc, log_path)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, _tail(log_path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert evm.head().number == head  # nothing moved the chain behind our back

    watched = {a.lower() for a in market.contracts}
    chain_logs = [log for log in evm.get_logs(start_block, confirmed)
                  if log.address.lower() in watched]
    by_id = {episode_id(log.chain_id, log.block_hash, log.log_index): log
             for log in chain_logs}
    expected = set(by_id)
    assert len(expected) == len(chain_logs) > 10 * kills  # every run committed a round
    stored = stored_episode_ids(config)
    duplicated = {i: n for i, n in Counter(stored).items() if n > 1}
    assert not duplicated, f"duplicated episodes: {_where(set(duplicated), by_id)}"
    assert len(stored) == len(set(stored))
    lost, extra = expected - set(stored), set(stored) - expected
    assert not lost, f"lost episodes: {_where(lost, by_id)}"
    assert not extra, f"episodes not on the chain: {_where(extra, by_id)}"
    assert _cursor(config) == confirmed
    runs = sorted(logs.iterdir())
    assert len(runs) == kills + 1
    for path in runs:
        text = path.read_text(errors="replace")
        assert '"level": "error"' not in text and "Traceback" not in text, _tail(path)

"""Gamma capture throughput and tick latency, simulated chain and anvil, in one run.

Two measurements per chain:

* staged: the real pieces GammaCapture runs (market driver, ChainFollower over
  InProcessReader / RpcReader, decode, perception, TokenDirectory + render, the
  Grimoire's embedder and episode store, CaptureStore), called in the same order
  with a timer around each stage, so the split of a round's time is measured
  instead of estimated. One round = drive the market `steps_per_round` steps,
  then poll + perceive + store (what a Gamma tick does).
* gamma_daemon: the real Daemon with `golem.wiring.setup` (GammaCapture) over the
  same kind of chain; its per-tick durations (from the tick log lines) are the
  real total the staged split is compared with.

Simulated: one market step per round (the live 10 s Gamma tick, ~5 events),
the daemon in chain.mode = "simulated" over the same seed and golem times.
Anvil: several market steps between rounds so each round sees ~50 watched logs;
then the daemon in chain.mode = "rpc" captures the same chain again from its
first market block, `max_blocks_per_tick` set so each tick also sees ~50 logs:
that gives the Gamma tick latency p50/p95 at ~50 events per tick.

    .venv/bin/python benchmarks/capture.py [--quick] [--seed 7]

Prints one JSON object. Needs anvil (scripts/test installs it) for the anvil half;
without it that half is reported as skipped.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
from grimoire_ingest import synthetic_episodes  # benchmarks/ is on sys.path when run
from machine import embed_compute, machine  # benchmarks/ is on sys.path when run

from golem.chain.cursor import CaptureStore
from golem.chain.follower import Captured, ChainFollower, Idle, Rewound
from golem.chain.reader import ChainReader
from golem.chain.render import render
from golem.chain.tokens import TokenDirectory
from golem.chain.watch import WatchList
from golem.config import Config, GrimoireSection, load_config
from golem.gamma.capture import decode_kept, episode_payload
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.memory_file import atomic_write
from golem.grimoire.records import Episode, Provenance, episode_id
from golem.logging import configure_logging
from golem.perception.beliefs import BeliefState
from golem.perception.curiosity import curiosity_score
from golem.perception.features import features
from golem.perception.routing import RoutingAction, route_observation
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.anvil import AnvilNode, find_anvil
from golem.wiring import setup

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / GrimoireSection().model_dir
INTERVAL = 10.0  # Gamma's default interval_s: one market step per golem tick
STAGES = ("evm_market_step", "node_reads", "decode", "triage", "token_meta", "render",
          "embed", "lancedb_write", "cursor_commit", "beliefs_write")


def _config(folder: Path, seed: int, chain: dict[str, Any] | None = None,
            rpc: dict[str, Any] | None = None) -> Config:
    def toml(v: Any) -> str:
        return json.dumps(v)  # str, int, list of str: JSON spelling is TOML spelling

    lines = ["[golem]", 'data_dir = "data"', f"seed = {seed}",
             "[grimoire]", f"model_dir = {toml(str(MODEL_DIR))}",
             "[logging]", 'format = "json"', 'level = "info"']
    if chain:
        lines += ["[chain]", *(f"{k} = {toml(v)}" for k, v in chain.items())]
    if rpc:
        lines += ["[chain.rpc]", *(f"{k} = {toml(v)}" for k, v in rpc.items())]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "golem.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_config(path)


@dataclass
class Timers:
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started


@dataclass
class Pipeline:
    """GammaCapture's pieces, driven by hand with a timer around each stage."""

    drive: Callable[[float, float], Any]  # (golem time, dt): one market step
    reader: ChainReader
    follower: ChainFollower
    grimoire: Grimoire
    store: CaptureStore
    chain_id: int
    data_dir: Path
    timers: Timers = field(default_factory=Timers)
    beliefs: BeliefState = field(default_factory=BeliefState)
    events: int = 0
    blocks: int = 0
    round_ms: list[float] = field(default_factory=list)  # poll + perceive + store
    round_logs: list[int] = field(default_factory=list)
    text_chars: int = 0

    def __post_init__(self) -> None:
        self.directory = TokenDirectory(self.reader.eth_call)

    async def round(self, tick: int, now: float, steps: int) -> None:
        t = self.timers
        with t.stage("evm_market_step"):
            for i in range(steps):
                when = now - (steps - 1 - i) * INTERVAL
                await anyio.to_thread.run_sync(self.drive, when, INTERVAL)
        started = time.perf_counter()
        with t.stage("node_reads"):
            round_ = await self.follower.poll()
        if isinstance(round_, Idle):
            return
        assert not isinstance(round_, Rewound), "no reorgs in this benchmark"
        assert isinstance(round_, Captured)
        beliefs = self.beliefs
        episodes: list[Episode] = []
        ns = self.grimoire.namespace
        for raw in round_.logs:
            with t.stage("decode"):
                event = decode_kept(raw)
            with t.stage("triage"):
                beliefs, obs = beliefs.observe(
                    event.protocol, raw.address, tick=tick,
                    continuous=features(event.name, event.args), counts={"events": (1.0, 1.0)})
                decision = route_observation(obs, relevance=0.0)
                curiosity = curiosity_score(obs.max_abs_z, obs.surprise)
                _ = decision.action is RoutingAction.ESCALATE
            with t.stage("token_meta"):
                meta = await self.directory.meta_for(event)
            with t.stage("render"):
                rendering = render(event, meta)
                episodes.append(Episode(
                    id=episode_id(raw.chain_id, raw.block_hash, raw.log_index), namespace=ns,
                    chain_id=raw.chain_id, block_number=raw.block_number,
                    block_hash=raw.block_hash, log_index=raw.log_index, tx_hash=raw.tx_hash,
                    tick=tick, observed_at=now, category=event.category,
                    protocol=event.protocol, text=rendering.text,
                    identifiers=(*rendering.identifiers, raw.tx_hash),
                    payload=episode_payload(event, obs.regime.value, decision.action.value),
                    curiosity=curiosity,
                    provenance=Provenance(author=ns, process="gamma", verified=True)))
        if episodes:
            self.text_chars += sum(len(e.text) for e in episodes)
            with t.stage("embed"):  # what Grimoire.add_episodes does, in its two halves
                vectors = await self.grimoire.embedder.aembed([e.text for e in episodes])
            with t.stage("lancedb_write"):
                await self.grimoire.add_episodes(episodes, vectors=vectors)
        with t.stage("cursor_commit"):
            await anyio.to_thread.run_sync(self.store.commit, self.chain_id, round_.window,
                                           round_.first_block, now)
        self.follower.accept(round_)
        self.beliefs = beliefs
        with t.stage("beliefs_write"):
            blob = json.dumps(beliefs.to_dict()).encode()
            await anyio.to_thread.run_sync(atomic_write, self.data_dir / "beliefs.json", blob)
        self.round_ms.append((time.perf_counter() - started) * 1000)
        self.round_logs.append(len(round_.logs))
        self.events += len(round_.logs)
        self.blocks += round_.last - round_.first + 1


def _pcts(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.asarray(values)
    return {"p50": round(float(np.percentile(arr, 50)), 1),
            "p95": round(float(np.percentile(arr, 95)), 1),
            "max": round(float(arr.max()), 1), "n": len(values)}


def _staged_report(p: Pipeline, wall: float, rounds: int, steps: int) -> dict[str, Any]:
    secs = p.timers.seconds
    total = sum(secs.values())
    capture = total - secs["evm_market_step"]
    return {
        "rounds": rounds, "market_steps_per_round": steps, "events": p.events,
        "blocks": p.blocks, "wall_s": round(wall, 2),
        "events_per_s": round(p.events / total, 1),
        "events_per_s_capture_only": round(p.events / capture, 1),
        "stage_s": {k: round(v, 3) for k, v in secs.items()},
        "share": {k: round(v / total, 3) for k, v in secs.items()},
        "share_of_capture": {k: round(v / capture, 3) for k, v in secs.items()
                             if k != "evm_market_step"},
        "ms_per_event": {k: round(v / max(p.events, 1) * 1000, 2) for k, v in secs.items()},
        "embed_texts_per_s": round(p.events / secs["embed"], 1) if secs["embed"] else 0.0,
        "text_chars_mean": round(p.text_chars / max(p.events, 1)),
        "logs_per_round_mean": round(float(np.mean(p.round_logs)), 1) if p.round_logs else 0,
        "round_latency_ms": _pcts(p.round_ms),
    }


# --- staged runs -----------------------------------------------------------------------


async def _open_pipeline(config: Config, drive: Callable[[float, float], Any],
                         reader: ChainReader, watch: WatchList, *, first_block: int,
                         now: Callable[[], float]) -> Pipeline:
    chain = config.chain
    grimoire = await Grimoire.open(config, now=now)
    store = await anyio.to_thread.run_sync(CaptureStore.open, config.data_dir / "chain")
    chain_id = await reader.chain_id()
    window, _ = store.load(chain_id, chain.reorg_window)
    follower = ChainFollower(reader, watch, window=window, first_block=first_block,
                             confirmations=chain.confirmations,
                             max_blocks=chain.max_blocks_per_tick,
                             max_log_span=chain.rpc.max_log_span)
    return Pipeline(drive, reader, follower, grimoire, store, chain_id,
                    config.data_dir / "chain")


def staged_simulated(folder: Path, seed: int, rounds: int) -> dict[str, Any]:
    from golem.chain.source import SimulatedSource  # noqa: PLC0415

    config = _config(folder, seed)
    start = config.clock.start.timestamp()
    clock = {"now": start}

    async def run() -> dict[str, Any]:
        store = await anyio.to_thread.run_sync(CaptureStore.open, config.data_dir / "chain")
        deployed = time.perf_counter()
        source = await anyio.to_thread.run_sync(SimulatedSource.create, seed, start, store)
        deploy_s = time.perf_counter() - deployed
        p = await _open_pipeline(config, source.advance, source.reader, source.watch,
                                 first_block=source.first_block, now=lambda: clock["now"])
        p.store.close()
        p.store = store  # one store, as in wiring: the journal and the cursor share it
        try:
            began = time.perf_counter()
            for tick in range(rounds):
                clock["now"] = start + tick * INTERVAL
                await p.round(tick, clock["now"], 1)
            out = _staged_report(p, time.perf_counter() - began, rounds, 1)
        finally:
            await p.grimoire.close()
            store.close()
        out["market_deploy_s"] = round(deploy_s, 2)
        return out

    return anyio.run(run, backend_options={"use_uvloop": True})


def staged_anvil(folder: Path, node: AnvilNode, seed: int, rounds: int,
                 steps: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The staged run on anvil; also returns what the daemon needs to capture it again."""
    from golem.chain.market import deploy_market  # noqa: PLC0415
    from golem.chain.rpc import RpcReader  # noqa: PLC0415
    from golem.chain.rpc_evm import RpcEvm  # noqa: PLC0415
    from golem.chain.simulator import MarketSimulator  # noqa: PLC0415

    config = _config(folder, seed)
    evm = RpcEvm(node.http_url)
    deployed = time.perf_counter()
    market = deploy_market(evm, seed)
    deploy_s = time.perf_counter() - deployed
    simulator = MarketSimulator(evm, market, seed)
    first_block = evm.head().number + 1
    start = float(evm.head().timestamp + 3600)
    clock = {"now": start}
    watch = WatchList.build(market.contracts)

    async def run() -> dict[str, Any]:
        reader = RpcReader(node.http_url, config.chain.rpc.timeout_s)
        p = await _open_pipeline(config, simulator.step, reader, watch,
                                 first_block=first_block, now=lambda: clock["now"])
        try:
            began = time.perf_counter()
            for tick in range(rounds):
                clock["now"] = start + (tick + 1) * steps * INTERVAL
                await p.round(tick, clock["now"], steps)
            out = _staged_report(p, time.perf_counter() - began, rounds, steps)
        finally:
            await p.grimoire.close()
            p.store.close()
            await reader.aclose()
        out["market_deploy_s"] = round(deploy_s, 2)
        out["blocks_per_round_mean"] = round(p.blocks / max(len(p.round_ms), 1), 1)
        return out

    out = anyio.run(run, backend_options={"use_uvloop": True})
    chain = {"addresses": list(market.contracts), "first_block": first_block,
             "head": evm.head().number}
    return out, chain


# --- the real daemon -------------------------------------------------------------------


def run_daemon(config: Config, stop_after: float) -> dict[str, Any]:
    """Run the Daemon with wiring.setup; per-tick numbers from its gamma tick log lines."""
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    daemon = Daemon(config, HandlerRegistry(), stop_after=stop_after, setup=setup)
    began = time.perf_counter()
    status = anyio.run(daemon.run, backend_options={"use_uvloop": True})
    wall = time.perf_counter() - began
    configure_logging("warning", "json", open(os.devnull, "w"))  # noqa: SIM115
    if status != 0:
        raise SystemExit(f"daemon exited {status}:\n{stream.getvalue()[-3000:]}")
    ticks = [line for line in map(json.loads, stream.getvalue().splitlines())
             if line.get("event") == "tick" and line.get("loop") == "gamma"]
    busy = [t for t in ticks if t.get("chain-capture.logs", 0) > 0]
    errors = [t for t in ticks if t.get("outcome") != "ok"
              or t.get("chain-capture.node_errors")]
    events = sum(t.get("chain-capture.episodes", 0) for t in ticks)
    tick_s = sum(t["duration_ms"] for t in ticks) / 1000
    return {
        "gamma_ticks": len(ticks), "ticks_with_logs": len(busy), "failed_ticks": len(errors),
        "events": events, "gamma_tick_time_s": round(tick_s, 2),
        "events_per_s": round(events / tick_s, 1) if tick_s else 0.0,
        "daemon_wall_s": round(wall, 2),
        "logs_per_busy_tick_mean": (round(float(np.mean([t["chain-capture.logs"]
                                                         for t in busy])), 1) if busy else 0),
        "busy_tick_latency_ms": _pcts([t["duration_ms"] for t in busy]),
    }


def daemon_simulated(folder: Path, seed: int, ticks: int) -> dict[str, Any]:
    return run_daemon(_config(folder, seed), ticks * INTERVAL - INTERVAL / 2)


def daemon_anvil(folder: Path, node: AnvilNode, seed: int, chain: dict[str, Any],
                 blocks_per_tick: int) -> dict[str, Any]:
    config = _config(folder, seed, chain={"mode": "rpc", "max_blocks_per_tick": blocks_per_tick},
                     rpc={"url": node.http_url, "chain_id": 31337,
                          "addresses": chain["addresses"], "start_block": chain["first_block"]})
    blocks = chain["head"] - config.chain.confirmations - chain["first_block"] + 1
    ticks = -(-blocks // blocks_per_tick) + 2
    out = run_daemon(config, ticks * INTERVAL - INTERVAL / 2)
    out["max_blocks_per_tick"] = blocks_per_tick
    return out


def reference_embed(texts: list[str]) -> float:
    """Raw embedder texts/s on grimoire_ingest's synthetic texts: how busy the machine is."""
    embedder = Embedder.load(MODEL_DIR, GrimoireSection().embed_batch_size,
                             compute=embed_compute())
    embedder.embed(texts[:8])  # warm-up
    began = time.perf_counter()
    embedder.embed(texts)
    return round(len(texts) / (time.perf_counter() - began), 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short run (6 + 5 rounds)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sim_rounds, anvil_rounds, anvil_steps = (6, 5, 7) if args.quick else (30, 40, 7)
    configure_logging("warning", "json", open(os.devnull, "w"))  # noqa: SIM115
    result: dict[str, Any] = {"benchmark": "capture", "quick": args.quick, "seed": args.seed}
    texts = [e.text for e in synthetic_episodes(128)]
    result["machine"] = {**machine(), "loadavg_start": [round(x, 2) for x in os.getloadavg()],
                         "reference_embed_texts_per_s_start": reference_embed(texts)}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        result["simulated"] = {
            "staged": staged_simulated(root / "sim-staged", args.seed, sim_rounds),
            "gamma_daemon": daemon_simulated(root / "sim-daemon", args.seed, sim_rounds),
        }
        if find_anvil() is None:
            result["anvil"] = {"skipped": "anvil is not installed (scripts/test installs it)"}
        else:
            with AnvilNode(root / "anvil", timestamp=1_700_000_000) as node:
                staged, chain = staged_anvil(root / "anvil-staged", node, args.seed,
                                             anvil_rounds, anvil_steps)
                per_tick = max(1, round(staged["blocks_per_round_mean"]))
                result["anvil"] = {
                    "staged": staged,
                    "gamma_daemon": daemon_anvil(root / "anvil-daemon", node, args.seed,
                                                 chain, per_tick),
                }
    result["machine"]["reference_embed_texts_per_s_end"] = reference_embed(texts)
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    result["max_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

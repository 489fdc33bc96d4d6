"""Growth over a long simulated run (issue 6): do episodes, semantic entries, LanceDB
versions and disk use stay bounded by the configured policies?

A synthetic episode feed drives Delta on a virtual clock: a real Grimoire (LanceDB
episodes, SQLite semantic store) in a temp dir, episodes shaped like Gamma's (Uniswap V2
Swap and Sync over several pools, Chainlink answers, Aave liquidations, a few reverts and
strategy outcomes, in calm / trending / volatile regimes; a volatile stretch triples the
rate) written straight through EpisodeStore.upsert with random unit vectors: this
measures growth, not embedding (the semantic facts consolidation writes are embedded by
the real model). Each Delta tick runs, in Delta's order: the real ConsolidationEngine,
the CuratorCycle every 50 ticks, EpisodeRetention, and GrimoireMaintenance (decay off:
consolidation decays; optimize daily with a short version retention).

    .venv/bin/python benchmarks/growth.py            # 30 days, ~1,000 episodes a day
    .venv/bin/python benchmarks/growth.py --quick    # 3-day smoke run, 1-day horizon

Prints one JSON object: the per-day curve (episodes, semantic entries by status, LanceDB
versions, disk bytes per store, what retention forgot) and, per series, the growth of the
last week against the first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import structlog
from machine import machine  # benchmarks/ is on sys.path when run

from golem.config import load_config
from golem.consolidation.curator_cycle import CuratorCycle
from golem.consolidation.engine import ConsolidationEngine, EngineParams
from golem.consolidation.replay import ReplayParams
from golem.consolidation.retention import DAY_S, RetentionParams
from golem.consolidation.retention_cycle import EpisodeRetention
from golem.events import EventBus
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.maintenance import GrimoireMaintenance, disk_usage
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import Episode, Pad, Provenance, episode_id
from golem.runtime.handlers import TickContext

REPO = Path(__file__).resolve().parents[1]
T0 = 1_767_225_600.0
DIM = 384
POOLS, FEEDS = 12, 3


class SimClock:
    """Golem time, moved by the benchmark."""

    simulated = True

    def __init__(self, start: float) -> None:
        self.t = start

    def now(self) -> float:
        return self.t


def regime_of(day: int, days: int) -> str:
    """Calm, with a trending week and a volatile stretch (the busy days) two thirds in."""
    volatile = range(int(days * 0.6), int(days * 0.6) + max(1, days // 6))
    if day in volatile:
        return "volatile"
    return "trending" if (day // 5) % 3 == 1 else "calm"


class Feed:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.np = np.random.default_rng(seed)
        rng = self.rng
        self.pools = [f"0x{rng.getrandbits(160):040x}" for _ in range(POOLS)]
        self.feeds = [f"0x{rng.getrandbits(160):040x}" for _ in range(FEEDS)]
        self.lender = f"0x{rng.getrandbits(160):040x}"
        self.n = 0

    def _payload(self, regime: str) -> tuple[str, str, dict[str, Any], str]:
        rng, pools = self.rng, self.pools
        liq = 0.08 if regime == "volatile" else 0.03
        roll = rng.random()
        if roll < 0.55:
            pool = rng.choice(pools[:8]) if rng.random() < 0.8 else rng.choice(pools)
            size = int(rng.lognormvariate(40 + (regime == "volatile"), 1.5))
            args = {"sender": pool, "amount0In": size, "amount1In": 0, "amount0Out": 0,
                    "amount1Out": int(size * rng.uniform(0.9, 1.1)), "to": pool}
            return "swap", "Uniswap V2", {"event": "Swap", "address": pool, "args": args}, \
                f"Uniswap V2 swap at {pool}: {size} in"
        if roll < 0.80:
            pool = rng.choice(pools)
            args = {"reserve0": rng.randint(10**20, 10**22),
                    "reserve1": rng.randint(10**20, 10**22)}
            return "liquidity", "Uniswap V2", {"event": "Sync", "address": pool,
                                               "args": args}, f"Sync at {pool}"
        if roll < 0.95 - liq:
            feed = rng.choice(self.feeds)
            args = {"current": rng.randint(1900, 2100) * 10**8,
                    "roundId": rng.randint(1, 10**6), "updatedAt": rng.randint(10**9, 2 * 10**9)}
            return "oracle", "Chainlink", {"event": "AnswerUpdated", "address": feed,
                                           "args": args}, f"Chainlink answer {args['current']}"
        if roll < 0.95:
            args = {"collateralAsset": self.feeds[0], "debtAsset": self.feeds[1],
                    "user": self.lender, "debtToCover": rng.randint(10**18, 10**21),
                    "liquidatedCollateralAmount": rng.randint(10**18, 10**21),
                    "liquidator": self.lender, "receiveAToken": False}
            return "liquidation", "Aave V3", {"event": "LiquidationCall",
                                              "address": self.lender, "args": args}, \
                f"Aave liquidation {args['debtToCover']}"
        if roll < 0.97:
            return "revert", "Uniswap V2", revert_payload(
                pools[0], "swapExactTokensForETH", pools[1], "sell"), "sell reverted"
        result = rng.choice(["ok", "ok", "reverted"])
        return "strategy_outcome", "golem", outcome_payload(
            rng.choice(["rebalance", "lp_add", "hedge"]), result, rng.uniform(-50, 80)), \
            f"strategy outcome {result}"

    def episodes(self, start: float, end: float, count: int, regime: str) -> list[Episode]:
        out = []
        for t in sorted(self.rng.uniform(start, end) for _ in range(count)):
            self.n += 1
            category, protocol, payload, text = self._payload(regime)
            payload["perceived_regime"] = regime
            block = 19_000_000 + self.n // 3
            block_hash = f"0x{self.rng.getrandbits(256):064x}"
            out.append(Episode(
                id=episode_id(1, block_hash, 0), namespace="bench", chain_id=1,
                block_number=block, block_hash=block_hash, log_index=0, tx_hash=block_hash,
                tick=self.n, observed_at=t, category=category, protocol=protocol,
                text=f"{text} (block {block})", payload=payload,
                curiosity=self.rng.betavariate(2, 5),  # mostly unsurprising
                pad=Pad(self.rng.uniform(-1, 1), self.rng.uniform(-1, 1), 0.0),
                provenance=Provenance(author="bench", process="gamma")))
        return out

    def vectors(self, n: int) -> np.ndarray:
        v = self.np.standard_normal((n, DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)


def versions(data_dir: Path) -> int:
    """LanceDB versions of the episode table: its manifest files."""
    return sum(1 for _ in (data_dir / "episodes").rglob("_versions/*.manifest"))


def growth(curve: list[dict[str, Any]], key: str, week: int) -> dict[str, Any]:
    values = [d[key] for d in curve]
    if len(values) <= 2 * week:
        return {"max": max(values), "final": values[-1]}
    first = values[week] - values[0]
    last = values[-1] - values[-1 - week]
    bounded = last <= max(0.25 * max(first, 0), 0.02 * max(values))
    return {"first_week_growth": first, "last_week_growth": last, "max": max(values),
            "final": values[-1], "bounded": bounded}


class Sim:
    """The stores, Delta's stages and the feed, on one virtual clock."""

    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        path = tmp / "golem.toml"
        path.write_text(f'[golem]\nname = "bench"\ndata_dir = "data"\n[grimoire]\n'
                        f'model_dir = "{REPO / "models" / "all-minilm-l6-v2-int8"}"\n')
        self.args = args
        self.config = load_config(path)
        self.clock = SimClock(T0)
        self.kinds: Counter[str] = Counter()
        self.bus = EventBus(self.clock.now)
        self.bus.subscribe(lambda event, _record: self.kinds.update([event.kind]))
        self.params = RetentionParams(horizon_s=args.horizon_days * DAY_S,
                                      max_episodes=args.cap)
        self.per_day = round(DAY_S / args.interval_s)
        self.feed = Feed(args.seed)
        self.stage_s: Counter[str] = Counter()
        self.forgot: Counter[str] = Counter()
        self.peak_versions = 0
        self.tick = 0

    async def open(self) -> None:
        self.grimoire = g = await Grimoire.open(self.config, now=self.clock.now,
                                                events=self.bus)
        self.engine = ConsolidationEngine(
            g, self.config.data_dir / "consolidation", events=self.bus, params=EngineParams(
                replay=ReplayParams(batch_size=self.args.replay, recent_fraction=0.7),
                seed=1))
        self.curator = CuratorCycle(g, events=self.bus, every=50)
        self.retention = EpisodeRetention(g, cursor=self.engine.cursor, params=self.params)
        self.maintenance = GrimoireMaintenance(
            g, optimize_every=self.per_day, sqlite_every=self.per_day,
            disk_every=self.per_day, decay=False, version_retention_s=1.0)

    async def close(self) -> None:
        self.engine.close()
        await self.grimoire.close()

    async def delta_tick(self, regime: str) -> None:
        """One Delta interval: the feed for it, then Delta's stages in order."""
        g, clock, args = self.grimoire, self.clock, self.args
        self.tick += 1
        rate = args.rate * (3 if regime == "volatile" else 1)
        begin, clock.t = clock.t, clock.t + args.interval_s
        n = int(self.feed.np.poisson(rate * args.interval_s / DAY_S))
        t0 = time.perf_counter()
        eps = self.feed.episodes(begin, clock.t - 1.0, n, regime)
        for s in range(0, len(eps), 64):  # Gamma-sized writes
            chunk = eps[s:s + 64]
            await g.add_episodes(chunk, vectors=self.feed.vectors(len(chunk)))
        t1 = time.perf_counter()
        await self.engine.run(self.tick, clock.t)
        t2 = time.perf_counter()
        if self.curator.due(self.tick):
            await self.curator.run(self.tick, clock.t)
        t3 = time.perf_counter()
        report = await self.retention.run(self.tick, clock.t)
        expired = min(report.expired, report.forgotten)  # the plan forgets expired first
        self.forgot.update(expired=expired, evicted=report.forgotten - expired)
        t4 = time.perf_counter()
        await self.maintenance(TickContext(
            loop="delta", tick=self.tick, scheduled_at=clock.t, deadline_at=clock.t + 1800,
            clock=clock, events=self.bus, seed=1, logger=structlog.get_logger()))
        t5 = time.perf_counter()
        self.stage_s.update(feed=t1 - t0, consolidation=t2 - t1, curator=t3 - t2,
                            retention=t4 - t3, maintenance=t5 - t4)
        self.peak_versions = max(self.peak_versions, versions(self.config.data_dir))

    async def day_point(self, day: int, regime: str, started: float) -> dict[str, Any]:
        stats = await self.grimoire.stats()
        disk = disk_usage(self.config.data_dir)
        point = {
            "day": day + 1, "regime": regime,
            "episodes": stats["episodes"], "entries": stats["entries"].total,
            "entries_by_status": stats["entries"].by_status,
            "lance_versions": versions(self.config.data_dir),
            "lance_versions_peak": self.peak_versions,
            "disk_bytes": disk, "disk_total": sum(disk.values()),
            "forgotten_expired": self.forgot["expired"],
            "forgotten_evicted": self.forgot["evicted"],
            "stage_s_so_far": {k: round(v, 1) for k, v in self.stage_s.items()},
            "wall_s": round(time.perf_counter() - started, 1)}
        self.forgot.clear()
        self.peak_versions = 0
        return point


def bounded(curve: list[dict[str, Any]], week: int = 7) -> dict[str, Any]:
    """Per series (and per store's bytes): the last week's growth against the first."""
    stores = sorted({k for d in curve for k in d["disk_bytes"]})
    flat = [{**d, **{f"disk_{k}": d["disk_bytes"].get(k, 0) for k in stores}} for d in curve]
    keys = ["episodes", "entries", "lance_versions", "disk_total",
            *(f"disk_{k}" for k in stores)]
    return {k: growth(flat, k, week) for k in keys}


async def bench(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))  # errors
    sim = Sim(args, tmp)
    await sim.open()
    curve: list[dict[str, Any]] = []
    started = time.perf_counter()
    try:
        for day in range(args.days):
            regime = regime_of(day, args.days)
            for _ in range(sim.per_day):
                await sim.delta_tick(regime)
            curve.append(await sim.day_point(day, regime, started))
            print(json.dumps(curve[-1]), file=sys.stderr, flush=True)
    finally:
        await sim.close()
    params = sim.params
    return {
        "benchmark": "growth",
        "machine": machine(),
        "days": args.days, "delta_interval_s": args.interval_s, "delta_ticks": sim.tick,
        "episodes_per_day": args.rate, "volatile_rate_multiplier": 3,
        "episodes_written": sim.feed.n, "replay_batch": args.replay,
        "vectors": "random unit vectors written through EpisodeStore.upsert (measures "
                   "growth, not embedding); semantic facts embedded by the real model",
        "policies": {"retention_horizon_days": args.horizon_days, "episode_cap": args.cap,
                     "failure_horizon_days": params.failure_horizon_s / DAY_S,
                     "salient_horizon_days": params.salient_horizon_s / DAY_S,
                     "curator_every": 50, "optimize_every_ticks": sim.per_day,
                     "version_retention_s": 1.0},
        "bounded": bounded(curve),
        "wall_s": round(time.perf_counter() - started, 1),
        "stage_s": {k: round(v, 1) for k, v in sim.stage_s.items()},
        "load_average_1m": round(os.getloadavg()[0], 2),
        "events": dict(sim.kinds),
        "curve": curve,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rate", type=int, default=1_000, help="episodes per simulated day")
    parser.add_argument("--interval-s", type=float, default=7200.0, help="Delta interval")
    parser.add_argument("--horizon-days", type=float, default=14.0)
    parser.add_argument("--cap", type=int, default=20_000, help="episode cap")
    parser.add_argument("--replay", type=int, default=2_000, help="replay batch per run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="3 days, 1-day horizon")
    args = parser.parse_args()
    if args.quick:
        args.days, args.horizon_days, args.cap = 3, 1.0, 2_500
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(bench, args, Path(tmp), backend_options={"use_uvloop": True})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

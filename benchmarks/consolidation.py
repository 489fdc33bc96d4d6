"""One consolidation run over 10k new episodes (issue 6 target: at most 10 s on 2 cores).

The episodes are synthetic but shaped like Gamma's: decoded Uniswap V2 Swap and Sync,
Chainlink AnswerUpdated and Aave LiquidationCall payloads across pools and perceived
regimes, plus revert and strategy-outcome episodes. They are embedded and written with
Grimoire.add_episodes first (not timed); only ConsolidationEngine.run is timed, on a
fresh cursor (every episode new), then a second run over the same episodes through a
fresh cursor (the reinforcement path: stored vectors are kept, nothing is embedded).
Embedding the new facts' texts dominates the first run, so the texts are embedded
again right after, alone, and the load average is printed: on a shared machine the
embedder's speed swings by 10x.

    .venv/bin/python benchmarks/consolidation.py [--episodes 10000]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from machine import machine  # benchmarks/ is on sys.path when run

from golem.config import load_config
from golem.consolidation.engine import ConsolidationEngine, EngineParams
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import outcome_payload, revert_payload
from golem.grimoire.records import Episode, Pad, Provenance, episode_id

REPO = Path(__file__).resolve().parents[1]
T0 = 1_767_225_600.0
REGIMES = ("calm", "trending", "volatile")


def _addr(rng: random.Random) -> str:
    return "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))


def _payload(rng: random.Random, pools: list[str], feeds: list[str], lender: str,
             regime: str) -> tuple[str, str, dict[str, Any], str]:
    roll = rng.random()
    if roll < 0.55:
        pool = rng.choice(pools)
        size = int(rng.lognormvariate(40, 1.5))
        args = {"sender": pool, "amount0In": size, "amount1In": 0, "amount0Out": 0,
                "amount1Out": int(size * rng.uniform(0.9, 1.1)), "to": pool}
        return "swap", "Uniswap V2", {"event": "Swap", "address": pool, "args": args}, \
            f"Uniswap V2 swap at {pool}: {size} in"
    if roll < 0.80:
        pool = rng.choice(pools)
        args = {"reserve0": rng.randint(10**20, 10**22), "reserve1": rng.randint(10**20, 10**22)}
        return "liquidity", "Uniswap V2", {"event": "Sync", "address": pool, "args": args}, \
            f"Sync at {pool}: reserves {args['reserve0']} / {args['reserve1']}"
    if roll < 0.90:
        feed = rng.choice(feeds)
        args = {"current": rng.randint(1900, 2100) * 10**8, "roundId": rng.randint(1, 10**6),
                "updatedAt": rng.randint(10**9, 2 * 10**9)}
        return "oracle", "Chainlink", {"event": "AnswerUpdated", "address": feed,
                                       "args": args}, f"Chainlink answer {args['current']}"
    if roll < 0.95:
        args = {"collateralAsset": feeds[0], "debtAsset": feeds[1], "user": lender,
                "debtToCover": rng.randint(10**18, 10**21),
                "liquidatedCollateralAmount": rng.randint(10**18, 10**21),
                "liquidator": lender, "receiveAToken": False}
        return "liquidation", "Aave V3", {"event": "LiquidationCall", "address": lender,
                                          "args": args}, f"Aave liquidation {args['debtToCover']}"
    if roll < 0.975:
        return "revert", "Uniswap V2", revert_payload(pools[0], "swapExactTokensForETH",
                                                      pools[1], "sell"), "sell reverted"
    result = rng.choice(["ok", "ok", "reverted"])
    return "strategy_outcome", "golem", outcome_payload(
        rng.choice(["rebalance", "lp_add", "hedge"]), result, rng.uniform(-50, 80)), \
        f"strategy outcome {result}"


def synthetic(n: int, seed: int = 11) -> list[Episode]:
    rng = random.Random(seed)
    pools = [_addr(rng) for _ in range(20)]
    feeds = [_addr(rng) for _ in range(3)]
    lender = _addr(rng)
    out = []
    for i in range(n):
        regime = REGIMES[(i // 2000) % len(REGIMES)]
        category, protocol, payload, text = _payload(rng, pools, feeds, lender, regime)
        payload["perceived_regime"] = regime
        block_hash = f"0x{rng.getrandbits(256):064x}"
        out.append(Episode(
            id=episode_id(1, block_hash, 0), namespace="bench", chain_id=1,
            block_number=19_000_000 + i // 3, block_hash=block_hash, log_index=0,
            tx_hash=block_hash, tick=i, observed_at=T0 + 4.0 * i, category=category,
            protocol=protocol, text=f"{text} (block {19_000_000 + i // 3})",
            payload=payload, curiosity=rng.random(),
            pad=Pad(rng.uniform(-1, 1), rng.uniform(-1, 1), 0.0),
            provenance=Provenance(author="bench", process="gamma")))
    return out


async def bench(n: int, tmp: Path) -> dict[str, Any]:
    path = tmp / "golem.toml"
    path.write_text(f'[golem]\nname = "bench"\ndata_dir = "data"\n[grimoire]\n'
                    f'model_dir = "{REPO / "models" / "all-minilm-l6-v2-int8"}"\n')
    config = load_config(path)
    episodes = synthetic(n)
    now = episodes[-1].observed_at + 1.0
    grimoire = await Grimoire.open(config, now=lambda: now)
    try:
        t0 = time.perf_counter()
        for start in range(0, n, 1000):
            await grimoire.add_episodes(episodes[start:start + 1000])
        ingest_s = time.perf_counter() - t0
        params = EngineParams(seed=1)
        engine = ConsolidationEngine(grimoire, tmp / "state1", params=params)
        first = await engine.run(tick=1, now=now)
        engine.close()
        again = ConsolidationEngine(grimoire, tmp / "state2", params=params)
        second = await again.run(tick=2, now=now + 60)
        again.close()
        stats = await grimoire.stats()
        # The same CPU, right after: how long embedding the new facts' texts alone takes
        # (the part of the first run that grows with the number of facts, not episodes).
        texts = [e.text for e in await grimoire.entries()]
        t0 = time.perf_counter()
        await grimoire.embedder.aembed(texts)
        embed_s = time.perf_counter() - t0
        load = os.getloadavg()[0]
    finally:
        await grimoire.close()

    def summary(r: Any) -> dict[str, Any]:
        return {k: v for k, v in vars(r).items() if k != "window"}

    return {
        "benchmark": "consolidation",
        "machine": machine(),
        "episodes": n,
        "setup_ingest_s": round(ingest_s, 2),
        "run_s": round(first.duration_s, 3),
        "target_s": 10.0,
        "first_run": summary(first),
        "fact_texts_embed_s": round(embed_s, 3),
        "run_s_without_fact_embedding": round(first.duration_s - embed_s, 3),
        "load_average_1m": round(load, 2),
        "second_run_s": round(second.duration_s, 3),
        "second_run": summary(second),
        "entries": stats["entries"].total,
        "edges": stats["entries"].edges,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = anyio.run(bench, args.episodes, Path(tmp),
                           backend_options={"use_uvloop": True})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

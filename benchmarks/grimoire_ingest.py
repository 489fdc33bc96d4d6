"""Episode ingest throughput (embed + upsert) against the raw embedder, in one run.

Target (issue 3): ingest throughput at least 0.9 of the raw embedder's. ~5,000
synthetic but varied DeFi event renderings are ingested in calls of 64 episodes
(one embed and one merge_insert commit per call). The raw embedder embeds the same
64 texts right before or after each call (alternating), so the two sides see the
same CPU: on shared 2-core machines throughput swings by 2x within seconds, and
only interleaving gives a stable ratio.

    .venv/bin/python benchmarks/grimoire_ingest.py [--episodes 5000] [--batch 64]

Prints one JSON object. ``synthetic_episodes`` is reused by grimoire_search.py.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from machine import embed_compute, machine  # benchmarks/ is on sys.path when run

from golem.config import GrimoireSection
from golem.grimoire.embedder import Embedder
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.records import Episode, Pad, Provenance, episode_id

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = REPO / GrimoireSection().model_dir
TOKENS = ["WETH", "USDC", "USDT", "DAI", "WBTC", "LINK", "UNI", "AAVE", "stETH", "CRV", "ARB"]


def _addr(rng: random.Random) -> str:
    return "0x" + "".join(rng.choice("0123456789abcdef") for _ in range(40))


def _amount(rng: random.Random) -> str:
    return f"{rng.lognormvariate(3, 2.5):,.{rng.choice([0, 2, 4])}f}"


def _swap(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "swap", "uniswap_v3", (
        f"Uniswap v3 swap in {a}/{b} {rng.choice(['0.05', '0.3', '1'])}% pool: "
        f"{_amount(rng)} {a} -> {_amount(rng)} {b} by {_addr(rng)}, tick "
        f"{rng.randint(-887000, 887000)}, block {block}")


def _liquidation(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "liquidation", "aave_v3", (
        f"Aave v3 liquidation: borrower {_addr(rng)} repaid {_amount(rng)} {a} of debt, "
        f"{_amount(rng)} {b} collateral seized by {_addr(rng)}, health factor "
        f"{rng.uniform(0.8, 1.0):.3f}")


def _curve(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "liquidity", "curve", (
        f"Curve {rng.choice(['3pool', 'tricrypto2', 'stETH/ETH', 'fraxbp'])} AddLiquidity: "
        f"{_amount(rng)} {a} and {_amount(rng)} {b} from {_addr(rng)}, LP minted {_amount(rng)}")


def _oracle(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    old = rng.uniform(0.5, 70000)
    new = old * rng.uniform(0.9, 1.1)
    return "oracle", "chainlink", (
        f"Chainlink {a}/USD answer updated {old:,.2f} -> {new:,.2f} "
        f"({(new / old - 1) * 100:+.2f}%), round {rng.randint(10**5, 10**6)}")


def _flash(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "flash_loan", "balancer", (
        f"Balancer flash loan of {_amount(rng)} {a} to {_addr(rng)}, repaid in the same "
        f"transaction, fee {rng.choice(['0', '0.0001'])}")


def _transfer(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "transfer", "erc20", f"{a} transfer of {_amount(rng)} from {_addr(rng)} to {_addr(rng)}"


def _mint(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    lo = rng.randint(-50000, 50000)
    return "liquidity", "uniswap_v3", (
        f"Uniswap v3 mint in {a}/{b}: range [{lo}, {lo + rng.choice([60, 200, 2000])}], "
        f"liquidity {rng.randint(10**12, 10**18)} by {_addr(rng)}")


def _gas(rng: random.Random, a: str, b: str, block: int) -> tuple[str, str, str]:
    return "gas", "compound", (
        f"Base fee {rng.uniform(5, 300):.1f} gwei at block {block}, "
        f"{rng.uniform(-60, 400):+.0f}% against the hourly mean; compound cToken "
        f"{a} utilisation {rng.uniform(0.2, 0.98):.2%}")


# Swaps are the most common event, as on a real chain.
RENDERERS = (_swap, _swap, _swap, _liquidation, _curve, _oracle, _flash, _transfer, _mint, _gas)


def render(rng: random.Random, block: int) -> tuple[str, str, str]:
    """(category, protocol, text): one event rendered the way capture will render it."""
    a, b = rng.sample(TOKENS, 2)
    return rng.choice(RENDERERS)(rng, a, b, block)


def synthetic_episodes(n: int, *, seed: int = 7, namespace: str = "main",
                       other_every: int = 0) -> list[Episode]:
    """n varied episodes; every ``other_every``-th goes to namespace "other" (0: none)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        block = 19_000_000 + i // 3
        block_hash = f"0x{rng.getrandbits(256):064x}"
        category, protocol, text = render(rng, block)
        ns = "other" if other_every and i % other_every == 0 else namespace
        out.append(Episode(
            id=episode_id(1, block_hash, i % 3), namespace=ns, chain_id=1,
            block_number=block, block_hash=block_hash, log_index=i % 3,
            tx_hash=f"0x{rng.getrandbits(256):064x}", tick=i, observed_at=1.7e9 + 4.0 * i,
            category=category, protocol=protocol, text=text,
            payload={"block": block, "kind": category}, curiosity=rng.random(),
            pad=Pad(rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(-1, 1)),
            provenance=Provenance(author=ns, process="gamma")))
    return out


def peak_rss_mb() -> float:
    """VmHWM of this process. Not ru_maxrss: that survives exec, so a child started by a
    big parent would report the parent's size."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64, help="episodes per ingest call")
    parser.add_argument("--embed-batch", type=int, default=GrimoireSection().embed_batch_size,
                        help="texts per onnxruntime run (config grimoire.embed_batch_size)")
    args = parser.parse_args()
    episodes = synthetic_episodes(args.episodes)
    started = time.perf_counter()
    embedder = Embedder.load(MODEL_DIR, args.embed_batch, compute=embed_compute())
    load_s = time.perf_counter() - started
    raw_s = ingest_s = upsert_s = 0.0
    upserts: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = EpisodeStore.open(Path(tmp) / "episodes", embedder.signature,
                                  index_min_rows=GrimoireSection().index_min_rows)
        embedder.embed([e.text for e in episodes[:64]])  # warm-up
        for n, start in enumerate(range(0, len(episodes), args.batch)):
            chunk = episodes[start:start + args.batch]
            texts = [e.text for e in chunk]
            for side in ((0, 1) if n % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                if side == 0:
                    embedder.embed(texts)
                    raw_s += time.perf_counter() - t0
                else:
                    vectors = embedder.embed(texts)
                    t1 = time.perf_counter()
                    store.upsert(chunk, vectors)
                    t2 = time.perf_counter()
                    ingest_s += t2 - t0
                    upsert_s += t2 - t1
                    upserts.append(t2 - t1)
        stored = store.count()
        optimize = store.optimize()
    count = len(episodes)
    result = {
        "benchmark": "grimoire_ingest",
        "machine": machine(),
        "episodes": count,
        "stored": stored,
        "ingest_batch": args.batch,
        "embed_batch_size": embedder.batch_size,
        "model_load_s": round(load_s, 3),
        "raw_embed_texts_per_s": round(count / raw_s, 1),
        "ingest_episodes_per_s": round(count / ingest_s, 1),
        "ratio": round(raw_s / ingest_s, 3),
        "target_ratio": 0.9,
        "upsert_ms": {"mean": round(upsert_s / len(upserts) * 1000, 2),
                      "p50": round(float(np.percentile(upserts, 50)) * 1000, 2),
                      "p95": round(float(np.percentile(upserts, 95)) * 1000, 2),
                      "last": round(upserts[-1] * 1000, 2)},
        "upsert_share_of_ingest": round(upsert_s / ingest_s, 3),
        "optimize_after": optimize,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

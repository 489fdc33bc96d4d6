"""RSS over many Gamma-sized episode writes: the EpisodeStore's bounded LanceDB caches
against LanceDB's default session (6 GB index cache, 1 GB metadata cache).

Every small merge_insert adds a version and a fragment whose metadata LanceDB caches;
with the default session that cache grows with the run. Each side runs in its own
fresh process (RSS is per process): `writes` upserts of 8 episodes with random unit
vectors, a vector search every 50 writes, RSS sampled every `every` writes.

    .venv/bin/python benchmarks/episode_writes_rss.py [--writes 1500]

Prints one JSON object; the target is that the bounded side plateaus.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.records import Episode
from golem.grimoire.signature import ModelSignature

DIM = 384


def rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return -1


def episodes(i: int) -> list[Episode]:
    return [Episode(id=f"{i}-{j}", namespace="bench", chain_id=1, block_number=i,
                    block_hash=f"0x{i:064x}", log_index=j, tx_hash=f"0x{i:064x}", tick=i,
                    observed_at=float(i), category="swap", protocol="Uniswap V2",
                    text="Uniswap V2 Swap on 0x6D41...a6e1: 1.5 WETH in, 3,000 USDC out " * 2,
                    payload={"event": "Swap"}) for j in range(8)]


def side(bounded: bool, writes: int, every: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(0)
    signature = ModelSignature("bench", "0" * 64, DIM, "1" * 64)
    with tempfile.TemporaryDirectory() as tmp:
        caches = {} if bounded else {"index_cache_mb": 6 << 10, "metadata_cache_mb": 1 << 10}
        store = EpisodeStore.open(Path(tmp), signature, index_min_rows=10**9, **caches)
        curve = [(0, rss_mb())]
        for i in range(1, writes + 1):
            v = rng.standard_normal((8, DIM)).astype(np.float32)
            store.upsert(episodes(i), v / np.linalg.norm(v, axis=1, keepdims=True))
            if i % 50 == 0:
                store.search_vector(v[0], 10, ["bench"])
            if i % every == 0:
                curve.append((i, rss_mb()))
    return curve


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=1500)
    ap.add_argument("--every", type=int, default=300)
    ap.add_argument("--side", choices=("bounded", "default"))
    args = ap.parse_args()
    if args.side:
        print(json.dumps(side(args.side == "bounded", args.writes, args.every)))
        return
    out: dict[str, object] = {"benchmark": "episode_writes_rss", "writes": args.writes,
                              "rows_per_write": 8}
    for name in ("default", "bounded"):
        run = subprocess.run([sys.executable, __file__, "--side", name, "--writes",
                              str(args.writes), "--every", str(args.every)],
                             capture_output=True, text=True, check=True)
        curve = json.loads(run.stdout.strip().splitlines()[-1])
        out[name] = {"rss_mb_by_writes": curve, "growth_mb": curve[-1][1] - curve[0][1],
                     "last_third_growth_mb": curve[-1][1] - curve[2 * len(curve) // 3][1]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()

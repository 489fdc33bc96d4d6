"""RSS of the episode store under Gamma-sized writes with and without its maintenance.

The daemon's RSS climbs faster once the episode table is indexed and maintained; this
separates the suspects. Each variant runs in its own fresh process (RSS is per
process): `writes` upserts of 8 episodes with random unit vectors, a vector search
every 6 writes (Theta's pace against Gamma's), and every 60 writes (a Delta tick):

- none: no maintenance at all;
- optimize: `optimize()` (compaction, index folding, versions kept 1 wall hour);
- optimize0: `optimize(0)` (the same, old versions dropped at once);
- index: `maybe_build_index()` as Delta runs it, with the IVF index trained from
  2,000 rows.

    .venv/bin/python benchmarks/episode_maintenance_rss.py [--writes 1200]

Prints one JSON object: per variant, (writes, RSS MB, versions kept) every 200 writes.
Since 2026-11-22 `optimize()` and `maybe_build_index()` reconnect to LanceDB (a fresh
session) after their work, which is what brought the "index" curve down; README.md has
the curves before and after.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from episode_writes_rss import DIM, episodes, rss_mb

from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.signature import ModelSignature

VARIANTS = ("none", "optimize", "optimize0", "index")


def side(variant: str, writes: int) -> list[tuple[int, int, int]]:
    rng = np.random.default_rng(0)
    signature = ModelSignature("bench", "0" * 64, DIM, "1" * 64)
    with tempfile.TemporaryDirectory() as tmp:
        store = EpisodeStore.open(Path(tmp), signature,
                                  index_min_rows=2_000 if variant == "index" else 10**9)
        curve = []
        for i in range(1, writes + 1):
            v = rng.standard_normal((8, DIM)).astype(np.float32)
            store.upsert(episodes(i), v / np.linalg.norm(v, axis=1, keepdims=True))
            if i % 6 == 0:
                store.search_vector(v[0], 10, ["bench"])
            if i % 60 == 0:
                if variant == "optimize":
                    store.optimize()
                elif variant == "optimize0":
                    store.optimize(0.0)
                elif variant == "index":
                    store.maybe_build_index()
            if i % 200 == 0:
                curve.append((i, rss_mb(), len(store._table.list_versions())))
        return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1200)
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        sys.stdout.write("\n" + json.dumps(side(args.variant, args.writes)) + "\n")
        return
    out = {}
    for variant in args.variants.split(","):
        run = subprocess.run([sys.executable, __file__, "--variant", variant,
                              "--writes", str(args.writes)],
                             capture_output=True, text=True, check=True)
        out[variant] = json.loads(run.stdout.strip().splitlines()[-1])  # after any log lines
    json.dump({"writes": args.writes, "rss_mb_versions": out}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

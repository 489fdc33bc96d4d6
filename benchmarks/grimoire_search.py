"""Episode vector search at 10k and 100k rows, and peak RSS with the model loaded.

Targets (issue 3): recall p95 <= 25 ms at 100k including query embedding, at most
1.5x a bare LanceDB vector search on the same table; peak RSS <= 350 MB with the
model loaded and 100k episodes.

Stores are built by ``build_store(n, dir)``: the first ``REAL`` episodes carry
real embeddings of varied synthetic DeFi renderings; the bulk reuses those texts
with cheap synthetic vectors (a real vector plus noise, normalised), so the
vector distribution stays clustered like real embeddings. Ten percent of rows are
in another namespace, and every query prefilters on ``namespace IN ('main')``.
Bare and EpisodeStore searches alternate query by query (shared CPUs drift).
Peak RSS is measured in a fresh process that only loads the model, opens the
100k store and answers queries (the build itself is not what a golem runs).

    .venv/bin/python benchmarks/grimoire_search.py [--sizes 10000,100000] [--queries 200]

Prints one JSON object. ``build_store``, ``embedder``, ``time_calls`` and
``summary`` are importable (the recall benchmark builds on them).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from machine import embed_compute, machine  # benchmarks/ is on sys.path when run

from golem.config import GrimoireSection
from golem.grimoire.embedder import Embedder
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.episodes_layout import read_meta
from golem.grimoire.episodes_schema import ROW_COLUMNS
from golem.runtime.heap import tune_heap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grimoire_ingest import MODEL_DIR, peak_rss_mb, synthetic_episodes

REAL = 3000  # episodes with real embeddings; the rest get synthetic vectors
QUERIES = [
    "large WETH to USDC swap on uniswap", "aave liquidation with low health factor",
    "chainlink price drop for ETH", "flash loan from balancer", "gas price spike",
    "curve liquidity added to 3pool", "concentrated liquidity position minted",
    "big stablecoin transfer", "WBTC sold for DAI", "oracle update above 5 percent",
]
CFG = GrimoireSection()
EMBED_BATCH = [CFG.embed_batch_size]  # --embed-batch overrides before the first load


@cache
def embedder() -> Embedder:
    """One model per process, loaded on first use."""
    return Embedder.load(MODEL_DIR, EMBED_BATCH[0], compute=embed_compute())


@cache
def _real_vectors(real: int) -> np.ndarray:
    return embedder().embed([e.text for e in synthetic_episodes(real, other_every=10)])


def build_store(n: int, directory: Path, *, real: int = REAL, write_batch: int = 10_000,
                index_min_rows: int = CFG.index_min_rows) -> EpisodeStore:
    """An n-episode store in ``directory``: real embeddings for min(n, real) rows, the bulk
    synthetic; vector index built if n >= index_min_rows; optimized."""
    episodes = synthetic_episodes(n, other_every=10)
    base = _real_vectors(min(real, n))
    store = EpisodeStore.open(directory, embedder().signature, index_min_rows=index_min_rows)
    rng = np.random.default_rng(n)
    for start in range(0, n, write_batch):
        stop = min(start + write_batch, n)
        rows = np.arange(start, stop)
        vectors = base[rows % len(base)].copy()
        bulk = rows >= len(base)
        noise = rng.standard_normal((int(bulk.sum()), vectors.shape[1])).astype(np.float32)
        vectors[bulk] += 0.6 * noise / np.sqrt(vectors.shape[1])
        store.upsert(episodes[start:stop], vectors)
    store.maybe_build_index()
    store.optimize(older_than_s=0)
    return store


def time_calls(fns: Sequence[Callable[[Any], object]], inputs: Sequence[Any],
               warmup: int = 5) -> list[list[float]]:
    """Seconds per call for each fn over the inputs, alternating which fn goes first."""
    for x in inputs[:warmup]:
        for fn in fns:
            fn(x)
    samples: list[list[float]] = [[] for _ in fns]
    for i, x in enumerate(inputs):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            started = time.perf_counter()
            fns[j](x)
            samples[j].append(time.perf_counter() - started)
    return samples


def summary(samples: Sequence[float]) -> dict[str, float]:
    ms = np.asarray(samples) * 1000
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2),
            "p95_ms": round(float(np.percentile(ms, 95)), 2),
            "mean_ms": round(float(ms.mean()), 2)}


def bare_table(store: EpisodeStore, cache_mb: tuple[int, int] | None = None) -> Any:
    """The store's table through a plain LanceDB connection: LanceDB's default caches
    (6 GB index, 1 GB metadata), or ``cache_mb`` (index, metadata) as the store has."""
    import lancedb  # noqa: PLC0415 - the bare side on purpose talks to LanceDB directly

    meta = read_meta(store.directory)
    assert meta is not None
    session = None if cache_mb is None else lancedb.Session(
        index_cache_size_bytes=cache_mb[0] << 20, metadata_cache_size_bytes=cache_mb[1] << 20)
    return lancedb.connect(str(store.directory), session=session).open_table(meta.table)


def measure(n: int, directory: Path, queries: int) -> dict[str, Any]:
    started = time.perf_counter()
    store = build_store(n, directory)
    build_s = time.perf_counter() - started
    table = bare_table(store)
    texts = [QUERIES[i % len(QUERIES)] + f" #{i}" for i in range(queries)]
    vectors = embedder().embed(texts)
    columns = [*ROW_COLUMNS, "_distance"]

    def bare(q: np.ndarray) -> object:
        return (table.search(q).distance_type("cosine")
                .where("namespace IN ('main')", prefilter=True)
                .nprobes(store.nprobes)
                .select(columns).limit(10).to_arrow())

    def ours(q: np.ndarray) -> object:
        return store.search_vector(q, 10, ["main"])

    bare_s, ours_s = time_calls([bare, ours], list(vectors))
    (embed_s,) = time_calls([lambda t: embedder().embed([t])], texts)
    recall = []
    for q in vectors[:50]:
        exact = (table.search(q).distance_type("cosine").bypass_vector_index()
                 .where("namespace IN ('main')", prefilter=True)
                 .select(["id", "_distance"]).limit(10)
                 .to_arrow()["id"].to_pylist())
        found = {e.id for e, _ in store.search_vector(q, 10, ["main"])}
        recall.append(len(found & set(exact)) / 10)
    indexed = any(i.index_type.startswith("Ivf") for i in table.list_indices())
    return {
        "rows": store.count(), "real_embedded_rows": min(REAL, n), "build_s": round(build_s, 1),
        "vector_index": "IVF_RQ cosine (4 bits)" if indexed else "none (exact)",
        "bare_lancedb": summary(bare_s), "episode_store": summary(ours_s),
        "store_over_bare_p95": round(float(np.percentile(ours_s, 95) / np.percentile(bare_s, 95)),
                                     3),
        "query_embedding": summary(embed_s),
        "embed_plus_store_p95_ms": round(float(np.percentile(
            np.asarray(embed_s) + np.asarray(ours_s), 95)) * 1000, 2),
        "recall_at_10_vs_exact": round(float(np.mean(recall)), 3),
    }


def rss_probe(directory: Path, queries: int) -> None:
    """Steady state: model loaded, 100k store open, queries answered. Prints JSON.
    The heap is tuned as the golem command tunes it (unless the environment says), and
    the store's caches are the config's. The queries are varied (fresh renderings of
    the stored kinds of events): ten query texts reach a tenth of the vector index's
    partitions, and the index cache then looks ~40 MB lighter than over a long run."""
    heap = tune_heap(os.environ)
    store = EpisodeStore.open(directory, embedder().signature,
                              index_min_rows=CFG.index_min_rows,
                              index_cache_mb=CFG.lance_index_cache_mb,
                              metadata_cache_mb=CFG.lance_metadata_cache_mb)
    for episode in synthetic_episodes(queries, seed=5):
        q = embedder().embed([episode.text])[0]
        store.search_vector(q, 10, ["main"])
        store.search_text(episode.text[:60], 10, ["main"])
    batch = [e.text for e in synthetic_episodes(256, seed=99)]
    for start in range(0, len(batch), 64):  # a few Gamma-sized ingest calls too
        embedder().embed(batch[start:start + 64])
    print(json.dumps({"rows": store.count(), "peak_rss_mb": round(peak_rss_mb(), 1),
                      "heap_tuned": heap}))


def probe(directory: Path, queries: int, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--rss-probe", str(directory), "--queries", str(queries),
         "--embed-batch", str(EMBED_BATCH[0])],
        capture_output=True, text=True, check=True, env={**os.environ, **env})
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--embed-batch", type=int, default=CFG.embed_batch_size)
    parser.add_argument("--rss-probe", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    EMBED_BATCH[0] = args.embed_batch
    if args.rss_probe:
        rss_probe(args.rss_probe, args.queries)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    result: dict[str, Any] = {
        "benchmark": "grimoire_search", "machine": machine(),
        "data": f"first {REAL} rows: real embeddings of synthetic DeFi renderings; the rest: "
                "synthetic vectors (a real vector + noise, normalised); 10% other namespace",
        "k": 10, "prefilter": "namespace IN ('main')", "nprobes": 20,
        "index_min_rows": CFG.index_min_rows, "embed_batch_size": EMBED_BATCH[0],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            result[f"n_{n}"] = measure(n, Path(tmp) / f"ep{n}", args.queries)
        biggest = Path(tmp) / f"ep{max(sizes)}"
        result["steady_state_rss"] = {
            "default": probe(biggest, args.queries),
            "MALLOC_ARENA_MAX=2": probe(biggest, args.queries, MALLOC_ARENA_MAX="2"),
            "target_mb": 350,
        }
    result["build_process_peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

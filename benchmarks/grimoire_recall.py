"""The full ``Grimoire.recall`` path at 10k and 100k episodes, against bare LanceDB.

Target (issue 21): recall p95 <= 30 ms at 100k including query embedding. Issue 3's
targets, which issue 21 replaced, are still reported: p95 <= 25 ms, and at most 1.5x a
bare LanceDB vector search on the same table in the same run.

Recall does more than one vector search: it embeds the query, takes dense and
full-text candidates from the episode table and the semantic store, fuses them,
scores them, looks for anti-knowledge, and records access. So two ratios are
reported: against the bare search alone (the issue's baseline) and against bare
search plus the same query embedding (what recall adds on top of the
unavoidable work). The bare search runs at the store's LanceDB cache budget (the
ratios) and at LanceDB's default caches (reported beside them). Each query runs
recall and both bare searches back to back, in rotation (the 2-core machine drifts).
Query texts are unique per size (the embedder remembers recent queries), and each size
runs in its own process, with the glibc heap tuned as the golem command tunes it (two
arenas cost recall ~1.5 ms against glibc's default; runs before 2026-11-26's third
session had the default, so they read that much faster than a golem), and, since the
twentieth session, the queries run with the stores' and model's objects frozen out of
the cyclic collector, as the golem's loops do (golem.runtime.heap.long_lived_heap).

    .venv/bin/python benchmarks/grimoire_recall.py [--sizes 10000,100000] [--queries 200]
        [--data-dir DIR] [--candidates N]   # build the stores once there and reuse them

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from machine import machine  # benchmarks/ is on sys.path when run

from golem.config import parse_config
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.grimoire import EPISODES_DIR, SEMANTIC_FILE, Grimoire
from golem.grimoire.records import EntryType, MemoryType, SemanticEntry
from golem.grimoire.semantic import SemanticStore
from golem.runtime.heap import long_lived_heap, tune_heap

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grimoire_ingest import peak_rss_mb
from grimoire_search import CFG, QUERIES, bare_table, build_store, embedder, summary

ENTRIES = 1000
NOW = 1_767_225_600.0
FACTS = [
    "Whale swaps on {p} move the price by about {i} percent",
    "Liquidations on aave cluster within {i} blocks after a chainlink update for {p}",
    "Gas on mainnet is cheapest around {i}:00 UTC when {p} is quiet",
    "Never provide liquidity to {p} when TVL is under {i}00k USDC",
    "Token 0x{i:040x} is a honeypot: every sell reverts",
]
POOLS = ["ETH/USDC", "WBTC/ETH", "DAI/USDC", "stETH/ETH", "ARB/USDC"]


def seed_entries(path: Path) -> None:
    texts = [FACTS[i % len(FACTS)].format(p=POOLS[i % len(POOLS)], i=i) for i in range(ENTRIES)]
    vectors = embedder().embed(texts)
    entries = [SemanticEntry(
        id=f"fact-{i}", namespace="main", text=text,
        entry_type=EntryType.ANTI_KNOWLEDGE if "honeypot" in text else EntryType.INSIGHT,
        memory_type=MemoryType.FACT, created_at=NOW - i * 600, confidence=0.7)
        for i, text in enumerate(texts)]
    store = SemanticStore.open(path, embedder().signature.id, embedder().signature.dim)
    try:
        store.put(entries, vectors)
    finally:
        store.close()


def open_or_build(n: int, data_dir: Path) -> tuple[EpisodeStore, float]:
    """The n-episode store and semantic entries in data_dir, built unless a finished
    build is there already (a ``built`` marker is written last)."""
    started = time.perf_counter()
    marker = data_dir / "built"
    if marker.is_file():
        store = EpisodeStore.open(data_dir / EPISODES_DIR, embedder().signature,
                                  index_min_rows=CFG.index_min_rows)
        store.maybe_build_index()  # an index of an older kind is trained again
        return store, 0.0
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    store = build_store(n, data_dir / EPISODES_DIR)
    seed_entries(data_dir / SEMANTIC_FILE)
    marker.write_text(f"{n}\n")
    return store, time.perf_counter() - started


def measure(n: int, data_dir: Path, queries: int, candidates: int | None = None,
            ) -> dict[str, Any]:
    store, build_s = open_or_build(n, data_dir)
    grimoire_lines = f"[grimoire]\ncandidates = {candidates}\n" if candidates else ""
    config = parse_config(f'[golem]\nname = "main"\ndata_dir = "{data_dir}"\n{grimoire_lines}')
    semantic = SemanticStore.open(data_dir / SEMANTIC_FILE, embedder().signature.id,
                                  embedder().signature.dim)
    grimoire = Grimoire(cfg=config.grimoire, data_dir=data_dir, embedder=embedder(),
                        episodes=store, semantic=semantic, now=lambda: NOW)
    cfg = config.grimoire
    # The bare search at the store's cache budget is the baseline: the budget is a
    # deployment setting (it holds the RSS target) and binds any search of this table. The
    # same search at LanceDB's default caches (6 GB: the whole index stays cached) is
    # reported beside it.
    tables = {"budget": bare_table(store, (cfg.lance_index_cache_mb, cfg.lance_metadata_cache_mb)),
              "default": bare_table(store)}
    # Texts unique to this size: the embedder remembers recent queries (Theta repeats its
    # own), and recall at the second size must not find them embedded by the first.
    texts = [QUERIES[i % len(QUERIES)] + f" #{n}-{i}" for i in range(queries)]
    warmup = [QUERIES[i] + f" warm-up {n}" for i in range(5)]

    def bare(table: Any, vector: np.ndarray) -> Any:
        """The bare search, not yet run."""
        return (table.search(vector).distance_type("cosine")
                .where("namespace IN ('main')", prefilter=True)
                .nprobes(store.nprobes).limit(10))

    async def timed_recall(text: str) -> tuple[float, bool]:
        t0 = time.perf_counter()
        result = await grimoire.recall(text, k=10, namespace="main")
        return time.perf_counter() - t0, result.refused

    def timed_bare(name: str, text: str) -> tuple[float, float]:
        """(query embedding, bare search) seconds."""
        t0 = time.perf_counter()
        vector = embedder().embed([text])[0]
        t1 = time.perf_counter()
        bare(tables[name], vector).to_arrow()
        return t1 - t0, time.perf_counter() - t1

    async def run() -> tuple[dict[str, list[float]], int]:
        samples: dict[str, list[float]] = {"budget": [], "default": [], "embed": [],
                                           "recall": []}
        refused = 0
        steps = ["recall", "budget", "default"]
        for i, text in enumerate([*warmup, *texts]):
            took: dict[str, float] = {}
            for step in steps[i % 3:] + steps[:i % 3]:  # each goes first a third of the time
                if step == "recall":
                    took["recall"], was_refused = await timed_recall(text)
                else:
                    embed_s, took[step] = timed_bare(step, text)
                    took.setdefault("embed", embed_s)
            if i >= len(warmup):
                refused += was_refused
                for name, value in took.items():
                    samples[name].append(value)
        return samples, refused

    with long_lived_heap():  # as the golem's loops run: start-up's objects frozen
        samples, refused = anyio.run(run, backend_options={"use_uvloop": True})
    plan = bare(tables["budget"], embedder().embed([texts[0]])[0]).analyze_plan()
    probed: dict[str, str] = {}
    for key, value in re.findall(r"(partitions_searched|index_comparisons)=([\d.]+ ?K?)", plan):
        probed.setdefault(key, value)  # the first of each: the vector index's own counts
    semantic.close()
    p95 = {name: float(np.percentile(values, 95)) for name, values in samples.items()}
    embed = np.asarray(samples["embed"])
    with_embed = {name: float(np.percentile(np.asarray(samples[name]) + embed, 95))
                  for name in ("budget", "default")}
    return {
        "episodes": n, "semantic_entries": ENTRIES, "build_s": round(build_s, 1),
        "candidates": cfg.candidates,
        "cache_mb": {"index": cfg.lance_index_cache_mb, "metadata": cfg.lance_metadata_cache_mb},
        "bare_lancedb_search": summary(samples["budget"]),
        "bare_lancedb_search_default_caches": summary(samples["default"]),
        "query_embedding": summary(samples["embed"]), "recall": summary(samples["recall"]),
        "refused": refused,
        # Partitions an nprobes-limited search probed: ~nprobes when the IVF index is healthy
        # (a handful means optimize() merged the partitions and every search scans all rows).
        "dense_search_probed": probed,
        "recall_over_bare_p95": round(p95["recall"] / p95["budget"], 2),
        "recall_over_bare_plus_embedding_p95": round(p95["recall"] / with_embed["budget"], 2),
        "default_caches": {
            "recall_over_bare_p95": round(p95["recall"] / p95["default"], 2),
            "recall_over_bare_plus_embedding_p95": round(p95["recall"] / with_embed["default"],
                                                         2)},
        "target_p95_30ms_met": p95["recall"] * 1000 <= 30.0,  # issue 21
        "target_p95_25ms_met": p95["recall"] * 1000 <= 25.0,  # issue 3's, replaced
        "target_ratio_1_5_met": {
            "bare": p95["recall"] / p95["budget"] <= 1.5,
            "bare_plus_embedding": p95["recall"] / with_embed["budget"] <= 1.5},
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=None,
                        help="grimoire.candidates for recall (default: the config's default)")
    parser.add_argument("--data-dir", type=Path,
                        help="keep the built stores here (one sub-directory per size) and "
                             "reuse them on later runs; default: a temporary directory")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {}
    if len(sizes) > 1:
        # One process per size: with the first size's stores still open, the second's
        # recall p95 read ~1.7 ms slower than alone.
        for n in sizes:
            child = [sys.executable, __file__, "--sizes", str(n), "--queries", str(args.queries),
                     *(["--data-dir", str(args.data_dir)] if args.data_dir else []),
                     *(["--candidates", str(args.candidates)] if args.candidates else [])]
            done = subprocess.run(child, check=True, capture_output=True, text=True)
            results[str(n)] = json.loads(done.stdout)["sizes"][str(n)]
    else:
        n = sizes[0]
        heap = tune_heap(os.environ)  # as the golem command: before the model and stores
        if args.data_dir is not None:
            results[str(n)] = measure(n, args.data_dir / f"recall{n}", args.queries,
                                      args.candidates)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                results[str(n)] = measure(n, Path(tmp), args.queries, args.candidates)
        results[str(n)]["peak_rss_mb"] = round(peak_rss_mb(), 1)
        results[str(n)]["heap_tuned"] = heap
    out = {"benchmark": "grimoire_recall", "machine": machine(), "sizes": results,
           "note": "each size runs in its own process; its peak RSS includes building the "
                   "stores (see grimoire_search.py for the steady-state probe)"}
    sys.stdout.write(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

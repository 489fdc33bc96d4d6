"""Training the episode vector index on a real golem's table: LanceDB's kmeans defaults
against the store's settings, time and recall, in the same run.

A long life retrains the vector index whenever its delta segments pile up (about every
2 golem hours on the default market once the table is at the retention cap). This takes
a golem's episode table (a data dir from `benchmarks/lifetime.py` or any `golem run`),
snapshots it once per trial (the source may be a running golem's: a copy that catches
a file mid-removal is taken again), and trains both settings one after the other on
their own copies of that snapshot (the table's state matters: see the README), with
the golem's bounded LanceDB caches; each then answers held-out queries (the vectors of
the newest rows, left out of the search by an id filter), scored against an exact
cosine search over the same rows (recall@10 counts hits at least as close as the exact
10th neighbour, so duplicate vectors do not count as misses).

    .venv/bin/python benchmarks/index_training.py --data-dir /work/life30/data [--trials 3]

Prints one JSON object: per trial and setting the rows, wall and CPU seconds and
recall@10 at nprobes 5 and 20, the pair's ratio; the medians over trials.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lancedb

from golem.config import GrimoireSection
from golem.grimoire.episodes import (
    IVF_MAX_ITERATIONS,
    IVF_SAMPLE_RATE,
    vector_index,
)

LANCE_DEFAULTS = {"max_iterations": 50, "sample_rate": 256}  # lancedb.index.IvfRq's
SETTINGS = {"lance-defaults": LANCE_DEFAULTS,
            "golem": {"max_iterations": IVF_MAX_ITERATIONS, "sample_rate": IVF_SAMPLE_RATE}}
QUERIES = 200
CACHES = GrimoireSection()  # the golem's default LanceDB cache bounds


def episode_table(data_dir: Path) -> Path:
    tables = sorted((data_dir / "episodes").glob("episodes-*.lance"))
    if not tables:
        raise SystemExit(f"no episode table under {data_dir / 'episodes'}: pass a golem "
                         "data dir (the `data` dir of a lifetime run)")
    return tables[-1]


def copy_table(source: Path, target: Path) -> None:
    """Manifests first: the newest one copied refers only to files that exist already,
    and a live golem's cleanup keeps those (it drops versions an hour old)."""
    target.mkdir(parents=True)
    order = ["_versions", "_transactions"]
    order += sorted(p.name for p in source.iterdir() if p.name not in order)
    for name in order:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name,
                            ignore=shutil.ignore_patterns(".tmp*"))


def snapshot(source: Path, work: Path) -> Path:
    """A consistent copy of ``source`` (copied again when it caught a file mid-removal)."""
    for _attempt in range(5):
        shutil.rmtree(work, ignore_errors=True)
        try:
            copy_table(source, work / "t.lance")
            lancedb.connect(str(work)).open_table("t").search().select(["id"]).to_arrow()
            return work
        except (shutil.Error, RuntimeError) as exc:
            print(f"copy caught mid-change ({str(exc)[:60]}...), copying again",
                  file=sys.stderr)
    raise SystemExit("could not take a consistent copy in 5 attempts")


def train(snap: Path, work: Path, setting: dict[str, int],
          queries: np.ndarray, held: list[str]) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(snap, work)
    db = lancedb.connect(str(work), session=lancedb.Session(
        index_cache_size_bytes=CACHES.lance_index_cache_mb << 20,
        metadata_cache_size_bytes=CACHES.lance_metadata_cache_mb << 20))
    table = db.open_table("t")
    rows = int(table.count_rows())
    partitions = max(1, round(rows ** 0.5))
    wall, cpu = time.perf_counter(), time.process_time()
    table.create_index("vector", config=vector_index(
        rows, partitions, max_iterations=setting["max_iterations"],
        sample_rate=setting["sample_rate"]), replace=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"rows": rows, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            **recall(table, queries, held)}


def recall(table: Any, queries: np.ndarray, held: list[str]) -> dict[str, float]:
    where = "id NOT IN (" + ",".join("'" + i.replace("'", "''") + "'" for i in held) + ")"
    everything = table.search().where(where).select(["vector"]).limit(10**7).to_arrow()
    vectors = np.stack(everything["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    sims = unit @ vectors.T
    tenth = -np.sort(-sims, axis=1)[:, 9]
    out = {}
    for nprobes in (5, 20):
        hits = 0
        for i, q in enumerate(queries):
            # as the store searches: twice k read, the k of highest exact cosine kept
            found = (table.search(q).distance_type("cosine").nprobes(nprobes).where(
                where, prefilter=True).limit(2 * 10).select(["vector"]).to_arrow())
            got = np.stack(found["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
            got /= np.linalg.norm(got, axis=1, keepdims=True)
            best = -np.sort(-(got @ unit[i]))[:10]
            hits += int((best >= tenth[i] - 1e-5).sum())
        out[f"recall10_nprobes{nprobes}"] = round(hits / (10 * len(queries)), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True,
                        help="a golem data dir whose episode table to train on")
    parser.add_argument("--trials", type=int, default=3, help="trials per setting")
    args = parser.parse_args()
    source = episode_table(args.data_dir)
    newest = (lancedb.connect(str(source.parent)).open_table(source.name[:-len(".lance")])
              .search().select(["id", "vector", "observed_at"]).limit(10**7).to_arrow()
              .sort_by([("observed_at", "descending")]).slice(0, QUERIES))
    held = newest["id"].to_pylist()
    queries = np.stack(newest["vector"].to_numpy(zero_copy_only=False)).astype(np.float32)
    trials: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="golem-index-training-") as tmp:
        for trial in range(args.trials):
            snap = snapshot(source, Path(tmp) / "snapshot")
            pair = {name: train(snap, Path(tmp) / "work", setting, queries, held)
                    for name, setting in SETTINGS.items()}
            pair["ratio"] = round(pair["lance-defaults"]["wall_s"] / pair["golem"]["wall_s"], 2)
            trials.append(pair)
            print(f"trial {trial + 1}/{args.trials}: {pair}", file=sys.stderr)
    print(json.dumps({
        "source": str(source), "settings": SETTINGS, "trials": trials,
        "median_wall_s": {name: statistics.median(t[name]["wall_s"] for t in trials)
                          for name in SETTINGS},
        "median_ratio_lance_defaults_over_golem": statistics.median(t["ratio"] for t in trials),
    }, indent=1))

if __name__ == "__main__":
    main()

"""Restart time of the simulated market after a long life: snapshot plus tail vs genesis.

Target (issue 20): a restart after 30 golem days takes at most 10 s.

The journal is built by the market alone (`SimulatedSource.advance` every 10 golem
seconds, as Gamma calls it, with no daemon, capture, memory or Theta, and no golem
transactions): what a restart rebuilds is the market's chain, and the journal rows and
snapshots are the ones the daemon writes. To build it in minutes rather than in the
hours of a durable write per step, the benchmark's own capture store runs with
``PRAGMA synchronous=OFF`` while it builds (the rows are the same). At the end capture's
cursor is committed a few blocks below the head, as a running golem leaves it.

Then, in the same run, each restart as the daemon does it (`SimulatedSource.create` on
the store, a fresh process's worth of work: market deployment, snapshot, tail):
``snapshot``, the newest snapshot and the journal's tail; ``older_snapshot``, with
capture's cursor just below the newest snapshot (the worst case: the previous one and a
tail of up to two compaction intervals); ``genesis``, the snapshots moved away (a data
dir written before snapshots existed). Each restored chain's head is checked against the
built one.

    .venv/bin/python benchmarks/restart.py [--days 30] [--data-dir DIR] [--skip-genesis]

`--data-dir` keeps the built journal there (and reuses it when it is complete). Prints
one JSON object.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from machine import machine  # benchmarks/ is on sys.path when run

from golem.chain.cursor import CaptureStore
from golem.chain.reorg import BlockWindow, Header
from golem.chain.snapshots import SNAPSHOT_DIR, read_snapshot, snapshot_files
from golem.chain.source import SimulatedSource
from golem.logging import configure_logging

SEED = 42
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z, bardo.toml's clock.start
STEP_S = 10.0
DONE = "built.json"


def commit_cursor(source: SimulatedSource, number: int) -> None:
    assert source.store is not None
    block = source.evm.block(number)
    window = BlockWindow(1, (Header(block.number, block.hash, block.parent_hash),))
    source.store.commit(source.chain_id, window, source.first_block, 0.0)


def build(folder: Path, days: float) -> dict[str, Any]:
    """A journal of `days` golem days of market steps (reused when already built)."""
    marker = folder / DONE
    if marker.exists():
        built: dict[str, Any] = json.loads(marker.read_text())
        if built.get("days") == days:
            return built
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    store = CaptureStore.open(folder)
    store._conn.execute("PRAGMA synchronous=OFF")  # building only: see the docstring
    started = time.perf_counter()
    try:
        source = SimulatedSource.create(SEED, START, store)
        steps = int(days * 86_400 / STEP_S)
        t = START
        for _ in range(steps):
            t += STEP_S
            source.advance(t, STEP_S)
        commit_cursor(source, source.evm.head().number - 3)
        head = source.evm.head()
    finally:
        store.close()
    built = {"days": days, "steps": steps, "head_block": head.number, "head_hash": head.hash,
             "build_s": round(time.perf_counter() - started, 1),
             "steps_per_s": round(steps / (time.perf_counter() - started))}
    marker.write_text(json.dumps(built))
    return built


def restart(folder: Path, built: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    store = CaptureStore.open(folder)
    try:
        source = SimulatedSource.create(SEED, START, store)
        wall = time.perf_counter() - started
        head = source.evm.head()
    finally:
        store.close()
    assert (head.number, head.hash) == (built["head_block"], built["head_hash"]), \
        "the restarted chain is not the built one"
    restored = source.restored_from
    return {"wall_s": round(wall, 2), "snapshot_steps": restored,
            "tail_steps": built["steps"] - (restored or 0)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=float, default=30.0)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--skip-genesis", action="store_true")
    args = parser.parse_args()
    configure_logging("warning", "json", io.StringIO())
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.data_dir or Path(tmp) / "chain"
        built = build(folder, args.days)
        files = snapshot_files(folder)
        result: dict[str, Any] = {
            "benchmark": "restart", "machine": machine(),
            "cpus": os.cpu_count(), "load_1m": round(os.getloadavg()[0], 2),
            "journal": built, "snapshots": len(files),
            "snapshot_bytes": files[0].stat().st_size if files else 0,
        }
        result["snapshot"] = restart(folder, built)
        if len(files) > 1:
            # capture's cursor one block below the newest snapshot's head (that block's
            # hash is the head's parent hash): the snapshot before it is restored
            work = Path(tmp) / "work"
            shutil.copytree(folder, work)
            number, _, parent, _ = read_snapshot(files[0])["evm"]["head"]
            store = CaptureStore.open(work)
            try:
                window = BlockWindow(1, (Header(number - 1, parent, "0x" + "00" * 32),))
                store.commit(31337, window, 1, 0.0)
            finally:
                store.close()
            result["older_snapshot"] = restart(work, built)
            shutil.rmtree(work)
        aside = Path(tmp) / "aside"
        shutil.move(folder / SNAPSHOT_DIR, aside)
        try:
            if not args.skip_genesis:
                result["genesis"] = restart(folder, built)
        finally:
            if (folder / SNAPSHOT_DIR).exists():
                shutil.rmtree(folder / SNAPSHOT_DIR)
            shutil.move(aside, folder / SNAPSHOT_DIR)
        result["target"] = "restart after 30 golem days <= 10 s"
        result["met"] = result["snapshot"]["wall_s"] <= 10.0
        if "older_snapshot" in result:
            result["met_older_snapshot"] = result["older_snapshot"]["wall_s"] <= 10.0
        if "genesis" in result:
            result["speedup"] = round(result["genesis"]["wall_s"] / result["snapshot"]["wall_s"],
                                      1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

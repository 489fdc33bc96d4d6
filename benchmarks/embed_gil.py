"""What a thread holding the GIL (the simulated market's pure-Python EVM) costs the embedder.

Embeds a golem's stored episode texts in capture's calls (one per tick, batch size 1)
with onnxruntime at 1 and 2 intra-op threads, each call alone, beside a pure-Python busy
thread, and beside it with a 1 ms GIL switch interval (Python's default is 5 ms); the
variants take turns call by call, so they see the same machine.

    .venv/bin/python benchmarks/embed_gil.py --config FILE [--calls 60]

Prints one JSON object: texts per second per variant.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import anyio

from golem.config import load_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.model_choice import choose_compute
from golem.grimoire.records import Episode
from golem.logging import configure_logging

MODES = ("alone", "gil_busy", "gil_busy_switch_1ms")


def _busy(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(200):
            x += i * i


async def _episodes(config_path: Path) -> list[Episode]:
    grimoire = await Grimoire.open(load_config(config_path), now=lambda: 0.0)
    try:
        eps: list[Episode] = await grimoire.scan_episodes(
            lambda batches: [e for batch in batches for e in batch])
    finally:
        await grimoire.close()
    return eps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, required=True, help="a golem that already ran")
    ap.add_argument("--calls", type=int, default=60, help="capture calls to embed")
    args = ap.parse_args()
    configure_logging("warning", "json", sys.stderr)
    eps = anyio.run(_episodes, args.config)
    ticks: dict[int, list[str]] = defaultdict(list)
    for e in sorted(eps, key=lambda e: (e.observed_at, e.block_number, e.log_index)):
        ticks[e.tick].append(e.text)
    calls = list(ticks.values())[: args.calls]
    config = load_config(args.config)
    compute = choose_compute(config).compute  # the golem's own graph
    embedders = {t: Embedder.load(config.grimoire.model_dir, 1, threads=t, compute=compute)
                 for t in (1, 2)}
    variants = [(t, mode) for t in (1, 2) for mode in MODES]
    spent = dict.fromkeys(variants, 0.0)
    default_interval = sys.getswitchinterval()
    for i, texts in enumerate(calls):
        for j in range(len(variants)):
            threads, mode = variants[(i + j) % len(variants)]
            stop, worker = threading.Event(), None
            if mode != "alone":
                worker = threading.Thread(target=_busy, args=(stop,))
                worker.start()
                sys.setswitchinterval(0.001 if mode.endswith("1ms") else default_interval)
            started = time.perf_counter()
            embedders[threads].embed(texts)
            spent[(threads, mode)] += time.perf_counter() - started
            stop.set()
            if worker is not None:
                worker.join()
            sys.setswitchinterval(default_interval)
    n = sum(map(len, calls))
    print(json.dumps({"benchmark": "embed_gil", "texts": n, "calls": len(calls),
                      **{f"threads{t}_{m}": round(n / s, 1) for (t, m), s in spent.items()}},
                     indent=1))


if __name__ == "__main__":
    main()

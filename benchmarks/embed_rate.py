"""The embedder's rate on a golem's real episode texts: inside the daemon and standalone.

Runs the default config (``golem run --stop-after M``, offline cognition) on a fresh
data dir, or reads a golem that already ran (``--config``; then only the standalone
side is measured). The daemon logs what its embedder did at close ("embedder
totals": texts and wall seconds inside the model, every call: capture's batches,
Theta's queries, consolidation's entries). Standalone, in this process, with the
same model, threads and ``embed_batch_size`` as the config:

- ``as_daemon``: the stored episodes in the calls capture made (one call per tick),
- ``batch_1`` / ``batch_32``: the same texts in calls of ~64 (consecutive ticks) with
  ``embed_batch_size`` 1 / 32 (a call is embedded in length order),

each on the texts as stored and, with ``--rerender``, on the same episodes made again
from their payloads by today's renderer (golem.gamma.rendering.rerender): old and new
renderings of the same events in one process. The variants take turns chunk by chunk
(~64 texts, the order rotating), so a machine slowing down shows in all of them; the
median of the rounds is reported.
``daemon_over_standalone`` is the daemon's texts/s over ``as_daemon`` on the stored texts.

    .venv/bin/python benchmarks/embed_rate.py [--minutes 20] [--config FILE] [--rerender]

Prints one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from machine import machine  # benchmarks/ is on sys.path when run

from golem.config import load_config
from golem.gamma.rendering import capture_names, rerender
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.model_choice import choose_compute
from golem.grimoire.records import Episode
from golem.logging import configure_logging

REPO = Path(__file__).resolve().parent.parent
CHUNK = 64  # texts per interleaving unit


def run_golem(minutes: float, directory: Path) -> tuple[Path, dict[str, Any], float]:
    """The default config on a fresh data dir: its config path, the daemon's embedder
    totals and the run's wall seconds."""
    text = (REPO / "bardo.toml").read_text()
    text = text.replace('data_dir = "data"', f'data_dir = "{directory / "data"}"')
    text = text.replace('model_dir = "models/', f'model_dir = "{REPO}/models/')
    config = directory / "bardo.toml"
    config.write_text(text)
    print(f"running the default golem for {minutes:g} golem minutes...", file=sys.stderr,
          flush=True)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "golem", "run", "--config", str(config),
                           "--stop-after", f"{minutes:g}m"], check=True, capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1",
                                                    "MALLOC_ARENA_MAX": "2"})
    wall = time.perf_counter() - started
    for line in (done.stdout + done.stderr).splitlines():
        if '"embedder totals"' in line:
            return config, json.loads(line), wall
    raise SystemExit("the daemon's log has no 'embedder totals' line")


def _chunks(episodes: Sequence[Episode], size: int) -> list[list[list[str]]]:
    """Consecutive ticks' texts, about ``size`` texts a chunk, as capture's calls (one per
    tick)."""
    ticks: dict[int, list[str]] = defaultdict(list)
    for e in episodes:
        ticks[e.tick].append(e.text)
    chunks: list[list[list[str]]] = [[]]
    for texts in ticks.values():
        if sum(map(len, chunks[-1])) >= size:
            chunks.append([])
        chunks[-1].append(texts)
    return chunks


async def _episodes(config_path: Path) -> tuple[list[Episode], Any]:
    config = load_config(config_path)
    grimoire = await Grimoire.open(config, now=lambda: 0.0)
    try:
        eps: list[Episode] = await grimoire.scan_episodes(
            lambda batches: [e for batch in batches for e in batch])
    finally:
        await grimoire.close()
    return eps, config


def measure(config_path: Path, with_rerender: bool, rounds: int) -> dict[str, Any]:
    eps, config = anyio.run(_episodes, config_path)
    eps.sort(key=lambda e: (e.observed_at, e.block_number, e.log_index))
    sets = {"stored": eps}
    if with_rerender:
        names = capture_names(config)
        sets["rerendered"] = [rerender(e, names) or e for e in eps]
    cfg = config.grimoire
    compute = choose_compute(config).compute  # the graph the golem embedded with
    by_batch = {size: Embedder.load(cfg.model_dir, size, compute=compute)
                for size in dict.fromkeys((cfg.embed_batch_size, 1, 32))}
    # Every chunk of ~64 texts is embedded by every variant in turn (the order rotating),
    # so they all see the same machine: shared cores swing 2x within seconds.
    seconds: dict[tuple[str, str], list[float]] = defaultdict(list)
    variants = [(name, variant) for name in sets for variant in ("as_daemon", "batch_1",
                                                                   "batch_32")]
    chunked = {name: _chunks(chosen, CHUNK) for name, chosen in sets.items()}
    for r in range(rounds):
        spent = dict.fromkeys(variants, 0.0)
        for c in range(len(chunked["stored"])):
            turn = (r + c) % len(variants)
            for name, variant in variants[turn:] + variants[:turn]:
                calls = chunked[name][c] if c < len(chunked[name]) else []
                if variant != "as_daemon":  # one call of the chunk's texts
                    calls = [[t for call in calls for t in call]] if calls else []
                embedder = by_batch[32 if variant == "batch_32" else 1 if variant == "batch_1"
                                    else cfg.embed_batch_size]
                started = time.perf_counter()
                for texts in calls:
                    embedder.embed(texts)
                spent[(name, variant)] += time.perf_counter() - started
        for key, value in spent.items():
            seconds[key].append(value)
    out: dict[str, Any] = {"episodes": len(eps), "embed_batch_size": cfg.embed_batch_size,
                           "rounds": rounds}
    for name, chosen in sets.items():
        rates = {variant: [len(chosen) / t for t in seconds[(name, variant)]]
                 for _, variant in variants[:3]}
        out[name] = {"mean_chars": round(sum(len(e.text) for e in chosen) / len(chosen), 1),
                     "calls_as_daemon": len({e.tick for e in chosen}),
                     **{k: round(sorted(v)[len(v) // 2], 1) for k, v in rates.items()},
                     "rounds_texts_per_s": {k: [round(x, 1) for x in v]
                                            for k, v in rates.items()}}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=20.0, help="golem minutes (default 20)")
    ap.add_argument("--config", type=Path, default=None,
                    help="the config file of a golem that already ran (skips the run)")
    ap.add_argument("--rerender", action="store_true",
                    help="also measure the same episodes re-rendered by today's renderer")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    args = ap.parse_args()
    configure_logging("warning", "json", sys.stderr)
    with tempfile.TemporaryDirectory(prefix="golem-embed-rate-") as tmp:
        report: dict[str, Any] = {"benchmark": "embed_rate", "machine": machine()}
        config = args.config
        if config is None:
            config, totals, wall = run_golem(args.minutes, Path(tmp))
            report["daemon"] = {"golem_minutes": args.minutes, "wall_s": round(wall, 1),
                                **{k: totals[k] for k in ("calls", "texts", "chars", "seconds",
                                                          "texts_per_s")}}
        report.update(measure(config, args.rerender, args.rounds))
        if "daemon" in report:
            report["daemon_over_standalone"] = round(
                report["daemon"]["texts_per_s"] / report["stored"]["as_daemon"], 3)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

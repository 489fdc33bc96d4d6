"""Simulated-clock tick throughput of the real daemon with no handlers.

Target (issue: runtime foundation): 10,000 Gamma ticks in simulated mode in
under 5 s, one JSON log line per tick included. Also reports a 30-day run of
the default bardo.toml schedule (Gamma 10 s, Theta 60 s, Delta 600 s).

    .venv/bin/python benchmarks/sim_ticks.py

Prints one JSON object.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import anyio

from golem.config import load_config
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry


def run(stop_after: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text('[golem]\ndata_dir = "data"\n[logging]\nformat = "json"\n')
        config = load_config(path)
        with open(os.devnull, "w") as sink:
            configure_logging("info", "json", sink)
            daemon = Daemon(config, HandlerRegistry(), stop_after=stop_after)
            started = time.perf_counter()
            anyio.run(daemon.run, backend_options={"use_uvloop": True})
            wall = time.perf_counter() - started
    ticks = sum(loop.counters.ticks for loop in daemon.loops)
    return {
        "golem_seconds": stop_after,
        "gamma_ticks": daemon.loops[0].counters.ticks,
        "all_ticks": ticks,
        "wall_s": round(wall, 3),
        "ticks_per_s": round(ticks / wall),
        "us_per_tick": round(wall / ticks * 1e6, 1),
    }


def main() -> int:
    ten_k = run(100_000)
    month = run(30 * 86400)
    result = {
        "benchmark": "sim_ticks",
        "python": sys.version.split()[0],
        "ten_thousand_gamma": ten_k,
        "thirty_days": month,
        "target": "10,000 gamma ticks in < 5 s",
        "target_met": ten_k["gamma_ticks"] == 10_000 and ten_k["wall_s"] < 5.0,
        "max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    sys.stdout.write(json.dumps(result, indent=2) + "\n")
    return 0 if result["target_met"] else 1


if __name__ == "__main__":
    sys.exit(main())

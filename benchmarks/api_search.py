"""Memory search through the operator API under load, against a running simulated golem.

Issue 24: 50 concurrent clients search for 10 s; report p50/p95 latency and whether any
tick missed its deadline meanwhile. The golem first lives one simulated hour at full
speed (default config: simulated chain, offline tier, consolidation, mortality; about
800 episodes and 40 entries), then restarts with the API on and its clock at ``--speed``
golem seconds per wall second, so its loops keep ticking on their schedule while the
searches run. Ticks that missed their deadline (timed_out) or were skipped for an overrun
are read from ``/v1/status`` before and after the storm.

    .venv/bin/python benchmarks/api_search.py [--clients 50] [--seconds 10] [--speed 6]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from golem.testing.api_golem import ApiGolem

REPO = Path(__file__).resolve().parents[1]
QUERIES = ["price of WETH in the pool", "large swap moved the price", "liquidity removed",
           "gas spikes and failed transactions", "what happened in the volatile regime",
           "USDC reserves fell", "the whale exit", "arbitrage after a price move"]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def deadline_misses(status: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {name: {"ticks": loop.get("ticks", 0), "timed_out": loop.get("timed_out", 0),
                   "skipped_overrun": loop.get("skipped_overrun", 0)}
            for name, loop in status["loops"].items()}


async def storm(g: ApiGolem, clients: int, seconds: float) -> dict[str, Any]:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    stop_at = time.monotonic() + seconds

    async def worker(n: int, client: httpx.AsyncClient) -> None:
        i = n
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            r = await client.post("/v1/memory/search",
                                  json={"query": QUERIES[i % len(QUERIES)], "k": 10})
            latencies.append(time.perf_counter() - started)
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            i += 1

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=g.base_url, headers=g.headers, timeout=120,
                                 limits=limits) as client:
        began = time.monotonic()
        await asyncio.gather(*(worker(n, client) for n in range(clients)))
        elapsed = time.monotonic() - began
    return {"searches": len(latencies), "elapsed_s": round(elapsed, 2),
            "throughput_per_s": round(len(latencies) / elapsed, 1),
            "p50_ms": round(1000 * statistics.median(latencies), 1),
            "p95_ms": round(1000 * percentile(latencies, 0.95), 1),
            "max_ms": round(1000 * max(latencies), 1), "http_status": statuses}


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--speed", type=float, default=6.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-api-bench-") as tmp:
        g = ApiGolem(Path(tmp), REPO / "models" / "all-minilm-l6-v2-int8")
        began = time.monotonic()
        lived = g.run("run", "--stop-after", "1h", timeout=3600)
        if lived.returncode != 0:
            raise SystemExit(f"the golem's first hour failed:\n{lived.stderr[-2000:]}")
        aged_s = time.monotonic() - began
        g.config_path.write_text(g.config_path.read_text().replace(
            "[golem]", f"[clock]\nspeed = {args.speed}\n\n[golem]"))
        with g:
            g.start()
            with httpx.Client(base_url=g.base_url, headers=g.headers, timeout=60) as c:
                before = c.get("/v1/status").json()
                wall0 = time.monotonic()
                result = asyncio.run(storm(g, args.clients, args.seconds))
                load = os.getloadavg()[0]
                time.sleep(1.5)  # the state store flushes golem time every second
                after = c.get("/v1/status").json()
                wall = time.monotonic() - wall0
                stats = c.get("/metrics").text
            code = g.stop()
    ticks_before, ticks_after = deadline_misses(before), deadline_misses(after)
    missed = {name: {k: ticks_after[name][k] - ticks_before[name][k] for k in ticks_after[name]}
              for name in ticks_after}
    episodes = next((line.split()[-1] for line in stats.splitlines()
                     if line.startswith("golem_episodes_total ")), None)
    print(json.dumps({
        "benchmark": "api_search", "clients": args.clients, "seconds": args.seconds,
        "clock_speed": args.speed, "first_hour_wall_s": round(aged_s, 1),
        "loadavg_1m_after": round(load, 2), "cpus": os.cpu_count(),
        "store": {"episodes_written_this_run": episodes,
                  "entries": (before.get("delta") or {}).get("entries")},
        **result,
        "ticks_during_storm": missed,
        # The simulated clock runs at --speed only while every loop waits: a loop held up
        # by the searches shows as golem time falling behind (fewer ticks), not as a miss.
        "golem_s_per_wall_s_during_storm": round(
            (_epoch(after["golem_time"]) - _epoch(before["golem_time"])) / wall, 2),
        "no_tick_missed_its_deadline": all(m["timed_out"] == 0 and m["skipped_overrun"] == 0
                                           for m in missed.values()),
        "golem_exit": code}, indent=2))


if __name__ == "__main__":
    main()

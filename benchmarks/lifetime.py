"""A golem's lifetime at simulated max speed: the default config, end to end (issue 20).

Runs ``golem run --stop-after Dd`` with the default config (``bardo.toml``: simulated
chain, offline cognition) on a fresh data dir and reports:

- ``golem_days_per_wall_hour`` (start-up included, and without it), wall seconds per
  golem hour;
- ``captured_events_per_wall_s``: episodes stored over the run's wall time;
- ``stages_s``: where the wall time went, from the daemon's own log: Gamma's tick counters
  (``market_ms``: the market step and its journal; ``poll_ms``: the follower's round;
  ``perceive_ms``: decoding, perception, rendering, reverts; ``embed_ms``: the episodes'
  embedding; ``store_ms``: the episode write; ``commit_ms``: cursor and beliefs),
  Theta's and Delta's tick durations, and the embedder's own totals (every call:
  capture, Theta's queries, consolidation). Loops overlap (Theta and Delta tick beside
  Gamma), so the stages add up to more than the wall time when they do;
- ``tick_parts_s_per_golem_hour``: the timed parts of every tick line, wall seconds a
  golem hour, keyed "loop/field": each handler's (``delta/delta.ms``: consolidation and
  the store's maintenance) and its stages' (``delta/delta.consolidation_ms``,
  ``delta/delta.maintenance_ms``, ``theta/theta-decision.assemble_ms``, ...);
- ``cpu_s``: the daemon's CPU seconds (user + system, every thread, and its finished
  child processes': the store's folds): on shared cores the wall time swings with other
  work, its CPU time much less;
- ``cpu_system_share`` and ``minor_faults_per_wall_s``: how much of that CPU the kernel
  spent, and the page faults behind much of it (both counted since the twentieth
  session; older segments of a resumed life have none); ``host_memory``: how fast the
  machine gave this benchmark memory touched for the first time, at its start and its
  end, beside a warm copy (``host_memory_probe``): on a host that reclaims idle guest
  memory a golem ran at half speed, so runs compare only when these agree;
- ``rss_mb``: the golem's peak and steady RSS (median and max of the samples of the
  second half of the run, one a second), the daemon's and its child processes' (a
  fold's) together: the peak is the larger of the daemon's VmHWM and the largest such
  sum sampled; ``steady_anon_median``: the daemon's anonymous memory alone (RssAnon),
  the part no file backs (the rest is mostly the libraries' code);
- ``standalone``: the same model and settings embedding a sample of the stored episode
  texts in this process after the run, in the calls capture made (one per Gamma tick);
  ``captured_over_standalone`` is the run's captured events per wall second over that
  rate, ``daemon_embedder_over_standalone`` the daemon's embedder's texts/s over it;
- ``restart_s``: a second start of the same data dir until its first Gamma tick (the
  simulated chain is rebuilt from the data dir first), with ``--restart``; null when
  the golem died (a dead golem's data dir refuses to start);
- ``died``: null, or the cause and golem time of a death before the end (a real outcome:
  the default golem is mortal);
- ``segments``: a life longer than one sitting runs in segments: ``--keep DIR`` saves
  the accounting to DIR/segments.json every 30 s, and after the benchmark (and with it
  the golem) is killed, ``--resume DIR`` restarts the golem from its data dir to the
  same absolute golem time; wall and CPU seconds add up over the segments (each
  segment's start-up, the restart from snapshots, included), so a segmented life's
  rates count its restarts. At most the last 30 s of a killed segment go unaccounted.

The machine is usually shared: the load average at start and end is recorded.

    .venv/bin/python benchmarks/lifetime.py --days 0.25 [--restart] [--keep DIR]
    .venv/bin/python benchmarks/lifetime.py --days 30 --resume DIR   # after a kill

Prints one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from machine import machine  # benchmarks/ is on sys.path when run

from golem.config import load_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.model_choice import choose_compute
from golem.grimoire.records import Episode
from golem.logging import configure_logging
from golem.mortality.death import read_death

REPO = Path(__file__).resolve().parent.parent
GAMMA_STAGES = ("market_ms", "poll_ms", "perceive_ms", "embed_ms", "store_ms", "commit_ms")
PREFIX = "chain-capture."


def write_config(directory: Path, market: str | None = None,
                 lifespan_days: float | None = None, compute: str | None = None) -> Path:
    """The default config with its data dir in ``directory`` and the repo's model;
    ``market``: chain.market_activity instead of the default config's;
    ``lifespan_days``: mortality.lifespan_days instead of the default (30);
    ``compute``: grimoire.embed_compute instead of the default (auto)."""
    text = (REPO / "bardo.toml").read_text()
    if lifespan_days is not None:
        text += f"\n[mortality]\nlifespan_days = {lifespan_days!r}\n"
    text = text.replace('data_dir = "data"', f'data_dir = "{directory / "data"}"')
    text = text.replace('model_dir = "models/', f'model_dir = "{REPO}/models/')
    if compute is not None:
        text = text.replace("[grimoire]\n", f'[grimoire]\nembed_compute = "{compute}"\n', 1)
    if market is not None:
        line = f'market_activity = "{market}"'
        text, found = re.subn(r"(?m)^market_activity = .*$", line, text)
        if not found:
            text = text.replace("[chain]\n", f"[chain]\n{line}\n", 1)
    config = directory / "bardo.toml"
    config.write_text(text)
    return config


class LogTally:
    """Folds the daemon's JSON log lines as they are written (a month is ~10^6 lines)."""

    def __init__(self) -> None:
        self.ticks: Counter[str] = Counter()
        self.tick_ms: dict[str, float] = defaultdict(float)
        self.gamma: dict[str, float] = defaultdict(float)
        self.parts_ms: dict[str, float] = defaultdict(float)  # "loop/key"
        self.episodes = 0
        self.golem_time = ""
        self.first_tick_wall: float | None = None
        self.embedder: dict[str, Any] = {}
        self.stopped: dict[str, Any] = {}
        self.errors = 0

    def state(self) -> dict[str, Any]:
        """What a later segment of the same life adds to (see ``merged``)."""
        return {"ticks": dict(self.ticks), "tick_ms": dict(self.tick_ms),
                "gamma": dict(self.gamma), "parts_ms": dict(self.parts_ms),
                "episodes": self.episodes,
                "golem_time": self.golem_time, "first_tick_wall": self.first_tick_wall,
                "embedder": self.embedder, "stopped": self.stopped, "errors": self.errors}

    @classmethod
    def merged(cls, states: list[dict[str, Any]]) -> LogTally:
        """One tally over segments: counts and seconds summed, the last golem time and
        stop, each segment's start-up summed, the embedder's totals summed."""
        out = cls()
        for st in states:
            out.ticks.update(st["ticks"])
            for key in ("tick_ms", "gamma", "parts_ms"):
                for k, v in st.get(key, {}).items():  # a state before parts_ms has none
                    getattr(out, key)[k] += v
            out.episodes += st["episodes"]
            out.golem_time = st["golem_time"] or out.golem_time
            out.first_tick_wall = (out.first_tick_wall or 0.0) + (st["first_tick_wall"] or 0.0)
            for k, v in st["embedder"].items():
                if k != "texts_per_s":
                    out.embedder[k] = out.embedder.get(k, 0) + v
            out.stopped = st["stopped"] or out.stopped
            out.errors += st["errors"]
        seconds = out.embedder.get("seconds")
        if seconds:
            out.embedder["texts_per_s"] = round(out.embedder["texts"] / seconds, 1)
        return out

    def line(self, raw: str, wall: float) -> None:
        try:
            rec = json.loads(raw)
        except ValueError:
            return
        event = rec.get("event")
        if rec.get("level") in ("error", "critical"):
            self.errors += 1
        if event == "tick":
            loop = str(rec["loop"])
            self.ticks[loop] += 1
            self.tick_ms[loop] += float(rec["duration_ms"])
            self.golem_time = str(rec.get("golem_time", self.golem_time))
            for key, value in rec.items():
                if key.endswith((".ms", "_ms")) and "." in key:
                    self.parts_ms[f"{loop}/{key}"] += float(value)
            if loop == "gamma":
                if self.first_tick_wall is None:
                    self.first_tick_wall = wall
                for stage in GAMMA_STAGES:
                    self.gamma[stage] += float(rec.get(PREFIX + stage, 0.0))
                self.episodes += int(rec.get(PREFIX + "episodes", 0))
        elif event == "embedder totals":
            self.embedder = {k: rec[k] for k in ("calls", "texts", "chars", "seconds",
                                                 "texts_per_s") if k in rec}
        elif event == "golem stopped":
            self.stopped = rec


def _rss_kb(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


SEGMENTS_FILE = "segments.json"
RSS_EVERY_S = 10  # RSS samples kept for the life's steady state (one a second are read)


def _tree_rss_kb(pid: int) -> int | None:
    """VmRSS of a process and of its descendants (None once the process is gone)."""
    own = _rss_kb(pid, "VmRSS")
    if own is None:
        return None
    return own + sum(_tree_rss_kb(child) or 0 for child in _children(pid))


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(c) for c in task.read_text().split()]
        except OSError:
            continue
    return found


def _usage(pid: int) -> tuple[float, float, int] | None:
    """A process's CPU seconds so far (user + system, every thread), of them the system's,
    and its minor page faults, each with those of the children it has waited for (the
    store's folds); None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(int(f) for f in fields[11:15]) / tick,
            (int(fields[12]) + int(fields[14])) / tick, int(fields[7]) + int(fields[8]))


def host_memory_probe(mb: int = 256) -> dict[str, float]:
    """How fast this machine gives a process memory it touches for the first time, beside
    a copy into memory already touched (GB/s). A first touch is a page fault; on a VM
    whose host reclaims idle guest memory it was measured at ~13 us a page, 30x a warm
    copy (benchmarks/README.md, twentieth session), and a golem's speed moved with it:
    runs measured on different days compare only when these agree."""
    import numpy as np  # noqa: PLC0415 - the benchmark's only numpy outside the model

    source = np.ones(mb << 18, dtype=np.float32)
    target = np.empty_like(source)
    took = []
    for _ in range(3):  # the first copy touches the target's pages for the first time
        started = time.perf_counter()
        np.copyto(target, source)
        took.append(time.perf_counter() - started)
    return {"first_touch_gb_s": round(mb / 1024 / took[0], 2),
            "warm_copy_gb_s": round(mb / 1024 / min(took[1:]), 2)}


# Run in place of `golem run`: asks for SIGKILL when the benchmark dies (a killed session
# must not leave a golem running unmeasured; PR_SET_PDEATHSIG is prctl option 1), then
# execs the golem. A launcher, not preexec_fn: this process has lancedb loaded, whose
# fork handler warns of a possible deadlock when Python runs between fork and exec.
DIE_WITH_PARENT = ("import ctypes, os, signal, sys; "
                   "ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGKILL); "
                   "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")


def load_segments(directory: Path) -> list[dict[str, Any]]:
    path = directory / SEGMENTS_FILE
    return json.loads(path.read_text())["segments"] if path.exists() else []


def save_segments(directory: Path, segments: list[dict[str, Any]]) -> None:
    path = directory / SEGMENTS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"segments": segments}))
    os.replace(tmp, path)


def run_golem(config: Path, days: float, directory: Path,
              before: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One segment of the life: ``golem run --stop-at {days}d`` (an absolute golem time,
    so a resumed life ends where an uninterrupted one would), its log folded, RSS and
    CPU sampled once a second. The segment is saved to segments.json every 30 s and at
    its end, after ``before`` (the earlier segments of the same life), so a benchmark
    killed mid-life loses at most 30 s of accounting and resumes with --resume."""
    tally = LogTally()
    rss: list[tuple[float, int]] = []
    anon: list[tuple[float, int]] = []
    peak = 0
    cpu = sys_cpu = 0.0
    faults = 0
    log_path = directory / f"golem.{len(before)}.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MALLOC_ARENA_MAX": "2"}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    offset = sum(seg["wall"] for seg in before)
    last_note = started

    def segment(now: float, done: bool) -> dict[str, Any]:
        return {"wall": now, "cpu": cpu, "cpu_sys": sys_cpu, "minor_faults": faults,
                "tally": tally.state(), "rss_peak_kb": peak,
                "rss": [(round(offset + t, 1), kb) for t, kb in rss[::RSS_EVERY_S]],
                "rss_anon": [(round(offset + t, 1), kb) for t, kb in anon[::RSS_EVERY_S]],
                "load_start": round(load, 2), "load_end": round(os.getloadavg()[0], 2),
                "done": done, "returncode": proc.returncode}

    with log_path.open("w") as out, log_path.open() as reader:
        proc = subprocess.Popen(
            [sys.executable, "-c", DIE_WITH_PARENT, "-m", "golem", "run", "--config",
             str(config), "--stop-at", f"{round(days * 86400)}s"],
            stdout=out, stderr=subprocess.STDOUT, cwd=REPO, env=env)
        pending = ""
        while True:
            done = proc.poll() is not None
            chunk = reader.read()
            now = time.perf_counter() - started
            pending += chunk
            *lines, pending = pending.split("\n")
            for raw in lines:
                tally.line(raw, now)
            if done:
                break
            kb = _tree_rss_kb(proc.pid)
            own_anon = _rss_kb(proc.pid, "RssAnon")
            peak = max(peak, _rss_kb(proc.pid, "VmHWM") or 0, kb or 0)
            cpu, sys_cpu, faults = _usage(proc.pid) or (cpu, sys_cpu, faults)
            if kb is not None:
                rss.append((now, kb))
            if own_anon is not None:
                anon.append((now, own_anon))
            if time.perf_counter() - last_note >= 30:
                last_note = time.perf_counter()
                save_segments(directory, [*before, segment(now, False)])
                print(f"[{offset + now:7.0f} s] golem time {tally.golem_time or '-'}, "
                      f"{tally.episodes} episodes, rss {(kb or 0) / 1024:.0f} MB",
                      file=sys.stderr, flush=True)
            time.sleep(1.0)
        for raw in (pending + reader.read()).split("\n"):
            tally.line(raw, time.perf_counter() - started)
    segments = [*before, segment(time.perf_counter() - started, True)]
    save_segments(directory, segments)
    if proc.returncode != 0:
        raise SystemExit(f"golem run exited {proc.returncode}; log: {log_path}")
    return segments


def life(segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The segments of one life as one run: wall and CPU summed, the tallies merged, the
    peak RSS the largest, the steady RSS over the samples of the life's second half."""
    wall = sum(seg["wall"] for seg in segments)
    samples = [(t, kb) for seg in segments for t, kb in seg["rss"]]
    second_half = [kb for t, kb in samples if t >= wall / 2] or [kb for _, kb in samples]
    anon = [(t, kb) for seg in segments for t, kb in seg.get("rss_anon", [])]
    anon_half = [kb for t, kb in anon if t >= wall / 2] or [kb for _, kb in anon]
    return {"wall": wall, "cpu": sum(seg["cpu"] for seg in segments),
            # segments measured before these were counted have none
            "cpu_sys": sum(seg.get("cpu_sys", 0.0) for seg in segments),
            "minor_faults": sum(seg.get("minor_faults", 0) for seg in segments),
            "counted_wall": sum(seg["wall"] for seg in segments if "cpu_sys" in seg),
            "tally": LogTally.merged([seg["tally"] for seg in segments]),
            "rss_mb": {"peak": round(max(seg["rss_peak_kb"] for seg in segments) / 1024, 1),
                       "steady_median": round(statistics.median(second_half) / 1024, 1)
                       if second_half else None,
                       "steady_max": round(max(second_half) / 1024, 1) if second_half
                       else None, "samples": len(samples),
                       "steady_anon_median": round(statistics.median(anon_half) / 1024, 1)
                       if anon_half else None},
            "segments": [{"wall_s": round(seg["wall"], 1), "cpu_s": round(seg["cpu"], 1),
                          "cpu_sys_s": seg.get("cpu_sys"),
                          "minor_faults": seg.get("minor_faults"),
                          "reached": seg["tally"]["golem_time"],
                          "startup_s": seg["tally"]["first_tick_wall"],
                          "load_1m": [seg["load_start"], seg["load_end"]],
                          "finished": seg["done"]} for seg in segments]}


def time_restart(config: Path, log_path: Path) -> float:
    """Wall seconds from a second start of the data dir to its first Gamma tick."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MALLOC_ARENA_MAX": "2"}
    started = time.perf_counter()
    first: float | None = None
    with log_path.open("w") as out, log_path.open() as reader:
        proc = subprocess.Popen([sys.executable, "-m", "golem", "run", "--config",
                                 str(config), "--stop-after", "10s"], stdout=out,
                                stderr=subprocess.STDOUT, cwd=REPO, env=env)
        seen = ""
        while first is None and proc.poll() is None:
            seen += reader.read()
            if '"loop": "gamma"' in seen:
                first = time.perf_counter() - started
            time.sleep(0.05)
        if proc.wait() != 0:
            raise SystemExit(f"the restart exited {proc.returncode}; log: {log_path}")
    return round(first if first is not None else time.perf_counter() - started, 2)


def sample_ticks(config_path: Path, texts: int, seed: int) -> list[list[str]]:
    """Stored episode texts grouped as capture embedded them (one call per Gamma tick),
    whole ticks drawn at random until about ``texts`` texts."""
    async def read() -> list[list[str]]:
        config = load_config(config_path)
        grimoire = await Grimoire.open(config, now=lambda: 0.0)

        def fold(batches: Iterator[list[Episode]]) -> dict[int, list[str]]:
            ticks: dict[int, list[str]] = defaultdict(list)
            for batch in batches:
                for e in batch:
                    if e.provenance.process == "gamma":
                        ticks[e.tick].append(e.text)
            return ticks

        try:
            by_tick: dict[int, list[str]] = await grimoire.scan_episodes(fold)
        finally:
            await grimoire.close()
        order = sorted(by_tick)
        random.Random(seed).shuffle(order)
        out: list[list[str]] = []
        for tick in order:
            if sum(map(len, out)) >= texts:
                break
            out.append(by_tick[tick])
        return out

    return anyio.run(read)


def standalone_rate(config_path: Path, calls: list[list[str]]) -> dict[str, Any]:
    config = load_config(config_path)
    cfg = config.grimoire
    # the graph the golem embedded with (its store's)
    embedder = Embedder.load(cfg.model_dir, cfg.embed_batch_size,
                             compute=choose_compute(config).compute)
    embedder.embed(calls[0] if calls else ["warm up"])
    started = time.perf_counter()
    for texts in calls:
        embedder.embed(texts)
    seconds = time.perf_counter() - started
    n = sum(map(len, calls))
    return {"texts": n, "calls": len(calls), "seconds": round(seconds, 2),
            "texts_per_s": round(n / seconds, 1) if seconds else None,
            "mean_chars": round(sum(len(t) for c in calls for t in c) / max(n, 1), 1)}


def report(days: float, run: dict[str, Any], standalone: dict[str, Any],
           start: float) -> dict[str, Any]:
    """The run's numbers; rates are per golem hour actually lived (a golem that dies
    before ``days`` stops there: ``stop_reason`` says why)."""
    tally: LogTally = run["tally"]
    wall = run["wall"]
    startup = tally.first_tick_wall or 0.0
    stopped = tally.stopped.get("golem_time")
    if stopped:
        days = (datetime.fromisoformat(str(stopped).replace("Z", "+00:00")).timestamp()
                - start) / 86400
    hours = days * 24
    g = {k.removesuffix("_ms"): v / 1000 for k, v in tally.gamma.items()}
    stages = {"market": g.get("market", 0.0),
              "capture": g.get("poll", 0.0) + g.get("perceive", 0.0),
              "embedding": g.get("embed", 0.0),
              "store": g.get("store", 0.0) + g.get("commit", 0.0),
              "theta": tally.tick_ms["theta"] / 1000, "delta": tally.tick_ms["delta"] / 1000}
    gamma_total = tally.tick_ms["gamma"] / 1000
    stages["gamma_other"] = gamma_total - sum(g.values())
    captured = tally.episodes / wall if wall else 0.0
    rate = standalone.get("texts_per_s") or 0.0
    daemon_rate = float(tally.embedder.get("texts_per_s") or 0.0)
    return {
        "benchmark": "lifetime", "golem_days": round(days, 4),
        "stop_reason": tally.stopped.get("reason"), "wall_s": round(wall, 1),
        "startup_s": round(startup, 1),
        "golem_days_per_wall_hour": round(days / (wall / 3600), 3),
        "golem_days_per_wall_hour_after_startup": round(days / ((wall - startup) / 3600), 3),
        "wall_s_per_golem_hour": round((wall - startup) / hours, 2),
        "cpu_s": round(run["cpu"], 1),
        "cpu_s_per_golem_hour": round(run["cpu"] / hours, 2),
        # over the segments that counted them (all but those of older runs of this script)
        "cpu_system_share": round(run["cpu_sys"] / cpu, 3)
        if (cpu := sum(seg["cpu_s"] for seg in run["segments"]
                       if seg["cpu_sys_s"] is not None)) else None,
        "minor_faults_per_wall_s": round(run["minor_faults"] / run["counted_wall"], 1)
        if run["counted_wall"] else None,
        "ticks": dict(tally.ticks), "episodes": tally.episodes,
        "episodes_per_golem_hour": round(tally.episodes / hours, 1),
        "captured_events_per_wall_s": round(captured, 2),
        "stages_s": {k: round(v, 2) for k, v in stages.items()},
        "stages_s_per_golem_hour": {k: round(v / hours, 3) for k, v in stages.items()},
        "gamma_stages_s": {k: round(v, 2) for k, v in g.items()},
        # the tick lines' timed parts ("loop/handler.ms", "loop/handler.stage_ms")
        "tick_parts_s_per_golem_hour": {k: round(v / 1000 / hours, 3)
                                        for k, v in sorted(tally.parts_ms.items())},
        "daemon_embedder": tally.embedder,
        "standalone": standalone,
        "captured_over_standalone": round(captured / rate, 3) if rate else None,
        "daemon_embedder_over_standalone": round(daemon_rate / rate, 3) if rate else None,
        "rss_mb": run["rss_mb"], "errors_logged": tally.errors,
        "stopped_at": tally.stopped.get("golem_time"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--days", type=float, default=30.0, help="golem days (default 30)")
    ap.add_argument("--sample-texts", type=int, default=2000,
                    help="stored texts embedded standalone after the run (default 2000)")
    ap.add_argument("--restart", action="store_true",
                    help="also time a restart of the data dir to its first Gamma tick")
    ap.add_argument("--market", choices=("busy", "pools"), default=None,
                    help="chain.market_activity (default: the default config's)")
    ap.add_argument("--embed-compute", choices=("int8", "float"), default=None,
                    help="grimoire.embed_compute (default: the default config's auto)")
    ap.add_argument("--lifespan-days", type=float, default=None, metavar="D",
                    help="mortality.lifespan_days (default: the default config's 30; the "
                         "Hayflick clock turns a golem Terminal at about 0.9 of it, so a "
                         "30-day measurement needs about 34 or more)")
    ap.add_argument("--keep", type=Path, default=None,
                    help="run in this (new) directory and keep it (default: a temp dir)")
    ap.add_argument("--resume", type=Path, default=None, metavar="DIR",
                    help="continue the life a killed run left in DIR (--keep of that run): "
                         "the golem restarts from its data dir and the segments add up")
    args = ap.parse_args()
    configure_logging("warning", "json", sys.stderr)
    load, host = os.getloadavg(), host_memory_probe()
    with tempfile.TemporaryDirectory(prefix="golem-lifetime-") as tmp:
        if args.resume is not None:
            directory = args.resume
            before = load_segments(directory)
            if not before:
                raise SystemExit(f"--resume: no {SEGMENTS_FILE} in {directory}")
            config = directory / "bardo.toml"
        else:
            directory = args.keep or Path(tmp)
            if args.keep is not None and (directory / SEGMENTS_FILE).exists():
                raise SystemExit(f"{directory} holds a life already: --resume {directory}")
            directory.mkdir(parents=True, exist_ok=True)
            config = write_config(directory, args.market, args.lifespan_days,
                                  args.embed_compute)
            before = []
        print(f"running the default golem to golem day {args.days:g} in {directory}"
              f" ({len(before)} earlier segment(s))...", file=sys.stderr, flush=True)
        cfg = load_config(config)
        if before and read_death(cfg.data_dir) is not None:
            print("this life has ended in death; reporting its segments",
                  file=sys.stderr, flush=True)
            run = life(before)
        else:
            run = life(run_golem(config, args.days, directory, before))
        print(f"done in {run['wall']:.0f} s; embedding a sample standalone...",
              file=sys.stderr, flush=True)
        calls = sample_ticks(config, args.sample_texts, seed=42)
        out = report(args.days, run, standalone_rate(config, calls),
                     cfg.clock.start.timestamp())
        out.update(market_activity=cfg.chain.market_activity,
                   embed_compute=choose_compute(cfg).compute,
                   lifespan_days=cfg.mortality.lifespan_days)
        out["segments"] = run["segments"]
        death = read_death(cfg.data_dir)
        out["died"] = None if death is None else {
            "cause": death.cause, "golem_time": datetime.fromtimestamp(
                death.died_at, tz=UTC).isoformat().replace("+00:00", "Z")}
        if death is not None:
            print(f"the golem died ({death.cause}) before golem day {args.days:g}",
                  file=sys.stderr, flush=True)
        if args.restart and death is None:
            print("timing a restart...", file=sys.stderr, flush=True)
            out["restart_s"] = time_restart(config, directory / "restart.log")
        elif args.restart:  # a dead golem's data dir refuses to start (exit 69)
            out["restart_s"] = None
    out.update(load_avg_1m={"start": round(load[0], 2), "end": round(os.getloadavg()[0], 2)},
               host_memory={"start": host, "end": host_memory_probe()}, machine=machine())
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

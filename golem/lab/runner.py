"""Running a design: every life a `golem run` process of its own, up to ``jobs`` at once.

Layout of a lab directory::

    lab.json                      the design and the base configuration (fixed at first run)
    runs/<arm>/seed-<n>/
        bardo.toml                the run's configuration (base + arm overlay + seed)
        data/                     its data dir, kept for inspection
        run.log                   its stdout and stderr, every attempt appended
        attempts.json             wall seconds and exit status of each attempt
        result.json               its measures, written once it reached the end of its life

Resumable: a run with ``result.json`` is done and skipped; any other run is started again
with ``--stop-at`` at the end of its life, so a killed run continues from its data dir
(the golem's own restart) and ends where an uninterrupted one would. A run that exits
non-zero is reported with its log and left for the next invocation; the others go on.
Interrupting the lab (Ctrl-C, SIGTERM) stops every running golem cleanly (SIGTERM, then
it waits) so they can be resumed.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog
from tqdm import tqdm

from golem.config import load_config
from golem.errors import GolemError, UsageError
from golem.lab.arms import run_config
from golem.lab.design import Design, Run
from golem.lab.measures import measure_run
from golem.lab.succession import PARENT_ARM, SUCCESSORS, shuffled
from golem.mortality.death import read_death, write_json_atomic
from golem.mortality.testament import load_testament, write_testament
from golem.runtime.state import StateStore

log = structlog.get_logger("golem.lab")

LAB_FILE = "lab.json"
RESULT = "result.json"
POLL_S = 1.0
STOP_GRACE_S = 60.0
END_SLACK_S = 120.0  # a life that stopped this close to its end reached it


def run_dir(lab: Path, run: Run) -> Path:
    return lab / "runs" / run.arm / f"seed-{run.seed}"


def read_result(lab: Path, run: Run) -> dict[str, Any] | None:
    path = run_dir(lab, run) / RESULT
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def fix_design(lab: Path, design: Design, base: dict[str, Any]) -> None:
    """Record the design in a new lab directory, or check an existing one asked for the
    same. UsageError when they differ (runs of two designs must never be mixed)."""
    path = lab / LAB_FILE
    record = json.loads(json.dumps({"design": design.to_json(), "base": base}, default=str))
    if path.exists():
        held = json.loads(path.read_text(encoding="utf-8"))
        if held != record:
            raise UsageError(f"{lab} holds another design ({Design.from_json(held['design'])}); "
                             "use a new --out directory, or ask for the same design")
        return
    lab.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, record)


def load_design(lab: Path) -> Design:
    path = lab / LAB_FILE
    if not path.exists():
        raise UsageError(f"{lab} is not a lab directory (no {LAB_FILE}): run `golem lab run` "
                         "first")
    return Design.from_json(json.loads(path.read_text(encoding="utf-8"))["design"])


@dataclass
class _Progress:
    """Golem seconds lived per run, for the progress bar."""

    life_s: float
    lived: dict[Run, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def set(self, run: Run, seconds: float) -> None:
        with self.lock:
            self.lived[run] = min(self.life_s, max(0.0, seconds))

    def total(self) -> float:
        with self.lock:
            return sum(self.lived.values())


class LabRunner:
    def __init__(self, lab: Path, design: Design, base: dict[str, Any], jobs: int,
                 out: TextIO) -> None:
        self.lab = lab
        self.design = design
        self.base = base
        self.jobs = jobs
        self.out = out
        self.stopping = threading.Event()
        self._children: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def run(self) -> list[Run]:
        """Run what is not done yet; the runs that failed (empty when all are done)."""
        runs = self.design.runs
        for run in runs:  # every configuration is valid before anything starts
            path = run_dir(self.lab, run)
            path.mkdir(parents=True, exist_ok=True)
            text = run_config(self.base, run, path, self.design.life_s)
            config_file = path / "bardo.toml"
            if not config_file.exists() or config_file.read_text(encoding="utf-8") != text:
                config_file.write_text(text, encoding="utf-8")
        todo = [r for r in runs if read_result(self.lab, r) is None]
        progress = _Progress(self.design.life_s)
        for run in runs:
            progress.set(run, self.design.life_s if run not in todo else 0.0)
        self.out.write(f"lab: {len(runs)} runs ({len(runs) - len(todo)} done), "
                       f"{len(todo)} to run, {self.jobs} at a time\n")
        failed: list[Run] = []
        bar = tqdm(total=round(len(runs) * self.design.life_s / 3600, 2), unit="golem h",
                   file=sys.stderr, disable=not sys.stderr.isatty(), dynamic_ncols=True,
                   initial=round(progress.total() / 3600, 2))
        old = signal.signal(signal.SIGTERM, self._on_sigterm) \
            if threading.current_thread() is threading.main_thread() else None
        try:
            first = [r for r in todo if r.arm not in SUCCESSORS]
            failed += self._pool(first, progress, bar)
            successors = [r for r in todo if r.arm in SUCCESSORS]
            if successors:
                parents = {r.seed for r in successors}
                orphaned = {seed for seed in parents if not self._parent_died(seed)}
                failed += [r for r in successors if r.seed in orphaned]
                ready = [r for r in successors if r.seed not in orphaned]
                failed += self._pool(ready, progress, bar)
        except KeyboardInterrupt:
            self.stop()
            raise
        finally:
            bar.close()
            if old is not None:
                signal.signal(signal.SIGTERM, old)
        return failed

    def _pool(self, runs: list[Run], progress: _Progress, bar: Any) -> list[Run]:
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            futures = {pool.submit(self._one, run, progress): run for run in runs}
            try:
                while any(not f.done() for f in futures):
                    time.sleep(POLL_S)
                    bar.n = round(progress.total() / 3600, 2)
                    bar.refresh()
            except KeyboardInterrupt:
                # stop the running golems and start no other (leaving the pool waits for
                # the threads, which return once their golem has stopped)
                self.stop()
                for future in futures:
                    future.cancel()
                raise
            return [run for future, run in futures.items() if not future.result()]

    def _parent_died(self, seed: int) -> bool:
        """The parent of ``seed`` (the full arm's life) measured and dead, its testament
        written; runs `golem die` when it is not dead yet. False (reported) when the
        parent has no result or its death failed."""
        parent = Run(PARENT_ARM, seed)
        path = run_dir(self.lab, parent)
        if read_result(self.lab, parent) is None:
            self.out.write(f"lab: the successors of seed {seed} wait for {parent.key}, which "
                           "has not finished\n")
            return False
        config = load_config(path / "bardo.toml")
        if read_death(config.data_dir) is None:
            with (path / "run.log").open("ab") as log_file:
                code = subprocess.run(
                    [sys.executable, "-m", "golem", "die", "--config",
                     str(path / "bardo.toml"), "--reason", "lab: end of life"],
                    stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    env=_child_env(), check=False).returncode
            if code != 0:
                self.out.write(f"lab: the death of {parent.key} failed (exit {code}); see "
                               f"{path / 'run.log'}\n")
                return False
        return read_death(config.data_dir) is not None

    def _inherit(self, run: Run) -> list[str]:
        """``--inherit PATH`` for a successor arm that inherits, else nothing."""
        kind = SUCCESSORS.get(run.arm)
        if kind is None:
            return []
        parent = load_config(run_dir(self.lab, Run(PARENT_ARM, run.seed)) / "bardo.toml")
        death = read_death(parent.data_dir)
        if death is None or not death.testament_path:
            raise UsageError(f"{run.key}: its parent left no testament")
        source = Path(death.testament_path)
        if kind == "as written":
            return ["--inherit", str(source)]
        target = run_dir(self.lab, run) / "inherit.json"
        if not target.exists():
            write_testament(target, shuffled(load_testament(source), run.seed))
        return ["--inherit", str(target)]

    def stop(self) -> None:
        """SIGTERM every running golem and wait for them (they resume on the next run)."""
        self.stopping.set()
        with self._lock:
            children = list(self._children)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                child.kill()

    def _on_sigterm(self, signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    def _one(self, run: Run, progress: _Progress) -> bool:
        if self.stopping.is_set():
            return False
        path = run_dir(self.lab, run)
        config = load_config(path / "bardo.toml")
        birth = config.clock.start.timestamp()
        argv = [sys.executable, "-m", "golem", "run", "--config", str(path / "bardo.toml"),
                "--stop-at", f"{self.design.life_s:g}s", *self._inherit(run)]
        started = time.monotonic()
        with (path / "run.log").open("ab") as log_file:
            child = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env=_child_env())
            with self._lock:
                self._children.add(child)
            try:
                while child.poll() is None:
                    time.sleep(POLL_S)
                    progress.set(run, _lived(config.data_dir, birth))
            finally:
                with self._lock:
                    self._children.discard(child)
        wall = time.monotonic() - started
        attempts = _attempts(path)
        attempts.append({"wall_s": round(wall, 3), "exit": child.returncode})
        write_json_atomic(path / "attempts.json", attempts)
        if self.stopping.is_set():  # stopped short of its end (exit 0 too): resumed later
            return False
        if child.returncode != 0:
            self.out.write(f"lab: {run.key} failed (exit {child.returncode}); "
                           f"see {path / 'run.log'}\n")
            return False
        lived, death = _lived(config.data_dir, birth), read_death(config.data_dir)
        if death is None and lived < self.design.life_s - END_SLACK_S:
            # a golem stopped from outside (a signal not sent by this lab) exits 0 too
            self.out.write(f"lab: {run.key} stopped at golem hour {lived / 3600:.2f} of "
                           f"{self.design.life_s / 3600:g} without dying; not recorded (run "
                           f"again to continue it)\n")
            return False
        record = measure_run(config, birth, self.design.life_s,
                             sum(a["wall_s"] for a in attempts))
        record |= {"arm": run.arm, "seed": run.seed, "lived_s": round(lived, 1),
                   "died": None if death is None else death.cause}
        write_json_atomic(path / RESULT, record)
        self._compact(run, path)
        progress.set(run, self.design.life_s)
        brier = record["brier"]
        self.out.write(f"lab: {run.key} done in {wall:.0f} s, mean Brier "
                       f"{'-' if brier is None else f'{brier:.4f}'} over "
                       f"{record['predictions']} predictions\n")
        self.out.flush()
        return True

    def _compact(self, run: Run, path: Path) -> None:
        """`golem memory compact` on a recorded life's data dir (its measures are already
        written): old store versions go, so finished lives keep ~10 MB a golem hour, not
        ~50. A failure is reported and leaves the data dir as it was."""
        argv = [sys.executable, "-m", "golem", "memory", "compact", "--config",
                str(path / "bardo.toml")]
        with (path / "run.log").open("ab") as log_file:
            done = subprocess.run(argv, stdout=log_file, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=_child_env(), check=False)
        if done.returncode != 0:
            self.out.write(f"lab: {run.key}: compacting its data dir failed (exit "
                           f"{done.returncode}); it keeps its old versions, see "
                           f"{path / 'run.log'}\n")


def _lived(data_dir: Path, birth: float) -> float:
    """Golem seconds the run has lived, from its state store (0 before it has one)."""
    try:
        store = StateStore.open_readonly(data_dir)
        if store is None:
            return 0.0
        try:
            return float(store.all_meta().get("golem_time", birth)) - birth
        finally:
            store.close()
    except (GolemError, sqlite3.Error, OSError):  # being created or busy: the next poll
        return 0.0


def _attempts(path: Path) -> list[dict[str, Any]]:
    file = path / "attempts.json"
    return list(json.loads(file.read_text(encoding="utf-8"))) if file.exists() else []


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("HF_HUB_OFFLINE", "1")  # the lab never downloads: the model is local
    return env


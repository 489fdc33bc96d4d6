"""The real daemon as a subprocess: signals, grace, the data-dir lock, sd_notify."""

from __future__ import annotations

import gc
import itertools
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest

from golem.cli import run_cli
from golem.config import load_config
from golem.runtime.heap import GC_YOUNG_THRESHOLD, SQLITE_HEAP_LIMIT, long_lived_heap
from golem.runtime.state import StateStore

from .conftest import REPO, child_env, config_text, golem_cmd, run_golem


def write_config(tmp_path: Path, **sections: dict) -> Path:
    merged = {"golem": {"data_dir": "data"}, "logging": {"format": "json"},
              "grimoire": {"model_dir": str(REPO / "models" / "all-minilm-l6-v2-int8")}}
    for name, values in sections.items():
        merged.setdefault(name, {}).update(values)
    path = tmp_path / "golem.toml"
    path.write_text(config_text(merged))
    return path


def wait_for(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s")
        time.sleep(0.01)


@contextmanager
def daemon(config: Path, harness: list[str], *args: str,
           env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(golem_cmd("run", "--config", str(config), *args, harness=harness),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env or child_env())
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def state_of(config_dir: Path) -> tuple[dict, dict]:
    store = StateStore.open_readonly(config_dir / "data")
    assert store is not None
    try:
        return store.all_meta(), {k: vars(v) for k, v in store.load_loops().items()}
    finally:
        store.close()


def sigterm_during_first_tick(tmp_path: Path, tick_seconds: float,
                              **sections: dict) -> tuple[int, str, str, float, Path]:
    """Start a golem whose Gamma ticks take ``tick_seconds`` of wall time, SIGTERM it
    once tick 1 is in flight; returns (exit status, stdout, stderr, seconds to exit,
    marker folder)."""
    config = write_config(tmp_path, **sections)
    markers = tmp_path / "markers"
    markers.mkdir()
    harness = ["--wall-sleep", f"gamma={tick_seconds}", "--markers", str(markers)]
    with daemon(config, harness) as proc:
        wait_for(markers / "gamma-1.started")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    return proc.returncode, out, err, took, markers


def test_sigterm_lets_the_tick_in_flight_finish_then_exits_0(tmp_path: Path) -> None:
    code, out, err, took, markers = sigterm_during_first_tick(tmp_path, 1.5)
    assert code == 0, err
    assert (markers / "gamma-1.finished").exists()
    assert not (markers / "gamma-2.started").exists()
    assert took < 10
    lines = [json.loads(line) for line in out.splitlines()]
    events = [line["event"] for line in lines]
    assert events.index("golem stopping") < events.index("golem stopped")
    gamma_ticks = [line for line in lines if line.get("event") == "tick"
                   and line["loop"] == "gamma"]
    assert [(t["tick"], t["outcome"]) for t in gamma_ticks] == [(1, "ok")]
    meta, loops = state_of(tmp_path)
    assert meta["clean_shutdown"] is True
    assert meta["last_stop"]["reason"] == "SIGTERM"
    assert loops["gamma"]["ticks"] == 1 and loops["gamma"]["ok"] == 1


def test_grace_period_over_cancels_the_tick_and_still_exits_0(tmp_path: Path) -> None:
    code, out, err, took, markers = sigterm_during_first_tick(
        tmp_path, 60, runtime={"shutdown_grace_s": 0.5})
    assert code == 0, err
    assert not (markers / "gamma-1.finished").exists()
    assert 0.4 < took < 10
    assert "cancelling ticks in flight" in out
    meta, loops = state_of(tmp_path)
    assert meta["clean_shutdown"] is True
    assert loops["gamma"]["cancelled"] == 1
    assert loops["gamma"]["last_outcome"] == "cancelled"


def test_second_signal_cancels_at_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, runtime={"shutdown_grace_s": 600})
    markers = tmp_path / "markers"
    markers.mkdir()
    with daemon(config, ["--wall-sleep", "gamma=60", "--markers", str(markers)]) as proc:
        wait_for(markers / "gamma-1.started")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert proc.poll() is None  # still waiting for the tick: grace is 600 s
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
    assert proc.returncode == 0, err
    assert took < 10
    _, loops = state_of(tmp_path)
    assert loops["gamma"]["cancelled"] == 1


def test_one_golem_per_data_dir(tmp_path: Path) -> None:
    config = write_config(tmp_path, runtime={"shutdown_grace_s": 0.2})
    markers = tmp_path / "markers"
    markers.mkdir()
    with daemon(config, ["--wall-sleep", "gamma=60", "--markers", str(markers)]) as first:
        wait_for(markers / "gamma-1.started")
        second = run_golem("run", "--config", str(config), "--stop-after", "1h")
        assert second.returncode == 75
        assert "in use by another golem" in second.stderr
        assert f"pid {first.pid}" in second.stderr
        status = run_golem("status", "--config", str(config), "--json")
        report = json.loads(status.stdout)
        assert report["running"] is True and report["pid"] == first.pid
        # the running daemon's memory, read from /proc/<pid>/status
        memory = report["memory"]
        assert 30 < memory["rss_mb"] <= memory["peak_mb"] < 4000
        assert 0 < memory["anon_mb"] < memory["rss_mb"]
        text = run_golem("status", "--config", str(config)).stdout
        assert re.search(r"\n  memory +\d+ MB resident \(\d+ anonymous, \d+ peak\)\n", text), text
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=30)
    assert first.returncode == 0
    after = run_golem("run", "--config", str(config), "--stop-after", "1m")
    assert after.returncode == 0, after.stderr


class NotifyListener:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.2)
        self.path = path
        self.messages: list[tuple[float, str]] = []

    def drain_until_exit(self, proc: subprocess.Popen[str], timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = self.sock.recv(4096)
                self.messages.append((time.monotonic(), data.decode()))
            except TimeoutError:
                if proc.poll() is not None:
                    return

    def kinds(self) -> list[str]:
        return [m.split("\n")[0].split("=")[0] for _, m in self.messages]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[NotifyListener]:
    sock_dir = Path(f"/tmp/golem-notify-{os.getpid()}-{time.monotonic_ns()}")
    sock_dir.mkdir()
    listener = NotifyListener(sock_dir / "notify.sock")
    yield listener
    listener.close()
    (sock_dir / "notify.sock").unlink(missing_ok=True)
    sock_dir.rmdir()


def test_sd_notify_ready_status_watchdog_stopping(tmp_path: Path,
                                                  listener: NotifyListener) -> None:
    config = write_config(tmp_path, runtime={"state_flush_interval_s": 0.1})
    markers = tmp_path / "markers"
    markers.mkdir()
    env = child_env(NOTIFY_SOCKET=str(listener.path), WATCHDOG_USEC="200000")
    with daemon(config, ["--wall-sleep", "gamma=0.3", "--markers", str(markers)],
                "--stop-after", "60s", env=env) as proc:
        listener.drain_until_exit(proc)
        proc.communicate(timeout=30)
    assert proc.returncode == 0
    kinds = listener.kinds()
    assert kinds[0] == "READY"
    assert kinds[-1] == "STOPPING"
    assert kinds.count("READY") == 1 and kinds.count("STOPPING") == 1
    assert kinds.count("WATCHDOG") >= 5  # ~1.8 s of ticking at a 0.1 s period
    statuses = [m for _, m in listener.messages if m.startswith("STATUS=")]
    assert any("gamma=" in m for m in statuses)
    ready = listener.messages[0][1]
    assert f"MAINPID={proc.pid}" in ready


def test_sd_notify_stopping_on_sigterm_and_no_ready_without_the_lock(
        tmp_path: Path, listener: NotifyListener) -> None:
    config = write_config(tmp_path, runtime={"shutdown_grace_s": 0.2})
    markers = tmp_path / "markers"
    markers.mkdir()
    env = child_env(NOTIFY_SOCKET=str(listener.path))
    with daemon(config, ["--wall-sleep", "gamma=60", "--markers", str(markers)]) as holder:
        wait_for(markers / "gamma-1.started")
        blocked = subprocess.run(golem_cmd("run", "--config", str(config)), env=env,
                                 capture_output=True, text=True, timeout=60, check=False)
        assert blocked.returncode == 75
        holder.send_signal(signal.SIGTERM)
        holder.communicate(timeout=30)
    listener.sock.settimeout(0.2)
    with pytest.raises(TimeoutError):
        listener.sock.recv(4096)  # the blocked instance never claimed READY
    with daemon(config, ["--wall-sleep", "gamma=60", "--markers", str(markers)],
                env=env) as proc:
        wait_for(markers / "gamma-2.started")  # numbering resumes after the cancelled tick 1
        proc.send_signal(signal.SIGTERM)
        listener.drain_until_exit(proc, timeout=40)
    kinds = listener.kinds()
    assert kinds[0] == "READY" and "STOPPING" in kinds
    assert kinds.index("STOPPING") > kinds.index("READY")


def test_watchdog_withheld_while_a_tick_is_stuck(tmp_path: Path,
                                                listener: NotifyListener) -> None:
    config = write_config(tmp_path, gamma={"deadline_s": 0.5, "interval_s": 10})
    env = child_env(NOTIFY_SOCKET=str(listener.path), WATCHDOG_USEC="100000")
    with daemon(config, ["--thread-block", "gamma=3"], "--stop-after", "5s", env=env) as proc:
        listener.drain_until_exit(proc)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    pings = [t for t, m in listener.messages if m == "WATCHDOG=1"]
    stopping = [t for t, m in listener.messages if m.startswith("STOPPING=1")]
    assert len(pings) >= 3 and len(stopping) == 1
    timeline = [*pings, stopping[0]]
    longest_gap = max(b - a for a, b in itertools.pairwise(timeline))
    # stuck from ~1 s (0.5 s deadline + 0.5 s margin) until the thread returns at 3 s
    assert longest_gap > 1.5
    assert out.count("watchdog ping withheld") == 1
    assert '"outcome": "deadline"' in out  # finished late, so it still missed its deadline


def test_the_golem_command_keeps_numpy_blas_to_one_thread() -> None:
    """OpenBLAS's idle workers spin after each product (95 ms of CPU per second just after
    recalling, measured); the command limits it before numpy loads, unless the operator
    set OPENBLAS_NUM_THREADS."""
    probe = ("import golem.cli, glob, ctypes, os, numpy\n"
             "lib = glob.glob(os.path.join(os.path.dirname(numpy.__file__), os.pardir,\n"
             "                             'numpy.libs', '*openblas*'))\n"
             "get = ctypes.CDLL(lib[0]).scipy_openblas_get_num_threads64_\n"
             "print(os.environ['OPENBLAS_NUM_THREADS'], get())\n")
    env = {k: v for k, v in child_env().items() if k != "OPENBLAS_NUM_THREADS"}
    python = sys.executable
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, env=env,
                          timeout=60, check=True)
    assert done.stdout.split() == ["1", "1"]  # the variable, and OpenBLAS's own count
    operator = subprocess.run([python, "-c", probe], capture_output=True, text=True,
                              env={**env, "OPENBLAS_NUM_THREADS": "2"}, timeout=60, check=True)
    assert operator.stdout.split() == ["2", "2"]


MALLINFO = """
import ctypes
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = Info
"""

HEAP_PROBE = MALLINFO + """
import os, sys
from golem.runtime.heap import tune_heap
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
applied = tune_heap(os.environ) if sys.argv[1] == "tune" else {}
for _ in range(2):  # glibc raises its threshold when the first mmapped block is freed
    block = libc.malloc(2 << 20)
    mapped = libc.mallinfo2().hblkhd >= 2 << 20
    libc.free(block)
print(",".join(sorted(applied)) or "-", mapped)
"""


def test_the_golem_command_keeps_large_buffers_in_their_own_mappings() -> None:
    """A fixed mmap threshold: a freed 2 MiB buffer (an embedding batch's activations) goes
    back to the OS every time, instead of glibc moving its threshold up and serving the
    next one from the fragmented heap. The operator's own variables win."""
    env = {k: v for k, v in child_env().items() if not k.startswith("MALLOC_")}

    def probe(mode: str, **extra: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", HEAP_PROBE, mode], capture_output=True,
                              text=True, env={**env, **extra}, timeout=60, check=True)
        return done.stdout.split()

    assert probe("plain") == ["-", "False"]  # glibc's default: the second one is heap
    assert probe("tune") == [
        "MALLOC_ARENA_MAX,MALLOC_MMAP_THRESHOLD_,SQLITE_SOFT_HEAP_LIMIT,THP_DISABLE", "True"]
    assert probe("tune", MALLOC_MMAP_THRESHOLD_="8388608") == [
        "MALLOC_ARENA_MAX,SQLITE_SOFT_HEAP_LIMIT,THP_DISABLE", "False"]


THP_PROBE = """
import ctypes, os, subprocess, sys
from golem.runtime.heap import tune_heap
# huge pages on, whatever this process inherited (a golem run inside the test process
# turns them off for it and its children)
assert ctypes.CDLL(None).prctl(41, 0, 0, 0, 0) == 0
applied = tune_heap(os.environ)
def thp(status):
    return next(l.split()[1] for l in status.splitlines() if l.startswith("THP_enabled"))
with open("/proc/self/status") as f:
    mine = thp(f.read())
child = thp(subprocess.run(["cat", "/proc/self/status"], capture_output=True, text=True,
                           check=True).stdout)
print("THP_DISABLE" in applied, mine, child)
"""


def test_the_golem_command_turns_transparent_huge_pages_off() -> None:
    """Partly used 2 MiB pages inflated a golem's RSS where the kernel gives huge pages
    to regions that ask (benchmarks/README.md). The golem command turns them off for
    itself and what it starts, unless GOLEM_THP is set."""
    if "THP_enabled:" not in Path("/proc/self/status").read_text():
        pytest.skip("this kernel does not report THP_enabled (Linux < 5.0)")
    env = {k: v for k, v in child_env().items() if k != "GOLEM_THP"}

    def probe(**extra: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", THP_PROBE], capture_output=True,
                              text=True, env={**env, **extra}, timeout=60, check=True)
        return done.stdout.split()

    assert probe() == ["True", "0", "0"]
    assert probe(GOLEM_THP="madvise") == ["False", "1", "1"]


SQLITE_PROBE = """
import ctypes, ctypes.util, os, sqlite3, sys
from golem.runtime.heap import tune_heap
applied = tune_heap(os.environ)
lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))  # the library _sqlite3 loaded
lib.sqlite3_memory_used.restype = ctypes.c_int64
conns = []
for i in range(4):  # four stores, each read whole through a 64 MiB page cache
    conn = sqlite3.connect(os.path.join(sys.argv[1], f"{i}.db"))
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("CREATE TABLE t (x BLOB)")
    conn.executemany("INSERT INTO t VALUES (?)", ((os.urandom(1000),) for _ in range(4000)))
    conn.commit()
    conn.execute("SELECT count(*), sum(length(x)) FROM t").fetchone()
    conns.append(conn)
(limit,) = conns[0].execute("PRAGMA soft_heap_limit").fetchone()
print(",".join(sorted(k for k in applied if k.startswith("SQLITE"))) or "-", limit,
      lib.sqlite3_memory_used() >> 20)
"""


def test_the_golem_command_bounds_sqlite_memory_for_the_whole_process(
        tmp_path: Path) -> None:
    """Each SQLite connection keeps its own page cache; the golem's ~15 held ~18 MB.
    The golem command sets SQLite's soft heap limit, which every connection shares: four
    connections reading 4 MB each stay near it, where without it they keep ~16 MB.
    GOLEM_SQLITE_HEAP leaves SQLite's default (no limit)."""
    env = {k: v for k, v in child_env().items() if k != "GOLEM_SQLITE_HEAP"}

    def probe(name: str, **extra: str) -> list[str]:
        (tmp_path / name).mkdir()
        done = subprocess.run([sys.executable, "-c", SQLITE_PROBE, str(tmp_path / name)],
                              capture_output=True, text=True, env={**env, **extra},
                              timeout=60, check=True)
        return done.stdout.split()

    applied, limit, used_mb = probe("tuned")
    assert (applied, int(limit)) == ("SQLITE_SOFT_HEAP_LIMIT", SQLITE_HEAP_LIMIT)
    assert int(used_mb) <= 2 * (SQLITE_HEAP_LIMIT >> 20)
    applied, limit, used_mb = probe("default", GOLEM_SQLITE_HEAP="1")
    assert (applied, int(limit)) == ("-", 0)
    assert int(used_mb) >= 12


TRIM_PROBE = MALLINFO + """
from golem.runtime.heap import trim_heap
def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) >> 10
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
blocks = [libc.malloc(64 << 10) for _ in range(1600)]  # 100 MiB of heap, below mmap's threshold
for block in blocks:
    ctypes.memset(block, 1, 64 << 10)  # resident
for block in blocks[:-1]:  # the last one pins the heap's top: only a trim gives the rest back
    libc.free(block)
pinned = libc.mallinfo2().keepcost < 1 << 20
before = rss_mb()
released = trim_heap()
print(pinned, released, before - rss_mb())
"""


def test_trim_heap_hands_pages_freed_inside_the_heap_back() -> None:
    """Memory freed below a live block stays the process's (glibc trims only the heap's
    top); trim_heap releases it, which is what a reconnect after a LanceDB compaction or
    index build relies on."""
    env = {k: v for k, v in child_env().items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    pinned, released, dropped_mb = done.stdout.split()
    assert (pinned, released) == ("True", "True")
    assert int(dropped_mb) >= 80


USAGE_PROBE = MALLINFO + """
from golem.runtime.heap import heap_usage
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
start = heap_usage()
blocks = [libc.malloc(64 << 10) for _ in range(160)]  # 10 MiB in the heap
big = libc.malloc(8 << 20)  # 8 MiB in its own mapping
held = heap_usage()
for block in blocks[:-1]:  # the last one pins the heap's top: the rest stays glibc's, free
    libc.free(block)
libc.free(big)
freed = heap_usage()
values = ("used", held.malloc_in_use_bytes - start.malloc_in_use_bytes,
          "freed", held.malloc_in_use_bytes - freed.malloc_in_use_bytes,
          "kept", freed.malloc_free_bytes - held.malloc_free_bytes)
print(*(round(v / (1 << 20), 1) if isinstance(v, int) else v for v in values),
      start.python_blocks > 1000)
"""


def test_heap_usage_tells_memory_in_use_from_memory_glibc_keeps_free() -> None:
    """heap_usage (the /metrics golem_heap_bytes series): a block allocated counts as in
    use, its own 1 MiB+ mappings included; freed inside the heap it counts as free."""
    env = {k: v for k, v in child_env().items() if not k.startswith("MALLOC_")}
    done = subprocess.run([sys.executable, "-c", USAGE_PROBE], capture_output=True,
                          text=True, env=env, timeout=60, check=True)
    _, used, _, freed, _, kept, python = done.stdout.split()
    assert 17.9 <= float(used) <= 18.6  # 10 MiB + 8 MiB and glibc's chunk headers
    assert 17.8 <= float(freed) <= 18.6  # all but the pinning block
    assert 9.7 <= float(kept) <= 10.6  # the heap's 159 blocks; the mapping went back
    assert python == "True"


def test_the_running_golem_hands_freed_heap_back_every_trim_interval(tmp_path: Path) -> None:
    """While the loops run, glibc's free pages go back to the OS every
    ``runtime.heap_trim_interval_s`` wall seconds, logged at debug; 0 turns it off."""
    def trims(interval: float) -> list[dict]:
        config = write_config(tmp_path, chain={"mode": "off"}, logging={"level": "debug"},
                              runtime={"heap_trim_interval_s": interval})
        markers = tmp_path / f"markers-{interval}"
        markers.mkdir()
        harness = ["--wall-sleep", "gamma=0.25", "--markers", str(markers)]
        with daemon(config, harness, "--stop-after", "2m") as proc:
            out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        lines = [json.loads(line) for line in (out + err).splitlines() if line.startswith("{")]
        return [line for line in lines if line.get("event") == "heap trimmed"]

    seen = trims(0.1)  # 12 Gamma ticks of 0.25 s each: ~3 s of wall time
    assert len(seen) >= 10
    assert all(isinstance(t["released"], bool) and t["rss_mb_before"] > 0
               and t["rss_mb_after"] > 0 for t in seen)
    assert trims(0) == []


def test_stop_at_names_a_golem_time_that_restarts_do_not_move(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, chain={"mode": "off"})
    born = load_config(path).clock.start.timestamp()

    def golem_time() -> float:
        conn = sqlite3.connect(tmp_path / "data" / "state.db")
        try:
            return float(conn.execute(
                "SELECT value FROM meta WHERE key = 'golem_time'").fetchone()[0])
        finally:
            conn.close()

    assert run_cli(["run", "--config", str(path), "--stop-after", "7m"]) == 0
    assert golem_time() == born + 420
    # an interrupted life ends where an uninterrupted one would: at the named time
    assert run_cli(["run", "--config", str(path), "--stop-at", "20m"]) == 0
    assert golem_time() == born + 1200
    assert run_cli(["run", "--config", str(path), "--stop-at", "20m"]) == 0  # already there
    assert golem_time() == born + 1200
    iso = datetime.fromtimestamp(born + 1800, UTC).strftime("%Y-%m-%dT%H:%MZ")
    assert run_cli(["run", "--config", str(path), "--stop-at", iso]) == 0
    assert golem_time() == born + 1800
    capsys.readouterr()
    assert run_cli(["run", "--config", str(path), "--stop-at", "soon"]) == 64
    assert "--stop-at: 'soon' is neither" in capsys.readouterr().err


def test_the_loops_run_with_start_up_frozen_and_the_process_gets_its_collector_back(
        tmp_path: Path) -> None:
    """Start-up's objects live as long as the golem: frozen out of the cyclic collector's
    full passes while the loops run (heap.long_lived_heap). A golem run inside another
    process (the tests') hands back the collector as it found it: a frozen object is
    never collected."""
    seen: list[tuple[int, int]] = []

    def probe() -> None:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))

    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with long_lived_heap():
        probe()
    assert seen == [(seen[0][0], GC_YOUNG_THRESHOLD)] and seen[0][0] > 0
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    path = write_config(tmp_path, chain={"mode": "off"})
    assert run_cli(["run", "--config", str(path), "--stop-after", "2m"]) == 0
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before

"""glibc heap settings for a small VM, applied once when the golem command starts, and
the cyclic collector's settings while the loops run (``long_lived_heap``).

glibc raises its mmap threshold each time a large mmapped block is freed (up to 32 MB),
so after the first embedding batch the model's activation buffers come from the heap,
and the heap, fragmented by LanceDB's allocations between them, is not given back.
A fixed threshold keeps every buffer of 1 MiB or more in its own mapping, returned on
free: a lower peak RSS for some embedding throughput (fresh pages for each buffer),
which Gamma's few texts per second can spare. Fewer arenas (two) keep the threads of
onnxruntime, LanceDB and the event loop from each holding freed memory.

SQLite's memory is bounded for the whole process by its soft heap limit
(``SQLITE_HEAP_LIMIT``): each of the golem's ~15 connections would otherwise keep a page
cache of up to 2 MiB (SQLite's default), and together they held ~18 MB of a default
golem's RSS. Over the limit SQLite recycles cached pages instead of allocating more
(reads then come from the OS's file cache). Setting ``GOLEM_SQLITE_HEAP`` in the
environment (any value) leaves SQLite's default, no limit.

Transparent huge pages are turned off for the process (and the processes it starts):
where the kernel gives them to regions that ask (``madvise``), the libraries' large
allocations were backed by 2 MiB pages that were only partly used. Setting
``GOLEM_THP`` in the environment (any value) leaves the system's choice.

An operator's own ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_ARENA_MAX`` wins (glibc read
them at start-up); elsewhere than glibc the malloc settings do nothing, and elsewhere
than Linux the huge-page one.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

M_MMAP_THRESHOLD = -3  # mallopt parameters, from glibc's malloc.h
M_ARENA_MAX = -8
MMAP_THRESHOLD = 1 << 20
ARENA_MAX = 2
PR_SET_THP_DISABLE = 41  # prctl option, from linux/prctl.h
GC_YOUNG_THRESHOLD = 10_000  # the cyclic collector's first threshold while the loops run
THP_DISABLE = "THP_DISABLE"  # its key in tune_heap's result
SQLITE_HEAP_LIMIT = 4 << 20  # bytes: SQLite's soft heap limit, for all its connections
SQLITE_LIMIT = "SQLITE_SOFT_HEAP_LIMIT"  # its key in tune_heap's result


def tune_heap(environ: Mapping[str, str]) -> dict[str, int]:
    """Apply the settings the environment does not set; returns those applied."""
    applied = _no_huge_pages() if "GOLEM_THP" not in environ else {}
    if "GOLEM_SQLITE_HEAP" not in environ:
        applied |= _limit_sqlite()
    wanted = {"MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
              "MALLOC_ARENA_MAX": (M_ARENA_MAX, ARENA_MAX)}
    todo = {name: setting for name, setting in wanted.items() if name not in environ}
    mallopt = getattr(_libc(), "mallopt", None) if todo else None
    if mallopt is None:
        return applied  # nothing to set, or not glibc
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return {**applied, **{name: value for name, (param, value) in todo.items()
                          if mallopt(param, value) == 1}}


def _no_huge_pages() -> dict[str, int]:
    """Turn transparent huge pages off for this process and its children (Linux)."""
    prctl = getattr(_libc(), "prctl", None)
    if prctl is None:
        return {}
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return {THP_DISABLE: 1} if prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 else {}


def _limit_sqlite() -> dict[str, int]:
    """Set SQLite's soft heap limit, which is the library's, so one connection sets it for
    every connection the process has or opens."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        conn.execute(f"PRAGMA soft_heap_limit = {SQLITE_HEAP_LIMIT}")
        (now,) = conn.execute("PRAGMA soft_heap_limit").fetchone()
    return {SQLITE_LIMIT: SQLITE_HEAP_LIMIT} if now == SQLITE_HEAP_LIMIT else {}


def trim_heap() -> bool:
    """Hand the heap's free pages back to the OS (glibc's ``malloc_trim(0)``). glibc keeps
    pages freed inside its heap, so after a big transient allocation (a LanceDB
    compaction or index build, loading the model) the process still holds them. Returns
    whether memory was released; False where there is no malloc_trim (musl, macOS)."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(trim(0))


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (malloc.h, glibc 2.33 and later): every field a size_t."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


@dataclass(frozen=True)
class HeapUsage:
    """Where this process's heap memory is, for an operator watching its RSS over weeks.

    ``malloc_in_use_bytes``: what the process's native code (LanceDB, onnxruntime, SQLite,
    Python objects over 512 bytes) holds through glibc's malloc, its own mappings of 1 MiB
    or more included; ``malloc_free_bytes``: what glibc keeps freed inside its arenas
    (resident only where a page is partly used: a trim gives whole free pages back);
    ``python_blocks``: the blocks Python's small-object allocator has handed out."""

    malloc_in_use_bytes: int | None
    malloc_free_bytes: int | None
    python_blocks: int


def heap_usage() -> HeapUsage:
    """glibc's counts (``mallinfo2``) and Python's; the malloc fields None where the C
    library has no mallinfo2 (musl, macOS, glibc before 2.33). Cheap enough for every
    metrics scrape: mallinfo2 walks each arena's free lists under its lock."""
    info = getattr(_libc(), "mallinfo2", None)
    in_use = free = None
    if info is not None:
        info.argtypes, info.restype = [], _MallInfo2
        counts = info()
        in_use, free = counts.uordblks + counts.hblkhd, counts.fordblks
    return HeapUsage(in_use, free, sys.getallocatedblocks())


def resident_mb() -> float | None:
    """This process's resident memory in MB (``VmRSS``); None where /proc has none."""
    memory = process_memory("self")
    return None if memory is None else memory.get("rss_mb")


_STATUS_FIELDS = {"VmRSS:": "rss_mb", "RssAnon:": "anon_mb", "VmHWM:": "peak_mb"}


def process_memory(pid: int | str) -> dict[str, float] | None:
    """A process's memory from ``/proc/<pid>/status``, in MB to 0.1: ``rss_mb`` (resident),
    ``anon_mb`` (its anonymous part: heap, stacks; the rest is mapped files such as
    shared libraries), ``peak_mb`` (the highest resident so far), each present when the
    kernel reports it. None where there is no such file (no such process, not Linux) or
    it cannot be read (another user's process under a hardened /proc)."""
    found: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                words = line.split()
                name = _STATUS_FIELDS.get(words[0]) if words else None
                if name is not None:
                    found[name] = round(int(words[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return found


@contextlib.contextmanager
def long_lived_heap() -> Iterator[None]:
    """While the golem's loops run. What start-up made (modules, the opened stores, the
    model) lives as long as the process: it is collected once and frozen (``gc.freeze``),
    so the cyclic collector's full passes no longer walk it. The youngest generation is
    collected after GC_YOUNG_THRESHOLD net allocations instead of 700: most objects a
    tick makes die by reference counting before a pass would look at them. On exit the
    objects are thawed and the thresholds restored (tests run many golems in one
    process; a frozen object is never collected)."""
    previous = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(GC_YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


@functools.cache
def _libc() -> Any:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None

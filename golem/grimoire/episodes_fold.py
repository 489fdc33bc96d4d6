"""A fold of the episode table, run in a child process of its own.

A fold compacts the fragments written since the last one, merges their rows into the
indexes and drops old versions. lancedb's ``optimize()`` sets neither the compaction
target nor which index segments merge, so a fold goes through pylance, a second copy
of the Lance engine: loaded into the daemon, its code stayed mapped there (the RSS it
cost is in benchmarks/README.md, nineteenth session) for a job of well under a second
every ~30 golem minutes. The child takes it along when it exits.

This module imports only the standard library at the top (pylance inside the child), so
the child starts without the golem package. It runs this module's source as the golem
loaded it, sent ahead on its stdin (``python -P -c BOOT PARENT_PID SOURCE_CHARS``), not
the file now on disk: a golem upgraded in place keeps folding until it restarts (a
running golem once handed its old spec to a newer file, and every fold failed). The
file also runs as a script, ``python -P episodes_fold.py PARENT_PID``.
The child imports pylance at once and then reads the fold's spec, one JSON line:
a ``FoldChild`` can be started before the fold is due (Delta starts one as its tick
begins), so that the import runs beside other work instead of inside the fold. Its
stdin closed with no spec (or its parent gone), the child exits having folded nothing.

Contract of ``FoldChild.run``: it returns once the child has committed the fold, or
raises FoldFailed with the child's last error line; the table is then at a committed
version (Lance commits atomically; files of an unfinished commit are orphans that the
store sweeps). The caller must hold the table's only writer for the duration. The child
dies with its parent (Linux), so a killed daemon never leaves a fold writing, and
leaves SIGTERM and SIGINT to it. Children are started from one long-lived thread of
their own: Linux's parent-death signal follows the thread that started a child, and
the daemon's worker threads come and go.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import json
import os
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

TEXT_INDEX = "text_idx"  # LanceDB's default name for the index on "text"
# A fold compacts only the fragments written since the last one (a fragment each Gamma
# commit; no index holds them yet) and leaves deleted rows in their files. Once more
# than MAX_SMALL_FRAGMENTS folded fragments hold fewer than COMPACT_ROWS rows, it
# compacts toward COMPACT_ROWS and rewrites fragments that have a tenth of their rows
# deleted; bigger fragments are not rewritten otherwise, so no fold rewrites the table.
COMPACT_ROWS = 20_000
MAX_SMALL_FRAGMENTS = 16
# A fold adds the new rows to the text index as a segment of their own; the fold that
# finds this many merges the newer ones into one (merging into one segment at every fold
# rewrote the whole text index each time). The oldest, largest segment joins them only
# once they hold TEXT_BASE_SHARE of its rows: merging into it rewrites the whole text
# index, the newer ones alone are a small part of it.
MAX_TEXT_SEGMENTS = 8
TEXT_BASE_SHARE = 0.25
PR_SET_PDEATHSIG = 1  # prctl option, from linux/prctl.h


class FoldFailed(RuntimeError):
    """The child did not commit the fold (its last error line is the message)."""


@dataclasses.dataclass(frozen=True)
class FoldSpec:
    """What one fold does. ``vector_index``: the vector index's name, merged only when
    ``fold_vector``; ``max_versions`` None: no count bound on the versions kept."""

    table_dir: str
    index_cache_mb: int
    metadata_cache_mb: int
    older_than_s: float
    max_versions: int | None
    vector_index: str
    fold_vector: bool


# Starts every child, and lives as long as the process (see the module's docstring).
_STARTER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="golem-fold-starter")


def _loaded_source() -> str:
    """This module's source as the golem imported it (a child, "__main__", needs none)."""
    if __name__ == "__main__":
        return ""
    with open(__file__, encoding="utf-8") as source:
        return source.read()


_SOURCE = _loaded_source()  # read at import: the child's program
_BOOT = "import sys; exec(compile(sys.stdin.read(int(sys.argv[2])), 'golem-fold', 'exec'))"


class FoldChild:
    """One fold's process, started now; it imports pylance while the caller goes on.
    Call ``run`` once to fold, or ``release`` to let it exit without folding."""

    def __init__(self) -> None:
        # -P: not the working directory first on sys.path, whose modules could shadow the
        # libraries'
        self._process = _STARTER.submit(
            subprocess.Popen,
            [sys.executable, "-P", "-c", _BOOT, str(os.getpid()), str(len(_SOURCE))],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True).result()
        stdin = self._process.stdin
        assert stdin is not None  # stdin=PIPE
        with contextlib.suppress(BrokenPipeError):  # a child that died: run() reports it
            stdin.write(_SOURCE)
            stdin.flush()

    def run(self, spec: FoldSpec) -> None:
        """Hand the child ``spec`` and wait for its fold (the module's contract)."""
        _, errors = self._process.communicate(json.dumps(dataclasses.asdict(spec)) + "\n")
        if self._process.returncode != 0:
            lines = [line for line in errors.splitlines() if line.strip()]
            raise FoldFailed(lines[-1].strip() if lines else "the fold's process exited "
                             f"{self._process.returncode} without a message")

    def release(self) -> None:
        """Let a child that was given no spec exit without folding, and reap it."""
        if self._process.returncode is None:
            self._process.communicate("")


def fold(spec: FoldSpec) -> None:
    """Compact the new fragments (past MAX_SMALL_FRAGMENTS small ones, every fragment
    toward COMPACT_ROWS, deleted rows removed); merge rows no index holds yet into the
    newest segment of the scalar indexes, and of the vector index when the spec says
    (it gains no delta segment and is not retrained); add them to the text index as a
    new segment (with MAX_TEXT_SEGMENTS, the newer segments merged into one, and into
    the oldest too once they hold TEXT_BASE_SHARE of its rows); drop versions older than
    ``older_than_s`` or beyond the newest ``max_versions``, and files no version uses
    (the caller holds the only writer). Vendor errors propagate."""
    import lance  # noqa: PLC0415 - only the child loads pylance

    dataset = lance.dataset(spec.table_dir,
                            index_cache_size_bytes=spec.index_cache_mb << 20,
                            metadata_cache_size_bytes=spec.metadata_cache_mb << 20)
    # each step moves ``dataset`` to the version it commits
    indexes = dataset.describe_indices()
    text = [i for i in indexes if i.name == TEXT_INDEX]
    # Compacting every fragment at every fold rewrote the newest folded one (still
    # below COMPACT_ROWS) and any with a tenth deleted (retention deletes ~2,000 an
    # hour at the cap), and remapped the indexes for them. The text index holds
    # every fragment but the new ones.
    folded = {int(i) for index in text for segment in index.segments
              for i in segment.fragment_ids}
    small = sum(f.fragment_id in folded and f.metadata.physical_rows < COMPACT_ROWS
                for f in dataset.get_fragments())
    if small > MAX_SMALL_FRAGMENTS:
        dataset.optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS)
    else:
        dataset.optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS,
                                       materialize_deletions=False,
                                       excluded_fragment_ids=sorted(folded))
    others = [i.name for i in indexes if i.name != TEXT_INDEX and (
        i.name != spec.vector_index or spec.fold_vector)]
    if others:
        dataset.optimize.optimize_indices(num_indices_to_merge=1, index_names=others)
    if text:
        dataset.optimize.optimize_indices(num_indices_to_merge=text_merge(dataset),
                                          index_names=[TEXT_INDEX])
    age = timedelta(seconds=spec.older_than_s)
    dataset.cleanup_old_versions(older_than=age, delete_unverified=True)
    if spec.max_versions is not None:
        # given both, lance keeps a version that either bound would keep
        dataset.cleanup_old_versions(retain_versions=spec.max_versions,
                                     delete_unverified=True)


def text_merge(dataset: Any) -> int:
    """How many of the text index's newest segments a fold merges with its new rows: none
    (a segment of their own) below MAX_TEXT_SEGMENTS; then all but the oldest, or all
    once the others hold TEXT_BASE_SHARE of the oldest's rows (or the oldest is not the
    largest)."""
    segments = next(i.segments for i in dataset.describe_indices() if i.name == TEXT_INDEX)
    if len(segments) < MAX_TEXT_SEGMENTS:
        return 0
    rows = {f.fragment_id: f.metadata.physical_rows for f in dataset.get_fragments()}
    oldest, *newer = (sum(rows.get(int(i), 0) for i in s.fragment_ids) for s in segments)
    if max(newer) > oldest or sum(newer) >= TEXT_BASE_SHARE * oldest:
        return len(segments)
    return len(segments) - 1


def _bind_to_parent(parent: int) -> None:
    """Be killed when the parent dies (Linux), and exit now if it already has. SIGTERM
    and SIGINT are the parent's to act on (systemd and a terminal send them to the
    whole group): its shutdown waits for the fold, which a signal would cut short."""
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        raise SystemExit("the golem that asked for this fold is gone; nothing folded")


def main(argv: list[str]) -> int:
    """``argv``: the parent's pid (and, as FoldChild starts it, the source's length, read
    already)."""
    if len(argv) not in (1, 2) or not all(a.isdigit() for a in argv):
        sys.stderr.write("usage: episodes_fold.py PARENT_PID, the fold's spec on stdin "
                         "(the episode store runs this)\n")
        return 2
    _bind_to_parent(int(argv[0]))
    try:
        import lance  # noqa: F401, PLC0415 - now, while the parent does other work

        line = sys.stdin.readline()
        if not line.strip():
            return 0  # released: no fold was asked for
        fold(FoldSpec(**json.loads(line)))
    except Exception as exc:  # one line for the parent's error; the trace adds nothing
        text = str(exc).strip().splitlines()
        sys.stderr.write(f"{type(exc).__name__}: {text[0] if text else ''}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

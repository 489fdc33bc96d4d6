"""PLAYBOOK.md: procedural memory, the golem's evolved heuristics and action rules (seed 000).

A human-readable file with one writer (the curator and dream cycles). Every
rewrite is first kept as a numbered snapshot, ``playbook/0001.md``, ``0002.md``,
..., whose first line records the golem time and the reason::

    <!-- playbook snapshot 0002 | golem time 2026-03-12T16:00:00.000Z | reason: curator cycle 50 -->

and then PLAYBOOK.md is replaced atomically, so the history can always be read
and diffed and a reader never sees a half-written playbook. A rewrite holds an
exclusive lock for its duration; a second writer gets WriterBusy at once.

If PLAYBOOK.md was edited by hand since the last snapshot, the edit is kept as
its own snapshot before the rewrite replaces it. A crash between the snapshot and
the replacement leaves the old PLAYBOOK.md live; the next rewrite supersedes it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from golem.grimoire.errors import InvalidMemory, StoreCorrupt
from golem.grimoire.memory_file import (
    atomic_write,
    exclusive_lock,
    fsync_dir,
    read_text,
    remove_stale_temps,
)
from golem.grimoire.working_memory import golem_time_ms, iso_time, parse_iso_time

PLAYBOOK_FILE = "PLAYBOOK.md"
SNAPSHOT_DIR = "playbook"
MAX_PLAYBOOK_CHARS = 256_000  # the seed expects 50-100 KB after a year
MAX_REASON_CHARS = 200
EXTERNAL_EDIT = "hand edit kept before the next rewrite"

STARTER_PLAYBOOK = """\
# PLAYBOOK

> Procedural memory: the heuristics and action rules this golem has learned.
> Machine-maintained: the curator and dream cycles rewrite this file, and every
> rewrite is kept as a numbered snapshot in playbook/ with its reason.

No rules learned yet.
"""

_HEADER = re.compile(
    r"<!-- playbook snapshot (?P<n>\d+) \| golem time (?P<at>\S+) \| reason: (?P<reason>.*) -->")
_SNAPSHOT_NAME = re.compile(r"(\d{4,})\.md")


@dataclass(frozen=True)
class SnapshotInfo:
    number: int
    at: float  # golem time of the rewrite
    reason: str
    chars: int
    path: Path


def _check_reason(reason: str) -> str:
    reason = reason.strip() if isinstance(reason, str) else ""
    if (not reason or len(reason) > MAX_REASON_CHARS or "-->" in reason
            or any(not ch.isprintable() for ch in reason)):
        raise InvalidMemory(f"playbook rewrite reason: one line of 1-{MAX_REASON_CHARS} "
                            f"printable chars without '-->', got {reason!r}")
    return reason


def _check_text(text: str) -> bytes:
    if not isinstance(text, str) or not text.strip():
        raise InvalidMemory("playbook rewrite: text is empty")
    if len(text) > MAX_PLAYBOOK_CHARS:
        raise InvalidMemory(f"playbook rewrite: {len(text)} chars (max {MAX_PLAYBOOK_CHARS})")
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise InvalidMemory(f"playbook rewrite: not UTF-8 encodable (char {exc.start})") from None


class Playbook:
    """``PLAYBOOK.md`` and its snapshots in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / PLAYBOOK_FILE
        self.snapshot_dir = directory / SNAPSHOT_DIR
        self.lock_path = directory / f".{PLAYBOOK_FILE}.lock"

    def read(self) -> str:
        """The live playbook; the latest snapshot if the file is gone; else the starter."""
        text = read_text(self.path)
        if text is not None:
            return text
        numbers = self._numbers()
        return self.snapshot(numbers[-1]) if numbers else STARTER_PLAYBOOK

    def rewrite(self, new_text: str, reason: str, now: float) -> int:
        """Replace PLAYBOOK.md, keeping the new text as the next snapshot; returns its number."""
        data, reason, at_ms = _check_text(new_text), _check_reason(reason), golem_time_ms(now)
        self.directory.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.lock_path, wait=False, what=str(self.path)):
            if not self.snapshot_dir.is_dir():
                self.snapshot_dir.mkdir()
                fsync_dir(self.directory)
            remove_stale_temps(self.path)
            for tmp in self.snapshot_dir.glob(".*.tmp-*"):
                tmp.unlink(missing_ok=True)
            numbers = self._numbers()
            latest = numbers[-1] if numbers else 0
            live = read_text(self.path)
            if live is not None and (not latest or live != self.snapshot(latest)):
                interrupted = latest >= 2 and live == self.snapshot(latest - 1)
                if not interrupted:
                    latest += 1
                    self._write_snapshot(latest, live, EXTERNAL_EDIT, at_ms)
            self._write_snapshot(latest + 1, new_text, reason, at_ms)
            atomic_write(self.path, data)
        return latest + 1

    def history(self) -> list[SnapshotInfo]:
        """Every snapshot, oldest first."""
        out = []
        for n in self._numbers():
            path = self._file(n)
            m, body = self._split(path)
            out.append(SnapshotInfo(n, parse_iso_time(m.group("at")) / 1000,
                                    m.group("reason"), len(body), path))
        return out

    def snapshot(self, n: int) -> str:
        """The playbook text as snapshot ``n`` recorded it."""
        if isinstance(n, bool) or not isinstance(n, int) or not self._file(n).is_file():
            have = self._numbers()
            span = f"1..{have[-1]}" if have else "none yet"
            raise InvalidMemory(f"no playbook snapshot {n!r} (snapshots: {span})")
        return self._split(self._file(n))[1]

    def diff(self, a: int, b: int) -> str:
        """Unified diff from snapshot ``a`` to snapshot ``b``."""
        return "".join(difflib.unified_diff(
            self.snapshot(a).splitlines(keepends=True), self.snapshot(b).splitlines(keepends=True),
            fromfile=f"{SNAPSHOT_DIR}/{a:04d}.md", tofile=f"{SNAPSHOT_DIR}/{b:04d}.md"))

    def _file(self, n: int) -> Path:
        return self.snapshot_dir / f"{n:04d}.md"

    def _numbers(self) -> list[int]:
        if not self.snapshot_dir.is_dir():
            return []
        names = (_SNAPSHOT_NAME.fullmatch(p.name) for p in self.snapshot_dir.iterdir())
        return sorted(int(m.group(1)) for m in names if m)

    def _split(self, path: Path) -> tuple[re.Match[str], str]:
        text = read_text(path) or ""
        header, _, body = text.partition("\n")
        m = _HEADER.fullmatch(header)
        if m is None or int(m.group("n")) != int(path.stem):
            raise StoreCorrupt(f"{path}: not a playbook snapshot (bad header line)")
        try:
            parse_iso_time(m.group("at"))
        except ValueError:
            raise StoreCorrupt(f"{path}: bad golem time in the header line") from None
        return m, body

    def _write_snapshot(self, n: int, text: str, reason: str, at_ms: int) -> None:
        header = f"playbook snapshot {n:04d} | golem time {iso_time(at_ms)} | reason: {reason}"
        atomic_write(self._file(n), f"<!-- {header} -->\n{text}".encode())

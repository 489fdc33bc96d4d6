r"""The scratch buffer: a write-ahead log of working-memory notes (seed 004).

Between dream cycles the golem appends urgent notes (``working_memory_note``) to
``scratch.md`` so nothing it learns mid-life is lost before the dream cycle folds
it into MEMORY.md. One note is one line, written with one ``write`` and fsynced
before ``append`` returns, so a crash can only tear the last line::

    # Scratch Buffer (Working Memory WAL)

    - [2026-03-12T14:30:00.000Z] (importance 0.80, theta, #5f0c2a9e1b7d3c44) fee tier\nnow 0.05%

The tag holds the importance (two decimals), the subsystem that wrote the note
and its id. The id is a hash of time, importance, source and text: stable across
rewrites, and the record's checksum, so a torn or edited line is skipped and
reported, never half-read. Identical notes (same id) are one note. Text is
escaped to stay on one line: backslash, newline and CR as ``\\``, ``\n``, ``\r``;
other control, format and separator characters as ``\uXXXX``.

Appends and ``consume`` (the dream cycle's atomic rewrite without the notes it
used) serialize on a lock file next to the log, so no append is lost to a rewrite.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import structlog

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.memory_file import (
    atomic_write,
    exclusive_lock,
    fsync_dir,
    read_text,
    remove_stale_temps,
    write_all,
)
from golem.grimoire.records import finite_unit
from golem.grimoire.working_memory import golem_time_ms, iso_time, parse_iso_time

log = structlog.get_logger("golem.grimoire")

SCRATCH_FILE = "scratch.md"
HEADER = "# Scratch Buffer (Working Memory WAL)\n\n"
DEFAULT_IMPORTANCE = 0.7  # working_memory_note's default (seed 004)

_SOURCE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,31}")
_LINE = re.compile(
    r"- \[(?P<ts>[0-9T:.Z-]+)\] \(importance (?P<imp>\d\.\d\d), (?P<src>[^,) ]+), "
    r"#(?P<id>[0-9a-f]{16})\) (?P<text>.*)")
_ESC = {"\\": "\\\\", "\n": "\\n", "\r": "\\r"}
_UNESC = {"\\": "\\", "n": "\n", "r": "\r"}
_ESCAPED = re.compile(r"\\(u[0-9a-f]{4}|U[0-9a-f]{8}|[nr\\])|\\")


def encode_text(text: str) -> str:
    """One-line form of a note's text (exactly reversible by ``decode_text``)."""
    out = []
    for ch in text:
        if ch in _ESC:
            out.append(_ESC[ch])
        elif ch != "\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            code = ord(ch)  # astral characters (e.g. tag characters) need 8 hex digits
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "".join(out)


def decode_text(raw: str) -> str:
    """Inverse of ``encode_text``; raises ValueError on a stray backslash."""
    def unescape(m: re.Match[str]) -> str:
        seq = m.group(1)
        if seq is None:
            raise ValueError("stray backslash")
        return chr(int(seq[1:], 16)) if seq[0] in "uU" else _UNESC[seq]
    return _ESCAPED.sub(unescape, raw)


def note_id(at_ms: int, importance: float, source: str, text: str) -> str:
    key = f"{at_ms}|{importance:.2f}|{source}|{text}".encode(errors="surrogatepass")
    return hashlib.sha256(key).hexdigest()[:16]


@dataclass(frozen=True)
class ScratchNote:
    id: str
    at: float  # golem time, millisecond precision
    importance: float  # two decimals
    source: str  # the subsystem that wrote it: "theta", "auto", "cli", ...
    text: str

    def _tag(self) -> str:
        return f"[{iso_time(round(self.at * 1000))}] (importance {self.importance:.2f}, "

    def line(self) -> str:
        """The note's record in scratch.md (without the newline)."""
        return f"- {self._tag()}{self.source}, #{self.id}) {encode_text(self.text)}"

    def prompt_line(self) -> str:
        """The note as the bootstrap shows it to the model (one line, no id)."""
        return f"- {self._tag()}{self.source}) {encode_text(self.text)}"


def make_note(text: str, importance: float, now: float, source: str,
              max_text_chars: int = 8000) -> ScratchNote:
    """Validate a new note's fields; raises InvalidMemory naming the bad one."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidMemory("scratch note: text is empty")
    if len(text) > max_text_chars:
        raise InvalidMemory(f"scratch note: text is {len(text)} chars (max {max_text_chars})")
    try:
        imp = round(finite_unit(importance, "scratch note importance"), 2)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None
    if not isinstance(source, str) or not _SOURCE.fullmatch(source):
        raise InvalidMemory(f"scratch note source: a lowercase word of 1-32 chars, got {source!r}")
    at_ms = golem_time_ms(now)
    return ScratchNote(note_id(at_ms, imp, source, text), at_ms / 1000, imp, source, text)


def parse_line(line: str) -> ScratchNote:
    """The note on one record line; raises ValueError saying why it is not one."""
    m = _LINE.fullmatch(line)
    if m is None:
        raise ValueError("not a note record")
    at_ms, imp = parse_iso_time(m.group("ts")), float(m.group("imp"))
    src, text = m.group("src"), decode_text(m.group("text"))
    if not 0 <= imp <= 1 or not _SOURCE.fullmatch(src) or not text.strip():
        raise ValueError("bad field")
    if note_id(at_ms, imp, src, text) != m.group("id"):
        raise ValueError("checksum mismatch (torn or edited)")
    return ScratchNote(m.group("id"), at_ms / 1000, imp, src, text)


@dataclass(frozen=True)
class Skipped:
    line_no: int  # 1-based
    reason: str
    torn: bool  # the unterminated last line: a write cut short by a crash


@dataclass(frozen=True)
class ScratchScan:
    notes: tuple[ScratchNote, ...]
    skipped: tuple[Skipped, ...]


def scan_text(text: str) -> ScratchScan:
    """Every intact note in order; anything else that is not blank or a heading is skipped."""
    notes: list[ScratchNote] = []
    skipped: list[Skipped] = []
    seen: set[str] = set()
    lines = text.split("\n")
    for no, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        torn = no == len(lines)  # no newline after it
        try:
            note = parse_line(line)
        except ValueError as exc:
            skipped.append(Skipped(no, str(exc), torn))
            continue
        if note.id in seen:
            skipped.append(Skipped(no, "duplicate of an earlier note", torn))
        else:
            seen.add(note.id)
            notes.append(note)
    return ScratchScan(tuple(notes), tuple(skipped))


class ScratchLog:
    """``scratch.md`` in ``directory``: append-only between dream cycles."""

    def __init__(self, directory: Path, max_text_chars: int = 8000) -> None:
        self.path = directory / SCRATCH_FILE
        self.lock_path = directory / f".{SCRATCH_FILE}.lock"
        self.max_text_chars = max_text_chars

    def append(self, text: str, importance: float, now: float, source: str) -> ScratchNote:
        """Append one note and fsync it before returning."""
        note = make_note(text, importance, now, source, self.max_text_chars)
        record = (note.line() + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with exclusive_lock(self.lock_path, wait=True, what=str(self.path)):
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                size = os.fstat(fd).st_size
                if size == 0:
                    record = HEADER.encode() + record
                elif os.pread(fd, 1, size - 1) != b"\n":
                    record = b"\n" + record  # end a torn last line; it stays skipped
                write_all(fd, record)
                os.fsync(fd)
            finally:
                os.close(fd)
            if size == 0:
                fsync_dir(self.path.parent)
        return note

    def scan(self) -> ScratchScan:
        text = read_text(self.path, errors="replace")
        return scan_text(text or "")

    def read(self) -> list[ScratchNote]:
        """The intact notes, oldest first; damaged lines are logged and skipped."""
        result = self.scan()
        for s in result.skipped:
            log.warning("scratch_line_skipped", path=str(self.path), line=s.line_no,
                        reason=s.reason, torn=s.torn)
        return list(result.notes)

    def consume(self, ids: Iterable[str] | None = None, *, up_to: float | None = None) -> int:
        """Atomically drop the given notes (or all up to golem time ``up_to``).

        Damaged lines go too. Returns the number of notes removed.
        """
        if (ids is None) == (up_to is None):
            raise InvalidMemory("scratch consume: give either ids or up_to")
        wanted = set(ids) if ids is not None else set()
        limit = golem_time_ms(up_to, "up_to") if up_to is not None else None
        if not self.path.exists():  # no note was ever written (nor the directory made)
            return 0
        with exclusive_lock(self.lock_path, wait=True, what=str(self.path)):
            found = self.scan()
            keep = [n for n in found.notes if n.id not in wanted
                    and (limit is None or round(n.at * 1000) > limit)]
            if len(keep) == len(found.notes) and not found.skipped:
                return 0
            remove_stale_temps(self.path)
            atomic_write(self.path, (HEADER + "".join(n.line() + "\n" for n in keep)).encode())
        return len(found.notes) - len(keep)

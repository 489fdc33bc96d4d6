"""MEMORY.md on disk, and the small file primitives the Grimoire's text files share.

Every replacement is atomic: the new bytes go to a temp file in the same folder,
are fsynced, renamed over the target, and the folder is fsynced, so a reader sees
the old file or the new one, never a mix, and a crash keeps one of them. A writer
killed mid-write leaves only a ``.NAME.tmp-*`` file, removed by the next writer.

MEMORY.md has one writer (the dream cycle). ``write_memory`` checks the rewrite
with ``validate_rewrite`` and raises ``RewriteRejected`` (naming every problem)
when a guard trips; it also refuses when the file on disk is not the ``old``
state the rewrite was made from, so a stale or missing ``old`` cannot slip past
the mass-drop guard. The replaced version is kept as ``MEMORY.md.prev``.

A missing MEMORY.md is not created behind the caller's back: ``load_memory``
returns None and the caller writes ``render_memory(starter_memory(...))`` with
``write_memory(path, text, None)`` when it wants one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

from golem.errors import EXIT_TEMPFAIL
from golem.grimoire.errors import GrimoireError, InvalidMemory, StoreCorrupt
from golem.grimoire.working_memory import (
    MAX_MEMORY_CHARS,
    WorkingMemory,
    parse_memory,
    validate_rewrite,
)

MEMORY_FILE = "MEMORY.md"


class RewriteRejected(InvalidMemory):
    """A MEMORY.md rewrite failed validation; the committed state is unchanged."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("MEMORY.md rewrite rejected: " + "; ".join(self.problems))


class WriterBusy(GrimoireError):
    """Another writer holds a single-writer file; the caller should not wait forever."""

    exit_code = EXIT_TEMPFAIL


# -- file primitives ------------------------------------------------------------------------

def fsync_dir(directory: Path) -> None:
    """Make renames and new entries in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file, fsync, rename, fsync the folder."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def remove_stale_temps(path: Path) -> int:
    """Delete temp files a killed writer of ``path`` left behind; call under the lock."""
    stale = list(path.parent.glob(f".{path.name}.tmp-*"))
    for tmp in stale:
        tmp.unlink(missing_ok=True)
    return len(stale)


@contextlib.contextmanager
def exclusive_lock(lock_path: Path, *, wait: bool, what: str) -> Iterator[None]:
    """An exclusive ``flock`` on ``lock_path``; without ``wait`` a held lock raises WriterBusy.

    The kernel drops the lock when its holder dies, so a crash never leaves it stale.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            who = f"pid {holder}" if holder.isdigit() else "another process"
            raise WriterBusy(f"{what} is being written by another writer ({who}); "
                             "it has a single writer, so this write was refused") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def read_text(path: Path, errors: str = "strict") -> str | None:
    """The file as UTF-8 text, None when it does not exist, StoreCorrupt when unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreCorrupt(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return data.decode(errors=errors)
    except UnicodeDecodeError as exc:
        raise StoreCorrupt(f"{path}: not UTF-8 text (byte {exc.start})") from None


# -- MEMORY.md -------------------------------------------------------------------------------

def prev_path(path: Path) -> Path:
    return path.with_name(path.name + ".prev")


def _lock_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.lock")


def load_memory(path: Path) -> WorkingMemory | None:
    """The committed state, or None when there is no MEMORY.md yet (nothing is written)."""
    text = read_text(path)
    return None if text is None else parse_memory(text)


def write_memory(path: Path, new_text: str, old: WorkingMemory | None,
                 max_chars: int = MAX_MEMORY_CHARS) -> WorkingMemory:
    """Validate and commit a rewrite of MEMORY.md; returns the new parsed state.

    ``old`` is the state the rewrite was made from (``load_memory``'s result, None
    for the first write). Raises RewriteRejected when validation fails or the file
    changed since ``old`` was read, WriterBusy when another writer is at it.
    """
    result = validate_rewrite(old, new_text, max_chars)
    if not result.ok or result.memory is None:
        raise RewriteRejected(result.problems)
    text = new_text if new_text.endswith("\n") else new_text + "\n"
    try:
        data = text.encode()
    except UnicodeEncodeError as exc:
        raise InvalidMemory(f"MEMORY.md rewrite: not UTF-8 encodable (char {exc.start})") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(_lock_path(path), wait=False, what=str(path)):
        current = read_text(path)
        if (None if current is None else parse_memory(current)) != old:
            state = "exists" if old is None else "changed since it was read"
            raise RewriteRejected([f"{path} {state}; load it again and redo the rewrite"])
        remove_stale_temps(path)
        if current is not None:
            atomic_write(prev_path(path), current.encode())
        atomic_write(path, data)
    return result.memory

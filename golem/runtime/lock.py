"""One golem per data directory.

An exclusive ``flock`` on ``golem.lock``; the kernel drops it when the process
dies, so a crash never leaves a stale lock behind. The file holds the owner's
pid for the operator's benefit only.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from golem.errors import LockHeldError

LOCK_FILE = "golem.lock"


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            who = f"pid {holder}" if holder else "another process"
            raise LockHeldError(
                f"data dir {self.path.parent} is in use by another golem ({who}); "
                "stop it first or point this one at a different golem.data_dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def lock_holder(data_dir: Path) -> int | None:
    """The pid of a running golem on ``data_dir``, or None.

    Reads the pid the holder wrote and checks that process exists, without
    touching the lock itself, so ``golem status`` can never make a starting
    daemon think the directory is taken.
    """
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        pid = _read_pid(fd)
    finally:
        os.close(fd)
    if pid is None:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None

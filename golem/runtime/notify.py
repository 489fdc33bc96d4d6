"""systemd's notify protocol, with the standard library only.

READY=1 once config, stores and lock are ready; STATUS= with tick counts;
WATCHDOG=1 only while every loop makes progress; STOPPING=1 on shutdown.
Datagrams go to $NOTIFY_SOCKET (a path, or an abstract name starting with @).
Without that variable every call is a no-op, so the daemon runs the same
outside systemd.
"""

from __future__ import annotations

import os
import socket
from collections.abc import MutableMapping

import structlog

log = structlog.get_logger("golem.notify")

_ENV_KEYS = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


class SystemdNotifier:
    def __init__(self, address: str | None, watchdog_usec: int | None) -> None:
        self._address = address
        self._sock: socket.socket | None = None
        self.watchdog_usec = watchdog_usec
        self._warned = False

    @classmethod
    def from_environ(cls, environ: MutableMapping[str, str] | None = None) -> SystemdNotifier:
        """Read and remove the variables, so child processes do not talk to systemd as us."""
        env = os.environ if environ is None else environ
        values = {key: env.pop(key, None) for key in _ENV_KEYS}
        address = values["NOTIFY_SOCKET"] or None
        usec: int | None = None
        pid = values["WATCHDOG_PID"]
        if values["WATCHDOG_USEC"] and (not pid or pid == str(os.getpid())):
            try:
                usec = int(values["WATCHDOG_USEC"] or "0") or None
            except ValueError:
                usec = None
        return cls(address, usec)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def watchdog_period_s(self) -> float | None:
        """How often to ping: half the interval systemd enforces."""
        return self.watchdog_usec / 2_000_000 if self.watchdog_usec else None

    def ready(self, status: str) -> None:
        self.send(f"READY=1\nSTATUS={status}\nMAINPID={os.getpid()}")

    def stopping(self, status: str) -> None:
        self.send(f"STOPPING=1\nSTATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def send(self, message: str) -> None:
        if self._address is None:
            return
        target = "\0" + self._address[1:] if self._address.startswith("@") else self._address
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
                self._sock.setblocking(False)
            self._sock.sendto(message.encode(), target)
        except OSError as exc:
            if not self._warned:
                log.warning("systemd notify failed", socket=self._address, error=str(exc))
                self._warned = True

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

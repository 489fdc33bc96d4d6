"""An asyncio event loop in its own thread, for the test servers we ship (the local
Messages API server, the faulty node proxy): start it, wait until the server is open,
stop it and wait until it has closed."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

Opener = Callable[[], Coroutine[Any, Any, None]]


class LoopThread:
    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, open_: Opener, close: Opener, timeout: float = 10.0) -> None:
        """Run `open_()` in a new loop thread and keep the loop running; `close()` runs
        there after `stop()`. Raises RuntimeError when opening fails or times out."""
        if self._thread is not None:
            raise RuntimeError(f"{self.name} is already running")
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self.loop = loop
            try:
                loop.run_until_complete(open_())
            except BaseException as exc:  # handed to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(close())
            loop.close()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        ready.wait(timeout)
        if failure or not ready.is_set():
            self._thread.join(1.0)
            self._thread = None
            raise RuntimeError(f"{self.name} did not start: {failure or 'timeout'}")

    def stop(self, before: Callable[[], None] | None = None, timeout: float = 10.0) -> None:
        """Stop the loop (after `before()`, run in the loop) and wait for the thread."""
        thread, self._thread = self._thread, None
        loop = self.loop
        if thread is None or loop is None:
            return

        def halt() -> None:
            if before is not None:
                before()
            loop.stop()

        loop.call_soon_threadsafe(halt)
        thread.join(timeout)

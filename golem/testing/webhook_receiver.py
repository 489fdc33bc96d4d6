"""A local webhook receiver (tests and simulations): records every POST body.

    with WebhookReceiver() as hook:          # hook.url goes in mortality.webhook_url
        hook.fail_next(2, status=503)        # the next two POSTs get 503
        hook.hang_next(1, seconds=30)        # the next POST is answered after 30 s
        ...; hook.posts -> list of decoded JSON bodies (answered 2xx only: hook.delivered)
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class WebhookReceiver:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.posts: list[Any] = []  # every POST received, in order
        self.delivered: list[Any] = []  # those answered 2xx
        self._faults: deque[tuple[int, float]] = deque()  # (status, delay)
        self._lock = threading.Lock()
        self._release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode(errors="replace")
                status, delay = receiver._take(body)
                if delay and receiver._release.wait(delay):
                    return  # stopping: a hung request is never answered
                ok = 200 <= status < 300
                if ok:  # recorded before answering: a sender that got its 2xx finds it here
                    with receiver._lock:
                        receiver.delivered.append(body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                    self.wfile.flush()
                except OSError:  # the sender died or gave up waiting: not delivered
                    if ok:
                        with receiver._lock:
                            receiver.delivered.remove(body)

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/hook"

    def fail_next(self, n: int = 1, *, status: int = 503) -> None:
        with self._lock:
            self._faults.extend([(status, 0.0)] * n)

    def hang_next(self, n: int = 1, *, seconds: float = 30.0) -> None:
        with self._lock:
            self._faults.extend([(200, seconds)] * n)

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``count`` POSTs have arrived (True) or the timeout passes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if len(self.posts) >= count:
                    return True
            time.sleep(0.02)
        return False

    def _take(self, body: Any) -> tuple[int, float]:
        with self._lock:
            self.posts.append(body)
            return self._faults.popleft() if self._faults else (200, 0.0)

    def start(self) -> WebhookReceiver:
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="webhook-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

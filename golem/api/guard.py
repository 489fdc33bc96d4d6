"""The gate every request passes before a route runs: size limits, then authentication.

Order: a query string over ``api.max_query_bytes`` is 414 and a body over
``api.max_body_bytes`` is 413 (by Content-Length, or by counting a chunked body as it
streams), before any route reads it; then every path but ``/healthz`` (and the sign-in
form, which carries the token itself, its stylesheet, and sign-out, which only ends the
session its cookie names) needs either

* ``Authorization: Bearer <token>`` (compared in constant time), or
* the dashboard's session cookie, set by ``POST /signin`` after the same comparison:
  HttpOnly, SameSite=Strict, a random id (never the token) that lives in this process
  only. It is accepted for GET and HEAD, and for other methods only together with the
  ``X-Golem-Dashboard: 1`` header, which a cross-site page cannot send without a CORS
  preflight that this server never approves.

Refusals are JSON 401s with ``WWW-Authenticate: Bearer``; a browser asking for the
dashboard page is sent to the sign-in form (303 to ``/signin``). Nothing here logs a
header.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from golem.api.errors import error_body

SESSION_COOKIE = "golem_session"
DASHBOARD_HEADER = b"x-golem-dashboard"
# /signin carries the token itself; /signout only ends the session its cookie names; the
# sign-in form's stylesheet is our own static file, the same for every golem.
OPEN_PATHS = frozenset({"/healthz", "/signin", "/signout", "/static/dashboard.css"})
SESSION_TTL_S = 12 * 3600.0
MAX_SESSIONS = 64


class BodyTooLarge(Exception):
    """Raised into the route when a streamed body passes the limit."""


class Sessions:
    """Dashboard sessions: random ids with a wall-clock expiry, in memory only."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self._now = now
        self._expiry: dict[str, float] = {}

    def open(self) -> str:
        now = self._now()
        self._expiry = {k: t for k, t in self._expiry.items() if t > now}
        while len(self._expiry) >= MAX_SESSIONS:  # the oldest goes first
            del self._expiry[min(self._expiry, key=self._expiry.__getitem__)]
        sid = secrets.token_urlsafe(32)
        self._expiry[sid] = now + SESSION_TTL_S
        return sid

    def valid(self, sid: str) -> bool:
        expiry = self._expiry.get(sid)
        return expiry is not None and expiry > self._now()

    def close(self, sid: str) -> None:
        self._expiry.pop(sid, None)


class Guard:
    """ASGI middleware enforcing the limits and the token (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, token: str, sessions: Sessions, max_body: int,
                 max_query: int) -> None:
        self.app = app
        self._token = token.encode()
        self.sessions = sessions
        self.max_body = max_body
        self.max_query = max_query

    def token_matches(self, candidate: str) -> bool:
        return hmac.compare_digest(candidate.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers", [])}
        if len(scope.get("query_string", b"")) > self.max_query:
            await _send(send, 414, error_body(414, f"query string over {self.max_query} "
                                                   "bytes (api.max_query_bytes)"))
            return
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.max_body):
            await _send(send, 413, error_body(413, f"request body over {self.max_body} "
                                                   "bytes (api.max_body_bytes)"))
            return
        if scope["path"] not in OPEN_PATHS and not self._authorized(scope, headers):
            if scope["path"] == "/" and scope["method"] in ("GET", "HEAD"):
                await _send(send, 303, b"", "text/plain", extra=[(b"location", b"/signin")])
                return
            await _send(send, 401, error_body(
                401, "missing or wrong bearer token (send Authorization: Bearer <token>)"),
                extra=[(b"www-authenticate", b'Bearer realm="golem"')])
            return
        await self.app(scope, self._limited(receive), send)

    def _authorized(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        auth = headers.get(b"authorization", b"")
        if auth[:7].lower() == b"bearer ":
            return hmac.compare_digest(auth[7:].strip(), self._token)
        sid = _cookie(headers.get(b"cookie", b""), SESSION_COOKIE)
        if sid is None or not self.sessions.valid(sid):
            return False
        return scope["method"] in ("GET", "HEAD") or headers.get(DASHBOARD_HEADER) == b"1"

    def _limited(self, receive: Receive) -> Receive:
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise BodyTooLarge(f"request body over {self.max_body} bytes "
                                       "(api.max_body_bytes)")
            return message

        return counted


def _cookie(header: bytes, name: str) -> str | None:
    for part in header.decode("latin-1").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


async def _send(send: Send, status: int, body: bytes,
                content_type: str = "application/json",
                extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers: list[Any] = [(b"content-type", content_type.encode()),
                          (b"content-length", str(len(body)).encode()),
                          (b"cache-control", b"no-store"), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})

"""The death notification: one JSON POST to ``mortality.webhook_url`` (no golem dies silent).

Stdlib urllib in a worker thread, bounded by ``webhook_timeout_s``; a failure comes back
as a result (never an exception), so the protocol logs it, records it and moves on.
The URL may carry a token: only its redacted form is ever logged or stored.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from golem.redact import redact_url


@dataclass(frozen=True)
class Delivery:
    delivered: bool
    status: int | None
    error: str
    url: str  # redacted


async def post_json(url: str, payload: Mapping[str, Any], timeout_s: float) -> Delivery:
    """POST ``payload``; delivered only on a 2xx answer within the timeout."""
    safe = redact_url(url)
    if not url.startswith(("http://", "https://")):
        return Delivery(False, None, "webhook_url must be http(s)://", safe)
    body = json.dumps(payload, sort_keys=True, default=str).encode()

    def send() -> Delivery:
        request = urllib.request.Request(  # noqa: S310 - scheme checked above
            url, data=body, method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "golem-thanatopsis"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
                status = int(response.status)
        except urllib.error.HTTPError as exc:
            return Delivery(False, exc.code, f"HTTP {exc.code}", safe)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return Delivery(False, None, f"{type(exc).__name__}: {reason}", safe)
        return Delivery(200 <= status < 300, status, "" if status < 300 else f"HTTP {status}",
                        safe)

    # urllib's timeout bounds each socket operation; the outer bound covers the whole call.
    with anyio.move_on_after(timeout_s * 2 + 1):
        return await anyio.to_thread.run_sync(send, abandon_on_cancel=True)
    return Delivery(False, None, f"no answer within {timeout_s * 2 + 1:g}s", safe)

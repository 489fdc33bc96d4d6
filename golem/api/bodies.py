"""Reading a JSON request body: an object with known keys, or a 400/422 naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from starlette.requests import Request

from golem.grimoire.errors import InvalidMemory


class BadRequest(Exception):
    """Malformed request (not JSON, not an object): HTTP 400."""


async def json_object(request: Request, known: Iterable[str],
                      required: Iterable[str] = ()) -> dict[str, Any]:
    """The body as a JSON object; BadRequest when it is not one, InvalidMemory (422)
    naming the first unknown or missing key."""
    raw = await request.body()
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    allowed = set(known)
    for key in sorted(data):
        if key not in allowed:
            raise InvalidMemory(f"{key}: unknown field (expected one of: "
                                f"{', '.join(sorted(allowed))})")
    for key in required:
        if key not in data:
            raise InvalidMemory(f"{key}: required")
    return data

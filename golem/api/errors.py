"""JSON error bodies: ``{"error": {"status", "field", "message"}}``.

``field`` names the request field at fault (``text``, ``k``, ``filters.kinds``) or is
null when the request as a whole is refused (auth, size, unknown route).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from starlette.responses import JSONResponse

_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]]*): ")


def error_body(status: int, message: str, field: str | None = None) -> bytes:
    return json.dumps({"error": {"status": status, "field": field,
                                 "message": message}}).encode()


def error_response(status: int, message: str, field: str | None = None,
                   headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "field": field, "message": message}},
                        status_code=status, headers=headers)


def field_of(message: str) -> str | None:
    """The field an InvalidMemory message starts with (``"k: must be ..."`` -> ``k``)."""
    match = _FIELD.match(message)
    return match.group(1) if match else None

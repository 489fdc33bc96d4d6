"""Checks of config values that name things outside the golem: addresses, events, URLs.

Pure: no I/O, no vendor imports (config loading must stay fast). Each check returns
None for a good value, else a message naming the offending value, which config
loading reports against its key (exit 78).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
TOPIC0 = re.compile(r"0x[0-9a-fA-F]{64}")
_SIGNATURE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\((?:[a-z0-9\[\](),]*)\)")
URL_SCHEMES = ("http", "https", "ws", "wss")


def address_problem(value: str) -> str | None:
    if not ADDRESS.fullmatch(value):
        return f"{value!r} is not a 0x address of 20 bytes (40 hex digits)"
    return None


def event_problem(value: str) -> str | None:
    text = value.strip()
    if TOPIC0.fullmatch(text) or _SIGNATURE.fullmatch(re.sub(r"\s+", "", text)):
        return None
    return (f"{value!r} is neither an event signature like "
            "'Transfer(address,address,uint256)' nor a 0x topic0 of 32 bytes")


def url_problem(value: str) -> str | None:
    """Why `value` cannot be a node URL, or None."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - parsing the port validates it
    except ValueError as exc:
        return f"{value!r} is not a URL ({exc})"
    if parts.scheme not in URL_SCHEMES:
        return (f"{value!r}: the scheme must be one of {', '.join(URL_SCHEMES)} "
                f"(got {parts.scheme or 'none'!r})")
    if not parts.hostname:
        return f"{value!r} has no host"
    return None


def first_problem(values: Sequence[str],
                  check: Callable[[str], str | None]) -> tuple[int, str] | None:
    """(index, message) of the first entry `check` rejects, or None."""
    for i, value in enumerate(values):
        problem = check(value)
        if problem is not None:
            return i, problem
    return None

"""Keep secrets out of logs and event records.

Anything whose key is named like a credential is replaced, at any depth, and
string values that look like API keys are masked wherever they appear.
Names such as ``max_tokens`` or ``total_tokens`` are counts, not secrets, and
pass through.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

REDACTED = "[REDACTED]"

_SECRET_KEY = re.compile(
    r"(?i)(^|[_\-.])("
    r"key|api_?key|private_?key|secret|secrets|password|passwd|passphrase|"
    r"token|access_?token|refresh_?token|auth|authorization|mnemonic|seed_?phrase|"
    r"credential|credentials|cookie"
    r")$"
)
_SECRET_VALUE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{16,}|xox[abprs]-[A-Za-z0-9\-]{10,})")


@lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    return bool(_SECRET_KEY.search(name))


def redact(value: Any) -> Any:
    """A copy of ``value`` with secret-named entries and key-shaped strings masked."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return _SECRET_VALUE.sub(REDACTED, value) if "-" in value else value
    if isinstance(value, Mapping):
        return {k: (REDACTED if isinstance(k, str) and is_secret_key(k) else redact(v))
                for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


_URL_TOKEN = re.compile(r"[A-Za-z0-9_\-]{20,}")


def redact_url(url: str) -> str:
    """A node URL fit for logs: no user:password, no query, key-like path parts masked
    (providers put API keys in the path, e.g. https://mainnet.infura.io/v3/<key>)."""
    from urllib.parse import urlsplit, urlunsplit  # noqa: PLC0415 - rarely needed

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return REDACTED
    path = "/".join(REDACTED if _URL_TOKEN.fullmatch(seg) else seg
                    for seg in parts.path.split("/"))
    return urlunsplit((parts.scheme, host + port, path, "", ""))

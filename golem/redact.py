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

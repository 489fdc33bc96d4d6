"""Durations as operators write them: ``90s``, ``2h``, ``1h30m``, ``30d``."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")


def parse_duration(text: str) -> float:
    """Seconds in ``text``; raises ValueError with the accepted forms on anything else."""
    compact = text.strip().lower().replace(" ", "")
    if not compact:
        raise ValueError("empty duration")
    pos = 0
    total = 0.0
    for match in _PART.finditer(compact):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(compact):
        raise ValueError(f"bad duration {text!r}: use a number with a unit "
                         "(ms, s, m, h, d, w), e.g. 90s, 2h, 1h30m")
    if total <= 0:
        raise ValueError(f"bad duration {text!r}: must be longer than zero")
    return total


def format_duration(seconds: float) -> str:
    """The inverse for display: largest units first, at most two of them."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    parts = []
    remaining = round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if remaining >= size:
            parts.append(f"{remaining // size}{unit}")
            remaining %= size
    return "".join(parts[:2])

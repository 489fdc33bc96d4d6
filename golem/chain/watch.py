"""The watch list: which contracts and events Gamma captures (pure: no I/O).

Addresses are 20-byte hex; events are given either as a Solidity signature
("Swap(address,uint256,uint256,uint256,uint256,address)", hashed to topic0 here)
or directly as a 32-byte topic0. No events means every event of the watched
addresses. Problems come back as strings naming the offending entry so config
loading can report them against the key (exit 78).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_TOPIC = re.compile(r"0x[0-9a-fA-F]{64}")
_SIGNATURE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\((?:[a-z0-9\[\](),]*)\)")
URL_SCHEMES = ("http", "https", "ws", "wss")


@dataclass(frozen=True)
class WatchList:
    """Lowercase addresses and topic0s; an empty `topics` means every event."""

    addresses: frozenset[str]
    topics: frozenset[str] = frozenset()

    @classmethod
    def build(cls, addresses: Iterable[str], events: Iterable[str] = ()) -> WatchList:
        return cls(frozenset(a.lower() for a in addresses),
                   frozenset(event_topic(e) for e in events))

    def matches(self, address: str, topic0: str | None) -> bool:
        if address.lower() not in self.addresses:
            return False
        return not self.topics or (topic0 is not None and topic0.lower() in self.topics)

    def rpc_filter(self) -> dict[str, object]:
        """The address/topics part of an eth_getLogs or logs-subscription filter."""
        out: dict[str, object] = {"address": sorted(self.addresses)}
        if self.topics:
            out["topics"] = [sorted(self.topics)]
        return out


def event_topic(event: str) -> str:
    """topic0 of a signature (whitespace ignored) or of a literal 0x topic."""
    problem = event_problem(event)
    if problem:
        raise ValueError(problem)
    text = event.strip()
    if _TOPIC.fullmatch(text):
        return text.lower()
    from eth_utils.crypto import keccak  # noqa: PLC0415 - 0.26 s to import; config checks skip it

    return "0x" + keccak(text=re.sub(r"\s+", "", text)).hex()


def address_problem(value: str) -> str | None:
    if not _ADDRESS.fullmatch(value):
        return f"{value!r} is not a 0x address of 20 bytes (40 hex digits)"
    return None


def event_problem(value: str) -> str | None:
    text = value.strip()
    if _TOPIC.fullmatch(text) or _SIGNATURE.fullmatch(re.sub(r"\s+", "", text)):
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

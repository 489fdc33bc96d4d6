"""The watch list: which contracts and events Gamma captures (pure: no I/O).

Addresses are 20-byte hex; events are given either as a Solidity signature
("Swap(address,uint256,uint256,uint256,uint256,address)", hashed to topic0 here)
or directly as a 32-byte topic0. No events means every event of the watched
addresses. The entries' syntax is checked by golem.config_checks, which config
loading runs first, so a bad entry is reported against its key (exit 78).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from golem.config_checks import TOPIC0, event_problem


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
    if TOPIC0.fullmatch(text):
        return text.lower()
    from eth_utils.crypto import keccak  # noqa: PLC0415 - slow to import; config checks skip it

    return "0x" + keccak(text=re.sub(r"\s+", "", text)).hex()

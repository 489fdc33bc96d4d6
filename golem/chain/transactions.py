"""Transactions on any `Evm`: preflight, raw submission, nonces.

The same path serves the simulated chain (revm in process), anvil and a node over
RPC. `submit_raw` sends one signed transaction in its own block stamped at golem
time; it is also what replays journalled transactions when the simulated chain is
rebuilt, so a block is stamped the same way live and in replay. `preflight` runs a
call with eth_call first, so a revert is caught with its reason before any gas is
spent.

`TxChain` is where signed transactions go: the simulated source (one lock shared
with Gamma's market driver, and a journal) or `DirectChain` for a node. Errors:
refusals raise `ChainError`; a revert is a result, never an exception.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from golem.chain.evm import Evm, TxResult

PRIORITY_FEE = 10**9  # 1 gwei


class TxChain(Protocol):
    """Where signed transactions go; `lock` keeps other writers out of a multi-tx action."""

    @property
    def evm(self) -> Evm: ...

    @property
    def lock(self) -> contextlib.AbstractContextManager[Any]: ...

    def submit(self, raw: bytes, golem_time: float) -> TxResult: ...


class DirectChain:
    """A node (anvil, RPC): nothing to journal, the node orders transactions itself."""

    def __init__(self, evm: Evm) -> None:
        self.evm = evm
        self.lock: contextlib.AbstractContextManager[Any] = threading.RLock()

    def submit(self, raw: bytes, golem_time: float) -> TxResult:
        return submit_raw(self.evm, raw, golem_time)


def preflight(evm: Evm, sender: str, address: str, abi: Sequence[Mapping[str, Any]],
              fn: str, *args: Any) -> str | None:
    """None when the call would succeed now, else the revert reason."""
    return evm.preflight(sender, address, abi, fn, *args)


def submit_raw(evm: Evm, raw: bytes, golem_time: float) -> TxResult:
    """Send one raw transaction in its own block stamped at golem_time (or just after the
    head); a revert is a result (ok False)."""
    evm.set_next_block_time(golem_time)
    return evm.send_raw(raw)


def nonce_of(evm: Evm, address: str) -> int:
    return evm.nonce(address)


def send_eth(evm: Evm, sender: str, to: str, value: int) -> None:
    """Move native ETH from a dev account (funding the wallet for gas)."""
    evm.send_eth(sender, to, value)

"""Transactions on any Web3Evm (the web3 adapter): preflight, raw submission, nonces.

The same path serves the simulated chain, anvil and a node over RPC. `submit_raw`
sends one signed transaction in its own block stamped at golem time; it is also
what replays journalled transactions when the simulated chain is rebuilt, so a
block is stamped the same way live and in replay. `preflight` runs a call with
eth_call first, so a revert is caught with its reason before any gas is spent.

`TxChain` is where signed transactions go: the simulated source (one lock shared
with Gamma's market driver, and a journal) or `DirectChain` for a node. Errors:
node failures raise `ChainError`; a revert is a result, never an exception.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from web3 import Web3
from web3.exceptions import ContractLogicError, Web3Exception

from golem.chain.evm import ChainError, TxResult, Web3Evm

PRIORITY_FEE = 10**9  # 1 gwei


class TxChain(Protocol):
    """Where signed transactions go; `lock` keeps other writers out of a multi-tx action."""

    @property
    def evm(self) -> Web3Evm: ...

    @property
    def lock(self) -> contextlib.AbstractContextManager[Any]: ...

    def submit(self, raw: bytes, golem_time: float) -> TxResult: ...


class DirectChain:
    """A node (anvil, RPC): nothing to journal, the node orders transactions itself."""

    def __init__(self, evm: Web3Evm) -> None:
        self.evm = evm
        self.lock: contextlib.AbstractContextManager[Any] = threading.RLock()

    def submit(self, raw: bytes, golem_time: float) -> TxResult:
        return submit_raw(self.evm, raw, golem_time)


def preflight(evm: Web3Evm, sender: str, address: str, abi: Sequence[Mapping[str, Any]],
              fn: str, *args: Any) -> str | None:
    """None when the call would succeed now, else the revert reason."""
    contract = evm._contract(address, abi)
    reverts: tuple[type[BaseException], ...] = (*evm._revert_errors, ContractLogicError)
    try:
        contract.functions[fn](*args).call({"from": sender})
    except reverts as exc:
        return _reason(exc)
    except evm._errors as exc:
        raise ChainError(f"preflight of {fn} on {address} failed: {exc}") from exc
    return None


def submit_raw(evm: Web3Evm, raw: bytes, golem_time: float) -> TxResult:
    """Send one raw transaction in its own block stamped at golem_time (or just after the
    head); a revert is a result (ok False)."""
    evm.set_next_block_time(golem_time)
    evm._stamp_pending()
    try:
        tx_hash = evm.w3.eth.send_raw_transaction(raw)
        receipt = evm._receipt(tx_hash)
    except evm._revert_errors as exc:
        return TxResult(False, "", evm.head().number, (), _reason(exc))
    except evm._errors as exc:
        raise ChainError(f"sending a raw transaction failed: {exc}") from exc
    ok = receipt["status"] == 1
    return TxResult(ok, "0x" + bytes(tx_hash).hex(), int(receipt["blockNumber"]), (),
                    "" if ok else "reverted on chain")


def nonce_of(evm: Web3Evm, address: str) -> int:
    try:
        return int(evm.w3.eth.get_transaction_count(Web3.to_checksum_address(address)))
    except evm._errors as exc:
        raise ChainError(f"cannot read the nonce of {address}: {exc}") from exc


def send_eth(evm: Web3Evm, sender: str, to: str, value: int) -> None:
    """Move native ETH from an unlocked account (funding the wallet for gas)."""
    evm._stamp_pending()
    errors: tuple[type[BaseException], ...] = (*evm._errors, Web3Exception)
    try:
        tx_hash = evm.w3.eth.send_transaction({
            "from": Web3.to_checksum_address(sender), "to": Web3.to_checksum_address(to),
            "value": value})  # type: ignore[typeddict-item]
        evm._receipt(tx_hash)
    except errors as exc:
        raise ChainError(f"sending ETH to {to} failed: {exc}") from exc


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:300]

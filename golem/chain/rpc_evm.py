"""A JSON-RPC dev node (anvil, or any node with the ``evm_*`` methods) as a Web3Evm.

Synchronous web3 over HTTP behind the `Evm` interface (golem.chain.evm), so
`deploy_market` and `MarketSimulator` run unchanged on it. The node must automine (one block per
transaction) and hold unlocked, funded accounts (``eth_accounts``), as anvil's
dev accounts are.

Every request has a timeout and none is retried: web3's default retry list
includes ``evm_*``, and a retried ``evm_mine`` or ``evm_revert`` would change
the chain twice.

Block time: before every block we send ``evm_setNextBlockTimestamp`` with the
next block time (strictly above the head's: anvil refuses a lower timestamp and
would otherwise stamp blocks from its own wall-clock offset, several blocks in
one second). Snapshots are for reorg tests: `snapshot()`, mine branch A,
`revert(id)`, mine branch B. A revert consumes its snapshot (and every later
one), as anvil and Hardhat do; the caller's next block time goes back with it.

`NodeEvm` is the same over any node (RPC mode's executor): plain JSON-RPC only,
no ``evm_*`` method; the node stamps and mines blocks itself, so a receipt may
take a block time to appear.
"""

from __future__ import annotations

import time
from typing import Any

from web3 import HTTPProvider, Web3
from web3.exceptions import TransactionNotFound

from golem.chain.evm import ChainError, Head
from golem.chain.web3_evm import Web3Evm

DEFAULT_TIMEOUT = 10.0


class RpcEvm(Web3Evm):
    """Drive a dev node at `url` (http://host:port) with per-request `timeout` seconds."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        provider = HTTPProvider(url, request_kwargs={"timeout": timeout},
                                exception_retry_configuration=None)
        w3 = Web3(provider)
        self.url = url
        self.timeout = timeout
        self.receipt_waits = 0  # receipts that were not there yet when the send returned
        self._snapshot_times: dict[str, int] = {}
        try:
            chain_id = int(w3.eth.chain_id)
            head_time = int(w3.eth.get_block("latest")["timestamp"])
        except self._errors as exc:
            raise ChainError(f"no EVM node answering at {url}: {exc}") from exc
        super().__init__(w3, chain_id, head_time + 1)

    def _rpc(self, method: str, *params: Any) -> Any:
        try:
            return self.w3.manager.request_blocking(method, list(params))  # type: ignore[arg-type]
        except self._errors as exc:
            raise ChainError(f"{method} failed: {exc}") from exc

    def _receipt(self, tx_hash: Any) -> Any:
        """Poll until the receipt is there or `_receipt_window()` seconds have passed."""
        deadline = time.monotonic() + self._receipt_window()
        polls = 0
        while True:
            try:
                return self.w3.eth.get_transaction_receipt(tx_hash)
            except TransactionNotFound:
                if time.monotonic() > deadline:
                    raise
            if polls == 0:
                self.receipt_waits += 1
            time.sleep(self._poll_delay(polls))
            polls += 1

    def _receipt_window(self) -> float:
        return self.timeout

    @staticmethod
    def _poll_delay(polls: int) -> float:
        """Briefly: anvil can answer eth_sendTransaction before its miner is done."""
        return min(0.001 * 2.0**min(polls, 10), 0.05)

    def _stamp_pending(self) -> None:
        self._rpc("evm_setNextBlockTimestamp", self._next_block_time())

    def mine(self) -> Head:
        """Mine an empty block at the next block time."""
        self._stamp_pending()
        self._rpc("evm_mine")
        return self.head()

    # --- snapshots (reorg tests) -----------------------------------------------

    def snapshot(self) -> str:
        """Snapshot the chain; `revert` returns to it (once)."""
        snapshot_id = str(self._rpc("evm_snapshot"))
        self._snapshot_times[snapshot_id] = self._next_time
        return snapshot_id

    def revert(self, snapshot_id: str) -> None:
        """Return to `snapshot_id`: blocks mined since are gone, new ones take their heights."""
        if self._rpc("evm_revert", snapshot_id) is not True:
            raise ChainError(f"evm_revert: unknown or already used snapshot {snapshot_id}")
        self._next_time = self._snapshot_times.pop(snapshot_id, self.head().timestamp + 1)


class NodeEvm(RpcEvm):
    """Any JSON-RPC node over HTTP: reads, calls and raw sends only (no ``evm_*``).

    Block times are the node's: `set_next_block_time` is ignored. A sent transaction's
    receipt is polled for up to `receipt_timeout` seconds (a real chain mines it in
    the next block, seconds away). `eth_accounts` may answer empty: we sign ourselves.
    A node on another chain than `chain_id` (0: any) is refused.
    """

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT, *, chain_id: int = 0,
                 receipt_timeout: float = 120.0) -> None:
        super().__init__(url, timeout)
        self.receipt_timeout = receipt_timeout
        if chain_id not in (0, self.chain_id):
            raise ChainError(f"the node is on chain {self.chain_id}, not chain {chain_id} "
                             "(chain.rpc.chain_id)")

    def set_next_block_time(self, timestamp: float) -> int:
        return int(timestamp)

    def _stamp_pending(self) -> None:
        """The node stamps its own blocks."""

    def _receipt_window(self) -> float:
        return self.receipt_timeout

    @staticmethod
    def _poll_delay(polls: int) -> float:
        """A real chain mines the transaction in the next block, seconds away."""
        return 0.05 if polls < 19 else 1.0

    def mine(self) -> Head:
        raise ChainError("a node mines its own blocks (NodeEvm cannot mine)")

    def snapshot(self) -> str:
        raise ChainError("snapshots need a dev node (evm_snapshot)")

    def revert(self, snapshot_id: str) -> None:
        raise ChainError("snapshots need a dev node (evm_revert)")

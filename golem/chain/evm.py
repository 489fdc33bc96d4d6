"""What every EVM adapter offers: one small synchronous interface, and its value types.

`Evm` is the surface the market, the simulator, the executor and the in-process
reader use; two adapters implement it: `golem.chain.revm.RevmEvm`, the in-process
chain of simulated mode (revm through pyrevm), and `golem.chain.web3_evm.Web3Evm`
over a JSON-RPC node (`golem.chain.rpc_evm.RpcEvm` for anvil, `NodeEvm` for any
node). Callers run the methods in a worker thread: they block.

Block time is driven by the caller: every transaction gets its own block (automine),
stamped at the next block time the caller set with `set_next_block_time`, or one
second after the head if that is later, so block timestamps strictly increase and
follow the golem clock.

Errors: a refusal of the chain (a node's, or the in-process chain's checks: nonce,
balance, fees, gas) raises `ChainError`; a revert is a result (`TxResult.ok` False,
`raw_call` None, `preflight`'s reason), never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from golem.chain.decoding import RawLog
from golem.errors import GolemError

if TYPE_CHECKING:
    from golem.chain.compile import Artifact

GENESIS_TIMESTAMP = 1_700_000_000
DEFAULT_GAS = 1_000_000


class ChainError(GolemError):
    """The chain refused an operation (not a revert: those are results)."""


@dataclass(frozen=True)
class TxResult:
    """What one transaction did: reverted (ok False) transactions have no logs."""

    ok: bool
    tx_hash: str
    block_number: int
    logs: tuple[RawLog, ...]
    error: str = ""


@dataclass(frozen=True, slots=True)
class Head:
    number: int
    hash: str
    parent_hash: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class Receipt:
    """A mined transaction and its outcome. Hex strings are lowercase 0x-hex, addresses
    checksummed; `to` is "" for a contract creation, `contract_address` "" otherwise."""

    tx_hash: str
    block_number: int
    block_hash: str
    tx_index: int
    ok: bool
    sender: str
    to: str
    input: str
    gas_used: int
    logs: tuple[RawLog, ...]
    contract_address: str = ""


class Evm(Protocol):
    """A chain with funded dev accounts (`accounts`) and caller-driven block time."""

    @property
    def chain_id(self) -> int: ...

    @property
    def accounts(self) -> tuple[str, ...]: ...

    def head(self) -> Head: ...

    def block(self, number: int | str) -> Head:
        """(number, hash, parent hash, timestamp) of a block number or "latest"."""
        ...

    def get_logs(self, from_block: int, to_block: int) -> list[RawLog]: ...

    def block_receipts(self, number: int) -> tuple[Receipt, ...]:
        """The receipts of block `number`'s transactions, in order."""
        ...

    def receipt(self, tx_hash: str) -> Receipt | None:
        """The receipt of a mined transaction, None when the chain does not know it."""
        ...

    def call(self, address: str, abi: Sequence[Mapping[str, Any]], fn: str,
             *args: Any) -> Any:
        """eth_call of `fn` at the head, decoded as web3 would; a revert is a ChainError."""
        ...

    def raw_call(self, address: str, data: str) -> bytes | None:
        """eth_call with raw calldata at the head; None when the call reverts."""
        ...

    def preflight(self, sender: str, address: str, abi: Sequence[Mapping[str, Any]],
                  fn: str, *args: Any) -> str | None:
        """None when `fn` called by `sender` would succeed now, else the revert reason."""
        ...

    def nonce(self, address: str) -> int: ...

    def balance(self, address: str) -> int: ...

    def base_fee(self) -> int:
        """The base fee per gas of the next block (0 before London)."""
        ...

    def deploy(self, artifact: Artifact, *args: Any, sender: str) -> str:
        """Deploy from a dev account; the new contract's address. A revert is a ChainError."""
        ...

    def transact(self, address: str, abi: Sequence[Mapping[str, Any]], fn_name: str,
                 *args: Any, sender: str, gas: int = DEFAULT_GAS) -> TxResult:
        """Send and mine one call from a dev account; a revert is a result (ok False)."""
        ...

    def send_eth(self, sender: str, to: str, value: int) -> None:
        """Move native ETH from a dev account in its own block."""
        ...

    def send_raw(self, raw: bytes) -> TxResult:
        """Mine one signed transaction in its own block; a revert is a result."""
        ...

    def set_next_block_time(self, timestamp: float) -> int:
        """Stamp the next block at `timestamp` (or just after the head if that is later)."""
        ...

    def mine(self) -> Head:
        """Mine an empty block at the next block time."""
        ...

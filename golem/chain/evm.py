"""EVM adapters behind one small synchronous interface.

`Web3Evm` holds everything that is plain web3 (head, blocks, logs, calls,
deploys, transactions, the contract cache); `SimulatedEvm` is the in-process
chain (eth-tester + py-evm) and `golem.chain.rpc_evm.RpcEvm` drives a JSON-RPC
dev node such as anvil. `deploy_market` and `MarketSimulator` take a Web3Evm
and work unchanged on both. These are the only simulated-chain modules that
import web3/eth-tester; callers run their methods in a worker thread.

Block time is driven by the caller: every block (one per transaction, automine
on: several transactions from one sender in one pending block fail on nonces)
is stamped at the next block time the caller set, or one second after the head
if that is later, so block timestamps strictly increase and follow the golem
clock.

Determinism (SimulatedEvm): py-evm stamps new blocks with the wall clock and
draws each block's ``mix_hash`` (prevrandao) from ``os.urandom``. We pin the
genesis timestamp, stamp every block from the golem clock and derive mix_hash
from the block number, so the same transactions at the same golem times give
the same block hashes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eth_tester import EthereumTester, PyEVMBackend  # type: ignore[import-untyped]
from eth_tester.exceptions import (  # type: ignore[import-untyped]
    TransactionFailed,
    ValidationError,
)
from eth_utils.crypto import keccak
from web3 import EthereumTesterProvider, Web3
from web3.exceptions import ContractLogicError, Web3Exception

from golem.chain.compile import Artifact
from golem.chain.decoding import RawLog
from golem.errors import GolemError

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


@dataclass(frozen=True)
class Head:
    number: int
    hash: str
    parent_hash: str
    timestamp: int


class _DeterministicBackend(PyEVMBackend):  # type: ignore[misc]
    """PyEVMBackend whose prevrandao is keccak(block number), not os.urandom."""

    def mine_blocks(self, num_blocks: int = 1, coinbase: Any = None) -> tuple[bytes, ...]:
        hashes = []
        for _ in range(num_blocks):
            number = self.chain.header.block_number
            kwargs: dict[str, Any] = {"mix_hash": keccak(number.to_bytes(32, "big"))}
            if coinbase is not None:
                kwargs["coinbase"] = coinbase
            block = self.chain.mine_block(**kwargs)
            hashes.append(block.hash)
        return tuple(hashes)


def _hex(value: Any) -> str:
    return "0x" + bytes(value).hex()


# what a read or a send can raise besides a revert: web3's own errors, the node's
# malformed answers, and transport failures (requests' errors are OSErrors)
_WEB3_ERRORS: tuple[type[BaseException], ...] = (Web3Exception, ValueError, OSError)


class Web3Evm(ABC):
    """A chain with funded, unlocked accounts behind web3; block time driven by the caller.

    Subclasses say how to build `w3`, how to stamp the next block's time and
    how to mine an empty block. `_errors` are the backend's refusals (mapped to
    ChainError), `_revert_errors` what a reverting send may raise instead of
    being mined with status 0.
    """

    _errors: tuple[type[BaseException], ...] = _WEB3_ERRORS
    _revert_errors: tuple[type[BaseException], ...] = (ContractLogicError,)

    def __init__(self, w3: Web3, chain_id: int, next_time: int) -> None:
        self.w3 = w3
        self.chain_id = chain_id
        self._next_time = next_time
        self._contracts: dict[str, tuple[Sequence[Mapping[str, Any]], Any]] = {}
        try:
            accounts = tuple(str(a) for a in w3.eth.accounts)
        except self._errors as exc:
            raise ChainError(f"cannot list the chain's accounts: {exc}") from exc
        self.accounts: tuple[str, ...] = accounts

    def _contract(self, address: str, abi: Sequence[Mapping[str, Any]]) -> Any:
        """web3 contract objects are slow to build: keep one per (address, abi)."""
        cached = self._contracts.get(address)
        if cached is None or cached[0] is not abi:
            contract = self.w3.eth.contract(address=Web3.to_checksum_address(address),
                                            abi=list(abi))
            cached = self._contracts[address] = (abi, contract)
        return cached[1]

    # --- time -----------------------------------------------------------------

    def set_next_block_time(self, timestamp: float) -> int:
        """Stamp the next block at `timestamp` (or just after the head if that is later)."""
        self._next_time = max(int(timestamp), self.head().timestamp + 1)
        return self._next_time

    def _next_block_time(self) -> int:
        """The next block's timestamp, and the one after it one second later."""
        ts = max(self._next_time, self.head().timestamp + 1)
        self._next_time = ts + 1
        return ts

    @abstractmethod
    def _stamp_pending(self) -> None:
        """Make the next mined block carry `self._next_block_time()`."""

    @abstractmethod
    def mine(self) -> Head:
        """Mine an empty block at the next block time."""

    # --- reading --------------------------------------------------------------

    def head(self) -> Head:
        return self.block("latest")

    def block(self, number: int | str) -> Head:
        """(number, hash, parent hash, timestamp) of a block number or "latest"."""
        try:
            block = self.w3.eth.get_block(number)  # type: ignore[arg-type]
        except self._errors as exc:
            raise ChainError(f"no block {number}: {exc}") from exc
        return Head(int(block["number"]), _hex(block["hash"]), _hex(block["parentHash"]),
                    int(block["timestamp"]))

    def get_logs(self, from_block: int, to_block: int) -> list[RawLog]:
        try:
            logs = self.w3.eth.get_logs({"fromBlock": from_block, "toBlock": to_block})
        except self._errors as exc:
            raise ChainError(f"get_logs({from_block}, {to_block}) failed: {exc}") from exc
        return [RawLog.from_web3(log, chain_id=self.chain_id) for log in logs]

    def call(self, address: str, abi: Sequence[Mapping[str, Any]], fn: str, *args: Any) -> Any:
        contract = self._contract(address, abi)
        try:
            return contract.functions[fn](*args).call()
        except (*self._revert_errors, *self._errors) as exc:
            raise ChainError(f"call {fn} on {address} failed: {exc}") from exc

    def raw_call(self, address: str, data: str) -> bytes | None:
        """eth_call with raw calldata at the head; None when the call reverts."""
        try:
            result = self.w3.eth.call({"to": Web3.to_checksum_address(address),
                                       "data": data})  # type: ignore[typeddict-item]
        except self._revert_errors:
            return None
        except self._errors as exc:
            raise ChainError(f"eth_call to {address} failed: {exc}") from exc
        return bytes(result)

    # --- writing --------------------------------------------------------------

    def _receipt(self, tx_hash: Any) -> Any:
        """The receipt of a sent transaction (automine: it is already mined)."""
        return self.w3.eth.get_transaction_receipt(tx_hash)

    def deploy(self, artifact: Artifact, *args: Any, sender: str) -> str:
        factory = self.w3.eth.contract(abi=list(artifact.abi), bytecode=artifact.bytecode)
        self._stamp_pending()
        try:
            tx = factory.constructor(*args).transact({"from": sender})
            receipt = self._receipt(tx)
        except (*self._revert_errors, *self._errors) as exc:
            raise ChainError(f"deploying {artifact.name} failed: {exc}") from exc
        if receipt["status"] != 1 or receipt["contractAddress"] is None:
            raise ChainError(f"deploying {artifact.name} reverted")
        return str(receipt["contractAddress"])

    def transact(
        self,
        address: str,
        abi: Sequence[Mapping[str, Any]],
        fn_name: str,
        *args: Any,
        sender: str,
        gas: int = DEFAULT_GAS,
    ) -> TxResult:
        """Send and mine one transaction; a revert is a result (ok False), never raised.

        With an explicit gas limit neither eth-tester nor a node estimates gas,
        so a reverting transaction is mined with status 0 (as on a real chain)
        and takes a block.
        """
        contract = self._contract(address, abi)
        self._stamp_pending()
        try:
            tx = contract.functions[fn_name](*args).transact({"from": sender, "gas": gas})
        except self._revert_errors as exc:
            head = self.head()
            return TxResult(False, "", head.number, (), str(exc))
        except self._errors as exc:
            raise ChainError(f"{fn_name} on {address} failed: {exc}") from exc
        try:
            receipt = self._receipt(tx)
        except self._errors as exc:
            raise ChainError(f"no receipt for {fn_name} on {address}: {exc}") from exc
        logs = tuple(RawLog.from_web3(log, chain_id=self.chain_id) for log in receipt["logs"])
        ok = receipt["status"] == 1
        return TxResult(ok, _hex(tx), int(receipt["blockNumber"]), logs if ok else (),
                        "" if ok else "reverted")


class SimulatedEvm(Web3Evm):
    """A private in-process chain with 40 funded accounts (eth-tester + py-evm)."""

    _errors = (*_WEB3_ERRORS, ValidationError)
    _revert_errors = (TransactionFailed, ContractLogicError)

    def __init__(self, chain_id: int = 31337, genesis_timestamp: int = GENESIS_TIMESTAMP) -> None:
        params = PyEVMBackend.generate_genesis_params({"timestamp": genesis_timestamp})
        state = PyEVMBackend.generate_genesis_state(num_accounts=40)
        self._backend = _DeterministicBackend(genesis_parameters=params, genesis_state=state)
        self._backend.chain.chain_id = chain_id  # eth_chainId and CHAINID agree with RawLog
        self._tester = EthereumTester(backend=self._backend)
        super().__init__(Web3(EthereumTesterProvider(self._tester)), chain_id,
                         genesis_timestamp + 1)

    def _stamp_pending(self) -> None:
        ts = self._next_block_time()
        self._backend.chain.header = self._backend.chain.header.copy(timestamp=ts)

    def mine(self) -> Head:
        """Mine an empty block at the next block time."""
        self._stamp_pending()
        self._backend.mine_blocks()
        return self.head()

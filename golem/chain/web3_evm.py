"""The `Evm` interface over web3: the base of the JSON-RPC node adapters.

`Web3Evm` holds everything that is plain web3 (head, blocks, logs, receipts, calls,
deploys, transactions, the contract cache); `golem.chain.rpc_evm.RpcEvm` (a dev node
such as anvil) and `NodeEvm` (any node) say how to stamp the next block's time and
how to mine. This module and rpc_evm.py are the only chain modules that import web3;
their web3 errors become `ChainError`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from web3 import Web3
from web3.exceptions import ContractLogicError, TransactionNotFound, Web3Exception

from golem.chain.compile import Artifact
from golem.chain.decoding import RawLog
from golem.chain.evm import DEFAULT_GAS, ChainError, Head, Receipt, TxResult


def _hex(value: Any) -> str:
    return "0x" + bytes(value).hex()


# what a read or a send can raise besides a revert: web3's own errors, the node's
# malformed answers, and transport failures (requests' errors are OSErrors)
_WEB3_ERRORS: tuple[type[BaseException], ...] = (Web3Exception, ValueError, OSError)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text[:300]


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

    def _receipt_of(self, receipt: Any, tx: Any) -> Receipt:
        contract = receipt.get("contractAddress")
        return Receipt(
            _hex(receipt["transactionHash"]), int(receipt["blockNumber"]),
            _hex(receipt["blockHash"]), int(receipt["transactionIndex"]),
            int(receipt["status"]) == 1, str(tx["from"]), str(tx.get("to") or ""),
            _hex(tx.get("input", b"")), int(receipt["gasUsed"]),
            tuple(RawLog.from_web3(log, chain_id=self.chain_id) for log in receipt["logs"]),
            str(contract) if contract else "")

    def receipt(self, tx_hash: str) -> Receipt | None:
        try:
            receipt = self.w3.eth.get_transaction_receipt(tx_hash)  # type: ignore[arg-type]
            tx = self.w3.eth.get_transaction(tx_hash)  # type: ignore[arg-type]
        except TransactionNotFound:
            return None
        except self._errors as exc:
            raise ChainError(f"no receipt for {tx_hash}: {exc}") from exc
        return self._receipt_of(receipt, tx)

    def block_receipts(self, number: int) -> tuple[Receipt, ...]:
        try:
            block = self.w3.eth.get_block(number, full_transactions=True)
            txs: Any = block["transactions"]
            return tuple(
                self._receipt_of(self.w3.eth.get_transaction_receipt(tx["hash"]), tx)
                for tx in txs)
        except self._errors as exc:
            raise ChainError(f"no receipts for block {number}: {exc}") from exc

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

    def preflight(self, sender: str, address: str, abi: Sequence[Mapping[str, Any]],
                  fn: str, *args: Any) -> str | None:
        """None when the call would succeed now, else the revert reason."""
        contract = self._contract(address, abi)
        try:
            contract.functions[fn](*args).call({"from": sender})
        except self._revert_errors as exc:
            return _reason(exc)
        except self._errors as exc:
            raise ChainError(f"preflight of {fn} on {address} failed: {exc}") from exc
        return None

    def nonce(self, address: str) -> int:
        try:
            return int(self.w3.eth.get_transaction_count(Web3.to_checksum_address(address)))
        except self._errors as exc:
            raise ChainError(f"cannot read the nonce of {address}: {exc}") from exc

    def balance(self, address: str) -> int:
        try:
            return int(self.w3.eth.get_balance(Web3.to_checksum_address(address)))
        except self._errors as exc:
            raise ChainError(f"cannot read the balance of {address}: {exc}") from exc

    def base_fee(self) -> int:
        try:
            return int(self.w3.eth.get_block("latest").get("baseFeePerGas") or 0)
        except self._errors as exc:
            raise ChainError(f"cannot read the base fee: {exc}") from exc

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

        With an explicit gas limit a node does not estimate gas, so a reverting
        transaction is mined with status 0 (as on a real chain) and takes a block.
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

    def send_raw(self, raw: bytes) -> TxResult:
        """eth_sendRawTransaction in its own block at the next block time."""
        self._stamp_pending()
        try:
            tx_hash = self.w3.eth.send_raw_transaction(raw)
            receipt = self._receipt(tx_hash)
        except self._revert_errors as exc:
            return TxResult(False, "", self.head().number, (), _reason(exc))
        except self._errors as exc:
            raise ChainError(f"sending a raw transaction failed: {exc}") from exc
        ok = receipt["status"] == 1
        logs = tuple(RawLog.from_web3(log, chain_id=self.chain_id) for log in receipt["logs"])
        return TxResult(ok, _hex(tx_hash), int(receipt["blockNumber"]), logs if ok else (),
                        "" if ok else "reverted on chain")

    def send_eth(self, sender: str, to: str, value: int) -> None:
        """Move native ETH from an unlocked account (funding the wallet for gas)."""
        self._stamp_pending()
        try:
            tx_hash = self.w3.eth.send_transaction({
                "from": Web3.to_checksum_address(sender), "to": Web3.to_checksum_address(to),
                "value": value})  # type: ignore[typeddict-item]
            self._receipt(tx_hash)
        except self._errors as exc:
            raise ChainError(f"sending ETH to {to} failed: {exc}") from exc

"""The simulated mode's chain: revm (through pyrevm) in process, behind the `Evm` interface.

The only module that imports pyrevm; its errors become `ChainError` (refusals) or
results (reverts). What it adds around revm's execution is what a node adds:

* Transactions are signed bytes. `send_raw` decodes them (legacy, EIP-2930,
  EIP-1559), recovers the sender and refuses what a node refuses: wrong chain id,
  nonce not the account's, fee cap under the base fee, gas over the block limit or
  under the intrinsic cost, balance short of gas x fee cap + value. The market's dev
  accounts (keys 1..40, as eth-tester's, 1,000,000 ETH each) sign their transactions
  the same way (`transact`, `deploy`, `send_eth`), so every transaction in a block
  has a real hash, sender and signature.
* One transaction per block (automine), stamped from the golem clock, with an
  EIP-1559 base fee (1 gwei at genesis, adjusted per block from its gas used). The
  sender pays gas used x effective gas price; the priority part goes to the coinbase
  (the zero address), the base fee is burnt.
* Receipts (status, gas used, logs with block hash, tx hash, tx index and per-block
  log index) and headers are kept in memory for the last `retain_blocks` blocks
  (older ones are pruned: `block` and `get_logs` refuse them).
* Block hashes are keccak of an RLP header (parent hash, number, timestamp, base
  fee, gas used, prevrandao, transaction hashes, a digest of the receipts); the
  genesis hash and every prevrandao derive from the seed and chain id. They are
  deterministic from the seed and the contents, not mainnet header hashes (there is
  no state trie).

Reads (`call`, `raw_call`, `preflight`, `nonce`, `balance`) run inside a journal
checkpoint that is reverted, so they never change the chain, its gas accounting or
its memory. Every public method holds one re-entrant lock: callers may share the
chain between threads (Gamma's market step, capture's reads, an executing action).
Gas used is revm's, with one deviation from mainnet: pyrevm never finalises its
journal between transactions, so an account or storage slot is cold (EIP-2929) only
on its first touch since the chain was built or last compacted (`compact`: every
`compact_every` blocks, which also bounds the journal's memory); execution results
(state, return data, logs, reverts) are exact. Same seed, same transactions, same
golem times: same blocks, hashes and logs (tests/chain/test_revm.py).

With `compact_when_asked`, a block that reaches a multiple of `compact_every` only
marks a compaction as due, and the owner runs it at a point of its choosing
(`compact_if_due`; the simulated market does it between market steps). Right after a
compaction the chain's whole state is the dump it was rebuilt from, so `snapshot`
can write it down and `restore` rebuilds the same chain, with the same cold accounts
and slots, and so the same gas, as the chain that kept running.
"""

from __future__ import annotations

import re
import threading
from base64 import b64decode, b64encode
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from eth_utils.address import to_checksum_address
from pyrevm import EVM, AccountInfo, BlockEnv, CfgEnv, Env, TxEnv

from golem.chain.abi import AbiError, constructor_args, decode_result, encode_call, revert_reason
from golem.chain.compile import Artifact
from golem.chain.decoding import RawLog
from golem.chain.evm import (
    DEFAULT_GAS,
    GENESIS_TIMESTAMP,
    ChainError,
    Head,
    Receipt,
    TxResult,
)
from golem.chain.rawtx import (
    BadTransaction,
    DevKey,
    RlpItem,
    SignedTx,
    decode_raw,
    keccak,
    rlp_encode,
    sign_1559,
)

DEV_ACCOUNTS = 40
DEV_BALANCE = 1_000_000 * 10**18
BLOCK_GAS_LIMIT = 30_000_000
GENESIS_BASE_FEE = 10**9
PRIORITY_FEE = 10**9  # what the dev accounts tip
RETAIN_BLOCKS = 2_000  # ~80 golem minutes of the default market (~3-4 KB a block)
COMPACT_EVERY = 10_000  # blocks between rebuilds of revm's state (see `compact`)
COINBASE = "0x" + "00" * 20
_REVERT_OUTPUT = re.compile(r"output: 0x([0-9a-fA-F]*)")
# pyrevm 0.3.7 (revm 8) Debug text of its journaled state: the only way to list storage
_STATE_START = "JournaledState { state: {"
_ACCOUNT = re.compile(
    r"(0x[0-9a-f]{40}): Account \{ info: AccountInfo \{ balance: (\d+), nonce: (\d+), "
    r"code_hash: 0x[0-9a-f]{64}, code: (.*?), storage: \{(.*?)\}, "
    r"status: AccountStatus\((.*?)\) \}")
_CODE = re.compile(r"bytecode: 0x([0-9a-f]*), state: (?:Raw|\w+ \{ len: (\d+))")
_SLOT = re.compile(r"(\d+): \w+ \{ previous_or_original_value: \d+, present_value: (\d+)")
_ZERO = "0x" + "00" * 32


P = ParamSpec("P")
R = TypeVar("R")


def _locked(method: Callable[Concatenate[RevmEvm, P], R]) -> Callable[Concatenate[RevmEvm, P], R]:
    """Run the method under the chain's lock: a read is three pyrevm calls (checkpoint,
    call, revert), and a transaction from another thread between them would be undone."""

    def locked(chain: RevmEvm, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with chain._lock:
            return method(chain, *args, **kwargs)

    locked.__name__, locked.__doc__ = method.__name__, method.__doc__
    return locked


def next_base_fee(base_fee: int, gas_used: int, gas_limit: int = BLOCK_GAS_LIMIT) -> int:
    """EIP-1559: the next block's base fee from this block's fee and gas used."""
    target = gas_limit // 2
    if gas_used == target:
        return base_fee
    if gas_used > target:
        return base_fee + max(base_fee * (gas_used - target) // target // 8, 1)
    return max(base_fee - base_fee * (target - gas_used) // target // 8, 0)


@dataclass(frozen=True, slots=True)
class _Block:
    head: Head
    base_fee: int
    gas_used: int
    receipts: tuple[Receipt, ...]


@dataclass(frozen=True)
class AccountState:
    """One account of the chain's state: what `RevmEvm.state_dump` lists."""

    balance: int
    nonce: int
    code: bytes
    storage: Mapping[int, int]


class RevmEvm:
    """A private in-process chain with 40 funded dev accounts (revm through pyrevm)."""

    def __init__(self, chain_id: int = 31337, genesis_timestamp: int = GENESIS_TIMESTAMP,
                 seed: int = 0, retain_blocks: int = RETAIN_BLOCKS,
                 compact_every: int = COMPACT_EVERY, *,
                 compact_when_asked: bool = False) -> None:
        if retain_blocks < 1 or compact_every < 1:
            raise ValueError(f"retain_blocks and compact_every must be positive, got "
                             f"{retain_blocks} and {compact_every}")
        self._compact_every = compact_every
        self.genesis_timestamp = genesis_timestamp
        self._when_asked = compact_when_asked
        self._compact_due = False
        self._fresh = False  # the state is exactly a dump: nothing ran since compact
        self._lock = threading.RLock()
        self.chain_id = chain_id
        self.seed = seed
        self._keys: dict[str, DevKey] = {}
        for i in range(1, DEV_ACCOUNTS + 1):
            key = DevKey(i.to_bytes(32, "big"))
            self._keys[key.address] = key
        self.accounts: tuple[str, ...] = tuple(self._keys)
        self._lower = {a.lower(): a for a in self.accounts}
        self._randao: dict[int, bytes] = {}
        self._evm = self._new_evm(genesis_timestamp)
        for account in self.accounts:
            self._evm.set_balance(account, DEV_BALANCE)
        genesis_hash = "0x" + keccak(rlp_encode(
            [b"golem simulated chain", chain_id, seed, genesis_timestamp])).hex()
        genesis = _Block(Head(0, genesis_hash, _ZERO, genesis_timestamp),
                         GENESIS_BASE_FEE, 0, ())
        self._retain = retain_blocks
        self._blocks: deque[_Block] = deque([genesis], maxlen=retain_blocks)
        self._tx_index: dict[str, Receipt] = {}
        self._next_time = genesis_timestamp + 1
        self._checksums: dict[str, str] = {}

    def _new_evm(self, timestamp: int) -> EVM:
        return EVM(env=Env(cfg=CfgEnv(chain_id=self.chain_id),
                           block=BlockEnv(number=0, timestamp=timestamp)))

    # --- state ----------------------------------------------------------------

    @_locked
    def state_dump(self) -> dict[str, AccountState]:
        """Every non-empty account (lowercase address) with its balance, nonce, code and
        non-zero storage, read from revm's journaled state. ChainError when that cannot be
        read (a pyrevm whose debug text differs from 0.3.7's)."""
        text = self._evm.journal_str
        end = text.find(", transient_storage:")
        if not text.startswith(_STATE_START) or end < 0:
            raise ChainError("cannot read revm's state: unexpected pyrevm debug text")
        state = text[:end]
        out: dict[str, AccountState] = {}
        matches = _ACCOUNT.findall(state)
        if len(matches) != state.count(": Account { info:"):
            raise ChainError("cannot read revm's state: an account did not parse")
        for address, balance, nonce, code_text, storage_text, status in matches:
            if "SelfDestructed" in status:
                continue
            code = b""
            found = _CODE.search(code_text)
            if found is not None:
                code = bytes.fromhex(found.group(1))
                if found.group(2) is not None:  # analysed code is padded: keep `len` bytes
                    code = code[:int(found.group(2))]
            elif code_text.strip() != "None }":
                raise ChainError(f"cannot read revm's state: the code of {address}")
            storage = {int(k): int(v) for k, v in _SLOT.findall(storage_text) if v != "0"}
            if storage_text.count("present_value") != len(_SLOT.findall(storage_text)):
                raise ChainError(f"cannot read revm's state: the storage of {address}")
            if int(balance) or int(nonce) or code or storage:
                out[address] = AccountState(int(balance), int(nonce), code, storage)
        return out

    @_locked
    def compact(self) -> None:
        """Rebuild revm from a dump of its state, dropping its journal and logs.

        pyrevm never finalises its journal, so it grows with every transaction
        (~0.7 KB a market step); `_seal` calls this every `compact_every` blocks, at
        the same blocks live and in replay, so compaction is part of the chain's
        determinism. Execution results are unchanged; gas used changes (every account
        and slot is cold again, and slots written here count as changed)."""
        dump = self.state_dump()
        old = self._evm
        self._rebuild(dump)
        if self.state_dump() != dump:
            self._evm = old
            raise ChainError("compacting revm's state changed it (pyrevm not 0.3.7?)")
        self._compact_due, self._fresh = False, True

    def _rebuild(self, dump: Mapping[str, AccountState]) -> None:
        """A new revm holding exactly `dump`, every account and slot cold."""
        self._evm = evm = self._new_evm(self._head.head.timestamp)
        for address, account in sorted(dump.items()):
            evm.insert_account_info(address, AccountInfo(
                nonce=account.nonce, code=account.code or None))
            evm.set_balance(address, account.balance)  # loads the account
            for slot, value in sorted(account.storage.items()):
                evm.insert_account_storage(address, slot, value)
            for slot in account.storage:  # load every slot, so the next dump lists it
                evm.storage(address, slot)

    @_locked
    def compact_if_due(self) -> bool:
        """With `compact_when_asked`: compact when a block since the last compaction
        reached a multiple of `compact_every`. True when it compacted."""
        if not self._compact_due:
            return False
        self.compact()
        return True

    @_locked
    def snapshot(self) -> dict[str, Any]:
        """The whole chain as JSON-ready data, taken right after a compaction (ChainError
        otherwise: the cold accounts and slots would not be written down): the state, the
        head block and the next block time. Blocks below the head are not in it."""
        if not self._fresh:
            raise ChainError("a snapshot of the chain is taken right after a compaction")
        head = self._head
        return {
            "state": {a: {"balance": str(acc.balance), "nonce": acc.nonce,
                          "code": acc.code.hex(),
                          "storage": {str(k): str(v) for k, v in sorted(acc.storage.items())}}
                      for a, acc in sorted(self.state_dump().items())},
            "head": [head.head.number, head.head.hash, head.head.parent_hash,
                     head.head.timestamp],
            "base_fee": head.base_fee, "gas_used": head.gas_used,
            "receipts": [_receipt_data(r) for r in head.receipts],
            "next_time": self._next_time,
        }

    @_locked
    def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Become the chain `snapshot` wrote down (blocks below its head are pruned).
        ChainError when the data is not a snapshot or does not rebuild exactly."""
        try:
            dump = {a: AccountState(int(acc["balance"]), int(acc["nonce"]),
                                    bytes.fromhex(acc["code"]),
                                    {int(k): int(v) for k, v in acc["storage"].items()})
                    for a, acc in snapshot["state"].items()}
            number, block_hash, parent, timestamp = snapshot["head"]
            receipts = tuple(_receipt_of(r, self.chain_id) for r in snapshot["receipts"])
            block = _Block(Head(int(number), str(block_hash), str(parent), int(timestamp)),
                           int(snapshot["base_fee"]), int(snapshot["gas_used"]), receipts)
            next_time = int(snapshot["next_time"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ChainError(f"not a snapshot of the chain: {exc!r}") from None
        self._blocks = deque([block], maxlen=self._retain)
        self._tx_index = {r.tx_hash: r for r in receipts}
        self._rebuild(dump)
        if self.state_dump() != dump:
            raise ChainError("the snapshot did not rebuild to the same state")
        self._next_time = next_time
        self._randao.clear()
        self._compact_due, self._fresh = False, True

    # --- blocks ---------------------------------------------------------------

    @property
    def _head(self) -> _Block:
        return self._blocks[-1]

    def _at(self, number: int) -> _Block:
        first = self._blocks[0].head.number
        if not first <= number <= self._head.head.number:
            if 0 <= number < first:
                raise ChainError(f"block {number} is pruned (blocks {first}.. are kept)")
            raise ChainError(f"no block {number}: the head is {self._head.head.number}")
        return self._blocks[number - first]

    @_locked
    def head(self) -> Head:
        return self._head.head

    @_locked
    def block(self, number: int | str) -> Head:
        """(number, hash, parent hash, timestamp) of a block number or "latest"."""
        if number == "latest":
            return self.head()
        if not isinstance(number, int):
            raise ChainError(f"no block {number!r}: give a number or 'latest'")
        return self._at(number).head

    @_locked
    def get_logs(self, from_block: int, to_block: int) -> list[RawLog]:
        if from_block > to_block:
            return []
        to_block = min(to_block, self._head.head.number)
        self._at(from_block)
        return [log for n in range(from_block, to_block + 1)
                for r in self._at(n).receipts for log in r.logs]

    @_locked
    def block_receipts(self, number: int) -> tuple[Receipt, ...]:
        return self._at(number).receipts

    @_locked
    def receipt(self, tx_hash: str) -> Receipt | None:
        return self._tx_index.get(tx_hash.lower())

    @_locked
    def base_fee(self) -> int:
        head = self._head
        return next_base_fee(head.base_fee, head.gas_used)

    def _prevrandao(self, number: int) -> bytes:
        """Block `number`'s prevrandao (the head's and the next block's are kept)."""
        found = self._randao.get(number)
        if found is None:
            if len(self._randao) > 2:
                self._randao.clear()
            found = self._randao[number] = keccak(rlp_encode(
                [b"prevrandao", self.chain_id, self.seed, number]))
        return found

    # --- time -----------------------------------------------------------------

    @_locked
    def set_next_block_time(self, timestamp: float) -> int:
        """Stamp the next block at `timestamp` (or just after the head if that is later)."""
        self._next_time = max(int(timestamp), self._head.head.timestamp + 1)
        return self._next_time

    def _next_block_time(self) -> int:
        ts = max(self._next_time, self._head.head.timestamp + 1)
        self._next_time = ts + 1
        return ts

    @_locked
    def mine(self) -> Head:
        """Mine an empty block at the next block time."""
        self._seal(self._next_block_time(), self.base_fee(), None)
        return self.head()

    # --- reading --------------------------------------------------------------

    def _read_env(self) -> None:
        head = self._head.head
        self._evm.set_block_env(BlockEnv(
            number=head.number, timestamp=head.timestamp, coinbase=COINBASE,
            prevrandao=self._prevrandao(head.number), basefee=self._head.base_fee,
            gas_limit=BLOCK_GAS_LIMIT))

    def _static(self, sender: str, address: str, data: bytes) -> tuple[bool, bytes]:
        """Run a call at the head and undo it: (succeeded, return data or revert data)."""
        self._read_env()
        checkpoint = self._evm.snapshot()
        try:
            out = self._evm.message_call(sender, address, data, gas=BLOCK_GAS_LIMIT)
            return True, bytes(out)
        except RuntimeError as exc:
            result = self._evm.result
            if result is None or result.is_success:
                raise ChainError(f"call to {address} refused: {exc}") from None
            return False, _revert_data(str(exc))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ChainError(f"call to {address} refused: {exc}") from None
        finally:
            self._evm.revert(checkpoint)

    @_locked
    def call(self, address: str, abi: Sequence[Mapping[str, Any]], fn: str, *args: Any) -> Any:
        """eth_call of `fn` at the head; a revert, a non-contract or bad output: ChainError."""
        try:
            data = encode_call(abi, fn, *args)
        except AbiError as exc:
            raise ChainError(f"call {fn} on {address}: {exc}") from None
        if not self._has_code(address):
            raise ChainError(f"call {fn} on {address} failed: no contract there")
        ok, out = self._static(COINBASE, address, data)
        if not ok:
            raise ChainError(f"call {fn} on {address} reverted: {revert_reason(out)}")
        try:
            return decode_result(abi, fn, out)
        except AbiError as exc:
            raise ChainError(f"call {fn} on {address} failed: {exc}") from None

    @_locked
    def raw_call(self, address: str, data: str) -> bytes | None:
        """eth_call with raw calldata at the head; None when the call reverts."""
        try:
            calldata = bytes.fromhex(data.removeprefix("0x"))
        except ValueError:
            raise ChainError(f"eth_call to {address}: calldata is not hex") from None
        ok, out = self._static(COINBASE, address, calldata)
        return out if ok else None

    @_locked
    def preflight(self, sender: str, address: str, abi: Sequence[Mapping[str, Any]],
                  fn: str, *args: Any) -> str | None:
        """None when `fn` called by `sender` would succeed now, else the revert reason."""
        try:
            data = encode_call(abi, fn, *args)
        except AbiError as exc:
            raise ChainError(f"preflight of {fn} on {address}: {exc}") from None
        ok, out = self._static(sender, address, data)
        return None if ok else (revert_reason(out) or "execution reverted")

    def _account(self, address: str) -> Any:
        checkpoint = self._evm.snapshot()
        try:
            return self._evm.basic(address)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise ChainError(f"cannot read account {address}: {exc}") from None
        finally:
            self._evm.revert(checkpoint)

    def _has_code(self, address: str) -> bool:
        code = self._account(address).code
        return bool(code) and code != b"\x00"

    @_locked
    def nonce(self, address: str) -> int:
        return int(self._account(address).nonce)

    @_locked
    def balance(self, address: str) -> int:
        return int(self._account(address).balance)

    def _checksum(self, address: str) -> str:
        """EIP-55 form of `address` (cached: the market has a few dozen addresses)."""
        found = self._checksums.get(address)
        if found is None:
            found = self._checksums[address] = to_checksum_address(address)
        return found

    # --- writing --------------------------------------------------------------

    def _dev_key(self, sender: str) -> DevKey:
        """The key of dev account `sender`."""
        account = self._lower.get(sender.lower())
        if account is None:
            raise ChainError(f"{sender} is not one of the chain's dev accounts (no key)")
        return self._keys[account]

    def _sign(self, sender: str, to: str, data: bytes, value: int, gas: int) -> SignedTx:
        key = self._dev_key(sender)
        base = self.base_fee()
        return sign_1559(key, chain_id=self.chain_id, nonce=self.nonce(key.address),
                         max_fee=2 * base + PRIORITY_FEE, priority_fee=PRIORITY_FEE,
                         gas=gas, to=to, value=value, data=data)

    @_locked
    def deploy(self, artifact: Artifact, *args: Any, sender: str) -> str:
        try:
            code = bytes.fromhex(artifact.bytecode.removeprefix("0x"))
            code += constructor_args(artifact.abi, *args)
        except (AbiError, ValueError) as exc:
            raise ChainError(f"deploying {artifact.name}: {exc}") from None
        receipt, reason = self._include(self._sign(sender, "", code, 0, 10 * DEFAULT_GAS))
        if not receipt.ok or not receipt.contract_address:
            raise ChainError(f"deploying {artifact.name} reverted: {reason}")
        return receipt.contract_address

    @_locked
    def transact(self, address: str, abi: Sequence[Mapping[str, Any]], fn_name: str,
                 *args: Any, sender: str, gas: int = DEFAULT_GAS) -> TxResult:
        """Sign as `sender` (a dev account) and mine; a revert is a result (ok False)."""
        try:
            data = encode_call(abi, fn_name, *args)
        except AbiError as exc:
            raise ChainError(f"{fn_name} on {address}: {exc}") from None
        return self._result(*self._include(self._sign(sender, self._checksum(address), data,
                                                      0, gas)))

    @_locked
    def send_eth(self, sender: str, to: str, value: int) -> None:
        receipt, _ = self._include(self._sign(sender, self._checksum(to), b"", value, 21_000))
        if not receipt.ok:
            raise ChainError(f"sending ETH to {to} failed")

    @_locked
    def send_raw(self, raw: bytes) -> TxResult:
        """Check, execute and mine one signed transaction in its own block."""
        try:
            tx = decode_raw(raw)
        except BadTransaction as exc:
            raise ChainError(f"sending a raw transaction failed: {exc}") from None
        return self._result(*self._include(tx))

    @staticmethod
    def _result(receipt: Receipt, reason: str) -> TxResult:
        if receipt.ok:
            return TxResult(True, receipt.tx_hash, receipt.block_number, receipt.logs)
        return TxResult(False, receipt.tx_hash, receipt.block_number, (),
                        f"reverted: {reason}" if reason else "reverted")

    def _check(self, tx: SignedTx, base_fee: int) -> Any:
        """A node's admission checks; the sender's account when they pass."""
        if (tx.nonce >= 2**64 - 1 or tx.max_fee >= 2**256 or tx.value >= 2**256
                or tx.gas * tx.max_fee + tx.value >= 2**256):
            raise ChainError("a transaction field is out of range (nonce, fee or value)")
        if tx.chain_id is not None and tx.chain_id != self.chain_id:
            raise ChainError(f"transaction for chain {tx.chain_id}, this is {self.chain_id}")
        if tx.hash in self._tx_index:
            raise ChainError(f"transaction {tx.hash} is already mined")
        if tx.gas > BLOCK_GAS_LIMIT:
            raise ChainError(f"gas {tx.gas} over the block gas limit {BLOCK_GAS_LIMIT}")
        if tx.priority_fee > tx.max_fee:
            raise ChainError("priority fee over the fee cap")
        if tx.max_fee < base_fee:
            raise ChainError(f"fee cap {tx.max_fee} under the base fee {base_fee}")
        account = self._account(tx.sender)
        if tx.nonce != account.nonce:
            raise ChainError(f"nonce {tx.nonce} of {tx.sender} is not the account's "
                             f"{account.nonce}")
        cost = tx.gas * tx.max_fee + tx.value
        if account.balance < cost:
            raise ChainError(f"{tx.sender} has {account.balance} wei, the transaction may "
                             f"cost {cost}")
        return account

    def _include(self, tx: SignedTx) -> tuple[Receipt, str]:
        """Admit, execute and seal `tx` in the next block; its receipt and revert reason."""
        base_fee = self.base_fee()
        account = self._check(tx, base_fee)
        number, timestamp = self._head.head.number + 1, self._next_block_time()
        self._evm.set_block_env(BlockEnv(
            number=number, timestamp=timestamp, coinbase=COINBASE,
            prevrandao=self._prevrandao(number), basefee=base_fee, gas_limit=BLOCK_GAS_LIMIT))
        created, reason = "", ""
        if tx.access_list:  # warms its entries and adds their intrinsic gas
            self._evm.set_tx_env(TxEnv(access_list=[(a, list(k)) for a, k in tx.access_list]))
        try:
            if tx.to:
                self._evm.message_call(tx.sender, tx.to, tx.data, value=tx.value, gas=tx.gas)
            else:
                created = self._checksum(
                    self._evm.deploy(tx.sender, tx.data, value=tx.value, gas=tx.gas))
            ok = True
        except RuntimeError as exc:
            result = self._evm.result
            if result is None or result.is_success:  # refused before execution
                self._next_time = timestamp
                raise ChainError(f"the chain refused the transaction: {exc}") from None
            ok = False
            reason = revert_reason(_revert_data(str(exc))) or str(result.reason)
        finally:
            if tx.access_list:
                self._evm.set_tx_env(TxEnv())
        result = self._evm.result
        assert result is not None
        gas_used = int(result.gas_used)
        price = min(tx.max_fee, base_fee + tx.priority_fee)
        fee = gas_used * price
        balance = self._evm.get_balance(tx.sender) - fee
        if not created:  # CREATE bumps the nonce itself
            self._evm.insert_account_info(tx.sender, AccountInfo(nonce=account.nonce + 1))
        self._evm.set_balance(tx.sender, balance)
        tip = gas_used * (price - base_fee)
        if tip:
            self._evm.set_balance(COINBASE, self._evm.get_balance(COINBASE) + tip)
        logs = [(log.address, log.topics, log.data[1]) for log in result.logs] if ok else []
        return self._seal(timestamp, base_fee, (tx, ok, gas_used, logs, created)), reason

    def _seal(self, timestamp: int, base_fee: int,
              mined: tuple[SignedTx, bool, int, list[tuple[str, list[str], bytes]], str] | None,
              ) -> Receipt:
        parent = self._head.head
        number = parent.number + 1
        gas_used, digest = 0, b""
        tx_hashes: list[RlpItem] = []
        if mined is not None:
            tx, ok, gas_used, logs, _ = mined
            tx_hashes = [bytes.fromhex(tx.hash[2:])]
            digest = keccak(b"".join([
                bytes([ok]), gas_used.to_bytes(8, "big"), *(
                    bytes.fromhex(a[2:]) + bytes([len(topics)])
                    + b"".join(bytes.fromhex(t[2:]) for t in topics)
                    + len(data).to_bytes(4, "big") + data
                    for a, topics, data in logs)]))
        block_hash = "0x" + keccak(rlp_encode([
            bytes.fromhex(parent.hash[2:]), number, timestamp, base_fee, gas_used,
            self._prevrandao(number), tx_hashes, digest])).hex()
        receipts: tuple[Receipt, ...] = ()
        receipt = Receipt("", number, block_hash, 0, True, "", "", "0x", 0, ())
        if mined is not None:
            tx, ok, gas_used, logs, created = mined
            raw_logs = tuple(
                RawLog(self.chain_id, number, block_hash, tx.hash, i, self._checksum(address),
                       tuple(t.lower() for t in topics), "0x" + data.hex())
                for i, (address, topics, data) in enumerate(logs))
            receipt = Receipt(tx.hash, number, block_hash, 0, ok, tx.sender, tx.to,
                              "0x" + tx.data.hex(), gas_used, raw_logs, created)
            receipts = (receipt,)
        if len(self._blocks) == self._retain:
            for old in self._blocks[0].receipts:
                self._tx_index.pop(old.tx_hash, None)
        self._blocks.append(_Block(Head(number, block_hash, parent.hash, timestamp),
                                   base_fee, gas_used, receipts))
        for r in receipts:
            self._tx_index[r.tx_hash] = r
        self._fresh = False
        if number % self._compact_every == 0:
            if self._when_asked:
                self._compact_due = True
            else:
                self.compact()
        return receipt


def _revert_data(message: str) -> bytes:
    """The revert output pyrevm puts in its error text ("Revert { ..., output: 0x.. }")."""
    match = _REVERT_OUTPUT.search(message)
    return bytes.fromhex(match.group(1)) if match else b""


def _receipt_data(r: Receipt) -> list[Any]:
    logs = [[x.log_index, x.address, list(x.topics), x.data] for x in r.logs]
    return [r.tx_hash, r.block_number, r.block_hash, r.tx_index, r.ok, r.sender, r.to,
            b64encode(bytes.fromhex(r.input[2:])).decode(), r.gas_used, logs,
            r.contract_address]


def _receipt_of(data: Sequence[Any], chain_id: int) -> Receipt:
    tx_hash, number, block_hash, index, ok, sender, to, calldata, gas, logs, created = data
    raw_logs = tuple(RawLog(chain_id, int(number), str(block_hash), str(tx_hash), int(i), str(a),
                            tuple(str(t) for t in topics), str(d))
                     for i, a, topics, d in logs)
    return Receipt(str(tx_hash), int(number), str(block_hash), int(index), bool(ok),
                   str(sender), str(to), "0x" + b64decode(calldata).hex(), int(gas),
                   raw_logs, str(created))

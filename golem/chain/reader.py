"""What capture asks of a chain, whatever serves it: the node over RPC or the in-process EVM.

`ChainReader` is the whole surface: chain id, head number, headers of a range,
the watched logs of a range, the failed transactions to watched addresses of a
range (a revert emits no log), and `eth_call` for token metadata. Failures are
`RpcError` (transient: back off and retry) or `LogRangeRefused` (ask for fewer
blocks). `expect` gives the header hashes capture already holds for the range,
so a reader that buffers subscription logs can serve exactly that branch.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio.to_thread

from golem.chain.decoding import MalformedLog, RawLog
from golem.chain.reorg import Header
from golem.chain.rpc_errors import RpcError, RpcRefused
from golem.chain.watch import WatchList

if TYPE_CHECKING:
    from golem.chain.evm import Evm

# How nodes word "too many blocks / too many results" (geth, erigon, reth, anvil,
# Alchemy, Infura, QuickNode ...): any of these in a refusal means "ask for less".
_RANGE_HINTS = ("range", "more than", "limit", "too large", "too many results",
                "too many blocks", "exceed", "response size", "10000 results", "block span")


class LogRangeRefused(RpcError):
    """The node would not serve eth_getLogs for this many blocks or results."""


# ... unless it is a rate limit (Infura also answers -32005 "request rate limited"):
# that is transient, back off instead of shrinking the range
_RATE_HINTS = ("rate limit", "request count", "requests per", "too many requests", "daily")


def is_range_refusal(exc: RpcRefused) -> bool:
    text = exc.node_message.lower()
    if any(hint in text for hint in _RATE_HINTS):
        return False
    return exc.code == -32005 or any(hint in text for hint in _RANGE_HINTS)


MAX_FAILED_SPAN = 1000  # blocks per failed_transactions call: full blocks are heavy
INPUT_MAX_BYTES = 4 + 32 * 8  # calldata kept per failed tx: the selector and 8 words


@dataclass(frozen=True)
class FailedTx:
    """A mined transaction to a watched address whose receipt says status 0."""

    chain_id: int
    block_number: int
    block_hash: str
    tx_index: int
    tx_hash: str
    sender: str
    to: str
    selector: str  # "0x" + 4 bytes, or "0x" when the calldata is shorter
    input: str  # hex calldata, at most INPUT_MAX_BYTES


class ChainReader(Protocol):
    async def chain_id(self) -> int: ...
    async def head_number(self) -> int: ...
    async def headers(self, lo: int, hi: int) -> list[Header]: ...
    async def get_logs(self, lo: int, hi: int, watch: WatchList,
                       expect: Mapping[int, str] | None = None) -> list[RawLog]: ...
    async def failed_transactions(self, lo: int, hi: int, addresses: Iterable[str],
                                  succeeded: Collection[str] = ()) -> list[FailedTx]: ...
    async def eth_call(self, address: str, data: str) -> bytes | None: ...
    async def aclose(self) -> None: ...


def to_int(value: Any, what: str) -> int:
    try:
        return int(value, 16) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise RpcError(f"{what}: not a number: {value!r}") from None


def header_of(block: Any, number: int) -> Header:
    if not isinstance(block, Mapping):
        raise RpcError(f"block {number} not available from the node yet")
    try:
        got = to_int(block["number"], "block number")
        header = Header(got, str(block["hash"]).lower(), str(block["parentHash"]).lower())
    except KeyError as exc:
        raise RpcError(f"block {number}: reply lacks {exc.args[0]!r}") from None
    if got != number:
        raise RpcError(f"asked for block {number}, the node sent block {got}")
    return header


def logs_of(raw: Any, chain_id: int, lo: int, hi: int) -> list[RawLog]:
    """Parse eth_getLogs results; a log outside the asked range is the node's fault."""
    if not isinstance(raw, list):
        raise RpcError("eth_getLogs: result is not a list")
    out = []
    for item in raw:
        try:
            log = RawLog.from_web3(item, chain_id=chain_id)
        except (MalformedLog, TypeError, AttributeError) as exc:
            raise RpcError(f"eth_getLogs: malformed log from the node: {exc}") from None
        if not lo <= log.block_number <= hi:
            raise RpcError(f"eth_getLogs: node returned a log of block {log.block_number} "
                           f"for the range {lo}..{hi}")
        if not log.removed:
            out.append(log)
    return out


def check_span(lo: int, hi: int) -> None:
    if hi - lo + 1 > MAX_FAILED_SPAN:
        raise ValueError(f"failed_transactions: {hi - lo + 1} blocks asked, "
                         f"at most {MAX_FAILED_SPAN} per call")


def _hex(value: Any, what: str) -> str:
    """A hash, address or calldata as lowercase 0x hex (web3 gives bytes, JSON strings)."""
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, str) and value.startswith(("0x", "0X")):
        return value.lower()
    raise RpcError(f"{what}: not hex: {value!r}")


def watched_txs(block: Any, number: int, addresses: frozenset[str],
                chain_id: int) -> list[FailedTx]:
    """The transactions of a full block sent to a watched address (status not known yet).
    JSON-RPC names fields in camelCase; eth-tester's web3 in snake_case (transaction_index)."""
    if not isinstance(block, Mapping):
        raise RpcError(f"block {number} not available from the node yet")
    try:
        got, block_hash = to_int(block["number"], "block number"), _hex(block["hash"], "hash")
    except KeyError as exc:
        raise RpcError(f"block {number}: reply lacks {exc.args[0]!r}") from None
    if got != number:
        raise RpcError(f"asked for block {number}, the node sent block {got}")
    txs = block.get("transactions")
    if not isinstance(txs, list):
        raise RpcError(f"block {number}: transactions are not a list")
    out = []
    for tx in txs:
        if not isinstance(tx, Mapping):
            raise RpcError(f"block {number}: transactions came as hashes, not objects")
        if tx.get("to") is None or _hex(tx["to"], "tx to") not in addresses:
            continue  # contract creations have no `to`
        try:
            data = _hex(tx.get("input", tx.get("data", "0x")), "tx input")
            index = tx["transactionIndex" if "transactionIndex" in tx else "transaction_index"]
            out.append(FailedTx(
                chain_id, number, block_hash, to_int(index, "tx index"),
                _hex(tx["hash"], "tx hash"), _hex(tx["from"], "tx from"),
                _hex(tx["to"], "tx to"), data[:10] if len(data) >= 10 else "0x",
                data[:2 + 2 * INPUT_MAX_BYTES]))
        except KeyError as exc:
            raise RpcError(f"block {number}: a transaction lacks {exc.args[0]!r}") from None
    return out


def reverted(receipt: Any, tx: FailedTx) -> bool:
    """Whether the receipt says the transaction failed; a receipt of another block means
    the node's view moved under us (transient: retry)."""
    if not isinstance(receipt, Mapping):
        raise RpcError(f"no receipt for {tx.tx_hash} yet")
    try:
        block_hash = _hex(receipt["blockHash"], "receipt blockHash")
        status = to_int(receipt["status"], "receipt status")
    except KeyError as exc:
        raise RpcError(f"receipt of {tx.tx_hash} lacks {exc.args[0]!r}") from None
    if block_hash != tx.block_hash:
        raise RpcError(f"receipt of {tx.tx_hash} is in block {block_hash}, "
                       f"not {tx.block_hash}: the chain moved")
    return status == 0


class InProcessReader:
    """An in-process `Evm` behind the reader surface (calls run in a worker thread)."""

    def __init__(self, evm: Evm) -> None:
        self.evm = evm

    async def chain_id(self) -> int:
        return self.evm.chain_id

    async def head_number(self) -> int:
        return (await anyio.to_thread.run_sync(self.evm.head)).number

    async def headers(self, lo: int, hi: int) -> list[Header]:
        def read() -> list[Header]:
            blocks = [self.evm.block(n) for n in range(lo, hi + 1)]
            return [Header(b.number, b.hash, b.parent_hash) for b in blocks]

        return await anyio.to_thread.run_sync(read)

    async def get_logs(self, lo: int, hi: int, watch: WatchList,
                       expect: Mapping[int, str] | None = None) -> list[RawLog]:
        logs = await anyio.to_thread.run_sync(self.evm.get_logs, lo, hi)
        return [log for log in logs
                if watch.matches(log.address, log.topics[0] if log.topics else None)]

    async def failed_transactions(self, lo: int, hi: int, addresses: Iterable[str],
                                  succeeded: Collection[str] = ()) -> list[FailedTx]:
        check_span(lo, hi)
        watched = frozenset(a.lower() for a in addresses)
        ok = frozenset(h.lower() for h in succeeded)
        chain_id = self.evm.chain_id

        def read() -> list[FailedTx]:
            out = []
            for n in range(lo, hi + 1):
                for r in self.evm.block_receipts(n):
                    if (r.ok or not r.to or r.to.lower() not in watched
                            or r.tx_hash in ok):
                        continue
                    data = r.input[:2 + 2 * INPUT_MAX_BYTES]
                    out.append(FailedTx(chain_id, n, r.block_hash, r.tx_index, r.tx_hash,
                                        r.sender.lower(), r.to.lower(),
                                        data[:10] if len(data) >= 10 else "0x", data))
            return out

        return await anyio.to_thread.run_sync(read)

    async def eth_call(self, address: str, data: str) -> bytes | None:
        return await anyio.to_thread.run_sync(self.evm.raw_call, address, data)

    async def aclose(self) -> None:
        return None

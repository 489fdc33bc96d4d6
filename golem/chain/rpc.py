"""Capture's reader for a real node: HTTP polling, or WebSocket with subscriptions.

HTTP: head by eth_blockNumber, headers in one JSON-RPC batch, logs by
eth_getLogs (the caller chunks the range and halves it on `LogRangeRefused`);
failed transactions by full blocks in batches, then receipts (batched) only for
the transactions sent to a watched address.

WebSocket: the same requests over the socket, plus `eth_subscribe` to newHeads
and to the watched logs. Subscribed logs are buffered by block hash and serve a
range only when it is provably covered: every block in it was announced by
newHeads with the hash capture expects, a later block was announced too (logs
of block n arrive before the head of n + 1), and the subscription has been up
without a break since before the range's first block. Anything else (a
reconnect, an unannounced block, a reorged hash, a full queue) falls back to
eth_getLogs, so a dropped socket can cost a request but never a log.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import structlog

from golem.chain.decoding import MalformedLog, RawLog
from golem.chain.jsonrpc import HttpRpc, WsRpc
from golem.chain.reader import (
    FailedTx,
    LogRangeRefused,
    check_span,
    header_of,
    is_range_refusal,
    logs_of,
    reverted,
    to_int,
    watched_txs,
)
from golem.chain.reorg import Header
from golem.chain.rpc_errors import RpcError, RpcRefused
from golem.chain.watch import WatchList

log = structlog.get_logger("golem.chain.rpc")

HEADER_BATCH = 100
FULL_BLOCK_BATCH = 20  # full blocks (with transactions) per batch: replies are large
RECEIPT_BATCH = 100
KEEP_BLOCKS = 1024  # subscription buffer kept below the lowest block still asked for


class RpcReader:
    """A node over HTTP(S) or WS(S); the URL scheme picks the transport."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._chain_id: int | None = None
        self.rpc: HttpRpc | WsRpc = (WsRpc(url, timeout_s) if url.startswith(("ws:", "wss:"))
                                     else HttpRpc(url, timeout_s))

    async def chain_id(self) -> int:
        return to_int(await self.rpc.request("eth_chainId"), "eth_chainId")

    async def head_number(self) -> int:
        return to_int(await self.rpc.request("eth_blockNumber"), "eth_blockNumber")

    async def headers(self, lo: int, hi: int) -> list[Header]:
        out: list[Header] = []
        for start in range(lo, hi + 1, HEADER_BATCH):
            numbers = range(start, min(start + HEADER_BATCH, hi + 1))
            blocks = await self.rpc.batch([("eth_getBlockByNumber", [hex(n), False])
                                           for n in numbers])
            out.extend(header_of(b, n) for b, n in zip(blocks, numbers, strict=True))
        return out

    async def get_logs(self, lo: int, hi: int, watch: WatchList,
                       expect: Mapping[int, str] | None = None) -> list[RawLog]:
        del expect
        return await self._get_logs(lo, hi, watch)

    async def _get_logs(self, lo: int, hi: int, watch: WatchList) -> list[RawLog]:
        query = {"fromBlock": hex(lo), "toBlock": hex(hi), **watch.rpc_filter()}
        try:
            raw = await self.rpc.request("eth_getLogs", [query])
        except RpcRefused as exc:
            if is_range_refusal(exc):
                raise LogRangeRefused(str(exc)) from None
            raise
        return logs_of(raw, await self._cached_chain_id(), lo, hi)

    async def failed_transactions(self, lo: int, hi: int, addresses: Iterable[str],
                                  succeeded: Collection[str] = ()) -> list[FailedTx]:
        check_span(lo, hi)
        watched = frozenset(a.lower() for a in addresses)
        ok = frozenset(h.lower() for h in succeeded)
        chain_id = await self._cached_chain_id()
        sent: list[FailedTx] = []
        for start in range(lo, hi + 1, FULL_BLOCK_BATCH):
            numbers = range(start, min(start + FULL_BLOCK_BATCH, hi + 1))
            blocks = await self.rpc.batch([("eth_getBlockByNumber", [hex(n), True])
                                           for n in numbers])
            for block, n in zip(blocks, numbers, strict=True):
                sent.extend(tx for tx in watched_txs(block, n, watched, chain_id)
                            if tx.tx_hash not in ok)
        out: list[FailedTx] = []
        for start in range(0, len(sent), RECEIPT_BATCH):
            chunk = sent[start:start + RECEIPT_BATCH]
            receipts = await self.rpc.batch([("eth_getTransactionReceipt", [tx.tx_hash])
                                             for tx in chunk])
            out.extend(tx for tx, r in zip(chunk, receipts, strict=True) if reverted(r, tx))
        return out

    async def _cached_chain_id(self) -> int:
        if self._chain_id is None:
            self._chain_id = await self.chain_id()
        return self._chain_id

    async def eth_call(self, address: str, data: str) -> bytes | None:
        try:
            result = await self.rpc.request("eth_call", [{"to": address, "data": data},
                                                         "latest"])
        except RpcRefused:
            return None  # reverted or no such function: unknown metadata, not an outage
        if not isinstance(result, str) or not result.startswith("0x"):
            return None
        try:
            return bytes.fromhex(result[2:])
        except ValueError:
            return None

    async def aclose(self) -> None:
        await self.rpc.aclose()


class WsReader(RpcReader):
    """RpcReader over a WebSocket that serves logs from subscriptions when it safely can."""

    def __init__(self, url: str, timeout_s: float, watch: WatchList) -> None:
        super().__init__(url, timeout_s)
        assert isinstance(self.rpc, WsRpc)
        self.ws: WsRpc = self.rpc
        self.watch = watch
        self._generation = -1  # the socket generation our subscriptions belong to
        self._subs: dict[str, str] = {}  # subscription id -> "logs" | "newHeads"
        self._covered_from: int | None = None
        self._heads: dict[int, str] = {}
        self._logs: dict[tuple[str, int], RawLog] = {}
        self.served_from_subscription = 0
        self.served_by_request = 0

    async def _ensure_subscribed(self) -> None:
        if self.ws.connected and self._generation == self.ws.generation:
            return
        self._subs.clear()
        self._heads.clear()
        self._logs.clear()
        self._covered_from = None
        heads = await self.ws.request("eth_subscribe", ["newHeads"])
        self._generation = self.ws.generation
        logs = await self.ws.request("eth_subscribe", ["logs", self.watch.rpc_filter()])
        self._subs = {str(heads): "newHeads", str(logs): "logs"}
        # blocks above the head seen after subscribing are certain to be announced
        self._covered_from = await self.head_number() + 1
        self.ws.overflowed = False
        log.info("subscribed to new heads and logs", url=self.ws.url,
                 covered_from=self._covered_from, generation=self._generation)

    async def _drain(self) -> None:
        chain_id = await self._cached_chain_id()
        queue = self.ws.notifications
        while not queue.empty():
            generation, sub, result = queue.get_nowait()
            if generation != self._generation or sub not in self._subs:
                continue
            try:
                self._note(self._subs[sub], result, chain_id)
            except (MalformedLog, RpcError, KeyError, TypeError, ValueError) as exc:
                # a lost logs message may belong to any block announced so far (or the
                # next): stop trusting the subscription for those, eth_getLogs serves them
                newest = max(self._heads, default=self._covered_from or 0)
                self._covered_from = max(self._covered_from or 0, newest + 2)
                log.warning("unusable subscription message dropped; its blocks will be "
                            "fetched with eth_getLogs", error=str(exc),
                            covered_from=self._covered_from)

    def _note(self, kind: str, result: Any, chain_id: int) -> None:
        if kind == "newHeads":
            number = to_int(result["number"], "newHeads number")
            self._heads[number] = str(result["hash"]).lower()
            return
        entry = RawLog.from_web3(result, chain_id=chain_id)
        key = (entry.block_hash, entry.log_index)
        if entry.removed:
            self._logs.pop(key, None)
        else:
            self._logs[key] = entry

    async def head_number(self) -> int:
        number = await super().head_number()
        await self._drain()
        return number

    async def get_logs(self, lo: int, hi: int, watch: WatchList,
                       expect: Mapping[int, str] | None = None) -> list[RawLog]:
        await self._ensure_subscribed()
        await self._drain()
        self._prune(lo - KEEP_BLOCKS)
        if self._covered(lo, hi, watch, expect):
            assert expect is not None
            wanted = {expect[n] for n in range(lo, hi + 1)}
            self.served_from_subscription += 1
            return sorted((e for e in self._logs.values() if e.block_hash in wanted),
                          key=lambda e: (e.block_number, e.log_index))
        self.served_by_request += 1
        return await self._get_logs(lo, hi, watch)

    def _covered(self, lo: int, hi: int, watch: WatchList,
                 expect: Mapping[int, str] | None) -> bool:
        if (expect is None or watch != self.watch or self.ws.overflowed
                or self._covered_from is None or lo < self._covered_from or not self._heads):
            return False
        if hi >= max(self._heads):
            return False
        return all(n in expect and self._heads.get(n) == expect[n] for n in range(lo, hi + 1))

    def _prune(self, below: int) -> None:
        for number in [n for n in self._heads if n < below]:
            del self._heads[number]
        for key in [k for k, e in self._logs.items() if e.block_number < below]:
            del self._logs[key]


def open_reader(url: str, timeout_s: float, watch: WatchList) -> RpcReader:
    """The reader for a configured node URL (ws(s):// subscribes, http(s):// polls)."""
    if url.startswith(("ws:", "wss:")):
        return WsReader(url, timeout_s, watch)
    return RpcReader(url, timeout_s)

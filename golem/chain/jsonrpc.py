"""JSON-RPC to a node over HTTP (aiohttp) or WebSocket (websockets): the RPC adapter.

We speak JSON-RPC ourselves instead of going through web3's provider stack:
capture must know exactly which request failed and when a subscription was
down (web3's providers retry and reconnect on their own, which hides gaps), and
every call needs one explicit timeout. Every failure comes out as `RpcError`
(transport: unreachable, timeout, bad JSON) or its subclass `RpcRefused` (the
node answered with a JSON-RPC error), never as an aiohttp/websockets exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Sequence
from typing import Any

import aiohttp
import websockets
from websockets.asyncio.client import ClientConnection, connect

from golem.chain.rpc_errors import RpcError, RpcRefused
from golem.redact import redact_url

Call = tuple[str, Sequence[Any]]


def _result(method: str, reply: Any) -> Any:
    if not isinstance(reply, dict):
        raise RpcError(f"{method}: reply is not a JSON object")
    error = reply.get("error")
    if error is not None:
        if isinstance(error, dict):
            raise RpcRefused(method, int(error.get("code", 0)), str(error.get("message", "")))
        raise RpcRefused(method, 0, str(error))
    if "result" not in reply:
        raise RpcError(f"{method}: reply has neither result nor error")
    return reply["result"]


def _batch_results(calls: Sequence[Call], replies: Any, first_id: int) -> list[Any]:
    if not isinstance(replies, list):
        # a node that refuses batches answers with a single error object
        return [_result(calls[0][0] + " (batch)", replies)]
    by_id = {r.get("id"): r for r in replies if isinstance(r, dict)}
    out = []
    for offset, (method, _) in enumerate(calls):
        reply = by_id.get(first_id + offset)
        if reply is None:
            raise RpcError(f"{method}: missing from the batch reply")
        out.append(_result(method, reply))
    return out


class HttpRpc:
    """Request/response JSON-RPC over HTTP, one aiohttp session per transport."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self._url = url
        self.url = redact_url(url)  # the form that may appear in messages and logs
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        return self._session

    async def _post(self, what: str, body: Any) -> Any:
        try:
            async with self._client().post(self._url, json=body) as resp:
                text = await resp.text()
                if resp.status >= 400 and not text.lstrip().startswith(("{", "[")):
                    raise RpcError(f"{what}: HTTP {resp.status} from {self.url}")
        except TimeoutError:
            raise RpcError(f"{what}: no answer from {self.url} within "
                           f"{self.timeout_s:g} s") from None
        except aiohttp.ClientError as exc:
            raise RpcError(f"{what}: {self.url} unreachable: {exc}") from None
        try:
            return json.loads(text)
        except ValueError:
            raise RpcError(f"{what}: reply from {self.url} is not JSON") from None

    async def request(self, method: str, params: Sequence[Any] = ()) -> Any:
        body = {"jsonrpc": "2.0", "id": next(self._ids), "method": method,
                "params": list(params)}
        return _result(method, await self._post(method, body))

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        """Several calls in one round trip; results in call order."""
        if not calls:
            return []
        first = next(self._ids)
        body = [{"jsonrpc": "2.0", "id": first + i, "method": m, "params": list(p)}
                for i, (m, p) in enumerate(calls)]
        self._ids = itertools.count(first + len(calls))
        return _batch_results(calls, await self._post(f"{calls[0][0]} x{len(calls)}", body),
                              first)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


class WsRpc:
    """JSON-RPC over one WebSocket, with subscriptions.

    A reader task routes replies to waiting requests and subscription
    notifications to `notifications`. When the socket drops, every pending
    request fails with RpcError, `generation` is bumped (so subscribers know
    they may have missed notifications) and the next request reconnects.
    """

    def __init__(self, url: str, timeout_s: float, queue_size: int = 100_000) -> None:
        self._url = url
        self.url = redact_url(url)  # the form that may appear in messages and logs
        self.timeout_s = timeout_s
        self.generation = 0
        self.notifications: asyncio.Queue[tuple[int, str, Any]] = asyncio.Queue(queue_size)
        self._ids = itertools.count(1)
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._lock = asyncio.Lock()
        self.overflowed = False

    @property
    def connected(self) -> bool:
        return self._ws is not None

    async def _connection(self) -> ClientConnection:
        async with self._lock:
            if self._ws is None:
                try:
                    self._ws = await asyncio.wait_for(
                        connect(self._url, max_size=64 * 2**20, ping_interval=20,
                                ping_timeout=self.timeout_s),
                        self.timeout_s)
                except TimeoutError:
                    raise RpcError(f"connect: no answer from {self.url} within "
                                   f"{self.timeout_s:g} s") from None
                except (OSError, websockets.exceptions.WebSocketException) as exc:
                    raise RpcError(f"connect: {self.url} unreachable: {exc}") from None
                self.generation += 1
                self._reader = asyncio.create_task(self._read(self._ws, self.generation))
            return self._ws

    async def _read(self, ws: ClientConnection, generation: int) -> None:
        try:
            async for message in ws:
                self._dispatch(message, generation)
        except (websockets.exceptions.WebSocketException, OSError):
            pass
        finally:
            self._drop(ws, "connection closed")

    def _dispatch(self, message: str | bytes, generation: int) -> None:
        try:
            data = json.loads(message)
        except ValueError:
            return
        for item in data if isinstance(data, list) else [data]:
            if not isinstance(item, dict):
                continue
            if item.get("method") == "eth_subscription":
                params = item.get("params") or {}
                try:
                    self.notifications.put_nowait(
                        (generation, str(params.get("subscription")), params.get("result")))
                except asyncio.QueueFull:
                    self.overflowed = True
                continue
            future = self._pending.pop(item.get("id"), None)  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(item)

    def _drop(self, ws: ClientConnection, why: str) -> None:
        if self._ws is ws:
            self._ws = None
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RpcError(f"{self.url}: {why}"))
        self._pending.clear()

    async def _send(self, what: str, payload: Any, ids: Sequence[int]) -> list[Any]:
        ws = await self._connection()
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in ids]
        self._pending.update(zip(ids, futures, strict=True))
        try:
            await asyncio.wait_for(ws.send(json.dumps(payload)), self.timeout_s)
            return list(await asyncio.wait_for(asyncio.gather(*futures), self.timeout_s))
        except TimeoutError:
            raise RpcError(f"{what}: no answer from {self.url} within "
                           f"{self.timeout_s:g} s") from None
        except websockets.exceptions.WebSocketException as exc:
            self._drop(ws, f"send failed: {exc}")
            raise RpcError(f"{what}: {self.url}: {exc}") from None
        finally:
            for i in ids:
                self._pending.pop(i, None)

    async def request(self, method: str, params: Sequence[Any] = ()) -> Any:
        rid = next(self._ids)
        body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": list(params)}
        (reply,) = await self._send(method, body, [rid])
        return _result(method, reply)

    async def batch(self, calls: Sequence[Call]) -> list[Any]:
        if not calls:
            return []
        ids = [next(self._ids) for _ in calls]
        body = [{"jsonrpc": "2.0", "id": i, "method": m, "params": list(p)}
                for i, (m, p) in zip(ids, calls, strict=True)]
        replies = await self._send(f"{calls[0][0]} x{len(calls)}", body, ids)
        return [_result(m, r) for (m, _), r in zip(calls, replies, strict=True)]

    async def reset(self) -> None:
        """Close the socket (if open); the next request reconnects with a new generation."""
        ws, self._ws = self._ws, None
        if ws is not None:
            self._drop(ws, "reset")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), self.timeout_s)

    async def aclose(self) -> None:
        await self.reset()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
            self._reader = None

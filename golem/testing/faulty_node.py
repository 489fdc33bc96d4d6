"""A JSON-RPC proxy in front of a real node that misbehaves on demand (tests only).

    with FaultyNode(anvil.http_url) as node:       # http_url / ws_url point at the proxy
        node.max_log_span = 4                      # refuse wider eth_getLogs (-32005)
        node.fail_next(3, "503")                   # or "drop": close the connection
        node.set_down(True)                        # refuse connections entirely
        node.set_delay(1.0, count=2)               # answer late (timeouts)
        node.malform_next_log("no_block_hash")     # or "bad_hex"; once, in eth_getLogs
        node.malform_next_log_notification()       # once, in a WS logs subscription
        node.report_head_behind(10, answers=5)     # eth_blockNumber goes backwards
        node.drop_websockets()                     # every WS client must reconnect

HTTP POST and WebSocket (GET upgrade) on the same port of 127.0.0.1. The proxy
runs its own event loop in a background thread, so tests drive faults from the
test thread while the code under test talks to it. Faults are counted in
`faults`, methods seen in `requests`, so a test can check a fault really fired.
WebSocket traffic (eth_subscribe, notifications) is forwarded to the node's own
WebSocket; eth_getLogs and eth_blockNumber replies pass the same faults as HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Coroutine
from types import TracebackType
from typing import Any, Literal, TypeVar

import aiohttp
from aiohttp import web

from golem.testing.loop_thread import LoopThread

FailHow = Literal["503", "drop"]
MalformHow = Literal["no_block_hash", "bad_hex"]
RANGE_CODE = -32005
T = TypeVar("T")


class FaultyNode:
    """Forward JSON-RPC to `upstream` (http://host:port; its WS is the same host and port)."""

    def __init__(self, upstream: str, *, host: str = "127.0.0.1") -> None:
        self.upstream = upstream
        self.upstream_ws = "ws" + upstream.removeprefix("http")
        self.host = host
        self.port = 0
        # faults, set from any thread (plain attributes, read once per request)
        self.max_log_span: int | None = None
        self.max_log_results: int | None = None
        self.requests: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._fail_left = 0
        self._fail_how: FailHow = "503"
        self._delay_s = 0.0
        self._delay_left: int | None = None
        self._malform: MalformHow | None = None
        self._malform_pushed: MalformHow | None = None
        self._behind = 0
        self._behind_left: int | None = None
        self._down = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runtime = LoopThread("faulty-node")
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._session: aiohttp.ClientSession | None = None
        self._sockets: set[web.WebSocketResponse] = set()

    @property
    def http_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    # --- faults -------------------------------------------------------------------

    def fail_next(self, count: int, how: FailHow = "503") -> None:
        """The next `count` requests fail: HTTP 503, or the connection is closed unanswered.

        Over WebSocket either kind closes the socket.
        """
        with self._lock:
            self._fail_left, self._fail_how = count, how

    @property
    def failures_pending(self) -> int:
        """How many of the failures asked for by `fail_next` have not happened yet."""
        with self._lock:
            return self._fail_left

    def set_delay(self, seconds: float, count: int | None = None) -> None:
        """Answer `seconds` late: the next `count` requests, or all until set to 0."""
        with self._lock:
            self._delay_s, self._delay_left = seconds, count

    def malform_next_log(self, how: MalformHow = "no_block_hash") -> None:
        """Corrupt the first log of the next non-empty eth_getLogs result, once."""
        with self._lock:
            self._malform = how

    def malform_next_log_notification(self, how: MalformHow = "no_block_hash") -> None:
        """Corrupt the next log pushed to a WebSocket `logs` subscription, once."""
        with self._lock:
            self._malform_pushed = how

    def report_head_behind(self, blocks: int, answers: int | None = None) -> None:
        """eth_blockNumber reports `blocks` below the real head: `answers` times, or until 0."""
        with self._lock:
            self._behind, self._behind_left = blocks, answers

    def set_down(self, down: bool) -> None:
        """Down: refuse new connections, drop open ones. Up: listen on the same port again."""
        self._call(self._set_down(down))

    def drop_websockets(self) -> int:
        """Close every WebSocket connection abruptly; returns how many were open."""
        return self._call(self._drop_websockets())

    def clear(self) -> None:
        """No more faults (a node that is down comes back up)."""
        self.max_log_span = self.max_log_results = None
        self.fail_next(0)
        self.set_delay(0.0)
        self.report_head_behind(0)
        with self._lock:
            self._malform = self._malform_pushed = None
        if self._down:
            self.set_down(False)

    # --- life cycle ---------------------------------------------------------------

    def start(self) -> FaultyNode:
        self._runtime.start(self._open, self._close)
        self._loop = self._runtime.loop
        return self

    def stop(self) -> None:
        self._runtime.stop()

    def __enter__(self) -> FaultyNode:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None or not self._runtime.running:
            coro.close()
            raise RuntimeError("the proxy is not running")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(10.0)

    async def _open(self) -> None:
        app = web.Application()
        app.router.add_route("POST", "/", self._http)
        app.router.add_route("GET", "/", self._websocket)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        await self._listen()
        self.port = int(self._runner.addresses[0][1])

    async def _listen(self) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(self._runner, self.host, self.port)
        await self._site.start()

    async def _close(self) -> None:
        await self._drop_websockets()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _set_down(self, down: bool) -> None:
        if down == self._down:
            return
        self._down = down
        if down:
            if self._site is not None:
                await self._site.stop()
                self._site = None
            self.faults["down"] += 1
            await self._drop_websockets()
        else:
            await self._listen()

    async def _drop_websockets(self) -> int:
        sockets = list(self._sockets)
        self._sockets.clear()
        for ws in sockets:
            with contextlib.suppress(Exception):
                await ws.close(code=aiohttp.WSCloseCode.GOING_AWAY)
        if sockets:
            self.faults["ws_dropped"] += len(sockets)
        return len(sockets)

    # --- per request ----------------------------------------------------------------

    def _take_failure(self) -> FailHow | None:
        with self._lock:
            if self._fail_left <= 0:
                return None
            self._fail_left -= 1
            return self._fail_how

    async def _maybe_delay(self) -> None:
        with self._lock:
            delay = self._delay_s
            if delay > 0 and self._delay_left is not None:
                self._delay_left -= 1
                if self._delay_left <= 0:
                    self._delay_s, self._delay_left = 0.0, None
        if delay > 0:
            self.faults["delayed"] += 1
            await asyncio.sleep(delay)

    async def _http(self, request: web.Request) -> web.StreamResponse:
        if self._down:
            return _drop(request)  # a keep-alive connection from before the outage
        body = await request.read()
        failure = self._take_failure()
        if failure == "503":
            self.faults["http_503"] += 1
            return web.Response(status=503, text="Service Unavailable")
        if failure == "drop":
            self.faults["dropped"] += 1
            return _drop(request)
        await self._maybe_delay()
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        calls = payload if isinstance(payload, list) else [payload]
        for call in calls:
            if isinstance(call, dict):
                self.requests[str(call.get("method"))] += 1
        refusals = [await self._refusal(c) for c in calls]
        # (a batch is refused only when every call in it is: capture never batches getLogs)
        if all(r is not None for r in refusals) and calls:
            return web.json_response(refusals if isinstance(payload, list) else refusals[0])
        assert self._session is not None
        async with self._session.post(self.upstream, data=body,
                                      headers={"Content-Type": "application/json"}) as resp:
            status, reply = resp.status, await resp.json(content_type=None)
        if isinstance(payload, list) and isinstance(reply, list):
            by_id = {r.get("id"): r for r in reply if isinstance(r, dict)}
            reply = [self._rewrite(c, by_id.get(c.get("id")))
                     for c in payload if isinstance(c, dict)]
        elif isinstance(payload, dict):
            reply = self._rewrite(payload, reply)
        return web.json_response(reply, status=status)

    async def _refusal(self, call: Any) -> dict[str, Any] | None:
        """The -32005 error a range-limited node answers instead of forwarding, or None."""
        span_limit = self.max_log_span
        if (span_limit is None or not isinstance(call, dict)
                or call.get("method") != "eth_getLogs"):
            return None
        params = call.get("params") or [{}]
        query = params[0] if isinstance(params[0], dict) else {}
        if "blockHash" in query:
            return None
        lo = await self._block_number(query.get("fromBlock", "latest"))
        hi = await self._block_number(query.get("toBlock", "latest"))
        if hi - lo + 1 <= span_limit:
            return None
        self.faults["range_refused"] += 1
        return _error(call, f"query exceeds max block range {span_limit}")

    async def _block_number(self, tag: Any) -> int:
        if isinstance(tag, str) and tag.startswith("0x"):
            return int(tag, 16)
        if tag == "earliest":
            return 0
        assert self._session is not None
        body = {"jsonrpc": "2.0", "id": 0, "method": "eth_blockNumber", "params": []}
        async with self._session.post(self.upstream, json=body) as resp:
            return int((await resp.json(content_type=None))["result"], 16)

    def _rewrite(self, call: Any, reply: Any) -> Any:
        """Apply reply faults (result limit, malformed log, head behind) to one reply."""
        if not isinstance(call, dict) or not isinstance(reply, dict) or "result" not in reply:
            return reply
        method, result = call.get("method"), reply["result"]
        if method == "eth_getLogs" and isinstance(result, list):
            limit = self.max_log_results
            if limit is not None and len(result) > limit:
                self.faults["too_many_results"] += 1
                return _error(call, f"query returned more than {limit} results")
            with self._lock:
                how = self._malform if result else None
                self._malform = None if how else self._malform
            if how is not None:
                self.faults["malformed_log"] += 1
                return {**reply, "result": [_malformed(result[0], how), *result[1:]]}
        if method == "eth_blockNumber" and isinstance(result, str):
            with self._lock:
                behind = self._behind
                if behind and self._behind_left is not None:
                    self._behind_left -= 1
                    if self._behind_left <= 0:
                        self._behind, self._behind_left = 0, None
            if behind:
                self.faults["head_behind"] += 1
                return {**reply, "result": hex(max(0, int(result, 16) - behind))}
        return reply

    def _rewrite_pushed(self, message: dict[str, Any]) -> dict[str, Any]:
        params = message.get("params")
        result = params.get("result") if isinstance(params, dict) else None
        if not isinstance(result, dict) or "logIndex" not in result:
            return message  # not a log (a new head)
        with self._lock:
            how, self._malform_pushed = self._malform_pushed, None
        if how is None:
            return message
        self.faults["malformed_log_notification"] += 1
        assert isinstance(params, dict)
        return {**message, "params": {**params, "result": _malformed(result, how)}}

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if self._down:
            return _drop(request)
        client = web.WebSocketResponse(max_msg_size=64 * 2**20)
        await client.prepare(request)
        assert self._session is not None
        self._sockets.add(client)
        calls: dict[Any, dict[str, Any]] = {}
        try:
            async with self._session.ws_connect(self.upstream_ws,
                                                max_msg_size=64 * 2**20) as node:
                pump = asyncio.create_task(self._from_node(node, client, calls))
                try:
                    await self._from_client(client, node, calls)
                finally:
                    pump.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await pump
        finally:
            self._sockets.discard(client)
            await client.close()
        return client

    async def _from_client(self, client: web.WebSocketResponse,
                           node: aiohttp.ClientWebSocketResponse,
                           calls: dict[Any, dict[str, Any]]) -> None:
        async for message in client:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            if self._take_failure() is not None:
                self.faults["ws_failed"] += 1
                return
            await self._maybe_delay()
            payload = json.loads(message.data)
            items = payload if isinstance(payload, list) else [payload]
            refusals = []
            for call in items:
                if isinstance(call, dict):
                    self.requests[str(call.get("method"))] += 1
                    calls[call.get("id")] = call
                    refusals.append(await self._refusal(call))
            if refusals and all(r is not None for r in refusals):
                await client.send_json(refusals if isinstance(payload, list) else refusals[0])
                continue
            await node.send_str(message.data)

    async def _from_node(self, node: aiohttp.ClientWebSocketResponse,
                         client: web.WebSocketResponse,
                         calls: dict[Any, dict[str, Any]]) -> None:
        async for message in node:
            if message.type != aiohttp.WSMsgType.TEXT:
                break
            reply = json.loads(message.data)
            if isinstance(reply, list):
                reply = [self._rewrite(calls.pop(r.get("id"), None), r) for r in reply]
            elif isinstance(reply, dict) and "id" in reply:
                reply = self._rewrite(calls.pop(reply.get("id"), None), reply)
            elif isinstance(reply, dict) and reply.get("method") == "eth_subscription":
                reply = self._rewrite_pushed(reply)
            await client.send_json(reply)
        await client.close()


def _error(call: dict[str, Any], message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": call.get("id"),
            "error": {"code": RANGE_CODE, "message": message}}


def _malformed(log: dict[str, Any], how: MalformHow) -> dict[str, Any]:
    bad = dict(log)
    if how == "no_block_hash":
        bad.pop("blockHash", None)
    else:
        bad["logIndex"] = "0xnothex"
    return bad


def _drop(request: web.Request) -> web.StreamResponse:
    """Close the connection without an answer (the client sees a disconnect)."""
    if request.transport is not None:
        request.transport.abort()
    return web.Response(status=503)  # never written: the connection is gone

"""A local HTTP server speaking the Anthropic Messages API (tests and simulations only).

    with MessagesServer() as api:                    # api.url is the SDK's base_url
        api.reply_text("hold")                       # scripted replies, taken in order
        api.reply_tool_use("query_grimoire", {"query": "fees"})
        api.reply_cited([("Fees rose ", None), ("after the swap.", 0)])  # cites search_result 0
        api.reply_when("death reflection", "{...}")  # unscripted: by the system prompt
        api.fail(429, retry_after=2.5)               # or 529, or any status
        api.hang(30.0)                               # answer only after 30 s (or stop())
        ...; api.requests[-1].body, api.requests[-1].headers

With nothing scripted the reply is the text ``default_text``. Every request is
recorded (body and lower-cased headers) before any fault fires.

Prompt caching is emulated honestly so caching benchmarks mean something. The
prompt is the sequence tools -> system blocks -> message blocks; each element is
canonical JSON (sorted keys, no spaces, ``cache_control`` removed, message blocks
tagged with message index and role), keyed with the model. Tokens are counted as
ceil(chars / 4) per element, an approximation documented here and used
consistently. A breakpoint (``cache_control``, at most 4) whose prefix is at least
``min_cache_tokens`` long is written to the cache; a later request reads the
longest breakpointed prefix seen byte-identical within the TTL (5 min, or 1 h
with ``ttl: "1h"``; reading refreshes it). As in the real API, ``input_tokens``
excludes both cache-read and cache-written tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from aiohttp import web

from golem.testing.loop_thread import LoopThread

MAX_BREAKPOINTS = 4
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
                403: "permission_error", 404: "not_found_error", 413: "request_too_large",
                429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def approx_tokens(text: str) -> int:
    """The server's token count: ceil(chars / 4)."""
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class _Step:
    kind: str  # "reply" | "fail" | "hang"
    content: Any = None
    stop_reason: str = "end_turn"
    status: int = 0
    retry_after: float | None = None
    seconds: float = 0.0


def prompt_elements(body: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(canonical text, ttl or None when not a breakpoint) for each prompt element, in order."""
    out: list[tuple[str, str | None]] = []

    def add(tag: list[Any], block: Any) -> None:
        ttl = None
        if isinstance(block, dict) and isinstance(block.get("cache_control"), dict):
            ttl = str(block["cache_control"].get("ttl", "5m"))
            block = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((canonical([*tag, block]), ttl))

    for tool in body.get("tools") or []:
        add(["tool"], tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add(["system"], block)
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in blocks or []:
            add(["message", i, message.get("role")], block)
    return out


class PromptCache:
    """The emulated prompt cache: prefix hash -> expiry, on an injectable clock."""

    def __init__(self, clock: Callable[[], float], min_tokens: int = 1024) -> None:
        self.clock = clock
        self.min_tokens = min_tokens
        self._expiry: dict[str, tuple[float, float]] = {}  # key -> (expires at, ttl seconds)

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        """Input usage fields for one request, updating the cache as the API would."""
        elements = prompt_elements(body)
        sizes = list(itertools.accumulate(approx_tokens(text) for text, _ in elements))
        total = sizes[-1] if sizes else 0
        digest = hashlib.sha256(canonical(body.get("model")).encode())
        keys = []
        for text, _ in elements:
            digest.update(b"\x1e" + text.encode())
            keys.append(digest.hexdigest())
        now = self.clock()
        marks = [i for i, (_, ttl) in enumerate(elements)
                 if ttl is not None and sizes[i] >= self.min_tokens]
        read = 0
        for i in reversed(marks):
            hit = self._expiry.get(keys[i])
            if hit is not None and hit[0] > now:
                read = sizes[i]
                self._expiry[keys[i]] = (now + hit[1], hit[1])
                break
        written = {"5m": 0, "1h": 0}
        done = read
        for i in marks:
            if sizes[i] > read:
                ttl = elements[i][1] or "5m"
                seconds = 3600.0 if ttl == "1h" else 300.0
                self._expiry[keys[i]] = (now + seconds, seconds)
                written["1h" if ttl == "1h" else "5m"] += sizes[i] - done
                done = sizes[i]
        created = done - read
        return {"input_tokens": total - read - created, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": created,
                "cache_creation": {"ephemeral_5m_input_tokens": written["5m"],
                                   "ephemeral_1h_input_tokens": written["1h"]}}


def _search_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """search_result blocks in request order, including those inside tool results."""
    found: list[dict[str, Any]] = []

    def walk(blocks: Any) -> None:
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "search_result":
                found.append(block)
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                walk(block.get("content"))

    for message in body.get("messages") or []:
        walk(message.get("content"))
    return found


def _cite(body: dict[str, Any], parts: list[tuple[str, int | None]]) -> list[dict[str, Any]]:
    results = _search_results(body)
    blocks: list[dict[str, Any]] = []
    for text, index in parts:
        block: dict[str, Any] = {"type": "text", "text": text}
        if index is not None:
            if index >= len(results):
                raise ValueError(f"script cites search_result {index}; request has {len(results)}")
            result = results[index]
            if (result.get("citations") or {}).get("enabled"):
                content = result.get("content") or []
                block["citations"] = [{
                    "type": "search_result_location", "search_result_index": index,
                    "source": result.get("source"), "title": result.get("title"),
                    "cited_text": "".join(c.get("text", "") for c in content),
                    "start_block_index": 0, "end_block_index": max(1, len(content))}]
        blocks.append(block)
    return blocks


def _error(status: int, message: str, retry_after: float | None = None) -> web.Response:
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
    body = {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                       "message": message}}
    return web.json_response(body, status=status, headers=headers)


class MessagesServer:
    """POST /v1/messages on 127.0.0.1, in its own thread and event loop."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic,
                 min_cache_tokens: int = 1024, default_text: str = "ok",
                 host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.default_text = default_text
        self.cache = PromptCache(clock, min_cache_tokens)
        self.requests: list[RecordedRequest] = []
        self.faults: list[str] = []
        self._script: deque[_Step] = deque()
        self._rules: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runtime = LoopThread("messages-server")
        self._runner: web.AppRunner | None = None
        self._release: asyncio.Event | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- script -------------------------------------------------------------------------

    def _push(self, step: _Step) -> None:
        with self._lock:
            self._script.append(step)

    def reply_text(self, text: str, *, stop_reason: str = "end_turn") -> None:
        self._push(_Step("reply", [{"type": "text", "text": text}], stop_reason))

    def reply_tool_use(self, name: str, tool_input: dict[str, Any], *, text: str | None = None,
                       tool_id: str | None = None) -> None:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        blocks.append({"type": "tool_use", "id": tool_id or f"toolu_{next(self._ids):08d}",
                       "name": name, "input": tool_input})
        self._push(_Step("reply", blocks, "tool_use"))

    def reply_cited(self, parts: list[tuple[str, int | None]]) -> None:
        """Text blocks; a part with an index cites that search_result of the request."""
        self._push(_Step("reply", ("cite", parts)))

    def reply_when(self, system_contains: str, text: str) -> None:
        """With nothing scripted, a request whose system prompt contains
        `system_contains` gets `text` (checked in the order added) instead of the default."""
        with self._lock:
            self._rules.append((system_contains, text))

    def fail(self, status: int, *, retry_after: float | None = None) -> None:
        self._push(_Step("fail", status=status, retry_after=retry_after))

    def hang(self, seconds: float) -> None:
        """Hold the next request `seconds` (or until stop), then answer 529."""
        self._push(_Step("hang", seconds=seconds))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    # --- life cycle ---------------------------------------------------------------------

    def start(self) -> MessagesServer:
        self._runtime.start(self._open, self._close)
        self._loop = self._runtime.loop
        return self

    def stop(self) -> None:
        self._runtime.stop(before=self._release_hangs)

    def _release_hangs(self) -> None:
        if self._release is not None:
            self._release.set()

    def __enter__(self) -> MessagesServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    async def _open(self) -> None:
        self._release = asyncio.Event()
        app = web.Application()
        app.router.add_route("POST", "/v1/messages", self._messages)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()
        self.port = int(self._runner.addresses[0][1])

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- per request ----------------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "body is not JSON")
        with self._lock:
            self.requests.append(RecordedRequest(request.path, headers, body))
        if "x-api-key" not in headers and "authorization" not in headers:
            return _error(401, "missing credentials")
        problem = self._invalid(body) if isinstance(body, dict) else "body must be an object"
        if problem:  # (an invalid request never consumes a scripted step)
            return _error(400, problem)
        with self._lock:
            step = self._script.popleft() if self._script else None
        return await self._answer(body, step)

    async def _answer(self, body: dict[str, Any], step: _Step | None) -> web.Response:
        if step is not None and step.kind == "fail":
            self.faults.append(str(step.status))
            return _error(step.status, "scripted failure", step.retry_after)
        if step is not None and step.kind == "hang":
            self.faults.append("hang")
            assert self._release is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._release.wait(), step.seconds)
            return _error(529, "overloaded after hanging")
        try:
            return self._reply(body, step)
        except ValueError as exc:
            return _error(500, f"bad script: {exc}")

    def _default_for(self, body: dict[str, Any]) -> str:
        system = body.get("system", "")
        text = system if isinstance(system, str) else canonical(system)
        with self._lock:
            rules = list(self._rules)
        return next((reply for needle, reply in rules if needle in text), self.default_text)

    @staticmethod
    def _invalid(body: dict[str, Any]) -> str | None:
        for key in ("model", "max_tokens", "messages"):
            if key not in body:
                return f"{key}: Field required"
        if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
            return "max_tokens: must be a positive integer"
        if not body["messages"]:
            return "messages: at least one message is required"
        if sum(ttl is not None for _, ttl in prompt_elements(body)) > MAX_BREAKPOINTS:
            return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided"
        return None

    def _reply(self, body: dict[str, Any], step: _Step | None) -> web.Response:
        if step is None:
            step = _Step("reply", [{"type": "text", "text": self._default_for(body)}])
        content = step.content
        if isinstance(content, tuple):
            content = _cite(body, content[1])
        out_tokens = max(1, approx_tokens(canonical(content)))
        stop_reason = step.stop_reason
        if out_tokens > body["max_tokens"]:
            out_tokens, stop_reason = body["max_tokens"], "max_tokens"
        usage = {**self.cache.usage(body), "output_tokens": out_tokens}
        number = next(self._ids)
        return web.json_response({
            "id": f"msg_{number:012d}", "type": "message", "role": "assistant",
            "model": body["model"], "content": content, "stop_reason": stop_reason,
            "stop_sequence": None, "usage": usage}, headers={"request-id": f"req_{number:012d}"})

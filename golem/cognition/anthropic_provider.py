"""The Anthropic Messages API, behind our own retries, circuit breaker and errors.

The only module that imports ``anthropic``. The SDK's own retries are off
(``max_retries=0``) so that every wait happens on the golem clock through the
injected ``sleep`` and stays inside one budget of attempts and seconds:
retry-after honoured on 429 (up to a cap), exponential backoff with jitter on
529/5xx, timeouts and connection errors. Vendor exceptions become LlmUnavailable (try a later tick)
or LlmRefused (the request itself is wrong). The breaker opens after
``breaker_threshold`` consecutive failed calls; while it is open no request is
sent, and ``interval_factor`` tells Theta how much to widen its interval.
The API key is held by the SDK only; it is never logged or put in an error.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anthropic

from golem.chain.backoff import Backoff
from golem.cognition.errors import CircuitOpen, LlmRefused, LlmUnavailable
from golem.cognition.ledger import TokenUsage

_REQUEST_KEYS = frozenset({"model", "system", "messages", "tools", "tool_choice", "max_tokens",
                           "temperature", "stop_sequences", "metadata"})


@dataclass(frozen=True)
class ProviderSettings:
    """How one provider talks to the API; see the report for the [cognition] keys."""

    base_url: str | None = None
    timeout_s: float = 30.0
    connect_timeout_s: float = 5.0
    max_attempts: int = 3
    # No retry starts if it could end later than this after the call began.
    call_budget_s: float = 120.0
    backoff_base_s: float = 1.0
    backoff_max_s: float = 20.0
    backoff_jitter: float = 0.5
    retry_after_max_s: float = 30.0
    breaker_threshold: int = 3
    breaker_cooldown_s: float = 120.0
    breaker_cooldown_max_s: float = 1800.0
    max_interval_factor: float = 8.0


@dataclass(frozen=True)
class LlmResult:
    """A model reply as plain data: content blocks as dicts, as the API sent them."""

    content: tuple[dict[str, Any], ...]
    stop_reason: str | None
    usage: TokenUsage
    model: str
    latency_s: float
    attempts: int
    request_id: str | None = None


class CircuitBreaker:
    """Closed -> open after `threshold` consecutive failures -> half-open after the cool-down.

    Pure: the caller passes the time. Each re-open doubles the cool-down (capped).
    """

    def __init__(self, threshold: int, cooldown_s: float, cooldown_max_s: float) -> None:
        self.threshold = threshold
        self.base_cooldown_s = cooldown_s
        self.cooldown_max_s = cooldown_max_s
        self.failures = 0
        self.opens = 0
        self.open_until: float | None = None

    def allow(self, now: float) -> bool:
        """May a request go out now? (True in half-open state: one trial call.)"""
        return self.open_until is None or now >= self.open_until

    def record_success(self) -> None:
        self.failures = self.opens = 0
        self.open_until = None

    def record_failure(self, now: float) -> None:
        self.failures += 1
        if self.failures >= self.threshold or self.open_until is not None:
            self.opens += 1
            cooldown = min(self.cooldown_max_s, self.base_cooldown_s * 2 ** (self.opens - 1))
            self.open_until = now + cooldown

    @property
    def is_open(self) -> bool:
        return self.open_until is not None

    def interval_factor(self, cap: float) -> float:
        """How much Theta should widen its interval: 1 while closed, doubling per open."""
        return 1.0 if self.open_until is None else min(cap, 2.0 ** self.opens)


def _retry_after(error: anthropic.APIStatusError, now: float) -> float | None:
    headers = error.response.headers
    try:
        if "retry-after-ms" in headers:
            return max(0.0, float(headers["retry-after-ms"]) / 1000.0)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError):
        return None


def _translate(error: anthropic.AnthropicError, now: float) -> LlmUnavailable | LlmRefused:
    """Our error for a vendor error (messages carry no request body, headers or key)."""
    if isinstance(error, anthropic.APITimeoutError):
        return LlmUnavailable("the model call timed out", kind="timeout")
    if isinstance(error, anthropic.APIConnectionError):
        return LlmUnavailable("could not connect to the model API", kind="connection")
    if isinstance(error, anthropic.RateLimitError):
        return LlmUnavailable("rate limited (429)", kind="rate_limited",
                              retry_after=_retry_after(error, now))
    if isinstance(error, anthropic.APIStatusError):
        return _translate_status(error, now)
    if isinstance(error, anthropic.APIResponseValidationError):
        return LlmUnavailable("the model API answered with a malformed reply", kind="malformed")
    return LlmRefused(f"model client error: {type(error).__name__}", kind="client")


def _translate_status(error: anthropic.APIStatusError, now: float) -> LlmUnavailable | LlmRefused:
    status = error.status_code
    detail = f"{status} {error.type or ''}: {error.api_message or ''}".strip()
    if status >= 500:
        kind = "overloaded" if status == 529 else "server_error"
        return LlmUnavailable(f"model API error {detail}", kind=kind,
                              retry_after=_retry_after(error, now))
    kind = "auth" if status in (401, 403) else "bad_request"
    return LlmRefused(f"model API refused the request: {detail}", kind=kind, status=status)


class AnthropicProvider:
    """Send one request dict, get one LlmResult; every wait goes through `sleep`."""

    name = "anthropic"

    def __init__(self, settings: ProviderSettings, *, api_key: str,
                 clock: Callable[[], float], sleep: Callable[[float], Awaitable[None]],
                 rng: random.Random) -> None:
        if settings.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.settings = settings
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self.breaker = CircuitBreaker(settings.breaker_threshold, settings.breaker_cooldown_s,
                                      settings.breaker_cooldown_max_s)
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=settings.base_url, max_retries=0, open_telemetry=False,
            timeout=anthropic.Timeout(settings.timeout_s,
                                      connect=min(settings.connect_timeout_s, settings.timeout_s)))

    @property
    def interval_factor(self) -> float:
        return self.breaker.interval_factor(self.settings.max_interval_factor)

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, request: Mapping[str, Any]) -> LlmResult:
        """One model call with bounded retries. Raises LlmUnavailable, CircuitOpen or LlmRefused."""
        unknown = set(request) - _REQUEST_KEYS
        if unknown:
            raise LlmRefused(f"unknown request keys: {sorted(unknown)}", kind="bad_request")
        start = self._clock()
        if not self.breaker.allow(start):
            raise CircuitOpen("the model API circuit is open; skipping this call",
                              kind="circuit_open")
        backoff = Backoff(self.settings.backoff_base_s, self.settings.backoff_max_s,
                          self.settings.backoff_jitter)
        params = {k: v for k, v in request.items() if v is not None}
        attempt = 0
        while True:
            attempt += 1
            try:
                message = await self._client.messages.create(**params)
            except anthropic.AnthropicError as exc:
                error = _translate(exc, self._clock())
                if isinstance(error, LlmRefused):
                    raise error from None
                error.attempts = attempt
                delay = self._delay(error, backoff)
                if (delay is None or attempt >= self.settings.max_attempts
                        or self._clock() - start + delay + self.settings.timeout_s
                        > self.settings.call_budget_s):
                    self.breaker.record_failure(self._clock())
                    raise error from None
                await self._sleep(delay)
                continue
            self.breaker.record_success()
            return self._result(message, start, attempt)

    def _delay(self, error: LlmUnavailable, backoff: Backoff) -> float | None:
        """Seconds to wait before the next attempt, or None to give up now."""
        if error.kind == "malformed":
            return None
        if error.retry_after is not None:
            if error.retry_after > self.settings.retry_after_max_s:
                return None  # the server asks for longer than a tick can wait
            backoff.attempt += 1
            return error.retry_after
        return backoff.next_delay(self._rng)

    def _result(self, message: Any, start: float, attempts: int) -> LlmResult:
        usage = message.usage
        return LlmResult(
            content=tuple(b.model_dump(mode="json", exclude_none=True) for b in message.content),
            stop_reason=message.stop_reason,
            usage=TokenUsage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                             cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                             cache_creation_input_tokens=usage.cache_creation_input_tokens or 0),
            model=message.model, latency_s=max(0.0, self._clock() - start), attempts=attempts,
            request_id=getattr(message, "_request_id", None))

"""The real anthropic SDK, through our provider, against the local Messages server."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import anyio
import pytest

from golem.cognition.anthropic_provider import AnthropicProvider, LlmResult, ProviderSettings
from golem.cognition.errors import CircuitOpen, LlmRefused, LlmUnavailable
from golem.testing.messages_server import MessagesServer

KEY = "sk-ant-api03-" + "A1b2C3d4" * 8
STABLE = "You are a golem. Invariants and strategy follow. " * 150  # ~7.5k chars


class FakeTime:
    """The injected golem clock and sleep: sleeping records the delay and advances time."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def api() -> Iterator[MessagesServer]:
    with MessagesServer() as server:
        yield server


def run(api: MessagesServer, fn: Callable[[AnthropicProvider, FakeTime], Any],
        **settings: Any) -> tuple[Any, FakeTime]:
    t = FakeTime()

    async def main() -> Any:
        provider = AnthropicProvider(
            ProviderSettings(base_url=api.url, **{"timeout_s": 5.0, **settings}),
            api_key=KEY, clock=t.clock, sleep=t.sleep, rng=random.Random(7))
        try:
            return await fn(provider, t)
        finally:
            await provider.aclose()

    return anyio.run(main), t


def request(user: Any = "what now?", **extra: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 256,
            "system": [{"type": "text", "text": STABLE, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": user}], **extra}


def test_text_reply_as_plain_data(api: MessagesServer) -> None:
    api.reply_text("hold the position")
    result, _ = run(api, lambda p, t: p.complete(request()))
    assert isinstance(result, LlmResult)
    assert result.content == ({"type": "text", "text": "hold the position"},)
    assert result.stop_reason == "end_turn" and result.model == "claude-test"
    assert result.attempts == 1 and result.request_id and result.request_id.startswith("req_")
    sent = api.requests[0]
    assert sent.body == request()
    assert sent.headers["anthropic-version"]
    assert sent.headers.get("x-stainless-retry-count", "0") == "0"


def test_tool_use_round_trip(api: MessagesServer) -> None:
    tools = [{"name": "query_grimoire", "description": "search memory",
              "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}]
    api.reply_tool_use("query_grimoire", {"query": "fee tier"}, text="Let me check.",
                       tool_id="toolu_1")
    api.reply_text("done")

    async def two_rounds(p: AnthropicProvider, t: FakeTime) -> tuple[LlmResult, LlmResult]:
        first = await p.complete(request(tools=tools))
        follow = [{"role": "user", "content": "what now?"},
                  {"role": "assistant", "content": list(first.content)},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                "content": "no entries"}]}]
        second = await p.complete({**request(tools=tools), "messages": follow})
        return first, second

    (first, second), _ = run(api, two_rounds)
    assert first.stop_reason == "tool_use"
    assert first.content[1] == {"type": "tool_use", "id": "toolu_1", "name": "query_grimoire",
                                "input": {"query": "fee tier"}}
    assert second.content[0]["text"] == "done"
    assert api.requests[1].body["messages"][1]["content"][1]["type"] == "tool_use"


def test_citations_come_back_with_grimoire_sources(api: MessagesServer) -> None:
    entry = {"type": "search_result", "source": "grimoire://g1/insight/42", "title": "fee spike",
             "content": [{"type": "text", "text": "Fees spike after large swaps."}],
             "citations": {"enabled": True}}
    api.reply_cited([("Given memory, ", None), ("fees will spike.", 0)])
    result, _ = run(api, lambda p, t: p.complete(request([entry, {"type": "text", "text": "q"}])))
    (cite,) = result.content[1]["citations"]
    assert cite["type"] == "search_result_location"
    assert cite["source"] == "grimoire://g1/insight/42"
    assert cite["search_result_index"] == 0
    assert cite["cited_text"] == "Fees spike after large swaps."
    assert "citations" not in result.content[0]


def test_second_identical_prefix_reads_the_cache(api: MessagesServer) -> None:
    async def calls(p: AnthropicProvider, t: FakeTime) -> list[LlmResult]:
        return [await p.complete(request("tick 1")), await p.complete(request("tick 2")),
                await p.complete({**request("tick 3"), "system": STABLE + "changed"})]

    (first, second, third), _ = run(api, calls)
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens > 1024
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens < 20  # only the uncached user turn
    assert third.usage.cache_read_input_tokens == 0  # a changed prefix, and no breakpoint


def test_429_honours_retry_after_on_the_injected_sleep(api: MessagesServer) -> None:
    api.fail(429, retry_after=2.5)
    api.reply_text("after the wait")
    result, t = run(api, lambda p, t: p.complete(request()))
    assert t.slept == [2.5]
    assert result.attempts == 2 and result.content[0]["text"] == "after the wait"
    assert len(api.requests) == 2


def test_retry_after_longer_than_the_cap_gives_up_at_once(api: MessagesServer) -> None:
    api.fail(429, retry_after=600)
    with pytest.raises(LlmUnavailable) as err:
        run(api, lambda p, t: p.complete(request()), retry_after_max_s=30.0)
    assert err.value.kind == "rate_limited" and err.value.retry_after == 600
    assert len(api.requests) == 1


def test_529_backs_off_exponentially_then_succeeds(api: MessagesServer) -> None:
    for _ in range(3):
        api.fail(529)
    api.reply_text("recovered")
    result, t = run(api, lambda p, t: p.complete(request()), max_attempts=4,
                    backoff_base_s=1.0, backoff_jitter=0.5)
    assert result.attempts == 4 and len(t.slept) == 3
    for attempt, delay in enumerate(t.slept):  # jitter 0.5: in [ceiling / 2, ceiling]
        assert 2.0 ** attempt / 2 <= delay <= 2.0 ** attempt


def test_529_until_attempts_run_out_is_unavailable(api: MessagesServer) -> None:
    for _ in range(5):
        api.fail(529)
    with pytest.raises(LlmUnavailable) as err:
        run(api, lambda p, t: p.complete(request()), max_attempts=3)
    assert err.value.kind == "overloaded" and err.value.attempts == 3
    assert len(api.requests) == 3


def test_no_retry_that_could_outlast_the_call_budget(api: MessagesServer) -> None:
    api.fail(429, retry_after=10)
    api.fail(429, retry_after=10)
    api.reply_text("late")
    with pytest.raises(LlmUnavailable) as err:
        run(api, lambda p, t: p.complete(request()), max_attempts=5, timeout_s=20.0,
            call_budget_s=35.0)
    assert err.value.attempts == 2 and len(api.requests) == 2  # 10 + 20 fits, 10+10+20 does not


def test_hang_times_out_into_our_error(api: MessagesServer) -> None:
    api.hang(30.0)
    with pytest.raises(LlmUnavailable) as err:
        run(api, lambda p, t: p.complete(request()), timeout_s=0.3, max_attempts=1)
    assert err.value.kind == "timeout"
    assert api.faults == ["hang"]


def test_bad_request_is_refused_without_retry(api: MessagesServer) -> None:
    with pytest.raises(LlmRefused) as err:
        run(api, lambda p, t: p.complete({**request(), "messages": []}))
    assert err.value.kind == "bad_request" and err.value.status == 400
    assert len(api.requests) == 1
    api.fail(401)
    with pytest.raises(LlmRefused) as err:
        run(api, lambda p, t: p.complete(request()))
    assert err.value.kind == "auth"


def test_unknown_request_keys_are_refused_before_sending(api: MessagesServer) -> None:
    with pytest.raises(LlmRefused):
        run(api, lambda p, t: p.complete({**request(), "api_key": KEY}))
    assert api.requests == []


def test_connection_refused_is_unavailable() -> None:
    server = MessagesServer().start()
    server.stop()
    with pytest.raises(LlmUnavailable) as err:
        run(server, lambda p, t: p.complete(request()), max_attempts=1)
    assert err.value.kind == "connection"


def test_breaker_opens_widens_the_interval_and_recovers(api: MessagesServer) -> None:
    for _ in range(3):
        api.fail(529)
    api.reply_text("back")

    async def scenario(p: AnthropicProvider, t: FakeTime) -> list[Any]:
        seen: list[Any] = []
        for _ in range(3):
            with pytest.raises(LlmUnavailable):
                await p.complete(request())
        seen.append((p.breaker.is_open, p.interval_factor))
        with pytest.raises(CircuitOpen):
            await p.complete(request())
        seen.append(len(api.requests))
        t.now += 121.0  # past the cool-down: one trial call, which succeeds
        seen.append((await p.complete(request())).content[0]["text"])
        seen.append((p.breaker.is_open, p.interval_factor))
        return seen

    seen, _ = run(api, scenario, max_attempts=1, breaker_threshold=3, breaker_cooldown_s=120.0)
    assert seen == [(True, 2.0), 3, "back", (False, 1.0)]


def test_a_failed_trial_reopens_for_longer(api: MessagesServer) -> None:
    for _ in range(3):
        api.fail(500)

    async def scenario(p: AnthropicProvider, t: FakeTime) -> tuple[float, float]:
        for _ in range(2):
            with pytest.raises(LlmUnavailable):
                await p.complete(request())
        first_until = p.breaker.open_until or 0.0
        t.now = first_until
        with pytest.raises(LlmUnavailable):
            await p.complete(request())  # the half-open trial fails
        return first_until - 1_800_000_000.0, (p.breaker.open_until or 0.0) - t.now

    (first, second), _ = run(api, scenario, max_attempts=1, breaker_threshold=2,
                             breaker_cooldown_s=60.0)
    assert (first, second) == (60.0, 120.0)


def test_no_secret_in_errors_or_bodies(api: MessagesServer) -> None:
    api.fail(400)
    with pytest.raises(LlmRefused) as err:
        run(api, lambda p, t: p.complete(request()))
    assert KEY not in str(err.value) and KEY not in repr(err.value.__dict__)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert all(KEY not in str(r.body) for r in api.requests)
    credential = api.requests[0].headers.get("x-api-key") or api.requests[0].headers[
        "authorization"]
    assert KEY in credential  # the SDK did authenticate, with our key only in the header

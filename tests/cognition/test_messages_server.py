"""The scripted Messages API server: protocol checks, recording, and honest cache emulation."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.testing.messages_server import (
    MessagesServer,
    PromptCache,
    approx_tokens,
    prompt_elements,
)

BIG = "stable identity and strategy text. " * 200  # ~7000 chars, ~1750 tokens


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def body(system: str = BIG, user: str = "what now?", *, breakpoint_: bool = True,
         model: str = "m1", ttl: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": system}
    if breakpoint_:
        block["cache_control"] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {"model": model, "max_tokens": 64, "system": [block],
            "messages": [{"role": "user", "content": user}]}


def total_tokens(b: dict[str, Any]) -> int:
    return sum(approx_tokens(text) for text, _ in prompt_elements(b))


def post(url: str, payload: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(payload).encode()
    req = urllib.request.Request(url + "/v1/messages", data=data, method="POST",
                                 headers={"content-type": "application/json",
                                          **({"x-api-key": "k"} if headers is None else headers)})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


def test_first_request_writes_second_reads_and_input_excludes_cached() -> None:
    cache = PromptCache(Clock())
    first, second = cache.usage(body()), cache.usage(body())
    total = total_tokens(body())
    assert first["cache_read_input_tokens"] == 0
    assert first["cache_creation_input_tokens"] > 1024
    assert second["cache_read_input_tokens"] == first["cache_creation_input_tokens"]
    assert second["cache_creation_input_tokens"] == 0
    for usage in (first, second):
        assert usage["input_tokens"] + usage["cache_read_input_tokens"] \
            + usage["cache_creation_input_tokens"] == total
        assert usage["input_tokens"] == approx_tokens(json.dumps(
            ["message", 0, "user", {"text": "what now?", "type": "text"}], separators=(",", ":")))


def test_one_changed_byte_in_the_prefix_is_a_miss() -> None:
    cache = PromptCache(Clock())
    cache.usage(body())
    assert cache.usage(body(BIG[:-1] + "!"))["cache_read_input_tokens"] == 0
    assert cache.usage(body(model="m2"))["cache_read_input_tokens"] == 0  # caches are per model


def test_no_breakpoint_or_short_prefix_is_never_cached() -> None:
    cache = PromptCache(Clock())
    for b in (body(breakpoint_=False), body("short system prompt")):
        for _ in range(2):
            usage = cache.usage(b)
            assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0
            assert usage["input_tokens"] == total_tokens(b)


def test_ttl_expires_and_a_read_refreshes_it() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    cache.usage(body())
    clock.t += 299
    assert cache.usage(body())["cache_read_input_tokens"] > 0  # refreshed at t+299
    clock.t += 299
    assert cache.usage(body())["cache_read_input_tokens"] > 0
    clock.t += 301
    missed = cache.usage(body())
    assert missed["cache_read_input_tokens"] == 0 and missed["cache_creation_input_tokens"] > 0


def test_one_hour_ttl_is_reported_in_its_bucket_and_lasts() -> None:
    clock = Clock()
    cache = PromptCache(clock)
    written = cache.usage(body(ttl="1h"))
    assert written["cache_creation"]["ephemeral_1h_input_tokens"] > 0
    assert written["cache_creation"]["ephemeral_5m_input_tokens"] == 0
    clock.t += 3000
    assert cache.usage(body(ttl="1h"))["cache_read_input_tokens"] > 0


def test_a_later_breakpoint_extends_the_cached_prefix() -> None:
    cache = PromptCache(Clock())
    cache.usage(body())
    longer = body()
    longer["messages"][0]["content"] = [{"type": "text", "text": BIG,
                                         "cache_control": {"type": "ephemeral"}},
                                        {"type": "text", "text": "tail"}]
    usage = cache.usage(longer)
    assert usage["cache_read_input_tokens"] == total_tokens(body()) - approx_tokens(
        prompt_elements(body())[-1][0])  # the system prefix was read
    assert usage["cache_creation_input_tokens"] > 1024  # the new message block was written


@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(0, 400)),
                min_size=1, max_size=12))
def test_usage_always_adds_up(steps: list[tuple[int, bool, int]]) -> None:
    clock = Clock()
    cache = PromptCache(clock, min_tokens=300)
    for variant, bp, advance in steps:
        clock.t += advance
        b = body(BIG[: 600 * (variant + 1)], breakpoint_=bp)
        usage = cache.usage(b)
        assert min(usage.values(), key=lambda v: v if isinstance(v, int) else 0) >= 0
        assert usage["input_tokens"] + usage["cache_read_input_tokens"] \
            + usage["cache_creation_input_tokens"] == total_tokens(b)
        if not bp:
            assert usage["cache_read_input_tokens"] == usage["cache_creation_input_tokens"] == 0


def test_http_validation_auth_and_recording() -> None:
    with MessagesServer() as api:
        api.reply_text("scripted")
        status, reply = post(api.url, body(), headers={})
        assert status == 401 and reply["error"]["type"] == "authentication_error"
        status, reply = post(api.url, {"model": "m1", "messages": []})
        assert status == 400 and "max_tokens" in reply["error"]["message"]
        too_many = body()
        too_many["messages"][0]["content"] = [
            {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}] * 4
        assert post(api.url, too_many)[0] == 400
        assert api.pending == 1  # invalid requests do not consume the script
        status, reply = post(api.url, body())
        assert status == 200 and reply["content"] == [{"type": "text", "text": "scripted"}]
        assert reply["usage"]["cache_creation_input_tokens"] > 0
        assert len(api.requests) == 4 and api.requests[-1].headers["x-api-key"] == "k"
        assert api.requests[-1].body == body()


def test_scripted_faults_carry_their_headers() -> None:
    with MessagesServer() as api:
        api.fail(429, retry_after=2.5)
        api.fail(529)
        req = urllib.request.Request(api.url + "/v1/messages", data=json.dumps(body()).encode(),
                                     headers={"x-api-key": "k"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=10)
        with err.value:
            assert err.value.code == 429 and err.value.headers["retry-after"] == "2.5"
        status, reply = post(api.url, body())
        assert status == 529 and reply["error"]["type"] == "overloaded_error"
        assert api.faults == ["429", "529"]


def test_citations_only_for_enabled_search_results() -> None:
    request = body()
    results = [{"type": "search_result", "source": f"grimoire://ns/insight/{i}", "title": f"t{i}",
                "content": [{"type": "text", "text": f"fact {i}"}],
                **({"citations": {"enabled": True}} if i == 1 else {})} for i in range(2)]
    request["messages"] = [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": results[:1]},
        results[1], {"type": "text", "text": "q"}]}]
    with MessagesServer() as api:
        api.reply_cited([("a", 0), ("b", 1)])
        api.reply_cited([("c", 5)])
        status, reply = post(api.url, request)
        assert status == 200
        assert "citations" not in reply["content"][0]  # result 0 did not enable citations
        (cite,) = reply["content"][1]["citations"]
        assert cite["search_result_index"] == 1 and cite["source"] == "grimoire://ns/insight/1"
        assert cite["cited_text"] == "fact 1"
        assert post(api.url, request)[0] == 500  # a script citing a missing result is loud


def test_stop_releases_a_hanging_request() -> None:
    api = MessagesServer().start()
    api.hang(60.0)
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(post(api.url, body())[0]))
    thread.start()
    while not api.faults:
        time.sleep(0.01)
    started = time.monotonic()
    api.stop()
    thread.join(10)
    assert time.monotonic() - started < 5

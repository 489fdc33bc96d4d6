"""The model's tools against a real Grimoire in a temp dir, and the tool loop through the
real SDK against the local Messages server with scripted tool_use replies."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from golem.cognition.anthropic_provider import AnthropicProvider, ProviderSettings
from golem.cognition.tools import (
    MAX_K,
    QUERY_GRIMOIRE,
    TOOLS,
    WORKING_MEMORY_NOTE,
    ToolInputError,
    run_tool,
    run_tool_rounds,
)
from golem.config import load_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.testing.messages_server import MessagesServer

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR

T = TypeVar("T")
NOW = 1_767_225_600.0
KEY = "sk-ant-api03-" + "Qq1Ww2Ee" * 8


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


@pytest.fixture
def api() -> Iterator[MessagesServer]:
    with MessagesServer() as server:
        yield server


def with_grimoire(tmp_path: Path, embedder: Embedder,
                  body: Callable[[Grimoire], Awaitable[T]], *, seed: bool = True) -> T:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "golem-a", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL_DIR)}}))
    cfg = load_config(path)

    async def main() -> T:
        g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder)
        try:
            if seed:
                await g.remember("Never provide liquidity to pools under $100k TVL",
                                 type="constraint", importance=0.9, entry_type="warning")
                await g.remember("ETH/USDC swap fees rise after large whale swaps",
                                 importance=0.7, entry_type="insight")
                await g.remember("Rebalance LP positions when the price leaves the range",
                                 importance=0.6, entry_type="heuristic")
            return await body(g)
        finally:
            await g.close()

    return anyio.run(main)


async def loop(api: MessagesServer, g: Grimoire, max_rounds: int = 3) -> Any:
    clock = [NOW]

    async def sleep(s: float) -> None:
        clock[0] += s

    provider = AnthropicProvider(ProviderSettings(base_url=api.url, timeout_s=5.0), api_key=KEY,
                                 clock=lambda: clock[0], sleep=sleep, rng=random.Random(3))
    request = {"model": "claude-test", "max_tokens": 400,
               "system": [{"type": "text", "text": "You are a golem."}],
               "messages": [{"role": "user", "content": "What do you know about fees?"}]}
    try:
        return await run_tool_rounds(provider, request, g, max_rounds=max_rounds)
    finally:
        await provider.aclose()


# --- specs ------------------------------------------------------------------------------


def test_specs_are_json_schema_tool_definitions() -> None:
    assert [t["name"] for t in TOOLS] == ["query_grimoire", "working_memory_note"]
    q = QUERY_GRIMOIRE["input_schema"]
    assert q["required"] == ["query"] and q["additionalProperties"] is False
    assert q["properties"]["k"]["maximum"] == MAX_K == 10
    assert "episode" in q["properties"]["kinds"]["items"]["enum"]
    assert "namespace" not in q["properties"]
    assert WORKING_MEMORY_NOTE["input_schema"]["required"] == ["text"]


# --- run_tool ---------------------------------------------------------------------------


def test_query_returns_rendered_hits_with_grimoire_sources(tmp_path: Path,
                                                           embedder: Embedder) -> None:
    out = with_grimoire(tmp_path, embedder, lambda g: run_tool(
        "query_grimoire", {"query": "swap fees after whales", "k": 2}, g))
    assert out.startswith("<agent_memory>") and "grimoire://golem-a/insight/" in out
    assert "whale swaps" in out


def test_kinds_narrow_the_recall(tmp_path: Path, embedder: Embedder) -> None:
    query = "rebalance LP positions out of range"

    async def body(g: Grimoire) -> tuple[str, str]:
        return (await run_tool("query_grimoire", {"query": query}, g),
                await run_tool("query_grimoire", {"query": query, "kinds": ["heuristic"]}, g))

    everything, narrowed = with_grimoire(tmp_path, embedder, body)
    assert "/insight/" in everything and "/warning/" in everything
    assert "grimoire://golem-a/heuristic/" in narrowed
    assert "/insight/" not in narrowed and "/warning/" not in narrowed


def test_an_empty_memory_answers_with_a_refusal(tmp_path: Path, embedder: Embedder) -> None:
    out = with_grimoire(tmp_path, embedder, lambda g: run_tool(
        "query_grimoire", {"query": "what happened to the pool"}, g), seed=False)
    assert out.startswith("refused:") and "do not guess" in out


@pytest.mark.parametrize(("name", "tool_input", "message"), [
    ("query_grimoire", {"query": "fees", "k": 11}, "k must be"),
    ("query_grimoire", {"query": "fees", "k": True}, "k must be"),
    ("query_grimoire", {"query": "  "}, "non-empty"),
    ("query_grimoire", {"query": "fees", "namespace": "golem-b"}, "unknown input keys"),
    ("query_grimoire", {"query": "fees", "kinds": ["secrets"]}, "kinds must be"),
    ("working_memory_note", {"text": "x" * 2001}, "at most"),
    ("transfer_funds", {"to": "0xdead"}, "unknown tool"),
])
def test_bad_calls_are_refused(tmp_path: Path, embedder: Embedder, name: str,
                               tool_input: dict[str, Any], message: str) -> None:
    async def body(g: Grimoire) -> None:
        with pytest.raises(ToolInputError, match=message):
            await run_tool(name, tool_input, g)

    with_grimoire(tmp_path, embedder, body, seed=False)


def test_a_note_goes_to_the_scratch_wal_and_is_recallable(tmp_path: Path,
                                                          embedder: Embedder) -> None:
    async def body(g: Grimoire) -> tuple[str, list[str], str]:
        out = await run_tool("working_memory_note",
                             {"text": "Watch the WBTC pool: liquidity is draining fast"}, g)
        notes = [n.text for n in await g.scratch_notes()]
        found = await run_tool("query_grimoire", {"query": "WBTC liquidity draining"}, g)
        return out, notes, found

    out, notes, found = with_grimoire(tmp_path, embedder, body, seed=False)
    assert out.startswith("noted in working memory")
    assert notes == ["Watch the WBTC pool: liquidity is draining fast"]
    assert "WBTC pool" in found


# --- the tool loop ----------------------------------------------------------------------


def test_one_tool_round_then_an_answer(tmp_path: Path, embedder: Embedder,
                                       api: MessagesServer) -> None:
    api.reply_tool_use("query_grimoire", {"query": "swap fees", "k": 3}, text="Checking.",
                       tool_id="toolu_a")
    api.reply_text('{"analysis": "fees rise after whales"}')
    out = with_grimoire(tmp_path, embedder, lambda g: loop(api, g))
    assert out.rounds == 1 and len(out.results) == 2
    assert out.result.stop_reason == "end_turn"
    first, second = (r.body for r in api.requests)
    assert first["tools"] == second["tools"] == [dict(t) for t in TOOLS]
    assert "tool_choice" not in first and "tool_choice" not in second
    assistant, user = second["messages"][1:]
    assert assistant["role"] == "assistant" and assistant["content"][-1]["id"] == "toolu_a"
    [answer] = user["content"]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_a"
    assert "is_error" not in answer
    assert "grimoire://golem-a/insight/" in answer["content"][0]["text"]
    assert out.messages[-1]["role"] == "assistant"


def test_a_bad_call_is_sent_back_as_an_error_and_the_loop_goes_on(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    api.reply_tool_use("query_grimoire", {"query": "fees", "k": 50}, tool_id="toolu_b")
    api.reply_tool_use("working_memory_note", {"text": "fees look seasonal"}, tool_id="toolu_c")
    api.reply_text("done")

    async def body(g: Grimoire) -> tuple[Any, list[str]]:
        return await loop(api, g), [n.text for n in await g.scratch_notes()]

    out, notes = with_grimoire(tmp_path, embedder, body, seed=False)
    assert out.rounds == 2 and out.result.content[0]["text"] == "done"
    bad = api.requests[1].body["messages"][-1]["content"][0]
    assert bad["is_error"] is True and "k must be" in bad["content"][0]["text"]
    assert notes == ["fees look seasonal"]


def test_the_round_cap_holds_and_the_last_resend_forbids_tools(
        tmp_path: Path, embedder: Embedder, api: MessagesServer) -> None:
    for i in range(4):
        api.reply_tool_use("query_grimoire", {"query": f"fees {i}"}, tool_id=f"toolu_{i}")
    out = with_grimoire(tmp_path, embedder, lambda g: loop(api, g, max_rounds=2))
    assert out.rounds == 2 and len(api.requests) == 3 and api.pending == 1
    assert [r.body.get("tool_choice") for r in api.requests] == [None, None, {"type": "none"}]
    assert out.result.stop_reason == "tool_use"  # the caller records no decision
    assert len(api.requests[-1].body["messages"]) == 5


def test_zero_rounds_sends_once_without_tools_allowed(tmp_path: Path, embedder: Embedder,
                                                      api: MessagesServer) -> None:
    api.reply_text("hold")
    out = with_grimoire(tmp_path, embedder, lambda g: loop(api, g, max_rounds=0), seed=False)
    assert out.rounds == 0 and len(api.requests) == 1
    assert api.requests[0].body["tool_choice"] == {"type": "none"}

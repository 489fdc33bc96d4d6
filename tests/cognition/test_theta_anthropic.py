"""Theta's anthropic path end to end: the real SDK against the local Messages server,
driven by a running daemon on the simulated market."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.cognition.ledger import SpendLedger
from golem.cognition.model import LEDGER_FILE
from golem.config import load_config
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.status import collect_status, render_status
from golem.testing.handlers import escalating
from golem.testing.messages_server import MessagesServer, approx_tokens, prompt_elements
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
KEY = "sk-ant-test-0123456789abcdefghijklmnop"
DECISION = {"analysis": "Large sells during a falling market; holding.",
            "predictions": [{"subject": "ETH/USD", "quantity": "price_move",
                             "direction": "down", "magnitude": 0.01, "confidence": 0.6,
                             "horizon_ticks": 3}],
            "actions": [{"kind": "hold", "reason": "observe"}],
            "referenced": [], "missing_context": ["lending pool health factors"]}


def frame_prefix(body: dict[str, Any]) -> str:
    """Tools, system, and the first user turn up to the frame's breakpoint."""
    content = body["messages"][0]["content"]
    end = next(i for i, b in enumerate(content) if "cache_control" in b)
    return json.dumps([body["tools"], body["system"], content[:end + 1]], sort_keys=True)


def last_mark(body: dict[str, Any]) -> int:
    content = body["messages"][0]["content"]
    return max(i for i, b in enumerate(content) if "cache_control" in b)


def up_to_last_mark(body: dict[str, Any], marked: dict[str, Any]) -> str:
    """``body`` up to the index of ``marked``'s last breakpoint in its first user turn,
    breakpoint markers left out (they are not part of the cached content)."""
    content = body["messages"][0]["content"][:last_mark(marked) + 1]
    return json.dumps([body["tools"], body["system"],
                       [{k: v for k, v in b.items() if k != "cache_control"} for b in content]],
                      sort_keys=True)


def prefix_tokens(body: dict[str, Any]) -> int:
    """The emulator's token count of a request up to its last breakpoint."""
    content = body["messages"][0]["content"][:last_mark(body) + 1]
    cut = {**body, "messages": [{"role": "user", "content": content}]}
    return sum(approx_tokens(text) for text, _ in prompt_elements(cut))




def test_theta_calls_the_model_with_cached_prefixes_citations_and_a_ledger(
        tmp_path: Path) -> None:
    key_file = tmp_path / "anthropic.key"
    key_file.write_text(KEY)
    key_file.chmod(0o600)
    wired = escalating(setup)

    with MessagesServer(default_text=json.dumps(DECISION), min_cache_tokens=256) as api:
        api.reply_tool_use("query_grimoire", {"query": "large swaps during a crash"})
        api.reply_text("I am not sure what to do.")  # malformed: no JSON decision
        path = tmp_path / "golem.toml"
        path.write_text(config_text({
            "golem": {"data_dir": "data", "seed": 5},
            "grimoire": {"model_dir": str(MODEL)},
            "logging": {"format": "json", "level": "warning"},
            "theta_context": {"loop2_every": 2},
            # Delta's MEMORY.md rewrite would change the stable prefix mid-test
            "consolidation": {"enabled": False},
            "cognition": {"provider": "anthropic", "base_url": api.url,
                          "api_key_file": str(key_file), "timeout_s": 10},
        }))
        config = load_config(path)
        daemon = Daemon(config, HandlerRegistry(), stop_after=420, setup=wired)
        configure_logging("warning", "json", io.StringIO())
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        requests = list(api.requests)

    theta = daemon.loops[1].counters
    assert theta.ticks == theta.ok == 7
    # Theta's first tick follows Gamma's first (same golem instant, one loop at a time),
    # which escalated a real event: every tick calls the model; tick 1 used a tool round
    # (two requests), every later tick one request
    assert len(requests) == 8
    first, second = requests[0].body, requests[1].body
    assert first["model"] == config.cognition.model_t2  # curiosity 0.95: the strong tier
    assert [t["name"] for t in first["tools"]] == ["query_grimoire", "working_memory_note"]
    assert second["messages"][-1]["content"][0]["type"] == "tool_result"
    for request in requests:
        body = json.dumps(request.body)
        assert KEY not in body and "sk-ant" not in body
        assert KEY in (request.headers.get("x-api-key", "")
                       + request.headers.get("authorization", ""))
        system = request.body["system"]
        assert any("cache_control" in block for block in system)
        assert '<untrusted_chain_data source=' not in json.dumps(system)  # no chain data
        assert "Uniswap V2 Swap on" not in json.dumps(system)
    # episodes (on-chain renderings) reach the model as citable search results whose
    # text is an untrusted-data fence
    user = requests[-1].body["messages"][0]["content"]
    episodes = [b for b in user if b["type"] == "search_result"
                and "/episode/" in b["source"]]
    assert episodes and all(b["citations"] == {"enabled": True} for b in episodes)
    assert all(b["content"][0]["text"].startswith("<untrusted_chain_data source=")
               for b in episodes)
    systems = {json.dumps(r.body["system"]) for r in requests[2:]}
    assert len(systems) == 1  # a byte-identical stable prefix tick after tick

    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        rows = conn.execute("SELECT tick, provider, status, record FROM decisions "
                            "ORDER BY tick").fetchall()
    finally:
        conn.close()
    assert [(t, p) for t, p, _, _ in rows] == [(t, "anthropic") for t in range(1, 8)]
    statuses = [s for _, _, s, _ in rows]
    assert statuses[0] == "malformed" and statuses.count("ok") == 6
    malformed = json.loads(rows[0][3])
    assert malformed["decision"] is None and malformed["problems"]
    ok = json.loads(rows[-1][3])
    assert ok["tier"] == "T2" and ok["cost_usd"] > 0
    assert ok["workspace"]["used"] <= ok["workspace"]["budget"]

    # frames: tick 1 sends the first keyframe; later ticks are P-frames over it unless
    # next_frame calls for another
    frames = [json.loads(r[3])["frame"] for r in rows]
    assert (frames[0]["kind"], frames[0]["why"]) == ("i_frame", "first")
    p_ticks = [t for t, f in zip(range(1, 8), frames, strict=True) if f["kind"] == "p_frame"]
    assert len(p_ticks) >= 3
    by_tick = {1: requests[0], **{t: requests[t] for t in range(2, 8)}}
    conn = sqlite3.connect(config.data_dir / "cognition" / LEDGER_FILE)
    try:
        usages = [json.loads(u) for (u,) in conn.execute(
            "SELECT usage FROM llm_spend WHERE state = 'settled' ORDER BY id")]
    finally:
        conn.close()
    usage_by_tick = {1: usages[0], **{t: usages[t] for t in range(2, 8)}}
    for tick in p_ticks:
        key = max(t for t in range(1, tick) if frames[t - 1]["kind"] == "i_frame")
        body, previous = by_tick[tick].body, by_tick[tick - 1].body
        assert frame_prefix(body) == frame_prefix(by_tick[key].body)
        # the previous request (sent: every tick called the model), up to its
        # last breakpoint, is this one's prefix byte for byte ...
        assert up_to_last_mark(body, previous) == up_to_last_mark(previous, previous)
        content = body["messages"][0]["content"]
        assert sum(b["type"] == "text" and b["text"].startswith("# Changes since")
                   for b in content) == tick - key
        # ... and the emulator read all of it from its cache: the P-frame paid full price
        # only for this tick's changes and the tail
        read, fresh = (usage_by_tick[tick]["cache_read_input_tokens"],
                       usage_by_tick[tick]["input_tokens"])
        assert read >= prefix_tokens(previous) and fresh < read
    reads = sum(u["cache_read_input_tokens"] for u in usages)
    assert reads / sum(u["input_tokens"] + u["cache_read_input_tokens"]
                       + u["cache_creation_input_tokens"] for u in usages) >= 0.5

    cfg = config.cognition
    from golem.cognition.ledger import ModelPrice  # noqa: PLC0415

    with SpendLedger(config.data_dir / "cognition" / LEDGER_FILE,
                     {cfg.model_t2: ModelPrice(*cfg.prices_t2)}) as ledger:
        totals = ledger.totals(now=0.0)
    assert totals.calls_settled == 8 and totals.open_reservations == 0
    assert 0 < totals.lifetime_usd <= cfg.daily_cap_usd
    assert "(anthropic, ok)" in render_status(collect_status(config))

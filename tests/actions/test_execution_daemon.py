"""A running golem acts on the simulated chain: model decisions become signed swaps,
outcomes become strategy_outcome episodes, and the wallet key never leaks (a canary)."""

from __future__ import annotations

import io
import json
import secrets
import sqlite3
from pathlib import Path

import anyio

from golem.actions.positions import POSITIONS_DB
from golem.chain.market import deploy_market
from golem.chain.revm import RevmEvm
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.config import load_config
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.payloads import OUTCOME_CATEGORY
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.handlers import escalating
from golem.testing.messages_server import MessagesServer
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
SEED = 11




def test_model_decisions_are_executed_and_the_key_never_leaks(tmp_path: Path) -> None:
    pair = deploy_market(RevmEvm(), SEED).pair_weth_usdc  # addresses depend on nonces
    key_hex = secrets.token_hex(32)
    key_file = tmp_path / "wallet.key"
    key_file.write_text("0x" + key_hex + "\n")
    key_file.chmod(0o600)
    api_key = tmp_path / "anthropic.key"
    api_key.write_text("sk-ant-test-0123456789abcdefghijklmnop")
    api_key.chmod(0o600)
    decision = {"analysis": "Momentum up; buying a little WETH.", "predictions": [],
                "actions": [{"kind": "swap", "contract": pair, "asset_in": "USDC",
                             "asset_out": "WETH", "amount": 2.0, "notional_usd": 2.0,
                             "reason": "test buy"},
                            {"kind": "swap", "contract": pair, "asset_in": "USDC",
                             "asset_out": "WETH", "amount": 1e6, "notional_usd": 2.0,
                             "reason": "more than the wallet holds"}],
                "referenced": [], "missing_context": []}
    wired = escalating(setup)

    logs = io.StringIO()
    with MessagesServer(default_text=json.dumps(decision)) as api:
        path = tmp_path / "golem.toml"
        path.write_text(config_text({
            "golem": {"data_dir": "data", "seed": SEED},
            "grimoire": {"model_dir": str(MODEL)},
            "logging": {"format": "json", "level": "debug"},
            "consolidation": {"enabled": False},
            "mortality": {"enabled": False},
            "cage": {"allowed_assets": ["WETH", "USDC"]},
            "actions": {"key_file": str(key_file)},
            "cognition": {"provider": "anthropic", "base_url": api.url,
                          "api_key_file": str(api_key), "timeout_s": 10},
        }))
        config = load_config(path)
        daemon = Daemon(config, HandlerRegistry(), stop_after=240, setup=wired)
        configure_logging("debug", "json", logs)
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        bodies = [json.dumps(r.body) + json.dumps(dict(r.headers)) for r in api.requests]
        requests = list(api.requests)

    assert bodies
    theta = daemon.loops[1].counters
    assert theta.ticks >= 4
    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        records = [json.loads(r) for (r,) in conn.execute(
            "SELECT record FROM decisions ORDER BY tick")]
    finally:
        conn.close()
    executions = [e for r in records for e in r.get("executions", [])]
    statuses = [e["status"] for e in executions]
    assert statuses.count("ok") >= 2 and statuses.count("refused") >= 2
    assert all(len(e["tx_hashes"]) == 2 for e in executions if e["status"] == "ok")
    conn = sqlite3.connect(config.data_dir / "chain" / POSITIONS_DB)
    try:
        booked = conn.execute("SELECT status, COUNT(*) FROM executions GROUP BY status")
        assert dict(booked.fetchall()) == {s: statuses.count(s) for s in set(statuses)}
    finally:
        conn.close()

    async def outcomes() -> list[dict[str, object]]:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            return await g.scan_episodes(lambda batches: [
                e.payload for batch in batches for e in batch
                if e.category == OUTCOME_CATEGORY])
        finally:
            await g.close()

    payloads = anyio.run(outcomes)
    assert sorted(str(p["result"]) for p in payloads) == sorted(statuses)
    assert all(p["action"] == "swap" and p["address"] == pair.lower() for p in payloads)
    refused = [p for p in payloads if p["result"] == "refused"]
    assert all("holds" in str(p["detail"]) for p in refused)

    # the canary: the key is nowhere in the data dir, the logs or the model requests
    needles = [key_hex, key_hex.upper(), "0x" + key_hex]
    files = [p for p in config.data_dir.rglob("*") if p.is_file()]
    assert any(p.suffix == ".lance" for p in files) and any(p.name == POSITIONS_DB
                                                           for p in files)
    assert (config.data_dir / "events.jsonl").exists()
    for f in files:
        data = f.read_bytes()
        assert not any(n.encode() in data for n in needles), f"key found in {f}"
    assert "action executed" in logs.getvalue()
    for text in (logs.getvalue(), *bodies):
        assert not any(n in text for n in needles)
    # the model API key too: only the request headers may carry it
    api_secret = api_key.read_text().strip()
    assert not any(api_secret.encode() in f.read_bytes() for f in files)
    assert api_secret not in logs.getvalue()
    assert all(api_secret not in json.dumps(r.body) for r in requests)

"""Knowledge reaches both tiers and the journal says which of it drove each decision:
consolidated conditional outcomes in the Grimoire, a running daemon on the simulated
market with Theta on the anthropic tier (the real SDK against the local Messages
server), and `golem status` over the data dir afterwards."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from golem.chain.market import deploy_market
from golem.chain.revm import RevmEvm
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.config import Config, load_config
from golem.consolidation.engine import entry_id
from golem.consolidation.outcomes import outcome_key, outcome_text
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import (
    DecayClass,
    EntryType,
    FactKind,
    InsightCategory,
    MemoryType,
    SemanticEntry,
)
from golem.logging import configure_logging
from golem.perception.market import BUCKET_WORDS, TAPE_REGIMES
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.status import collect_status, render_status
from golem.testing.handlers import Escalator, escalating
from golem.testing.messages_server import MessagesServer
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
KEY = "sk-ant-test-0123456789abcdefghijklmnop"
SEED = 5


def outcome_entries(namespace: str, feed: str, now: float) -> list[SemanticEntry]:
    """What consolidation would have learned: after every move bucket in every regime the
    feed rose 0.8% on average; and the same facts with a negative stddev (nonsense that
    must be skipped and counted)."""
    out = []
    for regime in TAPE_REGIMES:
        for bucket in BUCKET_WORDS:
            fact: dict[str, Any] = {
                "feed": feed, "regime": regime, "bucket": bucket, "horizon_s": 300.0,
                "lookback_s": 600.0, "n": 120, "n_eff": 40, "mean": 0.008,
                "stddev": 0.01, "p_up": 0.8, "shares": [0.15, 0.05, 0.8]}
            for suffix, f in (("", fact), ("|bad", {**fact, "stddev": -0.01})):
                key = outcome_key(feed, regime, bucket, 300.0) + suffix
                out.append(SemanticEntry(
                    id=entry_id(namespace, key), namespace=namespace,
                    text=outcome_text(f).replace("stddev -", "stddev minus "),
                    entry_type=EntryType.INSIGHT, memory_type=MemoryType.FACT,
                    created_at=now, confidence=0.8, importance=0.6,
                    reinforced_confidence=0.8, category=InsightCategory.STRATEGIC_PATTERNS,
                    fact_kind=FactKind.CONDITIONAL_OUTCOME, fact={**f, "key": key},
                    episode_count=120, decay_class=DecayClass.TACTICAL,
                    observed_from=now - 7200, observed_to=now - 60))
    return out


async def plant(config: Config) -> list[str]:
    feed = deploy_market(RevmEvm(), SEED).oracle_eth_usd.lower()
    now = config.clock.start.timestamp()
    grimoire = await Grimoire.open(config, lambda: now)
    try:
        written = await grimoire.write_entries(
            outcome_entries(grimoire.namespace, feed, now), checked=False)
    finally:
        await grimoire.close()
    return [f"grimoire://{e.namespace}/insight/{e.id}" for e in written]


def test_both_tiers_use_learned_outcomes_and_the_journal_and_status_say_which(
        tmp_path: Path) -> None:
    key_file = tmp_path / "anthropic.key"
    key_file.write_text(KEY)
    key_file.chmod(0o600)
    path = tmp_path / "golem.toml"
    with MessagesServer(default_text="{}") as api:
        path.write_text(config_text({
            "golem": {"data_dir": "data", "seed": SEED},
            "grimoire": {"model_dir": str(MODEL)},
            "logging": {"format": "json", "level": "warning"},
            "consolidation": {"enabled": False},
            "cognition": {"provider": "anthropic", "base_url": api.url,
                          "api_key_file": str(key_file), "timeout_s": 10}}))
        config = load_config(path)
        uris = anyio.run(plant, config)
        decision = {"analysis": "The learned outcomes say the feed rises after such moves.",
                    "predictions": [{"subject": "ETH/USD", "quantity": "price_move",
                                     "direction": "up", "magnitude": 0.008,
                                     "confidence": 0.7, "horizon_ticks": 5}],
                    "actions": [{"kind": "hold", "reason": "observe"}],
                    "referenced": uris, "missing_context": []}
        api.default_text = json.dumps(decision)
        # escalations in alternate two-minute spans: Theta uses the model, then T0
        daemon = Daemon(config, HandlerRegistry(), stop_after=360,
                        setup=escalating(setup, Escalator(alternate_ticks=12)))
        configure_logging("warning", "json", io.StringIO())
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        requests = list(api.requests)

    # the model sees each learned outcome's numbers, not only its sentence
    results = [b for r in requests for b in r.body["messages"][0]["content"]
               if b["type"] == "search_result" and b["source"] in uris]
    assert results
    assert all("Learned: conditions feed" in b["content"][0]["text"]
               and "n=120 cases" in b["content"][0]["text"] for b in results)

    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        rows = conn.execute("SELECT tick, provider, record, summary FROM decisions "
                            "ORDER BY tick").fetchall()
        shadow = [json.loads(k) for (k,) in conn.execute("SELECT knowledge FROM outlooks")]
    finally:
        conn.close()
    by_provider: dict[str, list[dict[str, Any]]] = {}
    for _, provider, record, _ in rows:
        by_provider.setdefault(provider, []).append(json.loads(record)["knowledge"])
    assert set(by_provider) == {"offline", "anthropic"}
    # the model tier leans on the learned entries it cites
    attributed = [a for k in by_provider["anthropic"] for a in k["attribution"]]
    assert attributed and all(a["uri"] in uris and a["share"] > 0 for a in attributed)
    assert all(a["text"].startswith("After oracle feed") for a in attributed)
    start = config.clock.start.timestamp()  # how old the knowledge was, for the lab
    assert all(a["observed_to"] == start - 60 for a in attributed)
    # the offline tier works its knowledge out in the shadow and journals it, but a
    # newborn's knowledge has no record yet (golem.cognition.experts): the prior decides
    offline = by_provider["offline"]
    assert shadow and len(shadow) == len(offline)
    assert any(k[2] > 0.5 for k in shadow)  # the learned outcomes lean up
    assert all(k["attribution"] == [] for k in offline)
    assert any("to judge the learned outcomes by" in r[3] or "not used" in r[3]
               for r in rows if r[1] == "offline")
    assert sum(k["skipped"] for ks in by_provider.values() for k in ks) > 0

    report = render_status(collect_status(config))
    assert "knowledge  behind the newest decisions:" in report
    assert "After oracle feed" in report and "malformed fact(s) skipped" in report

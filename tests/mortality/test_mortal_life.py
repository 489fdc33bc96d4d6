"""A whole mortal life on the simulated chain (issue 7's end-to-end check).

A golem with a small budget trades on the WETH/USDC pair, pays for every model call
from that budget, declines through the phases and dies within the run: its positions
are closed on chain (read back from the replayed chain), the testament is valid and
within the bottleneck, a local webhook receiver got the death notice, and the data
dir refuses a restart.
"""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from golem.actions.positions import POSITIONS_DB, Valuer
from golem.actions.wallet import open_wallet
from golem.chain.cursor import CaptureStore
from golem.chain.market import deploy_market
from golem.chain.options import market_options
from golem.chain.revm import RevmEvm
from golem.chain.source import SimulatedSource
from golem.cli import run_cli
from golem.config import load_config
from golem.logging import configure_logging
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.death import EXIT_DEAD, read_death
from golem.mortality.testament import load_testament
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.handlers import escalating
from golem.testing.messages_server import MessagesServer
from golem.testing.webhook_receiver import WebhookReceiver
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
SEED = 23




@pytest.mark.timeout(600)
def test_a_golem_trades_pays_declines_dies_and_leaves_a_testament(tmp_path: Path) -> None:
    pair = deploy_market(RevmEvm(), SEED).pair_weth_usdc  # addresses depend on nonces
    api_key = tmp_path / "anthropic.key"
    api_key.write_text("sk-ant-test-0123456789abcdefghijklmnop")
    api_key.chmod(0o600)
    decision = {"analysis": "Momentum up; buying a little WETH.", "predictions": [],
                "actions": [{"kind": "swap", "contract": pair, "asset_in": "USDC",
                             "asset_out": "WETH", "amount": 1.0, "notional_usd": 1.0,
                             "reason": "small buy"}],
                "referenced": [], "missing_context": []}
    reflection = {key: [f"{title}: the model's honest line."]
                  for key, title in REFLECTION_CATEGORIES.items()}
    wired = escalating(setup)

    with MessagesServer(default_text=json.dumps(decision)) as api, WebhookReceiver() as hook:
        api.reply_when("death reflection", json.dumps(reflection))
        path = tmp_path / "golem.toml"
        path.write_text(config_text({
            "golem": {"data_dir": "data", "seed": SEED},
            "grimoire": {"model_dir": str(MODEL)},
            "logging": {"format": "json", "level": "warning"},
            "delta": {"interval_s": 120},
            "consolidation": {"model_assist": False},
            # the reserve must cover the reflection's worst case at these token prices
            "mortality": {"starting_budget_usd": 6.0, "reserve_floor_usd": 1.5,
                          "hazard_per_day": 0.0, "webhook_url": hook.url},
            "cage": {"allowed_assets": ["WETH", "USDC"], "max_notional_usd": 5,
                     "max_position_usd": 50},
            # expensive tokens: each decision costs cents, paid from the golem's budget
            "cognition": {"provider": "anthropic", "base_url": api.url,
                          "api_key_file": str(api_key), "timeout_s": 10,
                          "prices_t1": [40.0, 200.0, 4.0, 50.0],
                          "prices_t2": [60.0, 300.0, 6.0, 75.0],
                          "daily_cap_usd": 1000.0, "lifetime_cap_usd": 1000.0},
        }))
        config = load_config(path)
        daemon = Daemon(config, HandlerRegistry(), stop_after=6 * 3600, setup=wired)
        configure_logging("warning", "json", io.StringIO())
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        posts = list(hook.delivered)
        requests = len(api.requests)

    data = config.data_dir
    # it died, of its economy, before the run's end
    record = read_death(data)
    assert record is not None and record.cause.startswith("economic")
    assert record.died_at < config.clock.start.timestamp() + 6 * 3600
    assert daemon.stop_reason is not None and "died" in daemon.stop_reason
    # it declined through the phases, in order, and paid for its thinking
    conn = sqlite3.connect(data / "mortality" / "vitality.db")
    try:
        phases = [p for (p,) in conn.execute("SELECT phase FROM samples ORDER BY tick")]
    finally:
        conn.close()
    # equity is marked to market, so a rally can lift the phase for a while; the spending
    # does not stop, and the golem ends terminal after passing through most phases
    assert phases[0] == "thriving" and phases[-1] == "terminal"
    assert len(set(phases)) >= 4 and phases.count("terminal") == 1
    assert requests >= 5
    # it traded, and Settle closed what it held: read back from the replayed chain
    conn = sqlite3.connect(data / "chain" / POSITIONS_DB)
    try:
        statuses = dict(conn.execute("SELECT status, COUNT(*) FROM executions "
                                     "GROUP BY status").fetchall())
    finally:
        conn.close()
    assert statuses.get("ok", 0) >= 2  # at least one buy and the settling sell
    store = CaptureStore.open(data / "chain")
    try:
        source = SimulatedSource.create(SEED, config.clock.start.timestamp(), store,
                                        **market_options(config.chain))
        address = open_wallet("", data, simulated=True, seed=SEED, environ={}).address
        held = Valuer(source.evm, source.market, address).snapshot()
    finally:
        store.close()
    assert [h.label for h in held.holdings] == ["USDC"]
    assert record.settled
    # the testament is valid and within the bottleneck, written with the model's reflection
    testament = load_testament(Path(record.testament_path))
    assert 0 < len(testament.entries) <= config.mortality.testament_max_entries
    assert testament.reflection_source.startswith("model:")
    assert testament.reflection["what_worked"] == reflection["what_worked"]
    # no golem dies silent: the receiver has the death notice
    died = [p for p in posts if p.get("event") == "died"]
    assert len(died) == 1 and died[0]["testament_id"] == testament.testament_id
    # and the data dir stays dead
    assert run_cli(["run", "--config", str(path), "--stop-after", "60s"]) == EXIT_DEAD

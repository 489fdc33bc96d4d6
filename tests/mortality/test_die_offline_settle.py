"""`golem die` with no daemon running still settles: the simulated chain is rebuilt from
its journal (the golem's own transactions included) and every position is closed."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio

from golem.actions.positions import Valuer
from golem.actions.wallet import open_wallet
from golem.chain.cursor import CaptureStore
from golem.chain.market import deploy_market
from golem.chain.options import market_options
from golem.chain.revm import RevmEvm
from golem.chain.source import SimulatedSource
from golem.cli import run_cli
from golem.config import Config, load_config
from golem.logging import configure_logging
from golem.mortality.death import read_death
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.handlers import escalating
from golem.testing.messages_server import MessagesServer
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
SEED = 29


def holdings(config: Config) -> list[str]:
    """What the wallet holds on the chain rebuilt from the data dir's journal."""
    store = CaptureStore.open(config.data_dir / "chain")
    try:
        source = SimulatedSource.create(SEED, config.clock.start.timestamp(), store,
                                        **market_options(config.chain))
        address = open_wallet("", config.data_dir, simulated=True, seed=SEED,
                              environ={}).address
        return [h.label for h in Valuer(source.evm, source.market, address).snapshot().holdings]
    finally:
        store.close()


def write_config(tmp_path: Path, sections: dict[str, Any]) -> Path:
    """tmp_path/golem.toml: the seeded golem with capture only (no consolidation) and
    ``sections`` on top."""
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": SEED},
        "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "warning"},
        "consolidation": {"enabled": False},
        **sections,
    }))
    return path


def test_golem_die_without_a_daemon_settles_on_the_rebuilt_chain(tmp_path: Path) -> None:
    pair = deploy_market(RevmEvm(), SEED).pair_weth_usdc
    api_key = tmp_path / "anthropic.key"
    api_key.write_text("sk-ant-test-0123456789abcdefghijklmnop")
    api_key.chmod(0o600)
    decision = {"analysis": "Buying a little WETH.", "predictions": [],
                "actions": [{"kind": "swap", "contract": pair, "asset_in": "USDC",
                             "asset_out": "WETH", "amount": 1.0, "notional_usd": 1.0,
                             "reason": "small buy"}],
                "referenced": [], "missing_context": []}
    wired = escalating(setup)

    with MessagesServer(default_text=json.dumps(decision)) as api:
        path = write_config(tmp_path, {
            "mortality": {"starting_budget_usd": 10.0},
            "cage": {"allowed_assets": ["WETH", "USDC"], "max_notional_usd": 5},
            "cognition": {"provider": "anthropic", "base_url": api.url,
                          "api_key_file": str(api_key), "timeout_s": 10},
        })
        config = load_config(path)
        configure_logging("warning", "json", io.StringIO())
        daemon = Daemon(config, HandlerRegistry(), stop_after=180, setup=wired)
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        assert "WETH" in holdings(config)  # it bought, and the golem is stopped

        # the reflection call gets the decision text (not a reflection): offline fallback
        assert run_cli(["die", "--config", str(path), "--reason", "operator test"]) == 0
    record = read_death(config.data_dir)
    assert record is not None and record.trigger == "operator" and record.settled
    assert holdings(config) == ["USDC"]


def test_golem_die_opens_a_planted_market_with_its_own_rules(tmp_path: Path) -> None:
    """A market with a planted regularity and mid-life changes (the lab's) is rebuilt at
    death with the same rules it was built with; before, `golem die` opened it with the
    default market's rules and the data dir was refused (exit 78)."""
    path = write_config(tmp_path, {
        "chain": {"planted": {"enabled": True, "swap_after_s": 60.0},
                  "changes": {"drain_at_s": 30.0}},
    })
    config = load_config(path)
    configure_logging("warning", "json", io.StringIO())
    daemon = Daemon(config, HandlerRegistry(), stop_after=90, setup=setup)
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    assert run_cli(["die", "--config", str(path), "--reason", "end of a lab life"]) == 0
    record = read_death(config.data_dir)
    assert record is not None and record.settled

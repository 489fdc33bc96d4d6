"""RPC mode acts through a real node (anvil): the venues come from actions.market_file,
the wallet from its key file; a dry run (the default outside simulation) signs nothing,
`actions.dry_run = false` swaps on chain."""

from __future__ import annotations

import io
import json
import secrets
import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from golem.actions.cage import Cage
from golem.actions.execution import open_rpc_executor
from golem.actions.positions import POSITIONS_DB
from golem.actions.wallet import WalletError, open_wallet
from golem.chain.compile import load_artifacts
from golem.chain.evm import ChainError
from golem.chain.market import E18, USDC_UNIT, Market, deploy_market, load_market
from golem.chain.revm import RevmEvm
from golem.chain.rpc_evm import NodeEvm, RpcEvm
from golem.chain.transactions import nonce_of, send_eth
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.config import Config, load_config
from golem.errors import ConfigError
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.anvil import AnvilNode
from golem.testing.handlers import escalating
from golem.testing.messages_server import MessagesServer
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
ERC20 = load_artifacts()["ERC20"].abi
FUNDED_USDC = 50 * USDC_UNIT
FUNDED_WETH = E18 // 40
NO_CAGE = Cage(frozenset(), frozenset(), 0.0, 0.0, 0.0, 0.0)


def _write_key(path: Path) -> None:
    path.write_text("0x" + secrets.token_hex(32) + "\n")
    path.chmod(0o600)


def _config(tmp_path: Path, url: str, market: Market, api_url: str = "http://127.0.0.1:9",
            **actions: Any) -> Config:
    """RPC mode on `url`; actions as given (market_file relative to the config file)."""
    path = tmp_path / "golem.toml"
    api_key = tmp_path / "anthropic.key"
    api_key.write_text("sk-ant-test-0123456789abcdefghijklmnop")
    api_key.chmod(0o600)
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": 5},
        "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "info"},
        "consolidation": {"enabled": False},
        "mortality": {"enabled": False},
        "cage": {"allowed_assets": ["WETH", "USDC"]},
        "actions": actions,
        "cognition": {"provider": "anthropic", "base_url": api_url,
                      "api_key_file": str(api_key), "timeout_s": 10},
        "chain": {"mode": "rpc", "confirmations": 0, "capture_reverts": False,
                  "rpc": {"url": url, "chain_id": 31337, "addresses": list(market.contracts),
                          "timeout_s": 5}},
    }))
    return load_config(path)


def _market_on(anvil: AnvilNode, tmp_path: Path) -> tuple[RpcEvm, Market, str, str]:
    """Deploy the market, write market.json, fund a fresh wallet from anvil's dev accounts:
    (evm, market, key file, wallet address)."""
    evm = RpcEvm(anvil.http_url)
    market = deploy_market(evm, seed=7)
    (tmp_path / "market.json").write_text(json.dumps(market.to_dict()))
    key_file = tmp_path / "wallet.key"
    _write_key(key_file)
    wallet = open_wallet(str(key_file), tmp_path, simulated=False, seed=0, environ={})
    send_eth(evm, evm.accounts[-1], wallet.address, 10 * E18)
    for token, amount in ((market.usdc, FUNDED_USDC), (market.weth, FUNDED_WETH)):
        assert evm.transact(token.address, ERC20, "mint", wallet.address, amount,
                            sender=market.owner).ok
    return evm, market, str(key_file), wallet.address


def _run(tmp_path: Path, url: str, market: Market, **actions: Any
         ) -> tuple[Config, list[dict[str, Any]], dict[str, int], str]:
    """Run the daemon with a model that buys WETH for 2 USDC every Theta tick: (config,
    executions in the decision journal, positions.db executions by status, logs)."""
    decision = {"analysis": "Buying a little WETH.", "predictions": [], "referenced": [],
                "missing_context": [],
                "actions": [{"kind": "swap", "contract": market.pair_weth_usdc,
                             "asset_in": "USDC", "asset_out": "WETH", "amount": 2.0,
                             "notional_usd": 2.0, "reason": "test buy"}]}
    wired = escalating(setup)

    logs = io.StringIO()
    with MessagesServer(default_text=json.dumps(decision)) as api:
        config = _config(tmp_path, url, market, api.url, **actions)
        daemon = Daemon(config, HandlerRegistry(), stop_after=200, setup=wired)
        configure_logging("info", "json", logs)
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        assert api.requests
    assert daemon.loops[1].counters.ticks >= 3
    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        records = [json.loads(r) for (r,) in conn.execute(
            "SELECT record FROM decisions ORDER BY tick")]
    finally:
        conn.close()
    conn = sqlite3.connect(config.data_dir / "chain" / POSITIONS_DB)
    try:
        booked = dict(conn.execute("SELECT status, COUNT(*) FROM executions GROUP BY status")
                      .fetchall())
    finally:
        conn.close()
    executions = [e for r in records for e in r.get("executions", [])]
    return config, executions, booked, logs.getvalue()


def _balances(evm: RpcEvm, market: Market, address: str) -> tuple[int, int, int]:
    return (nonce_of(evm, address),
            int(evm.call(market.usdc.address, ERC20, "balanceOf", address)),
            int(evm.call(market.weth.address, ERC20, "balanceOf", address)))


def test_dry_run_is_the_default_over_rpc_and_signs_nothing(anvil: AnvilNode,
                                                          tmp_path: Path) -> None:
    evm, market, key_file, address = _market_on(anvil, tmp_path)
    before = _balances(evm, market, address)
    assert before == (0, FUNDED_USDC, FUNDED_WETH)
    config, executions, booked, logs = _run(tmp_path, anvil.http_url, market,
                                            key_file=key_file, market_file="market.json")
    assert config.dry_run and config.actions.market_file == str(tmp_path / "market.json")
    statuses = [e["status"] for e in executions]
    assert len(statuses) >= 3 and set(statuses) == {"dry_run"}, statuses
    assert all(e["tx_hashes"] == [] and "swap" in e["detail"] for e in executions)
    assert booked == {"dry_run": len(statuses)}
    assert _balances(evm, market, address) == before  # no transaction, no nonce used
    assert '"acting over RPC"' in logs and '"dry_run": true' in logs


def test_dry_run_false_swaps_on_anvil(anvil: AnvilNode, tmp_path: Path) -> None:
    evm, market, key_file, address = _market_on(anvil, tmp_path)
    config, executions, booked, _ = _run(tmp_path, anvil.http_url, market, key_file=key_file,
                                         market_file=str(tmp_path / "market.json"),
                                         dry_run=False)
    assert not config.dry_run
    ok = [e for e in executions if e["status"] == "ok"]
    assert len(ok) >= 3 and len(ok) == len(executions), executions
    assert all(len(e["tx_hashes"]) == 2 for e in ok)  # transfer in, then swap
    assert booked == {"ok": len(ok)}
    nonce, usdc, weth = _balances(evm, market, address)
    assert nonce == 2 * len(ok)
    assert usdc == FUNDED_USDC - len(ok) * 2 * USDC_UNIT
    assert weth > FUNDED_WETH
    mined = evm.w3.eth.get_transaction_receipt(ok[0]["tx_hashes"][1])
    assert mined["status"] == 1 and mined["from"] == address


def test_when_rpc_mode_does_not_act(anvil: AnvilNode, tmp_path: Path) -> None:
    """No market file, or a dry run with no key: recorded only (None). A real run with no
    key, or a node on another chain, stops start-up with the reason."""
    _, market, _, _ = _market_on(anvil, tmp_path)
    no_market = _config(tmp_path, anvil.http_url, market)
    # grimoire is only used once an executor is built, which none of these reach
    assert open_rpc_executor(no_market, NO_CAGE, None, environ={}) is None  # type: ignore[arg-type]
    keyless = _config(tmp_path, anvil.http_url, market, market_file="market.json")
    assert open_rpc_executor(keyless, NO_CAGE, None, environ={}) is None  # type: ignore[arg-type]
    live = _config(tmp_path, anvil.http_url, market, market_file="market.json", dry_run=False)
    with pytest.raises(WalletError, match="no wallet key"):
        open_rpc_executor(live, NO_CAGE, None, environ={})  # type: ignore[arg-type]
    with pytest.raises(ChainError, match="not chain 1 "):
        NodeEvm(anvil.http_url, chain_id=1)
    # the node needs no evm_* method: NodeEvm never stamps or mines
    node = NodeEvm(anvil.http_url, chain_id=31337)
    with pytest.raises(ChainError, match="mines its own"):
        node.mine()


def test_market_file_round_trips_and_bad_files_name_the_file(tmp_path: Path) -> None:
    market = deploy_market(RevmEvm(), seed=3)
    path = tmp_path / "market.json"
    path.write_text(json.dumps(market.to_dict()))
    assert load_market(path) == market
    venues_only = {k: v for k, v in market.to_dict().items()
                   if k not in ("noise_traders", "lps", "borrowers", "whale", "arbitrageur",
                                "liquidator", "owner", "initial_eth_usd")}
    path.write_text(json.dumps(venues_only))
    assert load_market(path).pair_weth_usdc == market.pair_weth_usdc
    lower = {**venues_only, "lending": market.lending.lower()}
    path.write_text(json.dumps(lower))
    assert load_market(path).lending == market.lending  # checksummed on load
    bad_checksum = market.lending[:2] + market.lending[2:].swapcase()
    cases: list[tuple[str, str]] = [
        ("{not json", "not valid JSON"),
        ("[]", "must be a JSON object"),
        (json.dumps({k: v for k, v in venues_only.items() if k != "lending"}),
         "missing keys: lending"),
        (json.dumps({**venues_only, "pair_weth_usdc": "0x1234"}),
         "pair_weth_usdc: not an address"),
        (json.dumps({**venues_only, "lending": bad_checksum}), "bad EIP-55 checksum"),
        (json.dumps({**venues_only, "usdc": {"address": market.usdc.address}}),
         "usdc: must be an object with address, symbol and decimals"),
        (json.dumps({**venues_only, "weth": {**market.to_dict()["weth"], "decimals": "18"}}),
         "weth.decimals"),
    ]
    for text, problem in cases:
        path.write_text(text)
        with pytest.raises(ConfigError) as caught:
            load_market(path)
        assert str(path) in str(caught.value) and problem in str(caught.value), caught.value
    with pytest.raises(ConfigError, match="no such file"):
        load_market(tmp_path / "missing.json")

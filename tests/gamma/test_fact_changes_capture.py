"""Facts that change mid-life, seen by a running golem: the daemon on the simulated market
with [chain.changes] on captures what each change did (the episodes Gamma wrote) and
writes each change to the ground truth that `read_fact_changes` reads."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from golem.config import Config, load_config
from golem.gamma.capture import GammaCapture, read_fact_changes, read_ground_truth
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import Episode
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
STALE_AT, STALE_FOR, DRAIN_AT, TURN_AT = 60.0, 90.0, 170.0, 200.0


def _run(config: Config, seconds: float) -> GammaCapture:
    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=seconds, setup=setup)
    configure_logging("warning", "json", io.StringIO())
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    capture = registry.for_loop("gamma")[0]
    assert isinstance(capture, GammaCapture)
    return capture


def _episodes(config: Config) -> list[Episode]:
    async def read() -> list[Episode]:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            return await g.scan_episodes(lambda batches: [e for b in batches for e in b])
        finally:
            await g.close()

    return anyio.run(read)


@pytest.mark.timeout(300)  # one daemon run of 300 golem seconds: about a minute
def test_a_golem_captures_the_changes_and_their_ground_truth(tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": 5},
        "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "warning"},
        "chain": {"changes": {"stale_oracle_at_s": STALE_AT,
                              "stale_oracle_for_s": STALE_FOR,
                              "drain_at_s": DRAIN_AT, "honeypot_at_s": TURN_AT}}}))
    config = load_config(path)
    capture = _run(config, 300)
    assert capture.market is not None and capture.follower is not None
    m, cursor = capture.market.market, capture.follower.cursor
    assert cursor is not None

    rows = read_fact_changes(config.data_dir)
    born = read_ground_truth(config.data_dir)[0][0]  # the first step's regime
    assert [(t - born, kind) for t, kind, _ in rows] == [
        (STALE_AT, "oracle_stale"), (STALE_AT + STALE_FOR, "oracle_resumed"),
        (DRAIN_AT, "liquidity_drained"), (TURN_AT, "honeypot_turned")]
    blocks = {c.kind: c.block_number for c in capture.market.fact_changes}
    assert [r[2] for r in rows] == [c.details for c in capture.market.fact_changes]
    assert blocks["honeypot_turned"] <= cursor  # every change is below the committed cursor

    episodes = _episodes(config)
    answers = [e.block_number for e in episodes if e.payload.get("event") == "AnswerUpdated"]
    assert answers and not [b for b in answers
                            if blocks["oracle_stale"] <= b < blocks["oracle_resumed"]]
    assert blocks["oracle_resumed"] in answers
    drained = [e for e in episodes if e.block_number >= blocks["liquidity_drained"]
               and e.payload.get("address") == m.pair_weth_usdc
               and e.payload.get("event") == "Burn"]
    assert drained and drained[0].payload["args"]["sender"] == m.owner
    after = rows[2][2]["reserves_after"]
    assert any(e.payload.get("event") == "Sync" and e.payload.get("address") == m.pair_weth_usdc
               and [e.payload["args"]["reserve0"], e.payload["args"]["reserve1"]] == after
               for e in episodes)
    # HONEY: any sell that went through came before the turn, any that reverted after it
    sells = [e.block_number for e in episodes if e.payload.get("event") == "Transfer"
             and e.payload.get("address") == m.honey.address
             and e.payload["args"].get("to") == m.pair_honey_weth]
    reverts = [e.block_number for e in episodes if e.category == "revert"
               and str(e.payload.get("address")).lower() == m.honey.address.lower()]
    assert all(b < blocks["honeypot_turned"] for b in sells)
    assert all(b > blocks["honeypot_turned"] for b in reverts)
    # on this seed one sell goes through (block 137) and one reverts (220); the golem's
    # own trades can move the actors' draws, so only one of them is required here (the
    # chain test in tests/chain/test_changes.py shows both on a market without a golem)
    assert sells or reverts


@pytest.mark.timeout(300)  # one daemon run of 120 golem seconds
def test_a_golem_remembers_a_fee_change_and_its_ground_truth(tmp_path: Path) -> None:
    """The WETH/USDC pool's fee set to 1% at 60 s: Gamma captures the FeeAdjustment log as
    an episode that names the pool and both fees, and the change is ground truth."""
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": 5},
        "grimoire": {"model_dir": str(MODEL)},
        "logging": {"format": "json", "level": "warning"},
        "chain": {"changes": {"fee_change_at_s": 60.0, "fee_change_to": 0.01}}}))
    config = load_config(path)
    capture = _run(config, 120)
    assert capture.market is not None
    m = capture.market.market
    rows = read_fact_changes(config.data_dir)
    born = read_ground_truth(config.data_dir)[0][0]
    assert [(t - born, kind, details) for t, kind, details in rows] == [
        (60.0, "fee_changed", {"pool": m.pair_weth_usdc, "fee_before": 0.003,
                               "fee_after": 0.01})]
    [block] = [c.block_number for c in capture.market.fact_changes]
    [episode] = [e for e in _episodes(config) if e.payload.get("event") == "FeeAdjustment"]
    assert episode.block_number == block and episode.protocol == "Ramses V3"
    assert episode.payload["address"] == m.pair_weth_usdc
    assert episode.payload["args"] == {"oldFee": 3_000, "newFee": 10_000}
    assert episode.text.endswith(
        "Ramses V3 fee adjustment: fee of the WETH/USDC pool set from 0.30% to 1.00%")
    assert m.pair_weth_usdc in episode.identifiers

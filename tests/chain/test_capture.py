"""Gamma capture end to end: the simulated market, perception, and the Grimoire."""

from __future__ import annotations

import io
import json
from pathlib import Path

import anyio

from golem.config import load_config
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import episode_id
from golem.logging import configure_logging
from golem.perception.beliefs import BeliefState
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


def test_capture_writes_every_watched_log_once_with_beliefs_and_ground_truth(
        tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"data_dir": "data", "seed": 7},
                                 "grimoire": {"model_dir": str(MODEL)},
                                 "logging": {"format": "json", "level": "warning"}}))
    config = load_config(path)
    registry = HandlerRegistry()
    daemon = Daemon(config, registry, stop_after=300, setup=setup)
    configure_logging("warning", "json", io.StringIO())
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    assert [h.name for h in registry.for_loop("gamma")] == ["chain-capture"]
    capture = registry.for_loop("gamma")[0]
    source = capture.source  # type: ignore[attr-defined]
    on_chain = [log for log in source.evm.get_logs(0, source.evm.head().number)
                if log.address.lower() in source.watched]
    deploy_block = min(s.block_number for s in source.ground_truth)
    captured_logs = [log for log in on_chain if log.block_number >= deploy_block]
    assert daemon.loops[0].counters.ticks == 30

    async def check() -> None:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            stored = {e.id for batch in g.episodes.iter_all() for e in batch}
            expected = {episode_id(log.chain_id, log.block_hash, log.log_index)
                        for log in captured_logs}
            assert stored == expected and len(stored) > 30  # every watched log, once
            result = await g.recall("a Uniswap V2 swap of WETH for USDC", k=3,
                                    namespace=g.namespace)
            assert not result.refused
            assert any("Swap" in h.text for h in result.hits)
            top = result.hits[0].record
            assert top.payload["route"] in ("escalate", "update_silently", "discard")
        finally:
            await g.close()

    anyio.run(check)
    chain_dir = config.data_dir / "chain"
    beliefs = BeliefState.from_dict(json.loads((chain_dir / "beliefs.json").read_text()))
    assert len(beliefs.channels) >= 4
    truth = [json.loads(line) for line in
             (chain_dir / "ground_truth.jsonl").read_text().splitlines()]
    assert truth[0]["regime"] == "calm" and truth[0]["block_number"] == deploy_block

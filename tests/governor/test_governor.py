"""ContextGovernor.assemble over a real Grimoire (real model, stores in tmp_path)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import anyio
import pytest

from golem.config import load_config
from golem.governor.categories import MarketRegime, Phase
from golem.governor.governor import ContextGovernor
from golem.governor.policy import default_policy
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR
from ..grimoire.test_episodes import make_episode

NOW = 1_767_225_600.0


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


def test_escalated_episodes_reach_the_workspace_once_whether_recalled_or_not(
        tmp_path: Path, embedder: Embedder) -> None:
    """An escalated episode the recall found is marked, one it did not find is fetched
    (beside the recall) and becomes a candidate (placed or masked: the Governor decides);
    neither is considered twice, and an unknown id is skipped."""
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "main", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL_DIR)}}))
    swaps = [dataclasses.replace(make_episode(i), observed_at=NOW - 60 * i) for i in range(40)]
    odd = dataclasses.replace(
        make_episode(99, category="oracle", protocol="chainlink",
                     text="Chainlink heartbeat missed on the BTC/USD feed for 3 hours"),
        observed_at=NOW - 30)

    async def main() -> tuple[Counter[str], bool]:
        g = await Grimoire.open(load_config(path), now=lambda: NOW, embedder=embedder)
        try:
            await g.add_episodes([*swaps, odd])
            recalled = await g.recall("large swaps of WETH for USDC on uniswap_v3", k=30)
            assert not recalled.refused
            odd_recalled = odd.id in {h.id for h in recalled.hits}
            assembly = await ContextGovernor(g, 8000).assemble(
                default_policy(), query="large swaps of WETH for USDC on uniswap_v3",
                live=[], escalated_ids=[odd.id, swaps[1].id, "no-such-episode"],
                phase=Phase.STABLE, regime=MarketRegime.CALM)
        finally:
            await g.close()
        workspace = assembly.workspace
        # every candidate the Governor considered: placed, or excluded with a reason
        considered = Counter(p.candidate.id for b in workspace.blocks if not b.echo
                             for p in b.items)
        considered.update(e.id for e in workspace.exclusions)
        return considered, odd_recalled

    considered, odd_recalled = anyio.run(main)
    assert not odd_recalled  # so it can only have come from the escalated fetch
    assert considered[odd.id] == considered[swaps[1].id] == 1
    assert "no-such-episode" not in considered


def test_escalated_episodes_handed_in_need_no_store_read(tmp_path: Path,
                                                         embedder: Embedder) -> None:
    """Gamma hands Theta the episodes it escalated; one the store does not hold (so no read
    could have found it) still becomes a candidate, once."""
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "main", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL_DIR)}}))
    stored = [dataclasses.replace(make_episode(i), observed_at=NOW - 60 * i) for i in range(5)]
    handed = dataclasses.replace(
        make_episode(77, category="oracle", protocol="chainlink",
                     text="Chainlink answer for ETH/USD jumped 9% in one round"),
        observed_at=NOW - 10)

    async def main() -> Counter[str]:
        g = await Grimoire.open(load_config(path), now=lambda: NOW, embedder=embedder)
        try:
            await g.add_episodes(stored)
            assert await g.episodes_by_ids([handed.id]) == []  # not in the store
            assembly = await ContextGovernor(g, 8000).assemble(
                default_policy(), query="large swaps of WETH for USDC on uniswap_v3",
                live=[], escalated_ids=[handed.id], phase=Phase.STABLE,
                regime=MarketRegime.CALM, escalated_episodes={handed.id: handed})
        finally:
            await g.close()
        considered = Counter(p.candidate.id for b in assembly.workspace.blocks if not b.echo
                             for p in b.items)
        considered.update(e.id for e in assembly.workspace.exclusions)
        return considered

    assert anyio.run(main)[handed.id] == 1

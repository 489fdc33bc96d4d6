"""ContextGovernor.assemble over a real Grimoire (real model, stores in tmp_path)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import anyio
import pytest

from golem.config import Config, load_config
from golem.governor.categories import MarketRegime, Phase
from golem.governor.governor import ContextGovernor
from golem.governor.policy import default_policy
from golem.governor.workspace import CognitiveWorkspace
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import Episode

from ..conftest import config_text
from ..grimoire.conftest import MODEL_DIR
from ..grimoire.test_episodes import make_episode

NOW = 1_767_225_600.0


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, 32)


def golem_config(tmp_path: Path) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({"golem": {"name": "main", "data_dir": "data"},
                                 "grimoire": {"model_dir": str(MODEL_DIR)}}))
    return load_config(path)


def oracle_episode(i: int, text: str, observed_at: float) -> Episode:
    return dataclasses.replace(make_episode(i, category="oracle", protocol="chainlink",
                                            text=text), observed_at=observed_at)


def considered(workspace: CognitiveWorkspace) -> Counter[str]:
    """Every candidate the Governor considered: placed, or excluded with a reason."""
    ids = Counter(p.candidate.id for b in workspace.blocks if not b.echo for p in b.items)
    ids.update(e.id for e in workspace.exclusions)
    return ids


def test_escalated_episodes_reach_the_workspace_once_whether_recalled_or_not(
        tmp_path: Path, embedder: Embedder) -> None:
    """An escalated episode the recall found is marked, one it did not find is read
    from the store and becomes a candidate (placed or masked: the Governor decides);
    neither is considered twice, and an unknown id is skipped."""
    config = golem_config(tmp_path)
    swaps = [dataclasses.replace(make_episode(i), observed_at=NOW - 60 * i) for i in range(40)]
    odd = oracle_episode(99, "Chainlink heartbeat missed on the BTC/USD feed for 3 hours",
                         NOW - 30)

    async def main() -> tuple[Counter[str], bool]:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
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
        return considered(assembly.workspace), odd_recalled

    seen, odd_recalled = anyio.run(main)
    assert not odd_recalled  # so it can only have come from the escalated fetch
    assert seen[odd.id] == seen[swaps[1].id] == 1
    assert "no-such-episode" not in seen


def test_escalated_episodes_handed_in_need_no_store_read(tmp_path: Path,
                                                         embedder: Embedder) -> None:
    """Gamma hands Theta the episodes it escalated; one the store does not hold (so no read
    could have found it) still becomes a candidate, once."""
    config = golem_config(tmp_path)
    stored = [dataclasses.replace(make_episode(i), observed_at=NOW - 60 * i) for i in range(5)]
    handed = oracle_episode(77, "Chainlink answer for ETH/USD jumped 9% in one round",
                            NOW - 10)

    async def main() -> Counter[str]:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
        try:
            await g.add_episodes(stored)
            assert await g.episodes_by_ids([handed.id]) == []  # not in the store
            assembly = await ContextGovernor(g, 8000).assemble(
                default_policy(), query="large swaps of WETH for USDC on uniswap_v3",
                live=[], escalated_ids=[handed.id], phase=Phase.STABLE,
                regime=MarketRegime.CALM, escalated_episodes={handed.id: handed})
        finally:
            await g.close()
        return considered(assembly.workspace)

    assert anyio.run(main)[handed.id] == 1


def test_without_memory_only_live_state_and_escalations_are_considered(
        tmp_path: Path, embedder: Embedder) -> None:
    """recall=False (theta_context.memory off, the lab's no-memory arm): the same query that
    places recalled episodes with recall on places none, while an escalated episode (this
    tick's perception, not memory) still reaches the workspace."""
    config = golem_config(tmp_path)
    swaps = [dataclasses.replace(make_episode(i), observed_at=NOW - 60 * i) for i in range(20)]
    handed = oracle_episode(77, "Chainlink answer for ETH/USD jumped 9% in one round", NOW)

    async def main(recall: bool) -> Counter[str]:
        g = await Grimoire.open(config, now=lambda: NOW, embedder=embedder)
        try:
            if recall:
                await g.add_episodes(swaps)
            assembly = await ContextGovernor(g, 8000, recall=recall).assemble(
                default_policy(), query="large swaps of WETH for USDC on uniswap_v3",
                live=[], escalated_ids=[handed.id], phase=Phase.STABLE,
                regime=MarketRegime.CALM, escalated_episodes={handed.id: handed})
        finally:
            await g.close()
        return considered(assembly.workspace)

    with_memory = anyio.run(main, True)
    without = anyio.run(main, False)
    recalled = {s.id for s in swaps}
    assert recalled & set(with_memory)
    assert not recalled & set(without)
    assert without[handed.id] == 1

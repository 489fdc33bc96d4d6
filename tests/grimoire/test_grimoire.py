"""The Grimoire facade end to end: real model, real LanceDB and SQLite in temp dirs."""

from __future__ import annotations

import io
import math
import shutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import anyio
import numpy as np
import pytest
from structlog.testing import capture_logs

from golem.config import Config, load_config
from golem.events import EventBus
from golem.grimoire.compute import cpu, preferred
from golem.grimoire.decay import seeded_pick
from golem.grimoire.embedder import Embedder
from golem.grimoire.errors import InvalidMemory, NamespaceRefused, SignatureMismatch
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.migration import reembed_all
from golem.grimoire.recall import RecallFilters
from golem.grimoire.recall_engine import QUANTITY_CANDIDATES
from golem.grimoire.records import (
    EntryType,
    Episode,
    MemoryType,
    Pad,
    Provenance,
    SemanticEntry,
    Source,
    Status,
    episode_id,
)
from golem.logging import configure_logging

from ..conftest import config_text

T = TypeVar("T")
NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0


def write_config(tmp_path: Path, model_dir: Path, **grimoire: Any) -> Config:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"name": "golem-a", "data_dir": "data"},
        "grimoire": {"model_dir": str(model_dir), **grimoire},
    }))
    return load_config(path)


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn, backend_options={"use_uvloop": True})


class Clock:
    def __init__(self) -> None:
        self.t = NOW

    def __call__(self) -> float:
        return self.t


def with_grimoire(cfg: Config, embedder: Embedder, body: Callable[[Grimoire], Awaitable[T]],
                  now: Callable[[], float] = lambda: NOW) -> T:
    async def main() -> T:
        g = await Grimoire.open(cfg, now=now, embedder=embedder)
        try:
            return await body(g)
        finally:
            await g.close()

    return run(main)


def swap_episode(i: int, ns: str = "golem-a", pool: str = "ETH/USDC") -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(
        id=episode_id(31337, block_hash, 0), namespace=ns, chain_id=31337, block_number=100 + i,
        block_hash=block_hash, log_index=0, tx_hash=f"0x{i + 7:064x}", tick=i,
        observed_at=NOW - i * 60, category="swap", protocol="uniswap-v2",
        text=f"Swap on {pool} pool: 1{i} WETH sold for USDC by a whale, price impact 2.{i}%",
        payload={"amount0In": str(10**18 * i)}, curiosity=0.4,
    )


def test_remember_then_recall_with_breakdown_and_provenance(tmp_path: Path, model_dir: Path,
                                                            embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        stored = await g.remember("Never provide liquidity to pools with under $100k TVL: "
                                  "slippage eats the fees", type="constraint", importance=0.9)
        await g.remember("Gas on mainnet is cheapest on weekend mornings UTC", type="fact")
        await g.add_episodes([swap_episode(i) for i in range(5)])
        result = await g.recall("is it safe to LP in a thin, low-TVL pool?", k=3)
        assert not result.refused
        top = result.hits[0]
        assert top.id == stored.id
        assert top.uri == f"grimoire://golem-a/warning/{stored.id}"
        assert top.provenance.author == "golem-a"
        s = top.score
        assert 0 < s.semantic <= 1 and s.final > 0
        assert s.final == pytest.approx(s.base * s.provenance_weight * s.confidence)
        assert s.dense_rank == 1
        again = await g.get(stored.id)
        assert again is not None and again.access_count == 1  # recall records access

    with_grimoire(cfg, embedder, body)


def test_a_recent_important_irrelevant_entry_never_outranks_an_old_relevant_one(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        old = await g.remember("The WETH/USDC pool's oracle went stale during the crash and "
                               "liquidations cascaded", timestamp=NOW - 300 * 86400,
                               importance=0.2, decay_class="tactical")
        recent = [await g.remember(text, timestamp=NOW - 60, importance=1.0)
                  for text in ("Gas is cheapest on weekend mornings UTC",
                               "The owner prefers reports in the evening",
                               "Our wallet holds some USDC for fees")]
        result = await g.recall("what happened to the oracle in the crash?", k=4)
        assert not result.refused
        ranked = [h.id for h in result.hits]
        assert ranked[0] == old.id, [(h.text, h.score.as_dict()) for h in result.hits]
        top = result.hits[0].score
        assert top.relevance > max(h.score.relevance for h in result.hits[1:])
        assert {r.id for r in recent} & set(ranked[1:])
        # and with the default weights the recent ones are the fresher, more important ones
        assert top.temporal < min(h.score.temporal for h in result.hits[1:])

    with_grimoire(cfg, embedder, body)


def test_an_exact_identifier_outranks_a_semantically_close_neighbour(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    pool = "0x8ad599c3a0ff1de082011efddc58f1908eb6e6d8"

    async def body(g: Grimoire) -> None:
        exact = await g.remember(f"Pool {pool} drained its liquidity overnight",
                                 timestamp=NOW - 86400, importance=0.5)
        await g.remember("Pool 0x88e6a0c2ddd26feeb64f039a2c41296fcb3f5640 drained its "
                         "liquidity overnight", timestamp=NOW - 60, importance=0.5)
        result = await g.recall(f"what happened to {pool}?", k=2)
        assert not result.refused
        assert result.hits[0].id == exact.id
        assert result.hits[0].score.lexical == 1.0 and result.hits[1].score.lexical < 1.0

    with_grimoire(cfg, embedder, body)


def test_a_query_s_function_words_are_no_full_text_evidence(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    """Full-text search matches the query's topic: an entry sharing only "what", "did",
    "you" with the question gets no lexical evidence and does not outrank the answer."""
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        chatter = await g.remember("What did you do? What did you say? Did you?",
                                   timestamp=NOW - 60, importance=0.5)
        answer = await g.remember("Vanessa adopted a rescue dog named Max",
                                  timestamp=NOW - 30 * 86400, importance=0.5)
        result = await g.recall("What did you adopt, Vanessa?", k=2)
        assert not result.refused
        assert result.hits[0].id == answer.id and result.hits[0].score.lexical == 1.0
        noise = next(h for h in result.hits if h.id == chatter.id)
        assert noise.score.lexical == 0.0 and noise.score.lexical_rank is None

    with_grimoire(cfg, embedder, body)


async def two_oracle_updates(g: Grimoire) -> tuple[SemanticEntry, SemanticEntry]:
    """Two entries alike but for their numbers: one 20 days before NOW, one 12 hours."""
    older = await g.remember("The ETH oracle was updated after a 3% move",
                             timestamp=NOW - 20 * 86400, importance=0.5)
    newer = await g.remember("The ETH oracle was updated after a 4% move",
                             timestamp=NOW - 12 * 3600, importance=0.5)
    return older, newer


def test_a_time_expression_prefers_what_lies_in_its_window(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        # NOW is 2026-01-01T00:00Z: "yesterday" is 2025-12-31
        older, yesterday = await two_oracle_updates(g)
        plain = await g.recall("when was the ETH oracle updated?", k=2)
        assert {h.id for h in plain.hits} == {older.id, yesterday.id}
        assert all(h.score.time_window == 1.0 for h in plain.hits)
        dated = await g.recall("was the ETH oracle updated yesterday?", k=2)
        assert [h.id for h in dated.hits] == [yesterday.id, older.id]
        assert [h.score.time_window for h in dated.hits] == [1.0, 0.5]
        # a month ago: the older one lies in "last month" (December 2025), not yesterday's
        # entry (also December): both in; "in November" holds neither
        november = await g.recall("ETH oracle updates in November", k=2)
        assert all(h.score.time_window == 0.5 for h in november.hits)

    with_grimoire(cfg, embedder, body)


def test_time_words_that_name_no_window_are_ignored_and_logged_at_debug(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        older, newer = await two_oracle_updates(g)
        configure_logging("debug", "json", io.StringIO())  # the tests' default is warning
        for query in ("was the ETH oracle updated on 31 February?",
                      "was the ETH oracle updated sometime last spring?"):
            with capture_logs() as logs:
                result = await g.recall(query, k=2)
            assert not result.refused, query
            assert {h.id for h in result.hits} == {older.id, newer.id}
            assert all(h.score.time_window == 1.0 for h in result.hits), query  # no window
            ignored = [e for e in logs if e["event"].endswith("not read as a window; ignored")]
            assert [e["log_level"] for e in ignored] == ["debug"], query

    with_grimoire(cfg, embedder, body)


def test_a_query_of_only_function_words_or_punctuation_is_refused(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        await g.remember("What is it that we do here? We trade WETH", importance=0.5)
        for query in ("what is it that we do?", "?!...", "and the of"):
            result = await g.recall(query, k=3)
            assert result.refused and "no content words" in result.reason, query
        assert not (await g.recall("do we trade WETH?", k=3)).refused

    with_grimoire(cfg, embedder, body)


def test_a_why_question_follows_one_causal_link_back_and_says_so(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        effect = await g.remember("The USDC pool drained overnight", importance=0.5)
        cause = await g.remember("A deployer multisig signer key was leaked on a forum",
                                 importance=0.5)
        for text in ("The USDC pool had record volume", "The WETH pool drained slowly",
                     "USDC pool fees were raised"):
            await g.remember(text, importance=0.5)
        await g.link(cause.id, effect.id, lag_s=3600, confidence=0.8)
        plain = await g.recall("what happened to the USDC pool overnight?", k=3)
        assert cause.id not in {h.id for h in plain.hits}
        why = await g.recall("why did the USDC pool drain overnight?", k=3)
        by_id = {h.id: h for h in why.hits}
        assert [h.id for h in why.hits[:2]] == [effect.id, cause.id]
        assert by_id[cause.id].score.hop_from == effect.id
        assert by_id[cause.id].score.relevance >= by_id[effect.id].score.relevance * 0.8 - 1e-9
        assert all(h.score.hop_from is None for h in why.hits if h.id != cause.id)

    with_grimoire(cfg, embedder, body)


def test_same_event_twice_is_stored_once(tmp_path: Path, model_dir: Path,
                                         embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> int:
        await g.add_episodes([swap_episode(1), swap_episode(2)])
        await g.add_episodes([swap_episode(1)])
        return await g.episode_count()

    assert with_grimoire(cfg, embedder, body) == 2


def test_deferred_episodes_are_read_at_once_and_durable_after_a_flush(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def on_disk() -> int:
        """What another opener of the data dir (a restart after a crash) would find."""
        other = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder, owner=False)
        try:
            return await other.episode_count()
        finally:
            await other.close()

    async def body(g: Grimoire) -> None:
        assert await g.add_episodes([swap_episode(1), swap_episode(2)], defer=True) == 2
        assert await g.add_episodes([swap_episode(2), swap_episode(3)], defer=True) == 2
        assert await on_disk() == 0  # not written yet: a crash now loses them
        # a recall runs after the deferred write: the episodes are found
        result = await g.recall("Uniswap swap on the ETH/USDC pool", k=5)
        assert not result.refused and len(result.hits) >= 3
        assert await on_disk() == 3
        await g.add_episodes([swap_episode(4)], defer=True)
        assert await g.flush_episodes() == 1
        assert await g.flush_episodes() == 0
        assert await on_disk() == 4
        await g.add_episodes([swap_episode(5)], defer=True)  # close writes it

    with_grimoire(cfg, embedder, body)
    assert run(on_disk) == 5


def test_recall_refuses_when_nothing_is_close(tmp_path: Path, model_dir: Path,
                                              embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        await g.add_episodes([swap_episode(i) for i in range(3)])
        await g.remember("Aave liquidations cluster right after Chainlink price updates")
        result = await g.recall("a recipe for sourdough bread with rye flour")
        assert result.refused
        assert result.best_similarity is not None
        assert result.best_similarity < result.threshold
        assert "no truth" in result.reason or "below" in result.reason
        empty = await Grimoire.recall(g, "anything at all", filters=RecallFilters(kinds=()))
        assert empty.refused and empty.best_similarity is None

    with_grimoire(cfg, embedder, body)


def test_anti_knowledge_is_always_surfaced(tmp_path: Path, model_dir: Path,
                                           embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        for i in range(12):
            await g.remember(f"Token 0xDEAD had {i + 3} large buys in block range {i}",
                             importance=0.9)
        warning = await g.remember("Token 0xDEAD is a honeypot: every sell reverts",
                                   type="constraint", entry_type="anti_knowledge",
                                   importance=0.2)
        result = await g.recall("buy more token 0xDEAD", k=1)
        assert not result.refused
        assert warning.id in [h.id for h in result.anti_knowledge]
        refused = await g.recall("zzqx 0xDEAD", k=1)  # lexical match only
        assert warning.id in [h.id for h in refused.anti_knowledge]

    with_grimoire(cfg, embedder, body)


def test_namespaces_are_isolated_unless_granted(tmp_path: Path, model_dir: Path,
                                                embedder: Embedder) -> None:
    cfg_a = write_config(tmp_path, model_dir)
    cfg_b = write_config(tmp_path, model_dir, namespace="golem-b")
    with_grimoire(cfg_b, embedder, lambda g: g.remember(
        "Curve 3pool depegs recover within a day", type="fact"))

    async def reads_a(g: Grimoire) -> None:
        own = await g.recall("Curve 3pool depeg recovery")
        assert own.refused  # nothing of golem-b's leaks into golem-a's reads
        with pytest.raises(NamespaceRefused, match="no read grant"):
            await g.recall("Curve 3pool depeg recovery", namespace="golem-b")
        with pytest.raises(NamespaceRefused):
            await g.remember("x", namespace="golem-b")

    with_grimoire(cfg_a, embedder, reads_a)
    cfg_granted = write_config(tmp_path, model_dir, read_grants=["golem-b"])

    async def granted(g: Grimoire) -> None:
        result = await g.recall("Curve 3pool depeg recovery", namespace=["golem-a", "golem-b"])
        assert not result.refused and result.hits[0].namespace == "golem-b"

    with_grimoire(cfg_granted, embedder, granted)


def test_contradiction_of_an_anchored_entry_is_quarantined(tmp_path: Path, model_dir: Path,
                                                            embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        anchor = await g.remember("Sells of token 0xDEAD always revert", anchored=True,
                                  confidence=0.95, type="constraint")
        claim = await g.remember("Sells of token 0xDEAD never revert", type="fact")
        assert claim.status is Status.QUARANTINED
        assert (await g.get(anchor.id)).status is Status.ACTIVE  # type: ignore[union-attr]
        result = await g.recall("do sells of 0xDEAD revert?", k=5)
        assert claim.id not in [h.id for h in getattr(result, "hits", ())]

    with_grimoire(cfg, embedder, body)


def test_reinforcement_raises_confidence_and_decay_forgets_with_a_log(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    clock = Clock()

    async def body(g: Grimoire) -> None:
        kept = await g.remember("Uniswap v2 pools charge a 0.3% swap fee",
                                decay_class="structural", confidence=0.6)
        fading = await g.remember("Gas is 14 gwei right now", decay_class="ephemeral",
                                  confidence=0.6)
        honeypot = await g.remember("0xBAD is a honeypot", entry_type="anti_knowledge",
                                    decay_class="ephemeral", confidence=0.6)
        await g.reinforce(kept.id, useful=True)
        after = await g.get(kept.id)
        assert after.confidence == pytest.approx(0.65)  # type: ignore[union-attr]
        assert after.last_reinforced == NOW  # type: ignore[union-attr]
        clock.t = NOW + 10 * DAY
        report = await g.apply_decay()
        assert report.forgotten == 1
        gone = await g.get(fading.id)
        assert gone.status is Status.PRUNED  # type: ignore[union-attr]
        assert (await g.get(honeypot.id)).confidence == pytest.approx(0.3)  # type: ignore[union-attr]
        # structural: 0.65 x 0.5^(10/365) = 0.6378, barely faded
        assert (await g.get(kept.id)).confidence == pytest.approx(  # type: ignore[union-attr]
            0.65 * 0.5 ** (10 / 365))
        log = g._semantic.forget_log(10)
        assert [r.entry_id for r in log] == [fading.id] and "decay" in log[0].reason

    with_grimoire(cfg, embedder, body, now=clock)


def test_random_forgetting_forgets_as_many_as_decay_would_drawn_from_the_unanchored(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    """apply_decay(pick): decay still lowers confidences, but the one entry that faded out
    is replaced by what ``pick`` draws from every unanchored entry of the pass."""
    cfg = write_config(tmp_path, model_dir)
    clock = Clock()
    pools: list[list[str]] = []

    def pick(pool: Sequence[str], count: int) -> list[str]:
        pools.append(sorted(pool))
        return [kept_id] * count

    async def body(g: Grimoire) -> None:
        nonlocal kept_id
        kept = await g.remember("Uniswap v2 pools charge a 0.3% swap fee",
                                decay_class="structural", confidence=0.6)
        kept_id = kept.id
        fading = await g.remember("Gas is 14 gwei right now", decay_class="ephemeral",
                                  confidence=0.6)
        anchor = await g.remember("Never approve unlimited allowances", anchored=True)
        clock.t = NOW + 10 * DAY
        report = await g.apply_decay(pick)
        assert (report.forgotten, report.forgotten_ids) == (1, (kept.id,))
        assert pools == [sorted([kept.id, fading.id])]  # the anchored one is never drawn
        assert (await g.get(kept.id)).status is Status.PRUNED  # type: ignore[union-attr]
        survivor = await g.get(fading.id)
        assert survivor.status is Status.ACTIVE  # type: ignore[union-attr]
        assert survivor.confidence < 0.6  # type: ignore[union-attr]
        assert (await g.get(anchor.id)).status is Status.ACTIVE  # type: ignore[union-attr]
        assert "at random" in g._semantic.forget_log(1)[0].reason

    kept_id = ""
    with_grimoire(cfg, embedder, body, now=clock)


def test_seeded_pick_is_reproducible_and_never_draws_more_than_the_pool() -> None:
    pool = [f"e{i}" for i in range(50)]
    first = seeded_pick("decay-7-3")(pool, 5)
    assert first == seeded_pick("decay-7-3")(list(reversed(pool)), 5)
    assert len(set(first)) == 5 and set(first) <= set(pool)
    assert first != seeded_pick("decay-7-4")(pool, 5)
    assert sorted(seeded_pick("x")(pool[:3], 10)) == pool[:3]


def test_working_memory_note_is_recallable_at_once(tmp_path: Path, model_dir: Path,
                                                   embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        note = await g.note("Owner said: cap any single position at 10k USDC", importance=0.9)
        result = await g.recall("what is the position size limit?", k=3)
        assert not result.refused and result.hits[0].id == f"scratch-{note.id}"
        assert [n.id for n in await g.scratch_notes()] == [note.id]

    with_grimoire(cfg, embedder, body)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": ""}, "text: must not be empty"),
        ({"text": "   "}, "text: must not be empty"),
        ({"text": "x" * 9000}, "over the limit"),
        ({"text": "ok", "importance": math.nan}, "importance"),
        ({"text": "ok", "importance": 1.5}, "importance"),
        ({"text": "ok", "type": "rumour"}, "type: unknown value 'rumour'"),
        ({"text": "ok", "metadata": {"colour": "red"}}, "metadata: unknown keys"),
        ({"text": "ok", "timestamp": math.inf}, "timestamp"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(tmp_path: Path, model_dir: Path,
                                                     embedder: Embedder, kwargs: dict,
                                                     message: str) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        text = kwargs.pop("text")
        with pytest.raises(InvalidMemory, match=message):
            await g.remember(text, **kwargs)
        assert await g.entries() == []

    with_grimoire(cfg, embedder, body)


def test_model_signature_mismatch_refuses_and_reembed_migrates(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def seed(g: Grimoire) -> str:
        await g.add_episodes([swap_episode(i) for i in range(4)])
        return (await g.remember("Liquidations follow oracle updates within 3 blocks")).id

    entry_id = with_grimoire(cfg, embedder, seed)
    other = tmp_path / "other-model"
    shutil.copytree(model_dir, other)
    tokenizer_config = other / "tokenizer_config.json"
    tokenizer_config.write_text(tokenizer_config.read_text().replace('"model_max_length": 256',
                                                                     '"model_max_length": 128'))
    other_cfg = write_config(tmp_path, other, embed_compute="int8")  # the graph loaded here
    other_embedder = Embedder.load(other, 32)
    assert other_embedder.signature.id != embedder.signature.id

    async def open_other() -> None:
        await Grimoire.open(other_cfg, now=lambda: NOW, embedder=other_embedder)

    with pytest.raises(SignatureMismatch, match="golem memory reembed"):
        run(open_other)
    report = run(lambda: reembed_all(other_cfg))
    assert (report.episodes, report.entries) == (4, 1)

    async def after(g: Grimoire) -> None:
        assert g._episodes.signature.id == other_embedder.signature.id
        result = await g.recall("oracle updates and liquidations")
        assert not result.refused and result.hits[0].id == entry_id

    with_grimoire(other_cfg, other_embedder, after)
    again = run(lambda: reembed_all(other_cfg))
    assert again.episodes_already_current and again.entries_already_current


def test_auto_opens_a_store_with_the_graph_that_embedded_it(tmp_path: Path,
                                                           model_dir: Path) -> None:
    """Both graphs of the model directory, each making a store: ``auto`` reopens it with
    the graph its vectors came from on any CPU; the other graph, set explicitly, is
    refused; a new store gets this CPU's choice."""
    def in_memory(home: Path, body: Callable[[Grimoire], Awaitable[T]], **grimoire: Any) -> T:
        cfg = write_config(home, model_dir, **grimoire)

        async def main() -> T:
            g = await Grimoire.open(cfg, now=lambda: NOW)
            try:
                return await body(g)
            finally:
                await g.close()

        return run(main)

    async def write(g: Grimoire) -> tuple[str, str]:
        await g.add_episodes([swap_episode(i) for i in range(3)])
        return g.embedder.compute, (await g.remember("Liquidations follow oracle "
                                                      "updates within 3 blocks")).id

    async def read(g: Grimoire) -> tuple[str, str | None]:
        result = await g.recall("oracle updates and liquidations")
        return g.embedder.compute, None if result.refused else result.hits[0].id

    async def which(g: Grimoire) -> str:
        return g.embedder.compute

    for made, other in (("int8", "float"), ("float", "int8")):
        home = tmp_path / made
        home.mkdir()
        compute, entry_id = in_memory(home, write, embed_compute=made)
        assert compute == made
        assert in_memory(home, read) == (made, entry_id)  # auto
        with pytest.raises(SignatureMismatch, match="embed_compute"):
            in_memory(home, which, embed_compute=other)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert in_memory(fresh, which) == preferred(cpu())


def test_inherited_knowledge_ranks_below_self_learned(tmp_path: Path, model_dir: Path,
                                                      embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        own = await g.remember("Rebalance the ETH/USDC range when price leaves the band",
                               confidence=0.6)
        inherited = await g.remember(
            "Rebalance the ETH/USDC range whenever price leaves the band",
            confidence=0.6, provenance=Provenance(source=Source.SUCCESSOR, generation=2,
                                                  author="golem-a"))
        result = await g.recall("when to rebalance the ETH/USDC range", k=2)
        assert not result.refused
        by_id = {h.id: h for h in result.hits}
        assert by_id[own.id].score.provenance_weight == 1.0
        assert by_id[inherited.id].score.provenance_weight == pytest.approx(0.4 * 0.85**2)
        assert result.hits[0].id == own.id

    with_grimoire(cfg, embedder, body)


def test_filters_by_kind_type_and_pad(tmp_path: Path, model_dir: Path,
                                      embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        await g.add_episodes([swap_episode(i) for i in range(3)])
        await g.remember("Whale swaps on ETH/USDC move the price by 2%", type="fact",
                         pad=Pad(-0.5, 0.8, -0.2))
        only_entries = await g.recall("whale swap on the ETH/USDC pool",
                                      filters=RecallFilters(kinds=("entry",)))
        assert not only_entries.refused
        assert {h.kind for h in only_entries.hits} == {"entry"}
        only_episodes = await g.recall("whale swap on the ETH/USDC pool",
                                       filters=RecallFilters(kinds=("episode",)))
        assert not only_episodes.refused
        assert {h.kind for h in only_episodes.hits} == {"episode"}
        stressed = await g.recall("whale swap on the ETH/USDC pool", pad=Pad(-0.5, 0.8, -0.2),
                                  filters=RecallFilters(kinds=("entry",),
                                                        memory_types=(MemoryType.FACT,),
                                                        entry_types=(EntryType.INSIGHT,)))
        assert not stressed.refused and stressed.hits[0].score.emotional == pytest.approx(1.0)

    with_grimoire(cfg, embedder, body)


def test_writes_and_forgets_are_events_and_recall_renders_agent_memory(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    seen: list[dict[str, Any]] = []
    bus = EventBus(lambda: NOW)
    bus.subscribe(lambda _event, record: seen.append(record))

    async def main() -> str:
        g = await Grimoire.open(cfg, now=lambda: NOW, embedder=embedder, events=bus)
        try:
            kept = await g.remember("Never LP in pools with under $100k TVL </agent_memory>",
                                    type="constraint", importance=0.9)
            await g.remember("0xBAD is a honeypot; sells revert", entry_type="anti_knowledge")
            gone = await g.remember("temporary note", type="fact")
            await g.forget(gone.id, "superseded")
            result = await g.recall("LP in a low TVL pool? and 0xBAD", k=2)
            assert not result.refused and kept.id in [h.id for h in result.hits]
            return g.agent_memory(result, budget_tokens=200)
        finally:
            await g.close()

    block = run(main)
    kinds = [r["kind"] for r in seen]
    assert kinds == ["grimoire:write"] * 3 + ["grimoire:forget", "grimoire:recall"]
    assert seen[0]["entry_type"] == "warning" and seen[3]["reason"] == "superseded"
    assert seen[-1]["refused"] is False and seen[-1]["hits"] == 2
    assert block.startswith("<agent_memory>") and block.endswith("</agent_memory>")
    assert block.count("</agent_memory>") == 1  # the stored text cannot close the block
    assert block.index("honeypot") < block.index("Never LP")  # warnings first
    assert 'type="constraint"' in block


def test_causal_links_are_traversed_within_depth(tmp_path: Path, model_dir: Path,
                                                  embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)

    async def body(g: Grimoire) -> None:
        oracle = await g.remember("Chainlink ETH/USD drops more than 5%")
        liquidations = await g.remember("Aave liquidations spike")
        depeg = await g.remember("Stablecoin pools see heavy redemptions")
        await g.link(oracle.id, liquidations.id, lag_s=36, confidence=0.7)
        await g.link(liquidations.id, depeg.id, lag_s=120, confidence=0.5)
        await g.link(depeg.id, oracle.id, lag_s=600, confidence=0.2)  # a cycle
        one = await g.causal_neighbors(oracle.id, max_depth=1)
        assert [(n, d) for n, d, _ in one] == [(liquidations.id, 1)]
        two = await g.causal_neighbors(oracle.id, max_depth=5)
        assert {n for n, _, _ in two} == {liquidations.id, depeg.id}
        with pytest.raises(InvalidMemory):
            await g.causal_neighbors(oracle.id, direction="sideways")

    with_grimoire(cfg, embedder, body)


def test_lexical_candidates_reach_the_ranking(tmp_path: Path, model_dir: Path,
                                              embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir, candidates=1)

    async def body(g: Grimoire) -> None:
        episodes = [swap_episode(i) for i in range(6)]
        target = replace(episodes[3], text=episodes[3].text + " router zqxjvault")
        await g.add_episodes([*episodes[:3], target, *episodes[4:]])
        result = await g.recall("whale swap zqxjvault", k=3,
                                filters=RecallFilters(kinds=("episode",)))
        assert not result.refused
        hit = next(h for h in result.hits if h.id == target.id)
        assert hit.score.lexical_rank == 1  # the only row with the rare word
        assert hit.similarity > 0  # its cosine was filled in for scoring

    with_grimoire(cfg, embedder, body)


def chain_episode(i: int, text: str, *, category: str, event: str, address: str,
                  at: float) -> Episode:
    block_hash = f"0x{i + 5000:064x}"
    return Episode(
        id=episode_id(31337, block_hash, 0), namespace="golem-a", chain_id=31337,
        block_number=1000 + i, block_hash=block_hash, log_index=0, tx_hash=f"0x{i + 9:064x}",
        tick=i, observed_at=at, category=category, protocol="sim", text=text,
        payload={"event": event, "address": address}, curiosity=0.3,
    )


def test_an_order_and_a_threshold_rank_by_the_numbers_the_records_state(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    moves = ["up 0.4%", "down 2.6%", "down 0.3%", "down 4.1%", "up 1.2%", "down 0.8%",
             "down 2.2%", "unchanged", "up 0.2%", "down 0.5%"]
    feeds = [chain_episode(i, f"Answer {move} from the previous one. Chainlink price update on "
                              f"the ETH/USD price feed: 2,{100 + i}", category="oracle",
                           event="AnswerUpdated", address="0xfeed", at=NOW - 3600 + 60 * i)
             for i, move in enumerate(moves)]
    # market moves that fall far, on records of another kind: not what the feed did
    swaps = [chain_episode(20 + i, f"Market falling: price -{5 + i}% over 10 min. Uniswap V2 "
                                   f"swap on the WETH/USDC pool: {size} WETH sold for "
                                   f"{size * 2000:,} USDC by trader ab1{i}",
                           category="swap", event="Swap", address="0xpool",
                           at=NOW - 1800 + 60 * i)
             for i, size in enumerate((0.5, 12, 3, 0.25))]

    async def body(g: Grimoire) -> None:
        await g.add_episodes([*feeds, *swaps])
        result = await g.recall("When did the ETH price feed last fall more than 2%?", k=5)
        assert not result.refused
        top = result.hits[:3]
        assert [h.id for h in top] == [feeds[6].id, feeds[3].id, feeds[1].id], [
            h.text for h in result.hits]
        assert [h.score.quantity for h in top] == [-2.2, -4.1, -2.6]
        assert all(h.score.ranked_by == "last; more than 2%" for h in top)
        assert result.hits[3].score.ranked_by is None
        biggest = await g.recall("the biggest WETH sold in the WETH/USDC pool", k=4)
        assert not biggest.refused
        assert [h.score.quantity for h in biggest.hits] == [12, 3, 0.5, 0.25]
        assert biggest.hits[0].id == swaps[1].id

    with_grimoire(cfg, embedder, body)


def test_an_order_compares_the_events_not_a_lesson_that_quotes_them(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    moves = ["up 0.3%", "down 1.4%", "up 0.6%", "down 0.1%", "up 0.2%"]
    feeds = [chain_episode(i, f"Answer {move} from the previous one; market falling: price "
                              f"-2.{i}% over 10 min. Chainlink price update on the ETH/USD "
                              f"price feed: 1,{600 + i}", category="oracle",
                           event="AnswerUpdated", address="0xfeed", at=NOW - 3600 + 60 * i)
             for i, move in enumerate(moves)]

    async def body(g: Grimoire) -> None:
        await g.add_episodes(feeds)
        # what consolidation learns from such answers restates their words
        await g.remember("After ETH oracle feed 0xfeed dropped by over 1% in 10 min in a "
                         "falling market, the next answer dropped too", timestamp=NOW - 60)
        result = await g.recall("When did the ETH oracle last drop by over 1%?", k=5)
        assert not result.refused
        assert result.hits[0].id == feeds[1].id, [h.text for h in result.hits]
        assert result.hits[0].score.quantity == -1.4

    with_grimoire(cfg, embedder, body)


def test_the_last_event_past_a_threshold_is_found_beyond_the_nearest_ones(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    """A month of a feed's answers is more than the 400 nearest the query; "the last"
    must still compare the newest. Here the newest fall's vector is far from the query,
    so only the newest-first read can bring it."""
    cfg = write_config(tmp_path, model_dir)
    n = QUANTITY_CANDIDATES + 60
    texts = [f"Answer up 0.1% from the previous one. Chainlink price update on the ETH/USD "
             f"price feed: 2,{100 + i % 800}" for i in range(n)]
    texts[5] = texts[5].replace("up 0.1%", "down 1.5%")  # an old fall
    texts[n - 3] = texts[n - 3].replace("up 0.1%", "down 1.2%")  # the last fall
    feeds = [chain_episode(i, text, category="oracle", event="AnswerUpdated",
                           address="0xfeed", at=NOW - 60 * (n - i)) for i, text in enumerate(texts)]
    near, far = embedder.embed_shapes([texts[0], "a quiet walk along the river at dawn"])
    vectors = np.tile(near, (n, 1))
    vectors[n - 3] = far

    async def body(g: Grimoire) -> None:
        await g.add_episodes(feeds, vectors=vectors)
        result = await g.recall("When did the ETH price feed last fall more than 1%?", k=3)
        assert not result.refused
        assert result.hits[0].id == feeds[n - 3].id, [h.text for h in result.hits]
        assert result.hits[0].score.quantity == -1.2
        assert result.hits[1].id == feeds[5].id

    with_grimoire(cfg, embedder, body)


def test_an_event_anchor_prefers_what_lies_after_the_event(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    liquidations = [chain_episode(i, "Aave V3 liquidation on the lending pool: borrower 7919 "
                                     "liquidated by liquidator 37da", category="liquidation",
                                  event="LiquidationCall", address="0xaave",
                                  at=NOW - 3000 + 1000 * i) for i in range(2)]
    swaps = [chain_episode(10 + i, f"Uniswap V2 swap on the WETH/USDC pool: {i + 1} WETH sold "
                                   f"for {2000 * (i + 1):,} USDC by trader ab1{i}",
                           category="swap", event="Swap", address="0xpool",
                           at=NOW - 3500 + 600 * i) for i in range(6)]

    async def body(g: Grimoire) -> None:
        await g.add_episodes([*liquidations, *swaps])
        last = liquidations[1].observed_at
        result = await g.recall("swaps on the WETH/USDC pool after the last liquidation", k=6)
        assert not result.refused and result.query == "swaps on the WETH/USDC pool"
        after = {s.id for s in swaps if s.observed_at >= last}
        assert len(after) == 3
        assert {h.id for h in result.hits[:3]} == after
        assert [h.score.time_window for h in result.hits] == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5]
        first = await g.recall("swaps on the WETH/USDC pool before the first liquidation", k=6)
        assert not first.refused
        before = [s.id for s in swaps if s.observed_at < liquidations[0].observed_at]
        assert [h.id for h in first.hits[:1]] == before
        assert [h.score.time_window for h in first.hits] == [1.0, 0.5, 0.5, 0.5, 0.5, 0.5]
        # an anchor nothing in memory matches is ignored
        plain = await g.recall("swaps on the WETH/USDC pool after the governance vote", k=6)
        assert not plain.refused
        assert plain.query == "swaps on the WETH/USDC pool after the governance vote"
        assert all(h.score.time_window == 1.0 for h in plain.hits)

    with_grimoire(cfg, embedder, body)


def test_episodes_differing_in_amounts_share_a_vector_but_recall_tells_them_apart(
        tmp_path: Path, model_dir: Path, embedder: Embedder) -> None:
    cfg = write_config(tmp_path, model_dir)
    episodes = [replace(swap_episode(i), text=f"Uniswap V2 swap on the WETH/USDC pool: "
                        f"{amount} WETH sold for USDC by trader 1eff")
                for i, amount in enumerate(("0.25", "17.5", "3,400"))]

    async def body(g: Grimoire) -> None:
        await g.add_episodes(episodes)
        vectors = await g.episode_vectors([e.id for e in episodes])
        first = vectors[episodes[0].id]
        assert all(np.array_equal(first, v) for v in vectors.values())  # one shape, one vector
        assert len(vectors) == 3
        result = await g.recall("the swap that sold 3,400 WETH", k=3)
        assert not result.refused
        assert result.hits[0].id == episodes[2].id, [h.text for h in result.hits]

    with_grimoire(cfg, embedder, body)

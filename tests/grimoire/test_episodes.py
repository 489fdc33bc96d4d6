"""The episodic store on a real LanceDB in tmp_path, with the real model where text matters."""

from __future__ import annotations

import dataclasses
import json
import re
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, ClassVar

import lance
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from golem.grimoire import episodes_layout as layout
from golem.grimoire.embedder import Embedder
from golem.grimoire.episodes import (
    MAX_VECTOR_SEGMENTS,
    VECTOR_FOLD_ROWS,
    EpisodeStore,
    RowMeasures,
    first_partitions,
)
from golem.grimoire.episodes_fold import MAX_SMALL_FRAGMENTS, MAX_TEXT_SEGMENTS, TEXT_BASE_SHARE
from golem.grimoire.episodes_schema import MAX_IDENTIFIER_CHARS
from golem.grimoire.errors import (
    GrimoireError,
    InvalidMemory,
    SignatureMismatch,
    StoreCorrupt,
)
from golem.grimoire.quantities import first_move
from golem.grimoire.records import Episode, EpisodeFacts, Pad, Provenance, Source, episode_id
from golem.grimoire.signature import ModelSignature

from .test_embedder import MODEL_DIR

REPO = Path(__file__).resolve().parents[2]
NASTY = ["x' OR '1'='1", "q\\' OR namespace <> '", "back\\\\slash'", 'd"q', "tab\tnew\nline",
         "bidi\u202eevil", "%", "_"]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder.load(MODEL_DIR, batch_size=32)


@pytest.fixture(scope="module")
def sig(embedder: Embedder) -> ModelSignature:
    return embedder.signature


def other_signature(sig: ModelSignature) -> ModelSignature:
    return dataclasses.replace(sig, model="some-other-model", version="1" * 64)


def make_episode(i: int, *, namespace: str = "main", text: str | None = None,
                 observed_at: float | None = None, protocol: str | None = "uniswap_v3",
                 category: str = "swap") -> Episode:
    block_hash = f"0x{i:064x}"
    return Episode(
        id=episode_id(1, block_hash, i % 7), namespace=namespace, chain_id=1,
        block_number=19_000_000 + i, block_hash=block_hash, log_index=i % 7,
        tx_hash=f"0x{i + 7:064x}", tick=i, observed_at=1_700_000_000.0 + 10 * i
        if observed_at is None else observed_at, category=category, protocol=protocol,
        text=text or f"Swap {i} WETH for {3000 * i} USDC on {protocol} ({category})",
        payload={"amount_in": str(i * 10**18), "path": ["WETH", "USDC"], "fee": 500},
        curiosity=0.25, importance=None if i % 2 else 0.5, pad=Pad(0.1, -0.2, 0.3),
        provenance=Provenance(source=Source.SELF, author=namespace, process="gamma"))


def unit(rng: np.random.Generator, n: int, dim: int = 384) -> np.ndarray:
    v = rng.standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def open_store(path: Path, sig: ModelSignature, **kw: object) -> EpisodeStore:
    return EpisodeStore.open(path, sig, index_min_rows=int(kw.pop("index_min_rows", 10_000)),
                             **kw)  # type: ignore[arg-type]


def test_round_trip_keeps_every_field(tmp_path: Path, sig: ModelSignature,
                                      embedder: Embedder) -> None:
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(4)]
    assert store.upsert(episodes, embedder.embed([e.text for e in episodes])) == 4
    assert store.get([episodes[2].id, "missing", episodes[0].id]) == [episodes[2], episodes[0]]
    assert sorted(e.id for batch in store.iter_all(3) for e in batch) == sorted(
        e.id for e in episodes)


def test_folds_merge_new_rows_into_the_index_without_new_segments(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Gamma appends in small batches; maintenance folds them once the text index lacks
    more than FTS_REFRESH_ROWS, and merges them into the newest vector index segment once
    VECTOR_FOLD_ROWS wait, so the index stays one segment and is not retrained for its
    segments (lancedb's own optimize added one segment a fold). Until then a dense search
    compares them exactly; an explicit optimize() folds them all."""
    rng = np.random.default_rng(23)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    centres = unit(rng, 8)
    # trained on enough rows that the ~3,000 written after call for no retraining
    store.upsert([make_episode(i) for i in range(16_000)], clustered(rng, 16_000, centres))
    assert store.maybe_build_index() is True
    written, waiting = 16_000, []
    for _ in range(3):
        for size in (200, 200, 200, 200, 201):  # small appends, like Gamma's commits
            store.upsert([make_episode(i) for i in range(written, written + size)],
                         clustered(rng, size, centres))
            written += size
        assert store.maybe_build_index() is True
        assert layout.vector_segments(store._table) == 1
        assert store._table.index_stats(layout.TEXT_INDEX).num_unindexed_rows == 0
        waiting.append(store._table.index_stats(layout.VECTOR_INDEX).num_unindexed_rows)
        fresh = store.vectors([make_episode(written - 3).id])
        (vector,) = fresh.values()
        assert [e.id for e, _ in store.search_vector(vector, 1, ["main"])] == list(fresh)
    assert waiting == [1001, 2002, 0]  # merged once VECTOR_FOLD_ROWS waited
    assert 2002 < VECTOR_FOLD_ROWS <= 3003
    store.upsert([make_episode(i) for i in range(written, written + 50)],
                 clustered(rng, 50, centres))
    report = store.optimize()
    assert store._table.index_stats(layout.VECTOR_INDEX).num_unindexed_rows == 0
    assert report["after"]["vector_index_segments"] == 1
    assert report["after"]["rows"] == written + 50


def test_a_fold_rewrites_no_folded_fragment_until_small_ones_pile_up(
        tmp_path: Path, sig: ModelSignature) -> None:
    """A fold compacts only the fragments written since the last one and leaves deleted
    rows where they are (rewriting folded fragments and remapping the indexes for them
    was half of a fold at the 30-day run's cap); past MAX_SMALL_FRAGMENTS small folded
    fragments, one fold compacts them all and drops the deleted rows."""
    rng = np.random.default_rng(24)
    path = tmp_path / "ep"
    store = open_store(path, sig, index_min_rows=300)
    centres = unit(rng, 8)
    episodes = [make_episode(i) for i in range(2000)]
    store.upsert(episodes, clustered(rng, 2000, centres))
    assert store.maybe_build_index() is True
    store.optimize()

    def fragments() -> dict[int, tuple[int, int]]:
        """fragment id -> (rows in its files, rows live)"""
        dataset = lance.dataset(str(next(path.glob("episodes-*.lance"))))
        return {f.fragment_id: (f.metadata.physical_rows, f.count_rows())
                for f in dataset.get_fragments()}

    folded = fragments()
    assert store.delete([e.id for e in episodes[:400]]) == 400  # a fifth of them
    written = 2000
    text_segments = 1
    for fold in range(MAX_SMALL_FRAGMENTS):
        for _ in range(5):  # small appends, like Gamma's ticks
            store.upsert([make_episode(i, text=f"Swap {i} sealed by seal{fold}x")
                          for i in range(written, written + 20)],
                         clustered(rng, 20, centres))
            written += 20
        after = store.optimize()["after"]
        # the new rows are a text index segment of their own until there are enough
        text_segments = 1 if text_segments >= MAX_TEXT_SEGMENTS else text_segments + 1
        assert (after["vector_index_segments"], after["text_index_segments"]) == (
            1, text_segments)
        assert len(store.search_text(f"seal{fold}x", 200, ["main"])) == 100
        now = fragments()
        assert set(folded) <= set(now)  # not rewritten, its deleted rows still in it
        assert len(now) == len(folded) + fold + 1  # the fold's rows: one new fragment
    store.upsert([make_episode(written)], clustered(rng, 1, centres))
    store.optimize()
    after = fragments()
    assert not set(folded) & set(after) and len(after) <= 2  # compacted, the new row aside
    assert all(physical == live for physical, live in after.values())  # deleted rows gone
    assert sum(live for _, live in after.values()) == store.count() == written + 1 - 400


def test_a_fold_merges_the_newer_text_segments_and_the_oldest_only_past_its_share(
        tmp_path: Path, sig: ModelSignature) -> None:
    """With MAX_TEXT_SEGMENTS segments a fold merges the newer ones into one and leaves the
    oldest (the whole text index) as it is, until the newer ones hold TEXT_BASE_SHARE of
    its rows; then all become one. Every row stays findable by its words."""
    rng = np.random.default_rng(25)
    path = tmp_path / "ep"
    store = open_store(path, sig, index_min_rows=10**6)
    store.upsert([make_episode(i) for i in range(4000)], unit(rng, 4000))
    store.optimize()

    def text_segments() -> list[str]:
        dataset = lance.dataset(str(next(path.glob("episodes-*.lance"))))
        index = next(i for i in dataset.describe_indices() if i.name == layout.TEXT_INDEX)
        return [segment.uuid for segment in index.segments]

    # the table's empty first segment and the 4,000 rows' as one, as after a full merge
    lance.dataset(str(next(path.glob("episodes-*.lance")))).optimize.optimize_indices(
        num_indices_to_merge=len(text_segments()), index_names=[layout.TEXT_INDEX])
    store.reconnect()
    (base,) = text_segments()
    written, counts = 4000, []
    while len(counts) < 40:
        store.upsert([make_episode(i, text=f"Swap {i} sealed by seal{written}x")
                      for i in range(written, written + 60)], unit(rng, 60))
        written += 60
        store.optimize()
        segments = text_segments()
        counts.append(len(segments))
        assert len(store.search_text(f"seal{written - 60}x", 100, ["main"])) == 60
        if len(segments) == 1:
            break
        assert segments[0] == base  # the oldest segment is not rewritten
    # 1 + 7 new segments, then the newer merged into one (420 rows, 10% of the base's),
    # ... until the newer ones hold a quarter of the base's 4,000 rows: all into one
    assert counts[:8] == [2, 3, 4, 5, 6, 7, 8, 2]
    assert counts[-1] == 1 and (written - 4000) >= TEXT_BASE_SHARE * 4000
    assert (written - 4000 - 60) < TEXT_BASE_SHARE * 4000 + 7 * 60
    assert store.search_text("seal4000x", 100, ["main"])


def test_replays_are_counted_beside_the_table_not_in_its_rows(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Consolidation bumps ~1,900 replay counts a tick: no episode row is rewritten (the
    vector index keeps one segment), and the counts survive a reopen."""
    rng = np.random.default_rng(22)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    episodes = [make_episode(i) for i in range(400)]
    store.upsert(episodes, clustered(rng, len(episodes), unit(rng, 8)))
    assert store.maybe_build_index() is True
    before = store.optimize()["after"]
    ids = [e.id for e in episodes]
    for _ in range(3):
        assert store.increment_replay([*ids[:300], "missing"]) == 300
    after = store.optimize()["after"]
    assert after["vector_index_segments"] == before["vector_index_segments"] == 1
    assert after["rows"] == before["rows"] == 400
    assert store.maybe_build_index() is False
    reopened = open_store(tmp_path / "ep", sig, index_min_rows=300)
    counts = {e.id: e.replay_count for batch in reopened.iter_all() for e in batch}
    assert counts == {i: 3 if n < 300 else 0 for n, i in enumerate(ids)}
    hit = reopened.search_vector_hits(store.vectors([ids[5]])[ids[5]], 1, ["main"])[0]
    assert hit.id == ids[5] and hit.episode().replay_count == 3
    assert reopened.delete([ids[5]]) == 1
    reopened.upsert([dataclasses.replace(episodes[5], replay_count=0)],
                 clustered(rng, 1, unit(rng, 8)))  # the same event, captured again
    assert reopened.get([ids[5]])[0].replay_count == 0  # its old count went with it


def test_a_store_from_before_replays_db_keeps_its_counts(tmp_path: Path,
                                                         sig: ModelSignature) -> None:
    """Stores written before replays.db kept counts in the rows' replay_count column: the
    first open copies them."""
    import lancedb  # noqa: PLC0415 - writes the old layout's column directly

    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(5)]
    store.upsert(episodes, unit(np.random.default_rng(23), 5))
    table_name = json.loads((tmp_path / "ep" / "store.json").read_text())["table"]
    lancedb.connect(str(tmp_path / "ep")).open_table(table_name).update(
        where=f"id = '{episodes[1].id}'", values={"replay_count": 4})
    (tmp_path / "ep" / "replays.db").unlink()
    reopened = open_store(tmp_path / "ep", sig)
    assert [e.replay_count for e in reopened.get([e.id for e in episodes])] == [0, 4, 0, 0, 0]
    assert reopened.increment_replay([episodes[1].id]) == 1
    assert reopened.get([episodes[1].id])[0].replay_count == 5


def test_the_same_episode_written_twice_is_stored_once(tmp_path: Path, sig: ModelSignature,
                                                       embedder: Embedder) -> None:
    store = open_store(tmp_path / "ep", sig)
    ep = make_episode(1)
    vec = embedder.embed([ep.text])
    store.upsert([ep, ep], np.vstack([vec, vec]))  # twice in one call
    store.upsert([ep], vec)  # and again in a second call
    assert store.count() == 1
    store.update([ep.id], replay_count=3, quality_verified=True)
    recaptured = dataclasses.replace(ep, text="Swap 1 WETH, re-rendered")
    store.upsert([recaptured], embedder.embed([recaptured.text]))
    # re-capturing keeps the stored record and what consolidation learned about it
    assert store.count() == 1
    assert store.get([ep.id]) == [dataclasses.replace(ep, replay_count=3,
                                                      quality_verified=True)]
    # a batch of stored and new ids appends only the new ones
    others = [make_episode(i) for i in (2, 3)]
    assert store.upsert([recaptured, *others], embedder.embed(
        [recaptured.text, *(o.text for o in others)])) == 3
    assert store.count() == 3
    assert store.get([ep.id, *(o.id for o in others)]) == [
        dataclasses.replace(ep, replay_count=3, quality_verified=True), *others]


def test_ids_written_since_a_fold_are_known_stored_through_every_kind_of_write(
        tmp_path: Path, sig: ModelSignature) -> None:
    """After a fold indexed every row, the store knows the ids the id B-tree does not hold
    (the rows written since), instead of scanning those rows at every write. Every write
    keeps that knowledge true: a re-captured episode is stored once, whether it is new,
    rewritten by an update, or came back after a delete, a reorg's removal or
    retention's forgetting (then it is stored again)."""
    rng = np.random.default_rng(11)
    path = tmp_path / "ep"
    store = open_store(path, sig, index_min_rows=300)
    centres = unit(rng, 4)
    store.upsert([make_episode(i) for i in range(400)], clustered(rng, 400, centres))
    store.optimize()  # every row in the id B-tree
    assert store._unindexed_ids == set()  # the path this test is about
    tail = [make_episode(i) for i in range(400, 460)]
    for start in range(0, 60, 20):  # three small fragments, as Theta's flushes write them
        store.upsert(tail[start:start + 20], clustered(rng, 20, centres))
    everything = [make_episode(i) for i in range(460)]

    def recapture() -> int:
        store.upsert(everything, clustered(rng, len(everything), centres))
        return store.count()

    assert recapture() == 460
    # an update rewrites rows where the B-tree does not reach them: old rows and new
    assert store.update([e.id for e in (*everything[:5], *tail[:5])],
                        quality_verified=True) == 10
    assert recapture() == 460
    assert all(e.quality_verified for e in store.get([e.id for e in everything[:5]]))
    # a delete, a reorg's removal and retention's forgetting: stored again when captured
    assert store.delete([tail[10].id, everything[10].id]) == 2
    assert store.count() == 458
    assert recapture() == 460
    reorged = store.delete_chain_above(1, 19_000_000 + 449)
    assert sorted(reorged) == sorted(e.id for e in everything[450:])
    assert recapture() == 460
    assert store.delete_owned([tail[20].id, everything[20].id], "main") == [
        tail[20].id, everything[20].id]
    assert recapture() == 460
    # a fold indexes the rows again, and the store starts knowing from there
    store.optimize()
    assert store._unindexed_ids == set()
    assert recapture() == 460
    reopened = open_store(path, sig, index_min_rows=300)
    assert reopened.upsert(everything, clustered(rng, 460, centres)) == 460
    assert reopened.count() == 460


def test_prefilters_exclude_what_they_should(tmp_path: Path, sig: ModelSignature,
                                             embedder: Embedder) -> None:
    store = open_store(tmp_path / "ep", sig)
    episodes = [
        make_episode(0),
        make_episode(1, namespace="other"),
        make_episode(2, observed_at=100.0),
        make_episode(3, protocol="aave_v3", category="liquidation"),
        make_episode(4, protocol=None, category="gas"),
    ]
    store.upsert(episodes, embedder.embed([e.text for e in episodes]))
    query = embedder.embed(["Swap WETH for USDC"])[0]

    def ids(**kw: object) -> set[int]:
        dense = store.search_vector(query, 10, **kw)  # type: ignore[arg-type]
        lexical = store.search_text("swap weth usdc", 10, **kw)  # type: ignore[arg-type]
        assert {e.tick for e, _ in lexical} <= {e.tick for e, _ in dense}
        return {e.tick for e, _ in dense}

    assert ids(namespaces=["main"]) == {0, 2, 3, 4}
    assert ids(namespaces=["main", "other"]) == {0, 1, 2, 3, 4}
    assert ids(namespaces=[]) == set()
    assert ids(namespaces=["nobody"]) == set()
    assert ids(namespaces=["main"], since=1_000.0) == {0, 3, 4}
    assert ids(namespaces=["main"], until=1_000.0) == {2}
    assert ids(namespaces=["main"], since=100.0, until=100.0) == {2}
    assert ids(namespaces=["main"], protocol="aave_v3") == {3}
    assert ids(namespaces=["main"], category="gas") == {4}
    assert ids(namespaces=["main"], protocol="uniswap_v3", category="swap") == {0, 2}
    best, similarity = store.search_vector(query, 1, ["main"])[0]
    assert best.tick in {0, 2} and 0.5 < similarity <= 1.0


def test_hostile_namespace_strings_neither_break_nor_widen_the_filter(
        tmp_path: Path, sig: ModelSignature) -> None:
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i, namespace=ns, text=f"swap event for {i}")
                for i, ns in enumerate(["main", *NASTY])]
    store.upsert(episodes, unit(np.random.default_rng(0), len(episodes)))
    query = unit(np.random.default_rng(1), 1)[0]
    for ep in episodes:
        assert [e.id for e, _ in store.search_vector(query, 20, [ep.namespace])] == [ep.id]
        assert [e.id for e, _ in store.search_text("swap event", 20, [ep.namespace])] == [ep.id]
        assert store.count([ep.namespace]) == 1
    assert store.search_vector(query, 20, ["x'"]) == []
    assert store.search_text("swap", 20, ["main"], protocol="' OR 1=1 --") == []

    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=30))
    def arbitrary(name: str) -> None:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: refused by name, never widened
            with pytest.raises(InvalidMemory, match="not valid UTF-8"):
                store.search_vector(query, 20, [name])
            return
        expected = [e.id for e in episodes if e.namespace == name]
        assert [e.id for e, _ in store.search_vector(query, 20, [name])] == expected
        assert store.count([name]) == len(expected)

    arbitrary()


def test_search_text_finds_a_fresh_row_by_a_rare_token(tmp_path: Path, sig: ModelSignature,
                                                       embedder: Embedder) -> None:
    store = open_store(tmp_path / "ep", sig)
    bulk = [make_episode(i) for i in range(50)]
    store.upsert(bulk, unit(np.random.default_rng(2), len(bulk)))
    store.optimize()  # the FTS index now covers the bulk; the next row is not in it
    address = "0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f"
    fresh = make_episode(99, text=f"Flash loan from zyxquorp vault {address} drained the pool")
    store.upsert([fresh], embedder.embed([fresh.text]))
    for token in ("zyxquorp", address, address.upper().replace("0X", "0x")):
        hits = store.search_text(token, 5, ["main"])
        assert [e.id for e, _ in hits] == [fresh.id] and hits[0][1] > 0
    assert store.search_text("zyxquorp", 5, ["other"]) == []
    assert store.search_text("   ", 5, ["main"]) == []


def test_signature_mismatch_refuses_to_open(tmp_path: Path, sig: ModelSignature) -> None:
    path = tmp_path / "ep"
    store = open_store(path, sig)
    store.upsert([make_episode(1)], unit(np.random.default_rng(3), 1))
    other = other_signature(sig)
    with pytest.raises(SignatureMismatch) as info:
        open_store(path, other)
    message = str(info.value)
    assert str(path) in message and "golem memory reembed" in message
    assert sig.model in message and "some-other-model" in message
    migrating = open_store(path, other, for_migration=True)
    assert migrating.needs_migration and migrating.count() == 1
    with pytest.raises(SignatureMismatch):
        migrating.search_vector(unit(np.random.default_rng(4), 1)[0], 5, ["main"])
    with pytest.raises(SignatureMismatch):
        migrating.upsert([make_episode(2)], unit(np.random.default_rng(4), 1))
    assert open_store(path, sig).count() == 1  # the right model still opens it


def test_orphaned_temporary_files_are_removed_at_open(tmp_path: Path,
                                                      sig: ModelSignature) -> None:
    path = tmp_path / "ep"
    store = open_store(path, sig)
    store.upsert([make_episode(i) for i in range(3)], unit(np.random.default_rng(5), 3))
    table = next(path.glob("episodes-*.lance"))
    orphans = [table / "data" / ".tmpAbC123", table / "_indices" / "0000-uuid" / ".tmpXyZ789",
               path / ".store.json.tmp-deadbeef"]
    for orphan in orphans:
        orphan.parent.mkdir(parents=True, exist_ok=True)
        orphan.write_bytes(b"half a data file from a killed write")
    stray = path / "episodes-0123456789abcdef-00000000.lance"  # an unfinished migration
    (stray / "data").mkdir(parents=True)
    del store
    reopened = open_store(path, sig)
    assert not any(o.exists() for o in orphans) and not stray.exists()
    assert reopened.count() == 3 and table.is_dir()


def test_reembed_swaps_everything(tmp_path: Path, sig: ModelSignature,
                                  embedder: Embedder) -> None:
    path = tmp_path / "ep"
    old = other_signature(sig)
    episodes = [make_episode(i) for i in range(40)]
    open_store(path, old).upsert(episodes, unit(np.random.default_rng(6), 40))
    store = open_store(path, sig, for_migration=True)
    assert store.reembed(embedder.embed, batch_size=16) == 40
    assert not store.needs_migration and store.signature == sig
    assert len(list(path.glob("episodes-*.lance"))) == 1
    assert json.loads((path / "store.json").read_text())["signature"] == sig.to_dict()
    reopened = open_store(path, sig)
    assert sorted(e.id for b in reopened.iter_all() for e in b) == sorted(e.id for e in episodes)
    assert reopened.get([episodes[5].id]) == [episodes[5]]
    stored = reopened.vectors([e.id for e in episodes])
    fresh = embedder.embed([e.text for e in episodes])
    np.testing.assert_allclose(np.vstack([stored[e.id] for e in episodes]), fresh, atol=1e-6)
    with pytest.raises(SignatureMismatch):
        open_store(path, old)


def test_a_failed_reembed_leaves_the_old_store_intact(tmp_path: Path, sig: ModelSignature,
                                                      embedder: Embedder) -> None:
    path = tmp_path / "ep"
    old = other_signature(sig)
    episodes = [make_episode(i) for i in range(40)]
    vectors = unit(np.random.default_rng(7), 40)
    open_store(path, old).upsert(episodes, vectors)
    calls = 0

    def flaky(texts: list[str]) -> np.ndarray:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("embedder died halfway")
        return embedder.embed(texts)

    store = open_store(path, sig, for_migration=True)
    with pytest.raises(GrimoireError, match="halfway"):
        store.reembed(flaky, batch_size=16)
    assert calls == 2 and store.needs_migration
    _assert_intact(path, old, episodes, vectors)


def test_a_crash_mid_reembed_leaves_the_old_store_intact(tmp_path: Path,
                                                         sig: ModelSignature) -> None:
    path = tmp_path / "ep"
    old = other_signature(sig)
    episodes = [make_episode(i) for i in range(40)]
    vectors = unit(np.random.default_rng(8), 40)
    open_store(path, old).upsert(episodes, vectors)
    script = textwrap.dedent(f"""
        import os, numpy as np
        from pathlib import Path
        from golem.grimoire.episodes import EpisodeStore
        from golem.grimoire.signature import ModelSignature
        sig = ModelSignature.from_dict({sig.to_dict()!r})
        store = EpisodeStore.open(Path({str(path)!r}), sig, index_min_rows=10_000,
                                  for_migration=True)
        calls = 0
        def dying(texts):
            global calls
            calls += 1
            if calls == 3:
                os._exit(9)  # kill -9 style: no cleanup, no finally
            v = np.ones((len(texts), 384), dtype=np.float32)
            return v
        store.reembed(dying, batch_size=8)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 9, done.stderr
    assert len(list(path.glob("episodes-*.lance"))) == 2  # the half-written copy is there
    _assert_intact(path, old, episodes, vectors)
    assert len(list(path.glob("episodes-*.lance"))) == 1  # and gone after the reopen


def _assert_intact(path: Path, sig: ModelSignature, episodes: list[Episode],
                   vectors: np.ndarray) -> None:
    store = open_store(path, sig)
    assert store.count() == len(episodes)
    stored = store.vectors([e.id for e in episodes])
    np.testing.assert_allclose(np.vstack([stored[e.id] for e in episodes]), vectors, atol=1e-6)
    assert store.get([episodes[0].id]) == [episodes[0]]


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    picks = centers[rng.integers(0, len(centers), n)]
    v = picks + 0.35 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(384)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def test_index_build_keeps_recall_against_exact_search(tmp_path: Path,
                                                       sig: ModelSignature) -> None:
    rng = np.random.default_rng(9)
    centers = unit(rng, 12)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    episodes = [make_episode(i, namespace="main" if i % 4 else "other") for i in range(360)]
    vectors = clustered(rng, len(episodes), centers)
    assert store.maybe_build_index() is False  # below index_min_rows
    store.upsert(episodes, vectors)
    assert store.maybe_build_index() is True
    assert store.maybe_build_index() is False  # no growth since training
    late = [make_episode(1000 + i) for i in range(40)]  # written after training: unindexed
    late_vectors = clustered(rng, len(late), centers)
    store.upsert(late, late_vectors)
    everything, all_vectors = episodes + late, np.vstack([vectors, late_vectors])
    mine = np.array([e.namespace == "main" for e in everything])
    recalls = []
    for query in clustered(rng, 25, centers):
        exact = np.argsort(-(all_vectors @ query) + 10 * ~mine)[:10]
        found = {e.id for e, _ in store.search_vector(query, 10, ["main"])}
        recalls.append(len(found & {everything[i].id for i in exact}) / 10)
    assert np.mean(recalls) >= 0.95
    more = [make_episode(2000 + i) for i in range(40)]  # 440 rows >= 1.2 x 360: retrain
    store.upsert(more, clustered(rng, len(more), centers))
    assert store.maybe_build_index() is True


def test_rewritten_rows_are_folded_into_the_index_without_new_segments(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Verification rewrites rows; each fold merges them into the newest segment, so the
    vector index stays one segment and maintenance has nothing to retrain. A store folded
    by lancedb's own optimize() (before 2026-11-27: a segment a fold) is still retrained
    once it has more than MAX_VECTOR_SEGMENTS."""
    rng = np.random.default_rng(21)
    centers = unit(rng, 8)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    episodes = [make_episode(i) for i in range(400)]
    vectors = clustered(rng, len(episodes), centers)
    store.upsert(episodes, vectors)
    assert store.maybe_build_index() is True
    segments = [store.optimize()["after"]["vector_index_segments"]]
    for round_ in range(MAX_VECTOR_SEGMENTS + 1):
        store.update([e.id for e in episodes[round_ * 40:(round_ + 1) * 40]],
                     quality_verified=True)
        segments.append(store.optimize()["after"]["vector_index_segments"])
    assert segments == [1] * (MAX_VECTOR_SEGMENTS + 2)
    assert store.maybe_build_index() is False
    assert [e.id for e, _ in store.search_vector(vectors[123], 1, ["main"])] == [
        episodes[123].id]
    # the old way: lancedb's optimize, which adds a segment on most calls (not all: its
    # compaction sometimes remaps the index into fewer)
    for round_ in range(3 * MAX_VECTOR_SEGMENTS):
        store.update([e.id for e in episodes[round_ % 10 * 40:(round_ % 10 + 1) * 40]],
                     quality_verified=round_ % 2 == 1)
        store._table.optimize()
        if layout.vector_segments(store._table) > MAX_VECTOR_SEGMENTS:
            break
    assert store.optimize()["after"]["vector_index_segments"] > MAX_VECTOR_SEGMENTS
    assert store.maybe_build_index() is True  # no growth: only the segments call for it
    assert store.optimize()["after"]["vector_index_segments"] == 1
    assert [e.id for e, _ in store.search_vector(vectors[123], 1, ["main"])] == [
        episodes[123].id]


def test_maintenance_folds_many_fresh_rows_into_the_text_index(tmp_path: Path,
                                                              sig: ModelSignature) -> None:
    store = open_store(tmp_path / "ep", sig)
    few = [make_episode(i) for i in range(50)]
    store.upsert(few, unit(np.random.default_rng(13), len(few)))
    assert store.maybe_build_index() is False  # 50 unindexed rows: cheap enough to scan
    many = [make_episode(100 + i, text=f"rebalance {i} of the vault") for i in range(1100)]
    store.upsert(many, unit(np.random.default_rng(14), len(many)))
    assert store.maybe_build_index() is True  # > 1,000 rows outside the FTS index
    assert store.maybe_build_index() is False  # now they are in it
    assert [e.id for e, _ in store.search_text("rebalance 1099", 1, ["main"])] == [many[-1].id]


def test_bad_writes_are_refused_and_write_nothing(tmp_path: Path, sig: ModelSignature) -> None:
    store = open_store(tmp_path / "ep", sig)
    rng = np.random.default_rng(10)
    ep = make_episode(1)
    bad_vectors = [unit(rng, 1, 383), unit(rng, 2), np.full((1, 384), np.nan, np.float32),
                   np.zeros((1, 384), np.float32)]
    for vectors in bad_vectors:
        with pytest.raises(InvalidMemory):
            store.upsert([ep], vectors)
    for episode in (dataclasses.replace(ep, payload={"x": float("nan")}),
                    dataclasses.replace(ep, payload={"x": object()}),
                    dataclasses.replace(ep, text="  "),
                    dataclasses.replace(ep, curiosity=float("inf")),
                    # identifiers are single printable words: no whitespace of any kind
                    *(dataclasses.replace(ep, identifiers=(bad,)) for bad in (
                        "0xab cd", "0xab\u00a0cd", "0xab\u2003cd", "0xab\u3000", " 0xab", "",
                        "a" * (MAX_IDENTIFIER_CHARS + 1)))):
        with pytest.raises(InvalidMemory):
            store.upsert([episode], unit(rng, 1))
    fine = dataclasses.replace(ep, identifiers=("0xAbC", "WETH/USDC", "é-1",
                                                "a" * MAX_IDENTIFIER_CHARS))
    assert store.upsert([fine], unit(rng, 1)) == 1 and store.delete([fine.id]) == 1
    with pytest.raises(InvalidMemory):
        store.search_vector(np.ones(10, np.float32), 5, ["main"])
    with pytest.raises(InvalidMemory):
        store.search_vector(unit(rng, 1)[0], 5, ["main"], since=float("nan"))
    assert store.count() == 0


def test_marks_as_of_a_stamp_look_ids_up_only_after_a_removal(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Consolidation marks the ids it has just read: while nothing has been removed since
    its stamp they are marked as given; after any removal each is looked up, so a row
    deleted in between gets no count and no update."""
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(6)]
    store.upsert(episodes, unit(np.random.default_rng(13), 6))
    ids = [e.id for e in episodes]
    stamp = store.removal_stamp()
    assert store.increment_replay(ids[:3], as_of=stamp) == 3
    assert store.update(ids[:2], as_of=stamp, quality_verified=True) == 2
    # the promise is the caller's: an id it did not read is taken as stored too
    assert store.increment_replay(["never-read"], as_of=stamp) == 1
    assert store.delete(["never-read", ids[0]]) == 1
    assert store.removal_stamp() != stamp
    assert store.increment_replay(ids[:3], as_of=stamp) == 2  # looked up: ids[0] is gone
    assert store.update(ids[:2], as_of=stamp, replay_count=5) == 1
    assert store.delete_owned([ids[4]], "main") == [ids[4]]
    newer = store.removal_stamp()
    assert store.delete_chain_above(1, 10**9) == [] and store.removal_stamp() != newer
    got = {e.id: e for e in store.get(ids)}
    assert ids[0] not in got and ids[4] not in got
    assert (got[ids[1]].replay_count, got[ids[1]].quality_verified) == (5, True)
    assert (got[ids[2]].replay_count, got[ids[2]].quality_verified) == (2, False)
    assert store.increment_replay([ids[0]]) == 0  # no stamp: always looked up
    with sqlite3.connect(tmp_path / "ep" / "replays.db") as conn:  # no count left orphaned
        counted = {row[0] for row in conn.execute("SELECT id FROM replays")}
    assert counted == {ids[1], ids[2]}


def test_update_delete_and_maintenance(tmp_path: Path, sig: ModelSignature) -> None:
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(6)]
    store.upsert(episodes[:3], unit(np.random.default_rng(11), 3))
    store.upsert(episodes[3:], unit(np.random.default_rng(12), 3))
    a, b = episodes[0].id, episodes[1].id
    assert store.update([a, b], importance=0.9, quality_verified=True, replay_count=2) == 2
    assert store.increment_replay([a, "missing"]) == 1
    got = {e.id: e for e in store.get([a, b])}
    assert (got[a].replay_count, got[b].replay_count) == (3, 2)
    assert got[a].importance == 0.9 and got[a].quality_verified
    assert store.update([a], importance=None) == 1 and store.get([a])[0].importance is None
    for bad in ({"importance": 1.5}, {"importance": float("nan")}, {"replay_count": -1},
                {"quality_verified": "yes"}, {"text": "rewritten"}):
        with pytest.raises(InvalidMemory):
            store.update([a], **bad)
    assert store.delete([a, "missing"]) == 1 and store.count() == 5
    stats = store.optimize(older_than_s=0)
    assert stats["before"]["fragments"] >= 2 and stats["after"]["fragments"] == 1
    assert stats["after"]["rows"] == 5 and stats["after"]["versions"] < stats["before"]["versions"]
    assert store.count(["main"]) == 5 and store.count(["other"]) == 0 and store.count([]) == 0


def test_delete_owned_deletes_only_the_namespaces_own_ids_in_the_order_asked(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Retention's delete: across id chunks, others' and unknown ids stay, and a deleted
    id's replay count goes with it (captured again, it starts from 0)."""
    store = open_store(tmp_path / "ep", sig)
    mine = [make_episode(i) for i in range(1_205)]
    theirs = make_episode(5_000, namespace="other")
    store.upsert([*mine, theirs], unit(np.random.default_rng(3), len(mine) + 1))
    store.increment_replay([mine[1_100].id])
    asked = [mine[1_100].id, theirs.id, "missing", *(e.id for e in mine[:1_000]), mine[0].id]
    gone = store.delete_owned(asked, "main")
    assert gone == [mine[1_100].id, *(e.id for e in mine[:1_000])]
    assert store.count(["main"]) == 204 and store.count(["other"]) == 1
    assert store.delete_owned([theirs.id], "main") == [] and store.delete_owned([], "main") == []
    store.upsert([mine[1_100]], unit(np.random.default_rng(4), 1))
    assert store.get([mine[1_100].id])[0].replay_count == 0


def test_optimize_bounds_the_versions_it_keeps_by_count(tmp_path: Path,
                                                        sig: ModelSignature) -> None:
    """Versions younger than the age bound still go once more than ``max_versions`` are
    kept (a golem at simulated speed commits a version every half second)."""
    store = open_store(tmp_path / "ep", sig)
    rng = np.random.default_rng(5)
    for i in range(8):
        store.upsert([make_episode(i)], unit(rng, 1))
    kept = store.optimize(older_than_s=3600)["after"]["versions"]
    assert kept > 8  # the age bound alone keeps every one of them
    for i in range(8, 12):
        store.upsert([make_episode(i)], unit(rng, 1))
    stats = store.optimize(older_than_s=3600, max_versions=3)
    assert stats["after"]["versions"] == 3
    assert store.count() == 12
    assert [e.id for e in store.get([make_episode(3).id])] == [make_episode(3).id]
    with pytest.raises(ValueError, match="max_versions"):
        store.optimize(max_versions=0)


def test_newest_hits_reach_back_until_they_hold_k(tmp_path: Path,
                                                 sig: ModelSignature) -> None:
    store = open_store(tmp_path / "ep", sig)
    now = 1_800_000_000.0
    ages = [30.0, 200.0, 5_000.0, 40 * 86400.0, 400 * 86400.0]  # the last two: old, sparse
    store.upsert([make_episode(i, observed_at=now - age, category="oracle")
                  for i, age in enumerate(ages)], unit(np.random.default_rng(3), len(ages)))
    store.upsert([make_episode(10, observed_at=now - 10.0)], unit(np.random.default_rng(4), 1))
    query = unit(np.random.default_rng(5), 1)[0]
    hits = store.newest_hits(query, 4, ["main"], until=now, protocol="uniswap_v3",
                             category="oracle")
    assert [h.id for h in hits] == [make_episode(i).id for i in range(4)]  # newest first
    assert all(abs(h.score - float(h.vector @ query)) < 1e-5 for h in hits)
    every = store.newest_hits(query, 50, ["main"], until=now, protocol="uniswap_v3",
                              category="oracle")
    assert len(every) == 5  # every window read, then all: the other category is not there
    assert store.newest_hits(query, 3, ["main"], until=now - 100.0, protocol="uniswap_v3",
                             category="oracle")[0].id == make_episode(1).id


def test_unreadable_or_corrupt_stores_raise_store_corrupt(tmp_path: Path,
                                                          sig: ModelSignature) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    with pytest.raises(StoreCorrupt, match=re.escape(str(not_a_dir))):
        open_store(not_a_dir, sig)
    path = tmp_path / "ep"
    open_store(path, sig)
    (path / "store.json").write_text("{not json")
    with pytest.raises(StoreCorrupt, match=re.escape("store.json")):
        open_store(path, sig)
    (path / "store.json").write_text(json.dumps(
        {"format": 1, "table": "episodes-gone", "signature": sig.to_dict()}))
    with pytest.raises(StoreCorrupt, match="episodes-gone"):
        open_store(path, sig)
    other = tmp_path / "ep2"
    open_store(other, sig)
    table = next(other.glob("episodes-*.lance"))
    for manifest in (table / "_versions").iterdir():
        manifest.write_bytes(b"garbage")
    with pytest.raises(StoreCorrupt, match=re.escape(str(table))):
        open_store(other, sig)


def test_reconnecting_while_searches_run_loses_nothing(tmp_path: Path,
                                                       sig: ModelSignature) -> None:
    """Upkeep swaps the LanceDB connection; searches running meanwhile keep working. (Not
    compaction with zero version retention: it deletes files an older handle may still
    read, which is why the Grimoire never runs a search beside its upkeep.)"""
    store = open_store(tmp_path / "ep", sig)
    rng = np.random.default_rng(21)
    vectors = unit(rng, 40)
    store.upsert([make_episode(i) for i in range(40)], vectors)
    expected = [e.id for e, _ in store.search_vector(vectors[7], 5, ["main"])]
    errors: list[BaseException] = []
    found: list[list[str]] = []
    stop = threading.Event()

    def search() -> None:
        try:
            while not stop.is_set():
                found.append([e.id for e, _ in store.search_vector(vectors[7], 5, ["main"])])
        except BaseException as exc:  # reported below
            errors.append(exc)

    worker = threading.Thread(target=search)
    worker.start()
    try:
        for round_ in range(6):
            store.reconnect()
            store.upsert([make_episode(100 + round_)], -vectors[7:8])  # never a top hit
    finally:
        stop.set()
        worker.join()
    store.optimize(older_than_s=0)  # which reconnects too
    assert errors == []
    assert found and all(ids == expected for ids in found)
    assert store.count() == 46
    assert [e.id for e, _ in store.search_vector(vectors[7], 5, ["main"])] == expected


def test_window_references_match_the_window_without_reading_records(
        tmp_path: Path, sig: ModelSignature) -> None:
    rng = np.random.default_rng(5)
    store = open_store(tmp_path / "ep", sig)
    episodes = [make_episode(i) for i in range(30)]
    store.upsert(episodes, unit(rng, len(episodes)))
    ids = [e.id for e in episodes]
    store.increment_replay(ids[3:9])
    store.update(ids[::2], quality_verified=True, importance=0.9)
    start = episodes[0].observed_at
    for verified in (False, True):
        for limit in (100, 7):
            full = store.since(["main"], start + 5, start + 250, limit, verified_only=verified)
            refs = store.since_refs(["main"], start + 5, start + 250, limit,
                                    verified_only=verified)
            assert [(e.id, e.observed_at, e.importance, e.replay_count) for e in full] == [
                (r.id, r.observed_at, r.importance, r.replay_count) for r in refs]
            assert refs and len(refs) <= limit
    assert store.since_refs(["other"], start, start + 1e6, 10) == []
    assert store.since_refs(["main"], start, start + 1e6, 0) == []


def test_facts_are_the_window_s_episodes_as_retention_weighs_them(
        tmp_path: Path, sig: ModelSignature) -> None:
    rng = np.random.default_rng(6)
    store = open_store(tmp_path / "ep", sig)
    # a payload of its own "curiosity" (on-chain names are anyone's) and quotes in a
    # category do not fool the record's reader
    episodes = [dataclasses.replace(make_episode(i, category='say "curiosity":1,' if i == 3
                                                 else "swap"), curiosity=(i % 10) / 10,
                                    payload={"curiosity": 0.99, "note": '"curiosity":1,'})
                for i in range(30)]
    store.upsert(episodes, unit(rng, len(episodes)))
    ids = [e.id for e in episodes]
    store.increment_replay(ids[3:9])
    store.update(ids[::2], quality_verified=True, importance=0.9)
    start = episodes[0].observed_at
    for limit in (100, 7):
        full = store.since(["main"], start + 5, start + 250, limit)
        facts = store.facts(["main"], start + 5, start + 250, limit)
        assert facts == [EpisodeFacts(e.id, e.observed_at, e.category, e.curiosity,
                                      e.importance, e.quality_verified, e.replay_count)
                         for e in full]
        assert facts and len(facts) <= limit
    assert {f.curiosity for f in store.facts(["main"], start, start + 1e6, 100)} == \
        {e.curiosity for e in episodes}
    assert store.facts(["other"], start, start + 1e6, 10) == []
    assert store.facts(["main"], start, start + 1e6, 0) == []


def test_facts_read_a_record_of_another_key_order_in_full(tmp_path: Path,
                                                          sig: ModelSignature) -> None:
    """A record whose curiosity is not followed by a comma (a writer that did not sort its
    keys) cannot be read by the query's fast reading; facts parses that one in full."""
    rng = np.random.default_rng(7)
    path = tmp_path / "ep"
    store = open_store(path, sig)
    episodes = [dataclasses.replace(make_episode(i), curiosity=0.1 * i) for i in range(6)]
    store.upsert(episodes, unit(rng, len(episodes)))
    odd = episodes[4]
    dataset = lance.dataset(str(next(path.glob("episodes-*.lance"))))
    record = json.loads(dataset.to_table(filter=f"id = '{odd.id}'")["record"][0].as_py())
    curiosity = record.pop("curiosity")
    reordered = json.dumps({**record, "curiosity": curiosity}, separators=(",", ":"))
    assert reordered.endswith(f'"curiosity":{curiosity}}}')
    dataset.update({"record": "'" + reordered.replace("'", "''") + "'"},
                   where=f"id = '{odd.id}'")
    store.close()
    store = open_store(path, sig)
    facts = store.facts(["main"], -1e18, 1e18, 100)
    assert [f.curiosity for f in facts] == pytest.approx([0.1 * i for i in range(6)])
    assert store.get([odd.id])[0].curiosity == pytest.approx(0.4)


def test_index_trains_on_a_store_of_repeated_vectors(tmp_path: Path,
                                                      sig: ModelSignature) -> None:
    """An old golem's store repeats itself (the same rendering, the same vector). Past 256
    partitions LanceDB's hierarchical k-means cannot form sqrt(rows) clusters from 40
    distinct vectors and refuses; training halves the partitions until it can, and search
    still finds the nearest of them."""
    rng = np.random.default_rng(5)
    distinct = unit(rng, 40)
    rows = 257 ** 2 + 100  # sqrt(rows) > 256: the hierarchical trainer
    store = open_store(tmp_path / "ep", sig, index_min_rows=1000)
    episodes = [make_episode(i) for i in range(rows)]
    store.upsert(episodes, distinct[np.arange(rows) % 40])
    with capture_logs() as logs:
        assert store.maybe_build_index() is True
    assert [e["retry_partitions"] for e in logs if "near-duplicate" in e["event"]] == [128]
    assert store.maybe_build_index() is False  # trained: the meta records the rows
    found = store.search_vector(distinct[7], 5, ["main"])
    assert len(found) == 5
    assert all((e.block_number - 19_000_000) % 40 == 7 for e, _ in found), found
    # The meta keeps the count that formed; the next training (here: of an index of an
    # older kind, after a reopen) starts there instead of failing at sqrt(rows) again.
    meta = layout.read_meta(tmp_path / "ep")
    assert meta is not None and meta.index_partitions == 128
    layout.write_meta(tmp_path / "ep", dataclasses.replace(meta, index_kind="older"))
    store.close()
    store = open_store(tmp_path / "ep", sig, index_min_rows=1000)
    with capture_logs() as logs:
        assert store.maybe_build_index() is True
    assert not [e for e in logs if "near-duplicate" in e["event"]], logs
    meta = layout.read_meta(tmp_path / "ep")
    assert meta is not None and meta.index_partitions == 128
    assert meta.index_kind == layout.INDEX_KIND


@pytest.mark.parametrize(("rows", "last_rows", "last_partitions", "first"), [
    (100_000, None, None, 316),  # nothing recorded: sqrt(rows)
    (100_000, 100_000, 316, 316),  # the last training formed sqrt(its rows)
    (100_000, 97_652, 156, 158),  # it formed fewer: that count, grown as sqrt(rows)
    (400, 100_000, 156, 10),  # never above sqrt(rows)
    (1, 100_000, 3, 1),  # at least one
])
def test_a_training_starts_from_the_partitions_the_last_one_formed(
        rows: int, last_rows: int | None, last_partitions: int | None, first: int) -> None:
    assert first_partitions(rows, last_rows, last_partitions) == first


def test_an_admitted_search_returns_the_nearest_rows_whose_text_passes(
        tmp_path: Path, sig: ModelSignature) -> None:
    """search_vector_admitted is search_vector_hits filtered by the text: the same rows,
    scores, order and decoded episodes, read in full only when admitted."""
    rng = np.random.default_rng(3)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    episodes = [make_episode(i, text=f"Answer {'down 3.2%' if i % 7 == 0 else 'up 0.1%'} "
                                      f"from the previous one, round {i}")
                for i in range(400)]
    store.upsert(episodes, clustered(rng, len(episodes), unit(rng, 6)))
    assert store.maybe_build_index() is True
    query = unit(rng, 1)[0]

    def falls(text: str) -> bool:
        return "down" in text

    for k in (50, 400):
        every = store.search_vector_hits(query, k, ["main"])
        admitted = store.search_vector_admitted(query, k, ["main"], first_move, fell)
        expected = [h for h in every if falls(h.row["text"])]
        assert 0 < len(admitted) < len(every)
        assert [h.id for h in admitted] == [h.id for h in expected]
        np.testing.assert_allclose([h.score for h in admitted], [h.score for h in expected],
                                   atol=1e-6)
        assert [h.episode() for h in admitted] == [h.episode() for h in expected]
    assert store.search_vector_admitted(query, 50, ["main"], first_move,
                                        lambda move: False) == []
    assert store.search_vector_admitted(query, 50, [], first_move, fell) == []
    # rows deleted in place (their files keep them): the admitted rows are read by
    # address, and a deleted row's address is not read back
    gone = [h.id for h in store.search_vector_hits(query, 400, ["main"])[::3]]
    assert store.delete(gone) == len(gone)
    every = store.search_vector_hits(query, 400, ["main"])
    admitted = store.search_vector_admitted(query, 400, ["main"], first_move, fell)
    assert not {h.id for h in admitted} & set(gone)
    assert [h.id for h in admitted] == [h.id for h in every if falls(h.row["text"])]


def fell(move: float | None) -> bool:
    """The admitted searches' threshold: a fall."""
    return move is not None and move < 0


class CountedMove:
    """first_move, counting the texts it is asked about."""

    def __init__(self) -> None:
        self.texts = 0

    def __call__(self, text: str) -> float | None:
        self.texts += 1
        return first_move(text)


def test_an_admitted_search_remembers_its_measures_by_address_through_every_write(
        tmp_path: Path, sig: ModelSignature) -> None:
    """A second admitted search measures no text again, and one after writes measures
    only the rows it has not seen; after appends, updates (rows rewritten), deletes, a
    fold's compaction and a reconnect, every answer is the one a fresh search gives."""
    rng = np.random.default_rng(11)
    store = open_store(tmp_path / "ep", sig, index_min_rows=300)
    centers = unit(rng, 6)

    def answers(i: int) -> list[Episode]:
        return [make_episode(j, text=f"Answer {'down 3.2%' if j % 4 == 0 else 'up 0.4%'} {j}")
                for j in range(i, i + 300)]

    store.upsert(answers(0), clustered(rng, 300, centers))
    assert store.maybe_build_index() is True
    query = unit(rng, 1)[0]
    move = CountedMove()

    def check(k: int = 200) -> None:
        expected = [h for h in store.search_vector_hits(query, k, ["main"])
                    if fell(first_move(h.row["text"]))]
        admitted = store.search_vector_admitted(query, k, ["main"], move, fell)
        assert expected and [h.id for h in admitted] == [h.id for h in expected]
        assert [h.episode() for h in admitted] == [h.episode() for h in expected]

    check()
    assert move.texts == 200  # the first search measures every text it reads
    check()
    assert move.texts == 200  # the second reads addresses alone
    store.upsert(answers(300)[:30], clustered(rng, 30, centers))
    before = move.texts
    check()
    assert 0 < move.texts - before <= 30  # only the new rows near the query
    some = [h.id for h in store.search_vector_hits(query, 200, ["main"])[::5]]
    assert store.update(some, importance=0.9) == len(some)  # written anew, at new addresses
    check()
    assert store.delete(some[::2]) == len(some[::2])
    check()
    store.optimize(older_than_s=0)  # compaction moves rows to new fragments
    check()
    store.reconnect()  # a reopened table forgets what it measured
    before = move.texts
    check()
    assert move.texts - before == 200


def test_row_measures_keep_the_most_recently_used() -> None:
    measures = RowMeasures(3)
    assert not measures.knows(first_move)
    measures.learn(first_move, {1: 1.0, 2: None, 3: -2.0})
    assert measures.known(first_move, [3, 1, 9]) == {3: -2.0, 1: 1.0}  # 2 is now the oldest
    measures.learn(first_move, {4: 0.5})
    assert measures.known(first_move, [1, 2, 3, 4]) == {1: 1.0, 3: -2.0, 4: 0.5}
    assert not measures.knows(len) and measures.known(len, [1, 3]) == {}  # per function
    measures.learn(len, {7: 7.0})
    assert measures.known(first_move, [1, 2, 3, 4]) == {3: -2.0, 4: 0.5}
    assert measures.knows(len) and measures.knows(first_move)
    measures.clear()
    assert not measures.knows(first_move) and measures.known(len, [7]) == {}


class WrittenBetweenReads(EpisodeStore):
    """A store in which a write through the same handle (as another thread of the process
    could make; the Grimoire's own calls are serialised on one thread) deletes half the
    admitted rows just after a search has read their addresses: the one moment
    search_vector_admitted's two reads can see different versions of the table. (Another
    process's commits are not seen before a reconnect, and a fold's compaction keeps
    addresses valid: LanceDB maps the old ones to the rows' new places.)"""

    deleted: ClassVar[list[str]] = []

    def _nearest(self, query: np.ndarray, where: object, k: int, columns: list[str], *,
                 vectors: bool = True, row_ids: bool = False) -> object:
        found: Any = super()._nearest(query, where, k, columns, vectors=vectors,
                                      row_ids=row_ids)
        if row_ids and not self.deleted:
            numbers = [int(text.split()[-1]) for text in found["text"].to_pylist()
                       if text.startswith("Answer down")]
            self.deleted.extend(make_episode(i).id for i in numbers[::2])
            assert self.delete(self.deleted) == len(self.deleted)
        return found


def test_an_admitted_search_whose_rows_change_between_its_reads_reads_them_by_id(
        tmp_path: Path, sig: ModelSignature) -> None:
    """The admitted rows are read back by their addresses in the table's version the first
    pass saw; when a commit in between removed some, both reads are made again by id, and
    the answer is the one a search of the new version gives (the next nearest admitted
    rows in place of the removed ones)."""
    rng = np.random.default_rng(5)
    path = tmp_path / "ep"
    store = open_store(path, sig, index_min_rows=300)
    store.upsert([make_episode(i, text=f"Answer {'down 3.2%' if i % 5 == 0 else 'up'} {i}")
                  for i in range(600)], clustered(rng, 600, unit(rng, 6)))
    store.close()
    query = unit(rng, 1)[0]

    def falls(text: str) -> bool:
        return "down" in text

    written = WrittenBetweenReads.open(path, sig, index_min_rows=300)
    admitted = written.search_vector_admitted(query, 200, ["main"], first_move, fell)
    assert len(WrittenBetweenReads.deleted) > 5
    every = written.search_vector_hits(query, 200, ["main"])
    expected = [h for h in every if falls(h.row["text"])]
    assert not {h.id for h in expected} & set(WrittenBetweenReads.deleted)
    assert [h.id for h in admitted] == [h.id for h in expected]
    assert [h.episode() for h in admitted] == [h.episode() for h in expected]


def test_the_vector_index_is_rabitq_codes_and_an_older_kind_is_retrained(
        tmp_path: Path, sig: ModelSignature) -> None:
    """Maintenance trains an IVF_RQ index and records its kind; a store whose record names
    the older IVF_SQ kind is retrained at the next maintenance, not left as it is. An
    indexed search still returns exact cosines, best first."""
    rng = np.random.default_rng(8)
    directory = tmp_path / "ep"
    store = open_store(directory, sig, index_min_rows=300)
    vectors = clustered(rng, 400, unit(rng, 8))
    store.upsert([make_episode(i) for i in range(400)], vectors)

    def index_type() -> str:
        dataset = lance.dataset(str(next(directory.glob("episodes-*.lance"))))
        return str(dataset.stats.index_stats(layout.VECTOR_INDEX)["index_type"])

    assert store.maybe_build_index() is True
    meta = layout.read_meta(directory)
    assert meta is not None and meta.index_kind == layout.INDEX_KIND == "ivf_rq4_target_size"
    assert index_type() == "IVF_RQ"
    assert store.maybe_build_index() is False
    layout.write_meta(directory, dataclasses.replace(meta, index_kind="ivf_sq_target_size"))
    reopened = open_store(directory, sig, index_min_rows=300)
    assert reopened.maybe_build_index() is True  # the older kind: trained again
    assert layout.read_meta(directory) == meta
    assert index_type() == "IVF_RQ"
    hits = reopened.search_vector_hits(vectors[3], 10, ["main"])
    exact = vectors @ vectors[3]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        row = hit.episode().block_number - 19_000_000
        assert hit.score == pytest.approx(float(exact[row]), abs=1e-5)


def test_the_vector_index_is_retrained_once_a_fifth_of_its_rows_churned(
        tmp_path: Path, sig: ModelSignature) -> None:
    """At the retention cap the row count stays flat while rows are written and deleted;
    the index is retrained once the rows written since training reach REINDEX_CHURN of
    the rows it was trained on. The count survives a reopen (kept in the meta)."""
    rng = np.random.default_rng(9)
    directory = tmp_path / "ep"
    store = open_store(directory, sig, index_min_rows=300)
    store.upsert([make_episode(i) for i in range(400)], unit(rng, 400))
    assert store.maybe_build_index() is True
    assert store.maybe_build_index() is False

    def churn(first: int, n: int) -> None:  # n rows in, n rows out: the count stays 400
        store.upsert([make_episode(i) for i in range(first, first + n)], unit(rng, n))
        store.delete([make_episode(i).id for i in range(first - 400, first - 400 + n)])

    churn(400, 50)
    assert store.maybe_build_index() is False  # 50 written: under 0.2 x 400
    meta = layout.read_meta(directory)
    assert meta is not None and meta.written_since_index == 50 and meta.index_rows == 400
    store = open_store(directory, sig, index_min_rows=300)
    churn(450, 30)
    assert store.maybe_build_index() is True  # 80 written since training
    meta = layout.read_meta(directory)
    assert meta is not None and meta.written_since_index == 0 and meta.index_rows == 400
    assert store.maybe_build_index() is False
    assert store.count() == 400

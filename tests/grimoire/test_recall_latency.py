"""Latency-driven choices in the recall path must not cost results."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest

from golem.grimoire.embedder import Embedder
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.errors import InvalidMemory

from .test_embedder import MODEL_DIR
from .test_episodes import make_episode, unit


def test_a_selective_filter_still_gets_k_rows_from_a_few_probed_partitions(
        tmp_path: Path, embedder: Embedder) -> None:
    """Searches probe only ``nprobes`` partitions; when a prefilter leaves fewer than k
    rows in them, the store widens the search instead of returning a short list."""
    rng = np.random.default_rng(3)
    store = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=300,
                              nprobes=1)
    centers = unit(rng, 16)
    n = 400
    rare = set(range(0, n, 25))  # 16 rows in their own namespace, one per cluster
    episodes = [make_episode(i, namespace="rare" if i in rare else "main") for i in range(n)]
    picks = centers[np.arange(n) % len(centers)]
    vectors = picks + 0.2 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(384)
    store.upsert(episodes, vectors)
    assert store.maybe_build_index() is True
    found = store.search_vector(centers[0], 10, ["rare"])
    assert len(found) == 10
    assert {e.namespace for e, _ in found} == {"rare"}
    assert found == sorted(found, key=lambda pair: -pair[1])
    common = store.search_vector(centers[0], 10, ["main"])  # enough rows in one partition
    assert len(common) == 10 and common[0][1] > 0.9


def test_query_vectors_are_remembered_and_identical_to_a_fresh_embedding(
        embedder: Embedder) -> None:
    text = "health factor below one on an aave position (query cache test)"
    first = embedder.embed_query(text)
    assert embedder.embed_query(text) is first  # served from the cache
    np.testing.assert_array_equal(first, embedder.embed([text])[0])
    assert not first.flags.writeable  # a caller cannot corrupt the cached vector
    other = anyio.run(embedder.aembed_query, text + " (async)")
    np.testing.assert_array_equal(other, embedder.embed([text + " (async)"])[0])
    assert anyio.run(embedder.aembed_query, text) is first
    with pytest.raises(InvalidMemory):
        embedder.embed_query(["not", "a", "text"])  # type: ignore[arg-type]


def test_the_query_cache_is_bounded_and_evicts_the_least_recently_used() -> None:
    small = Embedder.load(MODEL_DIR, 8, query_cache_size=2)
    a, b = small.embed_query("query a"), small.embed_query("query b")
    assert small.embed_query("query a") is a  # a is now the most recently used
    small.embed_query("query c")  # evicts b
    assert small.embed_query("query a") is a
    again = small.embed_query("query b")
    assert again is not b
    np.testing.assert_array_equal(again, b)
    off = Embedder.load(MODEL_DIR, 8, query_cache_size=0)
    assert off.embed_query("query a") is not off.embed_query("query a")


def test_the_embedder_session_sleeps_when_idle_and_embeds_as_before(embedder: Embedder) -> None:
    """Idle onnxruntime workers must not spin (they stole the search's core); rebuilding
    fastembed's session for that must not change a single vector."""
    options = embedder._model.model.model.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = Embedder.load(MODEL_DIR, 8, spinning=True)
    spun = spinning._model.model.model.get_session_options()
    with pytest.raises(RuntimeError):  # fastembed's own session: onnxruntime's default (spin)
        spun.get_session_config_entry("session.intra_op.allow_spinning")
    texts = ["Swap 12 WETH for 38,000 USDC on uniswap_v3", "gas spike", "x" * 400]
    np.testing.assert_array_equal(embedder.embed(texts), spinning.embed(texts))


def test_text_hits_are_read_back_by_id_even_after_the_rows_moved(
        tmp_path: Path, embedder: Embedder) -> None:
    """search_text_ids hands out row addresses; a compaction between the search and
    search_rows moves rows, and the rows read back must still be the ones found."""
    store = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=10_000)
    rng = np.random.default_rng(5)
    for start in range(0, 60, 20):  # three fragments
        batch = [make_episode(i, text=f"episode {i} zebracorn swap" if i % 3 == 0 else None)
                 for i in range(start, start + 20)]
        store.upsert(batch, unit(rng, len(batch)))
    found = store.search_text_ids("zebracorn", 10, ["main"])
    assert len(found) == 10
    fresh = store.search_rows([(i, a) for i, _, a in found])
    assert set(fresh) == {i for i, _, _ in found}
    store.delete([make_episode(3).id, make_episode(1).id])  # make_episode(3) was a hit
    store.optimize(older_than_s=0)  # compaction: the old addresses now point elsewhere
    now_at = {i: a for i, _, a in store.search_text_ids("zebracorn", 20, ["main"])}
    assert any(now_at.get(i) != a for i, _, a in found)  # the addresses did change
    moved = store.search_rows([(i, a) for i, _, a in found])
    assert make_episode(3).id not in moved  # deleted meanwhile: left out
    survivors = {i for i, _, _ in found} - {make_episode(3).id}
    assert set(moved) == survivors
    for episode_id, (episode, vector) in moved.items():
        assert episode.id == episode_id and "zebracorn" in episode.text
        np.testing.assert_allclose(vector, fresh[episode_id][1])


def test_similarities_from_the_vector_index_are_true_cosines(tmp_path: Path,
                                                             embedder: Embedder) -> None:
    """The IVF_SQ index ranks by squared L2 (2 - 2 cos); what the store reports, and what
    scoring and the refusal test read, must be the cosine itself."""
    rng = np.random.default_rng(11)
    store = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=300)
    centers = unit(rng, 8)
    picks = centers[np.arange(400) % len(centers)]
    vectors = picks + 0.5 * rng.standard_normal(picks.shape).astype(np.float32) / np.sqrt(384)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    episodes = [make_episode(i) for i in range(400)]
    store.upsert(episodes, vectors)
    assert store.maybe_build_index() is True
    query = centers[2]
    by_id = {e.id: v for e, v in zip(episodes, vectors, strict=True)}
    hits = store.search_vector(query, 10, ["main"])
    ids = store.search_vector_ids(query, 10, ["main"])
    assert [e.id for e, _ in hits] == [i for i, _, _ in ids]
    for (episode, similarity), (_, id_similarity, _) in zip(hits, ids, strict=True):
        exact = float(np.dot(query, by_id[episode.id]))
        assert similarity == pytest.approx(exact, abs=1e-4)
        assert id_similarity == pytest.approx(exact, abs=1e-4)
    assert hits[0][1] > 0.8  # a near neighbour, not 2 cos - 1

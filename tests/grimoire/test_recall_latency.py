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
    """Idle onnxruntime workers must not spin (they stole the search's core); that must
    not change a single vector."""
    options = embedder._model.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    spinning = Embedder.load(MODEL_DIR, 8, spinning=True)
    spun = spinning._model.session.get_session_options()
    with pytest.raises(RuntimeError):  # not set: onnxruntime's default (spin)
        spun.get_session_config_entry("session.intra_op.allow_spinning")
    texts = ["Swap 12 WETH for 38,000 USDC on uniswap_v3", "gas spike", "x" * 400]
    np.testing.assert_array_equal(embedder.embed(texts), spinning.embed(texts))


def test_search_hits_carry_their_rows_and_stored_vectors(tmp_path: Path,
                                                         embedder: Embedder) -> None:
    """Recall decodes episodes from the rows its searches returned, and takes a lexical
    hit's cosine from the vector that came with it: both must be the stored ones."""
    store = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=10_000)
    rng = np.random.default_rng(8)
    episodes = [make_episode(i, text=f"episode {i} quokka borrow" if i % 2 else None)
                for i in range(24)]
    vectors = unit(rng, len(episodes))
    for start in range(0, 24, 8):  # three fragments
        store.upsert(episodes[start:start + 8], vectors[start:start + 8])
    by_id = {e.id: (e, v) for e, v in zip(episodes, vectors, strict=True)}
    lexical = store.search_text_hits("quokka", 5, ["main"])
    dense = store.search_vector_hits(vectors[4], 5, ["main"])
    assert len(lexical) == len(dense) == 5 and dense[0].id == episodes[4].id
    for hit in [*lexical, *dense]:
        episode, vector = by_id[hit.id]
        assert hit.episode() == episode
        assert hit.vector.dtype == np.float32 and hit.vector.shape == (384,)
        np.testing.assert_allclose(hit.vector, vector, atol=1e-6)
    assert all("quokka" in hit.episode().text and hit.score > 0 for hit in lexical)  # BM25


def test_similarities_from_the_vector_index_are_true_cosines(tmp_path: Path,
                                                             embedder: Embedder) -> None:
    """The IVF_RQ index ranks by an estimate from 4-bit codes; what the store reports, and what
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
    ids = store.search_vector_hits(query, 10, ["main"])
    assert [e.id for e, _ in hits] == [f.id for f in ids]
    for (episode, similarity), found in zip(hits, ids, strict=True):
        exact = float(np.dot(query, by_id[episode.id]))
        assert similarity == pytest.approx(exact, abs=1e-4)
        assert found.score == pytest.approx(exact, abs=1e-4)
        np.testing.assert_allclose(found.vector, by_id[episode.id], atol=1e-6)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert hits[0][1] > 0.8  # a near neighbour, not 2 cos - 1


def test_searches_skip_the_namespace_filter_only_while_it_would_keep_every_row(
        tmp_path: Path, embedder: Embedder) -> None:
    """Without a filter a search is ~1 ms cheaper; a namespace written after the first
    search (or found at open) must bring the filter back, or reads would cross namespaces."""
    rng = np.random.default_rng(21)
    store = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=10_000)
    mine = [make_episode(i, text=f"episode {i} wombat swap") for i in range(20)]
    store.upsert(mine, unit(rng, len(mine)))
    query = unit(rng, 1)[0]
    assert {e.namespace for e, _ in store.search_vector(query, 10, ["main"])} == {"main"}
    theirs = [make_episode(100 + i, namespace="other", text=f"other {i} wombat swap")
              for i in range(5)]
    store.upsert(theirs, np.repeat(query[None, :], len(theirs), axis=0))  # the best matches

    def namespaces_found(s: EpisodeStore, asked: list[str]) -> set[str]:
        dense = {e.namespace for e, _ in s.search_vector(query, 10, asked)}
        lexical = {f.episode().namespace for f in s.search_text_hits("wombat", 30, asked)}
        return dense | lexical

    assert namespaces_found(store, ["main"]) == {"main"}
    assert namespaces_found(store, ["main", "other"]) == {"main", "other"}
    assert namespaces_found(store, ["other"]) == {"other"}
    reopened = EpisodeStore.open(tmp_path / "ep", embedder.signature, index_min_rows=10_000)
    assert namespaces_found(reopened, ["main"]) == {"main"}
    store.delete([e.id for e in theirs])  # gone, but a stale superset only costs the filter
    assert namespaces_found(store, ["main"]) == {"main"}

"""A store written by an older version (row layout 1) is upgraded once, losslessly."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from structlog.testing import capture_logs

from golem.grimoire import episodes_layout as layout
from golem.grimoire.embedder import Embedder
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.records import Episode

from .test_episodes import make_episode, unit

# Layout 1 as it was written to disk: one column per field, the payload a JSON string.
LAYOUT1 = (
    ("id", pa.string()), ("namespace", pa.string()), ("chain_id", pa.int64()),
    ("block_number", pa.int64()), ("block_hash", pa.string()), ("log_index", pa.int64()),
    ("tx_hash", pa.string()), ("tick", pa.int64()), ("observed_at", pa.float64()),
    ("category", pa.string()), ("protocol", pa.string()), ("text", pa.string()),
    ("payload", pa.string()), ("curiosity", pa.float64()), ("importance", pa.float64()),
    ("quality_verified", pa.bool_()), ("replay_count", pa.int64()),
    ("pad_pleasure", pa.float64()), ("pad_arousal", pa.float64()),
    ("pad_dominance", pa.float64()), ("prov_source", pa.string()),
    ("prov_generation", pa.int64()), ("prov_author", pa.string()),
    ("prov_process", pa.string()), ("prov_bloodstain", pa.bool_()),
    ("prov_verified", pa.bool_()), ("signature", pa.string()),
)


def layout1_rows(episodes: list[Episode], vectors: np.ndarray, signature_id: str) -> pa.Table:
    columns: dict[str, list[object]] = {name: [] for name, _ in LAYOUT1}
    for e in episodes:
        p = e.provenance
        values = (e.id, e.namespace, e.chain_id, e.block_number, e.block_hash, e.log_index,
                  e.tx_hash, e.tick, e.observed_at, e.category, e.protocol, e.text,
                  json.dumps(e.payload, sort_keys=True), e.curiosity, e.importance,
                  e.quality_verified, e.replay_count, *e.pad.as_tuple(), str(p.source),
                  p.generation, p.author, p.process, p.bloodstain, p.verified, signature_id)
        for (name, _), value in zip(LAYOUT1, values, strict=True):
            columns[name].append(value)
    arrays = [pa.array(columns[name], type=kind) for name, kind in LAYOUT1]
    flat = pa.array(vectors.astype(np.float32).reshape(-1))
    arrays.append(pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1]))
    return pa.Table.from_arrays(arrays, names=[*(n for n, _ in LAYOUT1), "vector"])


def test_a_layout1_store_is_upgraded_on_open_with_every_field_and_vector(
        tmp_path: Path, embedder: Embedder) -> None:
    sig = embedder.signature
    directory = tmp_path / "ep"
    directory.mkdir()
    episodes = [make_episode(i) for i in range(40)]
    episodes[3] = make_episode(3, namespace="other")
    vectors = unit(np.random.default_rng(2), len(episodes))
    old = layout.StoreMeta(layout.new_table_name(sig), sig)
    layout.write_meta(directory, old)
    lancedb.connect(str(directory)).create_table(old.table,
                                                 layout1_rows(episodes, vectors, sig.id))

    with capture_logs() as logs:  # a long start-up says why
        store = EpisodeStore.open(directory, sig, index_min_rows=10_000)
    # (the info line at the end is filtered when an earlier test set the level to warning)
    started = [e for e in logs if e["log_level"] == "warning"]
    assert len(started) == 1 and started[0]["episodes"] == 40
    assert started[0]["event"].startswith("episode store: upgrading its row layout")

    meta = layout.read_meta(directory)
    assert meta is not None and meta.table != old.table  # switched to the copy
    assert not layout.table_dir(directory, old.table).exists()  # the old table is gone
    assert store.get([e.id for e in episodes]) == episodes  # every field, every row
    stored = store.vectors([e.id for e in episodes])
    for e, v in zip(episodes, vectors, strict=True):
        np.testing.assert_array_equal(stored[e.id], v)
    hits = store.search_vector(vectors[5], 3, ["main"])
    assert hits[0][0] == episodes[5] and hits[0][1] > 0.999
    assert [e.id for e, _ in store.search_vector(vectors[3], 3, ["other"])] == [episodes[3].id]
    # written again in today's layout: a second open changes nothing
    store.upsert([make_episode(50)], unit(np.random.default_rng(3), 1))
    again = EpisodeStore.open(directory, sig, index_min_rows=10_000)
    assert layout.read_meta(directory) == meta
    assert again.count() == 41

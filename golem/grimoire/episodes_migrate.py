"""Copy every episode into a new table: re-embedded (reembed), or into the current row
layout (a store written by an older version).

The new table is not live until the store's pointer file names it, so a failure
or a crash here leaves the old store untouched; the caller removes the copy.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from golem.grimoire.episodes_schema import (
    arrow_vectors,
    episode_schema,
    from_row,
    to_table,
    unit_vectors,
)
from golem.grimoire.errors import GrimoireError, InvalidMemory
from golem.grimoire.records import Episode, Pad, Provenance, Source
from golem.grimoire.signature import ModelSignature

EmbedFn = Callable[[Sequence[str]], np.ndarray]
# An episode made again (e.g. re-rendered from its payload); None keeps it as it is.
TransformFn = Callable[[Episode], Episode | None]
ProgressFn = Callable[[int, int], None]  # (rows copied so far, rows in all)
WRITE_ROWS = 8192  # rows per commit to the new table: few fragments, bounded memory


def current_layout(table: Any) -> bool:
    """Whether a table has today's row layout (layout 1 had no "record" column)."""
    return "record" in table.schema.names


def copy_episodes(source: Any, new: Any, target: ModelSignature, batch_size: int,
                  embed_fn: EmbedFn | None = None, *, transform: TransformFn | None = None,
                  reuse_vectors: bool = False, progress: ProgressFn | None = None) -> int:
    """Copy all rows of ``source`` (either layout) into the empty table ``new`` in today's
    layout, each episode through ``transform`` if given, with vectors from ``embed_fn`` if
    given (else the stored ones). ``reuse_vectors``: the stored vectors are in the target's
    space, so only episodes whose text ``transform`` changed are embedded. ``progress``
    is called after every batch. Returns rows copied."""
    schema = episode_schema(target.dim)
    read = from_row if current_layout(source) else _from_layout1
    expected = int(source.count_rows())
    pending: list[pa.Table] = []
    pending_rows = written = 0
    for batch in source.search().to_batches(batch_size):
        if batch.num_rows == 0:
            continue
        table = pa.Table.from_batches([batch])
        stored = [read(row) for row in table.drop_columns(["vector"]).to_pylist()]
        episodes = [(transform(e) or e) if transform else e for e in stored]
        if embed_fn is None or reuse_vectors:  # stored vectors in the target's space
            vectors = np.array(arrow_vectors(table, target.dim), dtype=np.float32)
        else:
            vectors = np.empty((len(episodes), target.dim), dtype=np.float32)
        if embed_fn is not None:
            redo = [i for i, (old, now) in enumerate(zip(stored, episodes, strict=True))
                    if not reuse_vectors or old.text != now.text]
            if redo:
                vectors[redo] = _embedded([episodes[i] for i in redo], target, embed_fn)
        pending.append(to_table(episodes, vectors, target.id, schema))
        pending_rows += batch.num_rows
        if pending_rows >= WRITE_ROWS:
            new.add(pa.concat_tables(pending))
            written += pending_rows
            pending, pending_rows = [], 0
        if progress is not None:
            progress(written + pending_rows, expected)
    if pending:
        new.add(pa.concat_tables(pending))
        written += pending_rows
    if written != expected or int(new.count_rows()) != expected:
        raise GrimoireError(f"episode copy: copied {written} of {expected} rows")
    # Nobody else reads the new table yet: keep only its last version (1 ms, not 0: no warning).
    new.optimize(cleanup_older_than=timedelta(milliseconds=1), delete_unverified=True)
    return written


def _embedded(episodes: Sequence[Episode], target: ModelSignature,
              embed_fn: EmbedFn) -> np.ndarray:
    texts = [e.text for e in episodes]
    try:
        return unit_vectors(embed_fn(texts), len(texts), target.dim)
    except InvalidMemory as exc:
        raise GrimoireError(f"reembed: embed_fn returned bad vectors: {exc}") from None


def _from_layout1(row: dict[str, Any]) -> Episode:
    """A row of layout 1 (one column per field, the payload as a JSON string)."""
    return Episode(
        id=row["id"], namespace=row["namespace"], chain_id=row["chain_id"],
        block_number=row["block_number"], block_hash=row["block_hash"],
        log_index=row["log_index"], tx_hash=row["tx_hash"], tick=row["tick"],
        observed_at=row["observed_at"], category=row["category"], protocol=row["protocol"],
        text=row["text"], payload=json.loads(row["payload"]), curiosity=row["curiosity"],
        importance=row["importance"], quality_verified=row["quality_verified"],
        replay_count=row["replay_count"],
        pad=Pad(row["pad_pleasure"], row["pad_arousal"], row["pad_dominance"]),
        provenance=Provenance(
            source=Source(row["prov_source"]), generation=row["prov_generation"],
            author=row["prov_author"], process=row["prov_process"],
            bloodstain=row["prov_bloodstain"], verified=row["prov_verified"]))

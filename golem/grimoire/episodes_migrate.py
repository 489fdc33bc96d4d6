"""Copy every episode into a new table with vectors from another model (the reembed step).

The new table is not live until the store's pointer file names it, so a failure
or a crash here leaves the old store untouched; the caller removes the copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from golem.grimoire.episodes_schema import ROW_COLUMNS, episode_schema, unit_vectors
from golem.grimoire.errors import GrimoireError, InvalidMemory
from golem.grimoire.signature import ModelSignature

EmbedFn = Callable[[Sequence[str]], np.ndarray]
WRITE_ROWS = 8192  # rows per commit to the new table: few fragments, bounded memory


def copy_reembedded(source: Any, new: Any, target: ModelSignature, embed_fn: EmbedFn,
                    batch_size: int) -> int:
    """Re-embed all rows of ``source`` into the empty table ``new``; returns rows copied."""
    schema = episode_schema(target.dim)
    expected = int(source.count_rows())
    pending: list[pa.Table] = []
    pending_rows = written = 0
    for batch in source.search().select(list(ROW_COLUMNS)).to_batches(batch_size):
        if batch.num_rows == 0:
            continue
        pending.append(_reembedded(pa.Table.from_batches([batch]), target, embed_fn, schema))
        pending_rows += batch.num_rows
        if pending_rows >= WRITE_ROWS:
            new.add(pa.concat_tables(pending))
            written += pending_rows
            pending, pending_rows = [], 0
    if pending:
        new.add(pa.concat_tables(pending))
        written += pending_rows
    if written != expected or int(new.count_rows()) != expected:
        raise GrimoireError(f"reembed: copied {written} of {expected} rows")
    # Nobody else reads the new table yet: keep only its last version (1 ms, not 0: no warning).
    new.optimize(cleanup_older_than=timedelta(milliseconds=1), delete_unverified=True)
    return written


def _reembedded(table: pa.Table, target: ModelSignature, embed_fn: EmbedFn,
                schema: pa.Schema) -> pa.Table:
    texts = table.column("text").to_pylist()
    try:
        vectors = unit_vectors(embed_fn(texts), len(texts), target.dim)
    except InvalidMemory as exc:
        raise GrimoireError(f"reembed: embed_fn returned bad vectors: {exc}") from None
    table = table.set_column(table.schema.get_field_index("signature"), "signature",
                             pa.array([target.id] * len(texts), pa.string()))
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    table = table.append_column(schema.field("vector"),
                                pa.FixedSizeListArray.from_arrays(flat, target.dim))
    return table.cast(schema)

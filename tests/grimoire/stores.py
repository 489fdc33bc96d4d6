"""A Grimoire's stores opened directly, for tests that must look beneath the facade.

The facade reads and writes one golem's own namespace; a test that plants another
namespace's rows or scratch notes at chosen times, or inspects the forget log, the
causal edges or every namespace's rows, opens the store files itself, as a second
connection:

    with semantic_store(config.data_dir, embedder.signature) as store:
        store.put([foreign_entry], vectors)

SQLite connections share every commit. LanceDB handles do not share a view, so seed
episodes before the Grimoire opens and read them after it closed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from golem.grimoire.episode_files import EPISODES_DIR
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.grimoire import MEMORY_DIR, SEMANTIC_FILE
from golem.grimoire.scratch import ScratchLog
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.signature import ModelSignature


@contextmanager
def semantic_store(data_dir: Path, signature: ModelSignature) -> Iterator[SemanticStore]:
    store = SemanticStore.open(data_dir / SEMANTIC_FILE, signature.id, signature.dim)
    try:
        yield store
    finally:
        store.close()


@contextmanager
def episode_store(data_dir: Path, signature: ModelSignature) -> Iterator[EpisodeStore]:
    data_dir.mkdir(parents=True, exist_ok=True)
    store = EpisodeStore.open(data_dir / EPISODES_DIR, signature, index_min_rows=10_000)
    try:
        yield store
    finally:
        store.close()


def scratch_log(data_dir: Path) -> ScratchLog:
    """The scratch WAL of the Grimoire in ``data_dir`` (notes appended here at chosen
    times, without the indexing Grimoire.note does)."""
    return ScratchLog(data_dir / MEMORY_DIR)

"""``golem memory reembed``: move every stored vector to the configured model, and
episodes to today's renderings.

Each store migrates all-or-nothing: the episode store copies into a new table
(each episode re-rendered by the caller's ``transform``, re-embedded where its
text changed or the model did) and switches with one atomic pointer write; the
semantic store swaps every vector and its recorded signature in one SQLite
transaction. An interruption or a crash leaves a store either wholly old or
wholly new, never mixed, and the command can simply be run again: entries
already on the configured model are left alone, and episodes whose rendering
did not change keep their vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio.to_thread
import structlog

from golem.config import Config
from golem.grimoire.episode_files import EPISODES_DIR
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.episodes_migrate import ProgressFn, TransformFn
from golem.grimoire.model_choice import load_embedder
from golem.grimoire.records import Episode
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.store_files import SEMANTIC_FILE

log = structlog.get_logger("golem.grimoire.migration")


@dataclass(frozen=True)
class ReembedReport:
    signature: str
    episodes: int  # episodes copied (0: the store was left alone)
    entries: int
    episodes_already_current: bool
    entries_already_current: bool
    episodes_rerendered: int = 0  # episodes whose text the transform changed


async def reembed_all(config: Config, transform: TransformFn | None = None,
                      progress: ProgressFn | None = None) -> ReembedReport:
    """Re-embed what is not on the configured model; with ``transform``, copy every episode
    through it (re-rendering) and embed those whose text changed. ``progress(done, total)``
    after every batch of episodes."""
    return await anyio.to_thread.run_sync(_reembed_sync, config, transform, progress)


def _reembed_sync(config: Config, transform: TransformFn | None,
                  progress: ProgressFn | None) -> ReembedReport:
    cfg = config.grimoire
    embedder = load_embedder(config, keep_store=False)
    target = embedder.signature
    data_dir = config.data_dir

    episodes = EpisodeStore.open(data_dir / EPISODES_DIR, target,
                                 index_min_rows=cfg.index_min_rows, for_migration=True)
    episodes_current = not episodes.needs_migration
    changed = 0

    def counted(episode: Episode) -> Episode | None:
        nonlocal changed
        assert transform is not None
        made = transform(episode)
        if made is not None and made.text != episode.text:
            changed += 1
        return made

    try:
        moved_episodes = 0 if episodes_current and transform is None else episodes.reembed(
            embedder.embed_shapes, transform=counted if transform else None, progress=progress)
    finally:
        episodes.close()
    log.info("episodes re-embedded", count=moved_episodes, rerendered=changed,
             already_current=episodes_current)

    path = data_dir / SEMANTIC_FILE
    stored = SemanticStore.stored_signature(path)
    entries_current = stored is None or stored[0] == target.id
    moved_entries = 0
    if not entries_current:
        assert stored is not None
        semantic = SemanticStore.open(path, stored[0], stored[1])
        try:
            entries = list(semantic.iter_all())
            vectors = embedder.embed([e.text for e in entries])
            moved_entries = semantic.replace_vectors(
                {e.id: vectors[i] for i, e in enumerate(entries)}, target.id, target.dim)
        finally:
            semantic.close()
    log.info("entries re-embedded", count=moved_entries, already_current=entries_current)
    return ReembedReport(target.id, moved_episodes, moved_entries, episodes_current,
                         entries_current, changed)

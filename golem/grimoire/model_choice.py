"""The embedder a golem's memory opens with: the configured graph, or under ``auto`` the
one its stores were embedded with, else the one this CPU runs fastest
(golem.grimoire.compute decides; this module reads what it decides from).
"""

from __future__ import annotations

import structlog

from golem.config import Config
from golem.grimoire.compute import Choice, ComputeUnavailable, choose, cpu
from golem.grimoire.embedder import Embedder, offered, read_signature
from golem.grimoire.episode_files import EPISODES_DIR
from golem.grimoire.episodes import EpisodeStore
from golem.grimoire.errors import EmbedderUnavailable
from golem.grimoire.semantic import SemanticStore
from golem.grimoire.store_files import SEMANTIC_FILE

log = structlog.get_logger("golem.grimoire.model_choice")


def choose_compute(config: Config, *, keep_store: bool = True) -> Choice:
    """The graph to run for ``config``'s data dir. ``keep_store``: under ``auto``, an
    existing store's space wins (the daemon, the memory CLI); False for a re-embed, whose
    target is what a new store would get. EmbedderUnavailable when the model directory
    is missing or lacks the configured graph."""
    cfg = config.grimoire
    graphs = offered(cfg.model_dir)
    recorded = None
    if keep_store and cfg.embed_compute == "auto":
        stored = EpisodeStore.stored_signature(config.data_dir / EPISODES_DIR)
        if stored is not None:
            recorded = stored.version
        else:
            entries = SemanticStore.stored_signature(config.data_dir / SEMANTIC_FILE)
            if entries is not None:  # entries only: match by signature id
                recorded = next((space for c, space in graphs.items()
                                 if read_signature(cfg.model_dir, c).id == entries[0]), None)
    try:
        return choose(cfg.embed_compute, graphs, recorded, cpu())
    except ComputeUnavailable as exc:
        raise EmbedderUnavailable(str(exc)) from None


def load_embedder(config: Config, *, keep_store: bool = True) -> Embedder:
    """The embedder ``choose_compute`` picks, loaded (blocking: call from a thread)."""
    choice = choose_compute(config, keep_store=keep_store)
    embedder = Embedder.load(config.grimoire.model_dir, config.grimoire.embed_batch_size,
                             compute=choice.compute)
    log.info("embedder loaded", compute=choice.compute, reason=choice.reason,
             signature=embedder.signature.id)
    return embedder

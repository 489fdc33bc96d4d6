"""Which tick handlers this build registers on each loop.

This is where capture (Gamma), cognition (Theta) and consolidation (Delta)
plug in as they are built. None are built yet, so every loop ticks with no
handlers and ``golem status`` reports that plainly.
"""

from __future__ import annotations

from golem.config import Config
from golem.runtime.handlers import HandlerRegistry

# What each loop will do once its part exists; shown by `golem status`.
PLANNED: dict[str, str] = {
    "gamma": "chain capture and triage (not built yet)",
    "theta": "context governor and cognition (not built yet)",
    "delta": "consolidation, curator, dreams, mortality (not built yet)",
}


def build_registry(config: Config) -> HandlerRegistry:
    """The handlers for a daemon built from ``config``."""
    del config  # later parts read their sections from it
    return HandlerRegistry()

"""Opening the model tiers: one ModelCognition and its spend ledger, when configured.

Used by the composition root (golem.wiring) and by `golem die` run without a
daemon. With `cognition.provider` other than "anthropic" there is no model and
the offline tier decides. The API key is read here (golem.cognition.keys: a 0600
file or a systemd credential) and handed to the provider only.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from golem.config import Config

if TYPE_CHECKING:
    from golem.cognition.model import ModelCognition
    from golem.grimoire.grimoire import Grimoire


def open_model(config: Config, stack: AsyncExitStack, grimoire: Grimoire,
               now: Callable[[], float], *,
               life_limit_usd: float | None = None) -> ModelCognition | None:
    """The model tiers, when configured: one instance, one spend ledger, shared by Theta's
    decisions, Delta's consolidation, rewrite and Loop 3 calls, and the death reflection.
    ``life_limit_usd``: what normal life may spend (mortality ring-fences the death
    reserve); None: the ledger's own budget only. Errors: a missing or unsafe key file
    raises the key loader's error."""
    if config.cognition.provider != "anthropic":
        return None
    from golem.cognition.keys import load_api_key  # noqa: PLC0415
    from golem.cognition.model import LEDGER_FILE, ModelCognition  # noqa: PLC0415

    model = ModelCognition.open(config.cognition, load_api_key(config),
                                config.data_dir / "cognition" / LEDGER_FILE, grimoire, now)
    stack.push_async_callback(model.aclose)
    if life_limit_usd is not None:
        model.ledger.limit_life(life_limit_usd)
    return model

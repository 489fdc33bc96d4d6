"""Episode conventions beyond decoded chain events: reverts and action outcomes (pure).

Written by Gamma (golem.gamma.reverts: a reverted transaction to a watched
address emits no log) and by the actions room (golem.actions.execution: the
outcome of each executed action); read by consolidation, retention and the
testament. One definition, so writers and readers agree:

- a reverted transaction: category ``"revert"``, payload ``{"event": "Reverted",
  "address": <to>, "function": <name>, "token": <token address or None>,
  "action": <e.g. "sell">}``;
- an action outcome: category ``"strategy_outcome"``, payload ``{"action": str,
  "result": "ok" | "reverted", "pnl_usd": float, ...}``.
"""

from __future__ import annotations

from typing import Any

REVERT_CATEGORY = "revert"
REVERT_EVENT = "Reverted"
OUTCOME_CATEGORY = "strategy_outcome"


def revert_payload(address: str, function: str, token: str | None, action: str) -> dict[str, Any]:
    """The payload of a revert episode (the convention above)."""
    return {"event": REVERT_EVENT, "address": address, "function": function, "token": token,
            "action": action}


def outcome_payload(action: str, result: str, pnl_usd: float) -> dict[str, Any]:
    """The payload of a strategy_outcome episode (the convention above)."""
    return {"action": action, "result": result, "pnl_usd": pnl_usd}

"""Episode conventions beyond decoded chain events: reverts and action outcomes (pure).

Written by Gamma (golem.gamma.reverts: a reverted transaction to a watched
address emits no log) and by the actions room (golem.actions.execution: the
outcome of each executed action); read by consolidation, retention and the
testament. One definition, so writers and readers agree:

- a reverted transaction: category ``"revert"``, payload ``{"event": "Reverted",
  "address": <to>, "function": <name>, "token": <token address or None>,
  "action": <e.g. "sell">}``;
- an action outcome: category ``"strategy_outcome"``, payload ``{"action": str,
  "result": "ok" | "reverted", "pnl_usd": float, ...}`` (the executor adds "address",
  "detail", "equity_before", "equity_after", "tx_hashes"), text ``outcome_text``.
"""

from __future__ import annotations

from collections.abc import Mapping
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


def outcome_text(payload: Mapping[str, Any], venue: str) -> str:
    """A strategy_outcome episode's sentence, from its payload and what its contract is
    called (e.g. "the WETH/USDC pool"): "Our own swap on the WETH/USDC pool: ok. <detail>.
    Realised a loss of $0.0278; equity $101.19 -> $101.16." Says loss or gain in words: a
    sentence model does not read the sign of a number."""
    pnl = float(payload.get("pnl_usd") or 0.0)
    result = (f"a loss of ${-pnl:,.4f}" if pnl < 0 else f"a gain of ${pnl:,.4f}" if pnl > 0
              else "no gain or loss")
    detail = str(payload.get("detail") or "").rstrip(".")
    return (f"Our own {payload.get('action')} on {venue}: {payload.get('result')}. "
            f"{detail + '. ' if detail else ''}Realised {result}; equity "
            f"${float(payload.get('equity_before') or 0.0):,.2f} -> "
            f"${float(payload.get('equity_after') or 0.0):,.2f}.")

"""What a decision may ask the actions room to do: the `ProposedAction` schema (pure).

A proposal is only a request. The policy cage (golem.actions.cage) decides whether
it may run, and the executor (golem.actions.execution) checks the cage again with
the current portfolio before anything is signed.
"""

from __future__ import annotations

from dataclasses import dataclass

ACTION_KINDS = ("swap", "add_liquidity", "remove_liquidity", "supply", "withdraw", "approve",
                "hold")


@dataclass(frozen=True)
class ProposedAction:
    """One proposed action; `kind` is one of ACTION_KINDS (the parser refuses others)."""

    kind: str
    contract: str = ""
    asset_in: str = ""
    asset_out: str = ""
    amount: float = 0.0
    notional_usd: float = 0.0
    reason: str = ""

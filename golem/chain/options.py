"""The simulated market's options, read from ``[chain]``: what SimulatedSource.create
takes besides the seed and the start (its activity, how long it holds a regime, its
price's pull toward where it started, its planted regularity and mid-life fact
changes). Every caller that opens a simulated
chain opens it with these, since they are part of the chain's rules: a data dir opened
with other values is refused."""

from __future__ import annotations

from typing import Any

from golem.chain.changes import FactChanges
from golem.chain.planted import PlantedDrops
from golem.config import ChainSection, ChangesSection, PlantedSection


def market_options(chain: ChainSection) -> dict[str, Any]:
    """Keyword arguments for SimulatedSource.create: activity, regime_hold, planted,
    changes, pull_half_life_s."""
    return {"activity": chain.market_activity, "regime_hold": chain.regime_hold,
            "pull_half_life_s": chain.price_pull_half_life_s,
            "planted": planted_drops(chain.planted),
            "changes": fact_changes(chain.changes)}


def planted_drops(section: PlantedSection) -> PlantedDrops | None:
    """The simulated market's planted regularity from ``[chain.planted]``; None when off."""
    if not section.enabled:
        return None
    return PlantedDrops(drop=section.drop, max_drop=section.max_drop,
                        lookback_s=section.lookback_s, horizon_s=section.horizon_s,
                        pull=section.pull, revert_in=section.revert_in,
                        continue_in=section.continue_in, swap_after_s=section.swap_after_s)


def fact_changes(section: ChangesSection) -> FactChanges | None:
    """The simulated market's mid-life fact changes from ``[chain.changes]``; None when
    none is asked for (the market as it always was)."""
    changes = FactChanges(stale_oracle_at_s=section.stale_oracle_at_s,
                          stale_oracle_for_s=section.stale_oracle_for_s,
                          drain_at_s=section.drain_at_s, drain_share=section.drain_share,
                          honeypot_at_s=section.honeypot_at_s,
                          fee_change_at_s=section.fee_change_at_s,
                          fee_change_to=section.fee_change_to)
    return changes if changes.any else None

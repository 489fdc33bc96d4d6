"""Opening the actions room: the policy cage, the executor, and Thanatopsis' Settle.

Used by the composition root (golem.wiring) and by `golem die` run without a
daemon (golem.mortality.die). Nothing here decides what to do; it only builds
the parts that carry a decision out. An executor opened here is closed by the
caller's exit stack. `accepting` is the mortality room's answer to "may new
positions open?" (False from the death protocol's Acceptance on); the actions
room asks it before every risk-increasing action and never reads mortality's
files itself.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from golem.actions.cage import Cage
from golem.config import Config

if TYPE_CHECKING:
    from golem.actions.execution import Executor
    from golem.chain.source import SimulatedSource
    from golem.grimoire.grimoire import Grimoire

Settle = Callable[[], Awaitable[dict[str, Any]]]


def build_cage(config: Config, watched: Sequence[str]) -> Cage:
    """The policy cage; with no allowed_contracts, the contracts capture watches."""
    cfg = config.cage
    return Cage(frozenset(cfg.allowed_contracts or watched), frozenset(cfg.allowed_assets),
                cfg.max_notional_usd, cfg.max_position_usd, cfg.max_drawdown, cfg.max_approval)


async def open_actions(config: Config, stack: AsyncExitStack, grimoire: Grimoire, cage: Cage,
                       *, source: SimulatedSource | None, now: Callable[[], float],
                       accepting: Callable[[], bool] | None = None) -> Executor | None:
    """The executor (actions.enabled): on the simulated market when there is one, else over
    RPC with actions.market_file; None when it cannot act (the reason is logged)."""
    if not config.actions.enabled:
        return None
    from golem.actions.execution import (  # noqa: PLC0415 - loads the EVM stack
        open_executor,
        open_rpc_executor,
    )

    executor = await anyio.to_thread.run_sync(lambda: open_executor(
        config, source, cage, grimoire, now=now(), environ=os.environ)
        if source is not None else open_rpc_executor(config, cage, grimoire,
                                                     environ=os.environ))
    if executor is not None:
        stack.callback(executor.book.close)
        if accepting is not None:
            executor.accepting = accepting
    return executor


def settle_with(executor: Executor | None, now: Callable[[], float]) -> Settle | None:
    """Thanatopsis' Settle: every position back to USDC on chain (None: nothing can settle,
    no executor or a dry run)."""
    if executor is None or executor.dry_run:
        return None
    live = executor

    async def settle_positions() -> dict[str, Any]:
        return await live.settle(now())
    return settle_positions


async def open_settle(config: Config, stack: AsyncExitStack, grimoire: Grimoire,
                      now: Callable[[], float],
                      accepting: Callable[[], bool] | None = None) -> Settle | None:
    """Settle for `golem die` with no daemon running: the simulated chain is rebuilt from its
    journal first (a replay of every journalled market step), a node is used as it is. None
    when nothing can have been bought (actions off, a dry run, no chain, a chain never run)."""
    if not config.actions.enabled or config.dry_run or config.chain.mode == "off":
        return None
    source = None
    watched: tuple[str, ...] = tuple(config.chain.rpc.addresses)
    if config.chain.mode == "simulated":
        from golem.chain.cursor import CaptureStore  # noqa: PLC0415
        from golem.chain.options import market_options  # noqa: PLC0415
        from golem.chain.source import SimulatedSource  # noqa: PLC0415

        if not (config.data_dir / "chain").exists():
            return None  # it never ran on a chain: nothing was ever bought
        store = await anyio.to_thread.run_sync(CaptureStore.open, config.data_dir / "chain")
        stack.callback(store.close)
        if store.sim_meta("seed") is None:
            return None
        source = await anyio.to_thread.run_sync(
            partial(SimulatedSource.create, **market_options(config.chain)),
            config.golem.seed, config.clock.start.timestamp(), store)
        watched = tuple(source.watch.addresses)
    executor = await open_actions(config, stack, grimoire, build_cage(config, watched),
                                  source=source, now=now, accepting=accepting)
    return settle_with(executor, now)

"""Carry out accepted actions on chain, record the result, and settle everything at death.

Per action, under the chain's lock (Gamma's market step cannot interleave): read the
holdings off chain, check the policy cage again with that CURRENT portfolio, plan
the calls, and (unless dry run) preflight, sign and send each one. Every result (ok,
reverted with its reason, refused, dry run) is booked in positions.db and becomes a
"strategy_outcome" episode, so consolidation learns from what the golem did.

`close_all` (the death protocol's Settle phase) removes liquidity, withdraws supply
and swaps every other token to USDC. It reads chain state each time, so a second call
after a crash finds nothing left to do. The same executor acts over RPC (DirectChain).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import structlog

from golem.actions.cage import RISK_REDUCING, Cage, Portfolio, check
from golem.actions.plans import Plan, Refused, plan
from golem.actions.positions import PositionBook, Snapshot, Valuer
from golem.actions.proposal import ProposedAction
from golem.actions.signer import build_signed
from golem.actions.wallet import CREDENTIAL, open_wallet
from golem.chain.evm import ChainError
from golem.chain.fees import PIPS
from golem.chain.market import load_market
from golem.chain.names import market_names
from golem.chain.transactions import DirectChain, TxChain, preflight
from golem.grimoire.payloads import OUTCOME_CATEGORY, outcome_payload, outcome_text
from golem.grimoire.records import Episode, Provenance

if TYPE_CHECKING:
    from collections.abc import Mapping

    from golem.actions.wallet import Wallet
    from golem.chain.source import SimulatedSource
    from golem.config import Config
    from golem.grimoire.grimoire import Grimoire

log = structlog.get_logger("golem.actions.execution")

OK, REVERTED, REFUSED, DRY_RUN = "ok", "reverted", "refused", "dry_run"
OUTCOME_CURIOSITY = 0.4
DUST_USD = 1e-6  # a balance worth less is not worth a transaction


@dataclass(frozen=True)
class ExecutionResult:
    action: ProposedAction
    status: str  # ok | reverted | refused | dry_run
    detail: str
    tx_hashes: tuple[str, ...] = ()
    pnl_usd: float = 0.0
    equity_before: float = 0.0
    equity_after: float = 0.0
    seq: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.action.kind, "contract": self.action.contract,
                "status": self.status, "detail": self.detail, "tx_hashes": list(self.tx_hashes),
                "pnl_usd": round(self.pnl_usd, 6), "equity_before": round(self.equity_before, 6),
                "equity_after": round(self.equity_after, 6)}


@dataclass
class Executor:
    chain: TxChain
    wallet: Wallet
    valuer: Valuer
    book: PositionBook
    cage: Cage
    dry_run: bool
    max_slippage: float
    gas_limit: int
    grimoire: Grimoire | None = None
    namespace: str = "golem"
    # False from the death protocol's Acceptance on: only risk-reducing actions run
    accepting: Callable[[], bool] = lambda: True
    _episodes: list[Episode] = field(default_factory=list, init=False)

    # --- the views vitality and the cage need ------------------------------------------

    async def equity_usd(self) -> float:
        """The wallet's holdings marked to market (for vitality)."""
        return (await self.portfolio()).equity_usd

    async def portfolio(self) -> Portfolio:
        return await anyio.to_thread.run_sync(self._portfolio)

    async def snapshot(self) -> Snapshot:
        return await anyio.to_thread.run_sync(self._snapshot)

    async def view(self) -> tuple[Portfolio, tuple[tuple[str, float], ...]]:
        """The cage's portfolio and the spendable balances (symbol, USD) for the tiers."""
        def read() -> tuple[Portfolio, tuple[tuple[str, float], ...]]:
            snap = self._snapshot()
            spendable = tuple((h.label, h.usd) for h in snap.holdings
                              if not h.key.startswith(("lp:", "supply:", "debt:")))
            return self.book.observe(snap), spendable
        return await anyio.to_thread.run_sync(read)

    @property
    def trade_pool(self) -> str:
        """The pool the offline tier trades in (WETH/USDC), by address."""
        return self.valuer.market.pair_weth_usdc

    async def trade_fee(self) -> float | None:
        """The trade pool's current swap fee as a fraction (0.003: 0.3%), read from the
        pool; None (logged) when the chain does not answer."""
        try:
            pips = await anyio.to_thread.run_sync(self.valuer.fee, self.trade_pool)
        except ChainError as exc:
            log.warning("the trade pool's fee could not be read", pool=self.trade_pool,
                        error=str(exc))
            return None
        return pips / PIPS

    def venues(self) -> str:
        """Where actions can go, for the model's view (addresses are what actions name)."""
        m = self.valuer.market
        return (f"Venues: V2 pools WETH/USDC {m.pair_weth_usdc}, WBTC/USDC {m.pair_wbtc_usdc}, "
                f"HONEY/WETH {m.pair_honey_weth}; lending pool {m.lending} (supply/withdraw "
                "WETH or USDC). Amounts are whole tokens of asset_in.")

    # --- acting -------------------------------------------------------------------------

    async def execute(self, actions: list[ProposedAction], *, tick: int,
                      now: float) -> list[ExecutionResult]:
        """Carry out each action in order; results are recorded and remembered. A tick the
        book already holds executions of (the same tick at the same golem time: Theta
        ticking again through times a killed run had reached, since the loops' schedule
        is saved only every flush interval) acts no second time: nothing is done."""
        acted: bool = bool(actions) and await anyio.to_thread.run_sync(
            self.book.executed_at, tick, now)
        if acted:
            log.info("this tick acted before a restart; not again", tick=tick)
            return []
        results = [await anyio.to_thread.run_sync(self._execute, a, tick, now, False)
                   for a in actions if a.kind != "hold"]
        await self._remember()
        return results

    async def close_all(self, *, tick: int, now: float) -> list[ExecutionResult]:
        """Exit every position to USDC (cage bypassed: each step only reduces risk)."""
        results = await anyio.to_thread.run_sync(self._close_all, tick, now)
        await self._remember()
        return results

    async def settle(self, now: float, tick: int = 0) -> dict[str, Any]:
        """close_all for the death protocol's Settle step: what it did and what is left
        ("settled" only when nothing but USDC remains)."""
        done = await self.close_all(tick=tick, now=now)
        snap = await self.snapshot()
        usdc = self.valuer.market.usdc.address.lower()
        left = [{"holding": h.label, "usd": round(h.usd, 6)} for h in snap.holdings
                if h.key != usdc and h.usd >= DUST_USD]
        return {"settled": not left and not self.dry_run, "dry_run": self.dry_run,
                "actions": [r.to_dict() for r in done], "left": left,
                "equity_usd": round(snap.equity_usd, 6)}

    # --- worker-thread side ---------------------------------------------------------------

    def _snapshot(self) -> Snapshot:
        with self.chain.lock:
            return self.valuer.snapshot()

    def _portfolio(self) -> Portfolio:
        return self.book.observe(self._snapshot())

    def _close_all(self, tick: int, now: float) -> list[ExecutionResult]:
        m, usdc = self.valuer.market, self.valuer.market.usdc.address
        results: list[ExecutionResult] = []
        with self.chain.lock:
            for holding in self.valuer.snapshot().holdings:
                if holding.key.startswith("lp:"):
                    action = ProposedAction("remove_liquidity", holding.key[3:],
                                            reason="settle: close positions")
                elif holding.key.startswith("supply:"):
                    action = ProposedAction("withdraw", m.lending, asset_out=holding.key[7:],
                                            reason="settle: close positions")
                else:
                    continue
                results.append(self._execute(action, tick, now, True))
            routes = ((m.honey.address, m.pair_honey_weth), (m.wbtc.address, m.pair_wbtc_usdc),
                      (m.weth.address, m.pair_weth_usdc))
            for token, pair in routes:
                held = self.valuer.snapshot().get(token)
                if held is None or token == usdc or held.usd < DUST_USD:
                    continue
                t = self.valuer.token(token)
                assert t is not None
                action = ProposedAction("swap", pair, asset_in=t.symbol,
                                        amount=held.units / 10**t.decimals,
                                        reason="settle: back to USDC")
                results.append(self._execute(action, tick, now, True, held.units))
        return results

    def _execute(self, action: ProposedAction, tick: int, now: float,
                 settle: bool, exact: int | None = None) -> ExecutionResult:
        with self.chain.lock:
            before = self.valuer.snapshot()
            portfolio = self.book.observe(before)
            verdict = check(action, self.cage, portfolio)
            the_plan: Plan | None = None
            if not settle and not self.accepting() and action.kind not in RISK_REDUCING:
                status, detail = REFUSED, "dying: no new positions (Thanatopsis Acceptance)"
            elif not settle and not verdict.accepted:
                status, detail = REFUSED, "cage: " + "; ".join(verdict.reasons)
            else:
                try:
                    the_plan = plan(action, self.valuer, before, self.max_slippage, exact)
                    status, detail = DRY_RUN if self.dry_run else OK, the_plan.summary
                except Refused as exc:
                    status, detail = REFUSED, str(exc)
            hashes: list[str] = []
            if the_plan is not None and not self.dry_run:
                status, detail = self._send(the_plan, now, hashes)
            after = self.valuer.snapshot() if hashes else before
            seq, pnl = self.book.record(before, after, tick=tick, now=now, kind=action.kind,
                                        contract=action.contract, status=status,
                                        detail=detail, tx_hashes=hashes)
            head = self.chain.evm.head()
        result = ExecutionResult(action, status, detail, tuple(hashes), pnl,
                                 before.equity_usd, after.equity_usd, seq)
        log.info("action executed", kind=action.kind, status=status, detail=detail[:200],
                 pnl_usd=round(pnl, 6), settle=settle)
        self._episodes.append(self._episode(result, the_plan, tick=tick, now=now,
                                            block=head.number, block_hash=head.hash,
                                            settle=settle))
        return result

    def _send(self, the_plan: Plan, now: float, hashes: list[str]) -> tuple[str, str]:
        evm, sender = self.chain.evm, self.wallet.address
        abi = self.valuer.abi
        for call in the_plan.calls:
            try:
                reason = preflight(evm, sender, call.address, abi[call.kind], call.fn,
                                   *call.args)
                if reason is not None:
                    return REVERTED, f"{call.fn} would revert: {reason}"
                raw = build_signed(evm, self.wallet, call.address, abi[call.kind], call.fn,
                                   *call.args, gas=self.gas_limit)
                sent = self.chain.submit(raw, now)
            except ChainError as exc:
                return REVERTED, f"{call.fn} failed: {exc}"
            if sent.tx_hash:
                hashes.append(sent.tx_hash)
            if not sent.ok:
                return REVERTED, f"{call.fn} reverted: {sent.error}"
        return OK, the_plan.summary

    def _episode(self, r: ExecutionResult, the_plan: Plan | None, *, tick: int, now: float,
                 block: int, block_hash: str, settle: bool) -> Episode:
        a = r.action
        key = f"{self.namespace}:execution:{r.seq}".encode()
        payload = {**outcome_payload(a.kind, r.status, r.pnl_usd),
                   "address": a.contract.lower(), "asset_in": a.asset_in,
                   "asset_out": a.asset_out, "amount": a.amount, "notional_usd": a.notional_usd,
                   "reason": a.reason[:200], "detail": r.detail[:300],
                   "tx_hashes": list(r.tx_hashes), "equity_before": r.equity_before,
                   "equity_after": r.equity_after, "settle": settle,
                   "function": the_plan.function if the_plan else "",
                   "token": the_plan.token if the_plan else None}
        venue = (market_names(self.valuer.market).label(a.contract, "contract")
                 if a.contract else "no contract")
        return Episode(
            id=hashlib.sha256(key).hexdigest()[:32], namespace=self.namespace,
            chain_id=self.chain.evm.chain_id, block_number=block, block_hash=block_hash,
            log_index=-1, tx_hash=r.tx_hashes[-1] if r.tx_hashes else "", tick=tick,
            observed_at=now, category=OUTCOME_CATEGORY,
            protocol=the_plan.protocol if the_plan else None,
            text=outcome_text(payload, venue), payload=payload,
            identifiers=tuple(dict.fromkeys(x for x in (a.contract, *r.tx_hashes) if x)),
            curiosity=OUTCOME_CURIOSITY,
            provenance=Provenance(author=self.namespace, process="theta", verified=True))

    async def _remember(self) -> None:
        taken, self._episodes = self._episodes, []
        if taken and self.grimoire is not None:
            await self.grimoire.add_episodes(taken)


def open_executor(config: Config, source: SimulatedSource, cage: Cage, grimoire: Grimoire, *,
                  now: float, environ: Mapping[str, str]) -> Executor:
    """The simulated chain's executor: load (or create) the wallet, fund it once with the
    starting budget, open the book (blocking: run in a worker thread)."""
    wallet = open_wallet(config.actions.key_file, config.data_dir, simulated=True,
                         seed=config.golem.seed, environ=environ)
    if source.fund_wallet(wallet.address, config.mortality.starting_budget_usd, now):
        log.info("simulated wallet funded", address=wallet.address,
                 usd=config.mortality.starting_budget_usd)
    book = PositionBook.open(config.data_dir / "chain")
    return Executor(source, wallet, Valuer(source.evm, source.market, wallet.address), book,
                    cage, config.dry_run, config.actions.max_slippage, config.actions.gas_limit,
                    grimoire, grimoire.namespace)


def open_rpc_executor(config: Config, cage: Cage, grimoire: Grimoire, *,
                      environ: Mapping[str, str]) -> Executor | None:
    """RPC mode's executor (plain JSON-RPC, no journal, never funds the wallet), or None:
    actions recorded only, the log says why. A dry run needs the key for its address only."""
    acts, rpc, creds = config.actions, config.chain.rpc, environ.get("CREDENTIALS_DIRECTORY")
    keyless = not acts.key_file and not (creds and (Path(creds) / CREDENTIAL).exists())
    why = ("no actions.market_file: the venues are unknown" if not acts.market_file else
           "acting needs an http(s) chain.rpc.url" if not rpc.url.startswith("http") else
           "dry run with no wallet key: its holdings are unknown" if config.dry_run and keyless
           else "")
    if why:
        log.info("actions are recorded only, not executed", why=why)
        return None
    from golem.chain.rpc_evm import NodeEvm  # noqa: PLC0415 - web3 (~11 MB) only over RPC

    market = load_market(Path(acts.market_file))
    wallet = open_wallet(acts.key_file, config.data_dir, simulated=False, seed=0, environ=environ)
    evm = NodeEvm(rpc.url, rpc.timeout_s, chain_id=rpc.chain_id)
    log.info("acting over RPC", address=wallet.address, dry_run=config.dry_run)
    book = PositionBook.open(config.data_dir / "chain")
    return Executor(DirectChain(evm), wallet, Valuer(evm, market, wallet.address), book, cage,
                    config.dry_run, config.actions.max_slippage, config.actions.gas_limit,
                    grimoire, grimoire.namespace)

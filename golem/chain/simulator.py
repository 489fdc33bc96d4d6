"""A seeded market driver: on each golem tick it moves block time and sends transactions.

Actors: noise traders (small swaps), a whale (rare large swaps), an arbitrageur
pulling the pools toward the oracle, LPs adding and removing liquidity,
borrowers (supply WETH, borrow USDC, sometimes repay), a liquidator, and
honeypot buyers whose sells revert (recorded, not raised).

The oracle follows a regime-dependent random walk, reflected at PRICE_BAND times
the initial price either way (crashes fall harder than anything climbs, so an
unbounded walk reached ~1e-54 USD after 11 golem days and the actors' amounts
overflowed uint256). Regimes switch by a seeded
Markov chain evaluated once per step (rows of TRANSITIONS: from-regime, columns:
to-regime, in REGIMES order). Calm mostly stays calm; trending and volatile
persist for tens of steps; a crash is rare, short and decays into volatility.
Every switch is ground truth `(golem_time, block_number, regime)`.

Facts can change mid-life (golem.chain.changes, off by default): the oracle goes stale
for a while, the WETH/USDC V2 pool loses most of its liquidity, HONEY turns from a normal
token into a honeypot, the WETH/USDC V2 pool's swap fee changes. The simulator sends the
transactions that make each change (the decision when is `FactChanges`'s) and each change
is ground truth too (`FactChanges.happened`). Every swap the actors send is quoted at its
pool's current fee (read from the pool, golem.chain.fees), so none reverts on a change.

How busy the market is, is an `Activity`. `BUSY` (the code's default, and what the
tests drive) sends the actors' trades on every step: ~2,400 watched events a golem
hour. `POOLS` is closer to what a golem watching a handful of real pools sees: a step
carries the actors' trading only by a per-regime chance, while the oracle, the
arbitrageur and the liquidator still act on every step they have reason to. An
`Activity` can also make the oracle push like a Chainlink feed (an answer on a
relative move or after a heartbeat); `POOLS` does not (see its note).

All randomness comes from one `random.Random(seed)`, and all chain state the
driver reads is itself a function of the seed, so the same seed, activity and golem
times give the same transactions, logs and block hashes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from golem.chain.changes import (
    DRAINED,
    FEE,
    OPENED,
    RESUMED,
    STALE,
    TURNED,
    FactChange,
    FactChanges,
)
from golem.chain.compile import load_artifacts
from golem.chain.evm import Evm, TxResult
from golem.chain.fees import PIPS, amount_out
from golem.chain.market import E18, ORACLE_UNIT, USDC_UNIT, WBTC_UNIT, Market
from golem.chain.planted import PlantedDrops, finite_or_none

REGIMES = ("calm", "trending", "volatile", "crash")
TRANSITIONS: dict[str, tuple[float, float, float, float]] = {
    "calm": (0.94, 0.03, 0.025, 0.005),
    "trending": (0.05, 0.92, 0.025, 0.005),
    "volatile": (0.05, 0.03, 0.90, 0.02),
    "crash": (0.05, 0.0, 0.20, 0.75),
}
# per-step oracle log-return (drift, volatility) and transaction budget
DRIFT_VOL: dict[str, tuple[float, float]] = {
    "calm": (0.0, 0.002), "trending": (0.004, 0.003),
    "volatile": (0.0, 0.012), "crash": (-0.04, 0.015),
}
TX_BUDGET = {"calm": 4, "trending": 6, "volatile": 8, "crash": 10}
MAX_TX_PER_STEP = 20
PRICE_BAND = 10.0  # the oracle stays within initial / 10 .. initial x 10
ARB_THRESHOLD = 0.005
HEALTHY = E18
ZERO_ADDRESS = "0x" + "0" * 40


@dataclass(frozen=True)
class Activity:
    """How much happens on the market. ``trade_chance``: per regime, the chance that a
    step carries the actors' trading (1.0: every step, and no draw is made for it);
    ``oracle_deviation`` / ``oracle_heartbeat_s``: the feed answers when the price moved
    this much (relative) from its last answer or that many golem seconds have passed
    since it (deviation 0: on every step)."""

    name: str
    trade_chance: Mapping[str, float]
    oracle_deviation: float = 0.0
    oracle_heartbeat_s: float = 0.0


BUSY = Activity("busy", dict.fromkeys(REGIMES, 1.0))
# The oracle answers every step here: with mainnet ETH/USD's rule (0.5% or 1 hour) the
# offline tier's forecasts are scored against a feed that rarely moves (benchmarks/README,
# lifetime.py).
POOLS = Activity("pools", {"calm": 0.04, "trending": 0.06, "volatile": 0.1, "crash": 0.2})
ACTIVITIES = {a.name: a for a in (BUSY, POOLS)}


def held_transitions(hold: float) -> dict[str, tuple[float, float, float, float]]:
    """TRANSITIONS with every regime held ``hold`` times longer: each row becomes
    (1 - 1/hold) x staying + row / hold, so the expected stay in each regime is ``hold``
    times the row's, while the chance of each next regime given a switch and the share
    of time spent in each regime (the chain's stationary distribution) are unchanged.
    ``hold`` 1 is TRANSITIONS itself. ValueError for a hold below 1."""
    if not hold >= 1.0:
        raise ValueError(f"regime hold must be >= 1, got {hold}")
    out = {}
    for regime, row in TRANSITIONS.items():
        a, b, c, d = ((1.0 - 1.0 / hold) * (to == regime) + p / hold
                      for to, p in zip(REGIMES, row, strict=True))
        out[regime] = (a, b, c, d)
    return out


def oracle_move(price: float, anchor: float, regime: str, *, trend_sign: float, dt: float,
                shock: float, planted: float = 0.0, pull_half_life_s: float = 0.0) -> float:
    """The oracle's price one step of ``dt`` golem seconds on (pure): the regime's drift
    (a trend's sign is ``trend_sign``) and volatility (both per 10 s tick, scaled by
    sqrt(dt / 10)) times the standard normal ``shock``, plus the planted regularity's
    log-return ``planted``; with ``pull_half_life_s`` > 0 the log-price's distance from
    ``anchor`` also shrinks by half every ``pull_half_life_s`` (a log Ornstein-Uhlenbeck
    pull), so crashes are followed by recoveries; the result is reflected in log space
    into ``anchor`` / PRICE_BAND .. ``anchor`` x PRICE_BAND."""
    drift, vol = DRIFT_VOL[regime]
    scale = math.sqrt(max(dt, 1.0) / 10.0)
    sign = trend_sign if regime == "trending" else 1.0
    pull = 0.0
    if pull_half_life_s > 0:
        pull = -math.log(price / anchor) * (1.0 - 0.5 ** (max(dt, 0.0) / pull_half_life_s))
    moved = price * math.exp(sign * drift * scale + vol * scale * shock + planted + pull)
    low, high = anchor / PRICE_BAND, anchor * PRICE_BAND
    if not low <= moved <= high:
        moved = low * low / moved if moved < low else high * high / moved
    return moved


@dataclass(frozen=True)
class MarketRules:
    """What the simulated market is, besides its seed: its activity, planted regularity,
    mid-life fact changes and how long it holds a regime (``held_transitions``)."""

    activity: Activity = BUSY
    planted: PlantedDrops | None = None
    changes: FactChanges | None = None
    regime_hold: float = 1.0
    pull_half_life_s: float = 0.0

    def describe(self) -> str:
        """What a data dir records of these rules, after the EVM's: empty for the busy,
        unheld, unpulled market without a planted regularity or changes (data dirs of
        it predate every option), else a space and a token for each option set."""
        tokens = []
        if self.activity.name != BUSY.name:
            tokens.append(f"activity={self.activity.name}")
        if self.regime_hold != 1.0:
            tokens.append(f"regime_hold={self.regime_hold:g}")
        if self.pull_half_life_s > 0:
            tokens.append(f"pull_half_life_s={self.pull_half_life_s:g}")
        if self.planted is not None:
            tokens.append(f"planted={self.planted.describe()}")
        if self.changes is not None and self.changes.any:
            tokens.append(f"changes={self.changes.describe()}")
        return "".join(f" {t}" for t in tokens)


@dataclass(frozen=True)
class RegimeSwitch:
    golem_time: float
    block_number: int
    regime: str


@dataclass
class StepReport:
    golem_time: float
    regime: str
    oracle_price: float
    tx_count: int = 0
    reverted: list[tuple[str, str]] = field(default_factory=list)  # (action, tx_hash)
    switches: list[RegimeSwitch] = field(default_factory=list)
    first_block: int = 0
    last_block: int = 0


class MarketSimulator:
    """Drive `market` on `evm` from a seed; `regime` pins the starting regime; `planted`
    (golem.chain.planted, off by default) adds a planted regularity to the oracle;
    `changes` (golem.chain.changes, off by default) makes facts change mid-life;
    `regime_hold` stretches every regime's stay (``held_transitions``; 1: as always);
    `pull_half_life_s` > 0 pulls the oracle's price back toward its initial price
    (``oracle_move``; 0: no pull, as always). ValueError for an unknown regime, a hold
    below 1 or a negative half-life."""

    def __init__(self, evm: Evm, market: Market, seed: int, *,
                 regime: str = "calm", planted: PlantedDrops | None = None,
                 activity: Activity = BUSY, changes: FactChanges | None = None,
                 regime_hold: float = 1.0, pull_half_life_s: float = 0.0) -> None:
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r}; expected one of {REGIMES}")
        if not pull_half_life_s >= 0:
            raise ValueError(f"pull half-life must be >= 0, got {pull_half_life_s}")
        self.pull_half_life_s = pull_half_life_s
        self.evm, self.market = evm, market
        self.activity = activity
        self._answer: float | None = None  # the feed's last answer and its golem time
        self._answered_at = -math.inf
        self.rng = random.Random(seed)  # noqa: S311 - simulation, not crypto
        self.abi = {name: a.abi for name, a in load_artifacts().items()}
        self.regime = regime
        self.transitions = held_transitions(regime_hold)
        self.trend_sign = 1.0
        self.price = market.initial_eth_usd
        self.ground_truth: list[RegimeSwitch] = []
        self._forced: str | None = regime
        self._report: StepReport | None = None
        self._token0s: dict[str, str] = {}
        self.planted = planted
        self.changes = changes if changes is not None and changes.any else None

    def force_regime(self, regime: str) -> None:
        """Switch to `regime` at the start of the next step (tests, scenarios)."""
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r}")
        self._forced = regime

    def state(self) -> dict[str, Any]:
        """Everything the next steps depend on besides the chain, as JSON-ready data
        (with the chain's snapshot, a market restored by `restore_state` goes on exactly
        as this one does)."""
        version, internal, gauss = self.rng.getstate()
        return {"rng": [version, list(internal), gauss], "regime": self.regime,
                "trend_sign": self.trend_sign, "price": self.price, "forced": self._forced,
                "ground_truth": [[s.golem_time, s.block_number, s.regime]
                                 for s in self.ground_truth],
                "token0s": dict(sorted(self._token0s.items())),
                "answer": self._answer, "answered_at": finite_or_none(self._answered_at),
                "planted": None if self.planted is None else self.planted.state(),
                # a market without changes has no key: its state is as it always was
                **({} if self.changes is None else {"changes": self.changes.state()})}

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back what `state` returned (KeyError, TypeError, ValueError if it is not)."""
        version, internal, gauss = state["rng"]
        self.rng.setstate((int(version), tuple(int(x) for x in internal), gauss))
        self.regime, self.trend_sign = str(state["regime"]), float(state["trend_sign"])
        self.price, self._forced = float(state["price"]), state["forced"]
        self.ground_truth = [RegimeSwitch(float(t), int(b), str(r))
                             for t, b, r in state["ground_truth"]]
        self._token0s = {str(k): str(v) for k, v in state["token0s"].items()}
        self._answer = None if state["answer"] is None else float(state["answer"])
        self._answered_at = -math.inf if state["answered_at"] is None \
            else float(state["answered_at"])
        if self.planted is not None:
            self.planted.restore_state(state["planted"])
        if self.changes is not None:
            self.changes.restore_state(state["changes"])

    # --- the step --------------------------------------------------------------

    def step(self, golem_time: float, dt: float) -> StepReport:
        """Advance block time to golem_time and send at most MAX_TX_PER_STEP transactions."""
        self.evm.set_next_block_time(golem_time)
        start_block = self.evm.head().number + 1
        new = self._forced if self._forced is not None else self._next_regime()
        self._forced = None
        switched = new != self.regime or not self.ground_truth
        self.regime = new
        if switched:
            self.trend_sign = self.rng.choice((-1.0, 1.0))
        planted = self.planted.drift(self.regime, golem_time, self.price, dt) \
            if self.planted is not None else 0.0
        self.price = oracle_move(self.price, self.market.initial_eth_usd, self.regime,
                                 trend_sign=self.trend_sign, dt=dt,
                                 shock=self.rng.gauss(0.0, 1.0), planted=planted,
                                 pull_half_life_s=self.pull_half_life_s)
        report = StepReport(golem_time, self.regime, self.price, first_block=start_block)
        self._report = report
        if switched:
            switch = RegimeSwitch(golem_time, start_block, self.regime)
            self.ground_truth.append(switch)
            report.switches.append(switch)
        if self.changes is not None:
            self._change_facts(golem_time, start_block)
        if self._feed_due(golem_time) and not (self.changes is not None
                                               and self.changes.oracle_silent(golem_time)):
            self._send("oracle", self.market.oracle_eth_usd, "OracleFeed", "update",
                       int(self.price * ORACLE_UNIT), sender=self.market.owner)
            self._answer, self._answered_at = self.price, golem_time
        # automine gives each transaction its own block, one second apart at least:
        # at most dt transactions keeps block time on the golem clock
        budget = min(TX_BUDGET[self.regime] + self.rng.randint(-1, 1), MAX_TX_PER_STEP,
                     max(int(dt), 3))
        self._liquidate(budget)
        self._arbitrage()
        chance = self.activity.trade_chance[self.regime]
        if chance < 1.0 and self.rng.random() >= chance:
            report.last_block = self.evm.head().number
            return report
        actions = (self._noise, self._whale, self._lp, self._borrower, self._honeypot)
        weights = (6, 1 + 2 * (self.regime == "crash"), 1, 2, 1)
        for _ in range(3 * budget):  # an action may send nothing (e.g. a broke trader)
            if report.tx_count >= budget - 2:
                break
            self.rng.choices(actions, weights)[0]()
        report.last_block = self.evm.head().number
        return report

    def _feed_due(self, golem_time: float) -> bool:
        a = self.activity
        if a.oracle_deviation <= 0 or self._answer is None:
            return True
        return (abs(self.price / self._answer - 1.0) >= a.oracle_deviation
                or golem_time - self._answered_at >= a.oracle_heartbeat_s)

    def _next_regime(self) -> str:
        return self.rng.choices(REGIMES, self.transitions[self.regime])[0]

    def _send(self, action: str, address: str, kind: str, fn: str, *args: Any,
              sender: str) -> TxResult:
        result = self.evm.transact(address, self.abi[kind], fn, *args, sender=sender)
        assert self._report is not None
        self._report.tx_count += 1
        if not result.ok:
            self._report.reverted.append((action, result.tx_hash))
        return result

    def _token0(self, pool: str, kind: str) -> str:
        if pool not in self._token0s:
            self._token0s[pool] = str(self._call(pool, kind, "token0"))
        return self._token0s[pool]

    def _call(self, address: str, kind: str, fn: str, *args: Any) -> Any:
        return self.evm.call(address, self.abi[kind], fn, *args)

    def _fee(self, pair: str) -> int:
        """The V2 pair's current swap fee in pips, read from the pair."""
        return int(self._call(pair, "PairV2", "fee"))

    # --- swaps ------------------------------------------------------------------

    def _swap_v2(self, action: str, pair: str, token_in: str, amount: int, sender: str) -> None:
        r0, r1, _ = self._call(pair, "PairV2", "getReserves")
        zero_for_one = token_in == self._token0(pair, "PairV2")
        r_in, r_out = (r0, r1) if zero_for_one else (r1, r0)
        out = amount_out(amount, r_in, r_out, self._fee(pair))
        if out <= 0 or self._call(token_in, "ERC20", "balanceOf", sender) < amount:
            return
        self._send(action, token_in, "ERC20", "transfer", pair, amount, sender=sender)
        outs = (0, out) if zero_for_one else (out, 0)
        self._send(action, pair, "PairV2", "swap", *outs, sender, sender=sender)

    def _swap_v3(self, action: str, token_in: str, amount: int, sender: str) -> None:
        pool = self.market.pool_v3_weth_usdc
        if amount <= 0 or self._call(token_in, "ERC20", "balanceOf", sender) < amount:
            return
        self._send(action, token_in, "ERC20", "transfer", pool, amount, sender=sender)
        zero_for_one = token_in == self._token0(pool, "PoolV3Like")
        self._send(action, pool, "PoolV3Like", "swap", sender, zero_for_one, sender=sender)

    def _eth_amount(self, usd: float) -> int:
        return int(usd / self.price * E18)

    def _noise(self) -> None:
        m, rng = self.market, self.rng
        trader = rng.choice(m.noise_traders)
        usd = rng.uniform(100, 5_000)
        venue = rng.choice(("v2", "v2", "v3", "wbtc"))
        buy = rng.random() < 0.5
        if venue == "wbtc":
            pair = m.pair_wbtc_usdc
            if buy:
                self._swap_v2("noise", pair, m.usdc.address, int(usd * USDC_UNIT), trader)
            else:
                self._swap_v2("noise", pair, m.wbtc.address, int(usd / 40_000 * WBTC_UNIT), trader)
            return
        token, amount = ((m.usdc.address, int(usd * USDC_UNIT)) if buy
                         else (m.weth.address, self._eth_amount(usd)))
        if venue == "v3":
            self._swap_v3("noise", token, amount, trader)
        else:
            self._swap_v2("noise", m.pair_weth_usdc, token, amount, trader)

    def _whale(self) -> None:
        m = self.market
        sell = self.regime == "crash" or self.rng.random() < 0.5
        usd = self.rng.uniform(100_000, 400_000)
        token, amount = ((m.weth.address, self._eth_amount(usd)) if sell
                         else (m.usdc.address, int(usd * USDC_UNIT)))
        self._swap_v2("whale", m.pair_weth_usdc, token, amount, m.whale)

    def _arbitrage(self) -> None:
        """Move the WETH/USDC V2 pair most of the way back to the oracle price."""
        m = self.market
        r_weth, r_usdc, _ = self._call(m.pair_weth_usdc, "PairV2", "getReserves")
        pool_price = (r_usdc / USDC_UNIT) / (r_weth / E18)
        if abs(pool_price / self.price - 1) < ARB_THRESHOLD:
            return
        k = r_weth * r_usdc
        target = self.price * USDC_UNIT / E18  # raw usdc per raw weth
        if pool_price > self.price:
            amount = int((math.isqrt(int(k / target)) - r_weth) * 0.9)
            self._swap_v2("arbitrage", m.pair_weth_usdc, m.weth.address, amount, m.arbitrageur)
        else:
            amount = int((math.isqrt(int(k * target)) - r_usdc) * 0.9)
            self._swap_v2("arbitrage", m.pair_weth_usdc, m.usdc.address, amount, m.arbitrageur)

    # --- liquidity, lending, honeypot --------------------------------------------

    def _lp(self) -> None:
        m = self.market
        lp = self.rng.choice(m.lps)
        pair = m.pair_weth_usdc
        shares = self._call(pair, "PairV2", "balanceOf", lp)
        burn = shares > 0 and self.rng.random() < 0.4
        if not burn:
            r_weth, r_usdc, _ = self._call(pair, "PairV2", "getReserves")
            weth = self._eth_amount(self.rng.uniform(5_000, 50_000))
            usdc = weth * r_usdc // r_weth
            if (self._call(m.weth.address, "ERC20", "balanceOf", lp) >= weth
                    and self._call(m.usdc.address, "ERC20", "balanceOf", lp) >= usdc):
                self._send("lp", m.weth.address, "ERC20", "transfer", pair, weth, sender=lp)
                self._send("lp", m.usdc.address, "ERC20", "transfer", pair, usdc, sender=lp)
                self._send("lp", pair, "PairV2", "mint", lp, sender=lp)
                return
            # a provider short of either token withdraws instead (a wallet would not
            # send a deposit it cannot fund: it would only revert)
            burn = shares > 0
        if burn:
            self._send("lp", pair, "PairV2", "burn", lp, sender=lp)

    def _borrower(self) -> None:
        m = self.market
        who = self.rng.choice(m.borrowers)
        debt = self._call(m.lending, "LendingPool", "debtOf", who)
        if debt > 0:
            if self.rng.random() < 0.3 and self._call(m.usdc.address, "ERC20", "balanceOf",
                                                      who) >= debt:
                self._send("repay", m.lending, "LendingPool", "repay", m.usdc.address, debt, 2,
                           who, sender=who)
            return
        collateral = self.rng.randint(2, 10) * E18
        if self._call(m.weth.address, "ERC20", "balanceOf", who) < collateral:
            return
        self._send("borrow", m.lending, "LendingPool", "supply", m.weth.address, collateral,
                   who, 0, sender=who)
        held = self._call(m.lending, "LendingPool", "collateralOf", who)
        ltv = self.rng.uniform(0.6, 0.78)
        amount = int(held / E18 * self.price * ltv * USDC_UNIT)
        self._send("borrow", m.lending, "LendingPool", "borrow", m.usdc.address, amount, 2, 0,
                   who, sender=who)

    def _liquidate(self, budget: int) -> None:
        m = self.market
        for who in m.borrowers:
            if self._report is not None and self._report.tx_count >= budget // 2:
                return
            if self._call(m.lending, "LendingPool", "healthFactor", who) < HEALTHY:
                debt = self._call(m.lending, "LendingPool", "debtOf", who)
                self._send("liquidation", m.lending, "LendingPool", "liquidate", who, debt,
                           sender=m.liquidator)

    def _honeypot(self) -> None:
        """Buy HONEY with WETH, then try to sell some back: the sell reverts."""
        m = self.market
        buyer = self.rng.choice(m.noise_traders)
        held = self._call(m.honey.address, "Honeypot", "balanceOf", buyer)
        if held > 0 and self.changes is not None and self.changes.honeypot_turns:
            self._sell_honey(buyer, held // 2 + 1)
            return
        if held > 0:
            self._send("honeypot_sell", m.honey.address, "Honeypot", "transfer",
                       m.pair_honey_weth, held // 2 + 1, sender=buyer)
            return
        self._swap_v2("honeypot_buy", m.pair_honey_weth, m.weth.address,
                      int(self.rng.uniform(0.05, 0.5) * E18), buyer)

    def _sell_honey(self, seller: str, amount: int) -> None:
        """Sell HONEY into its pool like any token (transfer in, then swap out); a seller
        whose transfer reverted (HONEY turned) stops there."""
        m = self.market
        pair = m.pair_honey_weth
        r0, r1, _ = self._call(pair, "PairV2", "getReserves")
        zero_for_one = m.honey.address == self._token0(pair, "PairV2")
        r_in, r_out = (r0, r1) if zero_for_one else (r1, r0)
        out = amount_out(amount, r_in, r_out, self._fee(pair))
        if out <= 0:
            return
        sent = self._send("honeypot_sell", m.honey.address, "Honeypot", "transfer", pair,
                          amount, sender=seller)
        if sent.ok:
            outs = (0, out) if zero_for_one else (out, 0)
            self._send("honeypot_sell", pair, "PairV2", "swap", *outs, seller, sender=seller)

    # --- facts that change mid-life (golem.chain.changes) -----------------------------

    def _change_facts(self, golem_time: float, block: int) -> None:
        changes = self.changes
        assert changes is not None
        m = self.market
        for kind in changes.due(golem_time):
            details: dict[str, Any]
            if kind == OPENED:
                self._send("change", m.honey.address, "Honeypot", "setPool", ZERO_ADDRESS,
                           sender=m.owner)
                changes.done(kind)
                continue
            if kind == STALE:
                details = {"feed": m.oracle_eth_usd, "since": golem_time,
                           "until": changes.at(changes.stale_oracle_at_s
                                               + changes.stale_oracle_for_s),
                           "last_answer": self._answer}
            elif kind == RESUMED:
                details = {"feed": m.oracle_eth_usd,
                           "silent_s": golem_time - changes.at(changes.stale_oracle_at_s)}
            elif kind == DRAINED:
                details = self._drain(changes.drain_share)
            elif kind == FEE:
                details = self._set_fee(changes.fee_change_pips)
            else:
                assert kind == TURNED
                self._send("change", m.honey.address, "Honeypot", "setPool",
                           m.pair_honey_weth, sender=m.owner)
                details = {"token": m.honey.address, "pool": m.pair_honey_weth,
                           "normal_since": changes.at(0.0)}
            changes.done(kind, FactChange(golem_time, block, kind, details))

    def _drain(self, share: float) -> dict[str, Any]:
        """The owner burns its shares of the WETH/USDC V2 pool and adds back what keeps
        the pool at ``1 - share`` of its reserves; what happened, for the ground truth."""
        m = self.market
        pair, owner = m.pair_weth_usdc, m.owner
        before = self._call(pair, "PairV2", "getReserves")[:2]
        if self._call(pair, "PairV2", "balanceOf", owner) > 0:
            self._send("change", pair, "PairV2", "burn", owner, sender=owner)
        left = self._call(pair, "PairV2", "getReserves")[:2]
        back = [int(b * (1.0 - share)) - r for b, r in zip(before, left, strict=True)]
        if min(back) > 0:
            tokens = (self._token0(pair, "PairV2"), str(self._call(pair, "PairV2", "token1")))
            for token, amount in zip(tokens, back, strict=True):
                self._send("change", token, "ERC20", "transfer", pair, amount, sender=owner)
            self._send("change", pair, "PairV2", "mint", owner, sender=owner)
        after = self._call(pair, "PairV2", "getReserves")[:2]
        return {"pool": pair, "share": 1.0 - after[0] / before[0],
                "reserves_before": [int(x) for x in before],
                "reserves_after": [int(x) for x in after]}

    def _set_fee(self, pips: int) -> dict[str, Any]:
        """The owner sets the WETH/USDC V2 pool's swap fee to ``pips``; what happened, for
        the ground truth (the fees as the pool reports them, as fractions)."""
        m = self.market
        pair = m.pair_weth_usdc
        before = self._fee(pair)
        self._send("change", pair, "PairV2", "setFee", pips, sender=m.owner)
        return {"pool": pair, "fee_before": before / PIPS, "fee_after": self._fee(pair) / PIPS}

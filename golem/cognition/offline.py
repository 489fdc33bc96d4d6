"""The offline cognitive tier: a deterministic reasoner over the same workspace (pure).

With no API key the golem still decides every Theta tick, honestly labelled
"offline" wherever the decision is recorded or logged. It reads what the
workspace holds (the feed's recent move, the consolidated knowledge the Governor
put in, warnings and anti-knowledge, playbook rules) and answers in the same
decision schema a model would:

- knowledge first: the conditional outcomes in the workspace for this feed and
  this trailing-move bucket (``golem.perception.market.move_bucket``) are pooled
  by ``golem.cognition.forecast.combine``; those learned in the situation's own
  regime count fully, those of other regimes at OTHER_REGIME_WEIGHT of their
  confidence. The forecast's share of "up" sets the predicted direction (up or
  down beyond DIRECTION_MARGIN of 0.5, else flat) and its confidence; the
  decision records which entries moved the forecast and by how much
  (``Decision.attribution``). A trade needs an expected move beyond
  SWAP_COST (fee and impact) by MIN_EDGE, in the forecast's direction, sized
  by how far the share of "up" is from even;
- no matching knowledge (a newborn, or memory wiped): the interim rule, a move
  of at least MOMENTUM over the window continues (half its size, confidence
  rising with the move, capped at 0.8), else flat (confidence 0.55); a trade
  on clear momentum in the move's direction;
- trades are swaps on the trading pool (buy WETH with USDC when up, sell it
  when down), at most TRADE_CAP_SHARE of the cage's per-action cap and
  TRADE_WALLET_SHARE of what the wallet holds of the asset it pays with; never
  with a warning in view that bears on the trade; "hold" otherwise, or under
  MIN_TRADE_USD;
- referenced: the entries whose text bears on the situation (warnings and
  anti-knowledge always, others when they name the subject or the move, and
  every knowledge entry the forecast used).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from golem.actions.proposal import ProposedAction
from golem.cognition.decisions import Decision, Prediction
from golem.cognition.forecast import Evidence, Forecast, combine
from golem.governor.workspace import Knowledge
from golem.perception.market import PricePoint, move_bucket

MOMENTUM = 0.015
TRADE_CAP_SHARE = 0.25
TRADE_WALLET_SHARE = 0.1
MIN_TRADE_USD = 1.0
BASE, QUOTE = "WETH", "USDC"
_TRADE_WORDS = ("weth", "usdc", "eth/usd", "eth ")
HORIZON_TICKS = 5
PROVIDER = "offline"
CONDITIONAL_OUTCOME = "conditional_outcome"  # FactKind.CONDITIONAL_OUTCOME
OTHER_REGIME_WEIGHT = 0.5
DIRECTION_MARGIN = 0.05
SWAP_COST = 0.0035  # the pool's 0.3% fee and some price impact, as a fraction
MIN_EDGE = 0.001
_CAUTION = ("warning", "anti-knowledge", "anti_knowledge", "never", "revert", "honeypot")


@dataclass(frozen=True)
class Entry:
    uri: str
    category: str
    text: str
    knowledge: Knowledge | None = None


@dataclass(frozen=True)
class Situation:
    subject: str  # what the feed prices, e.g. "ETH/USD"
    prices: tuple[PricePoint, ...]  # the feed's recent answers, oldest first
    entries: tuple[Entry, ...]  # what the workspace included
    escalations: int = 0
    holdings_usd: tuple[tuple[str, float], ...] = ()  # (symbol, USD) the wallet holds
    trade_pool: str = ""  # the WETH/USDC pool's address; empty: no trading
    max_notional_usd: float = 0.0  # the cage's per-action cap
    regime: str = ""  # the regime Theta reads from the tape


def decide(situation: Situation) -> Decision:
    move = _move(situation.prices)
    words = _words(move)
    forecast, used = _forecast(situation, move)
    if forecast is not None:
        return _decide_from_knowledge(situation, move, words, forecast, used)
    if move is None:
        prediction = None
        analysis = f"No price history for {situation.subject} yet; holding."
    elif abs(move) >= MOMENTUM:
        direction = "up" if move > 0 else "down"
        confidence = min(0.8, 0.5 + 5 * abs(move))
        prediction = Prediction(situation.subject, "price_move", direction,
                                round(min(abs(move) / 2, 1.0), 6), round(confidence, 3),
                                HORIZON_TICKS)
        analysis = (f"{situation.subject} moved {move:+.2%} over the window ({words}); "
                    f"momentum usually carries: expect {direction} over {HORIZON_TICKS} ticks.")
    else:
        prediction = Prediction(situation.subject, "price_move", "flat", 0.0, 0.55,
                                HORIZON_TICKS)
        analysis = (f"{situation.subject} moved {move:+.2%} over the window ({words}); "
                    "no momentum: expect flat.")
    referenced = tuple(e.uri for e in situation.entries if _bears_on(e, situation, words))
    cautions = sum(1 for e in situation.entries if _cautionary(e))
    if cautions:
        analysis += f" {cautions} warning(s) in view."
    if situation.escalations:
        analysis += f" {situation.escalations} escalated event(s) this tick."
    action = _trade(situation, move)
    if action.kind != "hold":
        analysis += f" Acting small: {action.reason}"
    return Decision(analysis=analysis, predictions=(prediction,) if prediction else (),
                    actions=(action,),
                    referenced=referenced,
                    missing_context=() if situation.prices else ("price feed history",))


def _forecast(situation: Situation,
              move: float | None) -> tuple[Forecast | None, tuple[Entry, ...]]:
    """The pooled forecast of the matching conditional outcomes, or None without any."""
    if move is None:
        return None, ()
    bucket, feed = move_bucket(move), situation.subject.lower()
    evidence, used = [], []
    for entry in situation.entries:
        k = entry.knowledge
        if k is None or k.kind != CONDITIONAL_OUTCOME or str(k.fact.get("feed", "")).lower() \
                != feed or k.fact.get("bucket") != bucket:
            continue
        own = not situation.regime or k.fact.get("regime") == situation.regime
        weight = k.confidence if own else k.confidence * OTHER_REGIME_WEIGHT
        evidence.append(Evidence(entry.uri, _number(k.fact.get("n")),
                                 _number(k.fact.get("mean")), _number(k.fact.get("stddev")),
                                 _number(k.fact.get("p_up")), weight))
        used.append(entry)
    if not evidence:
        return None, ()
    forecast = combine(evidence)
    return (None, ()) if forecast.from_prior else (forecast, tuple(used))


def _number(value: object) -> float:
    """A fact's number, NaN when it is not one (combine() then skips the item)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _decide_from_knowledge(situation: Situation, move: float | None, words: str,
                           forecast: Forecast, used: tuple[Entry, ...]) -> Decision:
    lean = forecast.p_up - 0.5
    direction = "flat" if abs(lean) < DIRECTION_MARGIN else ("up" if lean > 0 else "down")
    confidence = max(forecast.p_up, 1.0 - forecast.p_up)
    prediction = Prediction(situation.subject, "price_move", direction,
                            round(min(abs(forecast.mean), 1.0), 6), round(confidence, 3),
                            HORIZON_TICKS)
    analysis = (f"{situation.subject} moved {move or 0.0:+.2%} over the window ({words}). "
                f"From {len(used)} learned outcome(s) of such moves: expect "
                f"{forecast.mean:+.2%} (stddev {forecast.stddev:.2%}), up with probability "
                f"{forecast.p_up:.0%}: {direction} over {HORIZON_TICKS} ticks.")
    if forecast.skipped:
        analysis += f" {forecast.skipped} malformed fact(s) ignored."
    cautions = sum(1 for e in situation.entries if _cautionary(e))
    if cautions:
        analysis += f" {cautions} warning(s) in view."
    edge = abs(forecast.mean) - SWAP_COST
    if direction == "flat" or edge < MIN_EDGE:
        action = ProposedAction("hold", reason="offline tier: no edge after costs "
                                               f"({forecast.mean:+.2%} expected)")
    else:
        action = _swap(situation, up=direction == "up", share=min(1.0, 2 * abs(lean)),
                       why=f"{forecast.mean:+.2%} expected from learned outcomes")
    if action.kind != "hold":
        analysis += f" Acting: {action.reason}"
    cited = {e.uri for e in used}
    referenced = tuple(e.uri for e in situation.entries
                       if e.uri in cited or _bears_on(e, situation, words))
    return Decision(analysis=analysis, predictions=(prediction,), actions=(action,),
                    referenced=referenced,
                    attribution=tuple((uri, round(share, 8))
                                      for uri, share in forecast.contributions))


def _trade(situation: Situation, move: float | None) -> ProposedAction:
    """A small momentum swap, or hold (see the module docstring)."""
    if move is None or abs(move) < MOMENTUM or not situation.trade_pool:
        return ProposedAction("hold", reason="offline tier: no clear momentum")
    return _swap(situation, up=move > 0, share=1.0, why=f"on a {move:+.2%} move")


def _swap(situation: Situation, *, up: bool, share: float, why: str) -> ProposedAction:
    """A swap on the trading pool in one direction, ``share`` of the largest size the
    module allows; hold when there is no pool, a warning bears on it, or it is too small."""
    if not situation.trade_pool:
        return ProposedAction("hold", reason="offline tier: no pool to trade on")
    warned = [e for e in situation.entries if _cautionary(e) and _names_trade(e, situation)]
    if warned:
        return ProposedAction("hold", reason="offline tier: a warning bears on the trade")
    pay, get = (QUOTE, BASE) if up else (BASE, QUOTE)
    held = dict(situation.holdings_usd).get(pay, 0.0)
    notional = share * min(TRADE_CAP_SHARE * situation.max_notional_usd,
                           TRADE_WALLET_SHARE * held)
    if notional < MIN_TRADE_USD:
        return ProposedAction("hold", reason=f"offline tier: too little {pay} to trade")
    verb = "buy" if up else "sell"
    return ProposedAction("swap", situation.trade_pool, pay, get,
                          notional_usd=round(notional, 2),
                          reason=f"{verb} {BASE} for ${notional:,.2f}: {why}")


def _names_trade(entry: Entry, situation: Situation) -> bool:
    text = f"{entry.text} ".lower()
    return situation.trade_pool.lower() in text or any(w in text for w in _TRADE_WORDS)


def _move(prices: Sequence[PricePoint]) -> float | None:
    if len(prices) < 2 or prices[0].price <= 0:
        return None
    return prices[-1].price / prices[0].price - 1.0


def _words(move: float | None) -> str:
    if move is None:
        return "unknown"
    if move <= -0.05:
        return "crashing"
    if move <= -MOMENTUM:
        return "falling"
    if move >= 0.05:
        return "surging"
    return "rising" if move >= MOMENTUM else "steady"


def _cautionary(entry: Entry) -> bool:
    text = f"{entry.category} {entry.text}".lower()
    return any(word in text for word in _CAUTION)


def _bears_on(entry: Entry, situation: Situation, words: str) -> bool:
    text = entry.text.lower()
    return (_cautionary(entry) or situation.subject.lower() in text
            or (words != "unknown" and words in text))

"""The offline cognitive tier: a deterministic reasoner over the same workspace (pure).

With no API key the golem still decides every Theta tick, honestly labelled
"offline" wherever the decision is recorded or logged. It reads what the
workspace holds (the feed's recent move, warnings and anti-knowledge, playbook
rules) and answers in the same decision schema a model would:

- a price prediction: a move of at least MOMENTUM over the window continues
  (half its size, confidence rising with the move, capped at 0.8); otherwise
  the price stays flat (confidence 0.55);
- actions: on clear momentum (a move of at least MOMENTUM) with no warning in view
  that bears on the trade, a small swap on the trading pool in the move's direction
  (buy WETH with USDC on the way up, sell it on the way down), sized to at most
  TRADE_CAP_SHARE of the cage's per-action cap and TRADE_WALLET_SHARE of what the
  wallet holds of the asset it pays with; "hold" otherwise, or when that is under
  MIN_TRADE_USD;
- referenced: the entries whose text bears on the situation (warnings and
  anti-knowledge always, others when they name the subject or the move).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from golem.actions.proposal import ProposedAction
from golem.cognition.decisions import Decision, Prediction
from golem.perception.market import PricePoint

MOMENTUM = 0.015
TRADE_CAP_SHARE = 0.25
TRADE_WALLET_SHARE = 0.1
MIN_TRADE_USD = 1.0
BASE, QUOTE = "WETH", "USDC"
_TRADE_WORDS = ("weth", "usdc", "eth/usd", "eth ")
HORIZON_TICKS = 5
PROVIDER = "offline"
_CAUTION = ("warning", "anti-knowledge", "anti_knowledge", "never", "revert", "honeypot")


@dataclass(frozen=True)
class Entry:
    uri: str
    category: str
    text: str


@dataclass(frozen=True)
class Situation:
    subject: str  # what the feed prices, e.g. "ETH/USD"
    prices: tuple[PricePoint, ...]  # the feed's recent answers, oldest first
    entries: tuple[Entry, ...]  # what the workspace included
    escalations: int = 0
    holdings_usd: tuple[tuple[str, float], ...] = ()  # (symbol, USD) the wallet holds
    trade_pool: str = ""  # the WETH/USDC pool's address; empty: no trading
    max_notional_usd: float = 0.0  # the cage's per-action cap


def decide(situation: Situation) -> Decision:
    move = _move(situation.prices)
    words = _words(move)
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


def _trade(situation: Situation, move: float | None) -> ProposedAction:
    """A small momentum swap, or hold (see the module docstring)."""
    if move is None or abs(move) < MOMENTUM or not situation.trade_pool:
        return ProposedAction("hold", reason="offline tier: no clear momentum")
    warned = [e for e in situation.entries if _cautionary(e) and _names_trade(e, situation)]
    if warned:
        return ProposedAction("hold", reason="offline tier: a warning bears on the trade")
    pay, get = (QUOTE, BASE) if move > 0 else (BASE, QUOTE)
    held = dict(situation.holdings_usd).get(pay, 0.0)
    notional = min(TRADE_CAP_SHARE * situation.max_notional_usd, TRADE_WALLET_SHARE * held)
    if notional < MIN_TRADE_USD:
        return ProposedAction("hold", reason=f"offline tier: too little {pay} to trade")
    verb = "buy" if move > 0 else "sell"
    return ProposedAction("swap", situation.trade_pool, pay, get,
                          notional_usd=round(notional, 2),
                          reason=f"{verb} {BASE} for ${notional:,.2f} on a {move:+.2%} move")


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

"""The offline cognitive tier: a deterministic reasoner over the same workspace (pure).

With no API key the golem still decides every Theta tick, honestly labelled
"offline" wherever the decision is recorded or logged. It reads what the
workspace holds (the feed's recent move, warnings and anti-knowledge, playbook
rules) and answers in the same decision schema a model would:

- a price prediction: a move of at least MOMENTUM over the window continues
  (half its size, confidence rising with the move, capped at 0.8); otherwise
  the price stays flat (confidence 0.55);
- actions: "hold" (acting on chain is a later issue, and with a warning in
  view holding is the conservative choice anyway);
- referenced: the entries whose text bears on the situation (warnings and
  anti-knowledge always, others when they name the subject or the move).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from golem.cognition.decisions import Decision, Prediction, ProposedAction
from golem.perception.market import PricePoint

MOMENTUM = 0.015
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
    return Decision(analysis=analysis, predictions=(prediction,) if prediction else (),
                    actions=(ProposedAction("hold", reason="offline tier: observe only"),),
                    referenced=referenced,
                    missing_context=() if situation.prices else ("price feed history",))


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

"""The offline cognitive tier: a deterministic reasoner over the same workspace (pure).

With no API key the golem still decides every Theta tick, honestly labelled
"offline" wherever the decision is recorded or logged. It reads what the
workspace holds (the feed's recent move, the consolidated knowledge the Governor
put in, warnings and anti-knowledge, playbook rules) and answers in the same
decision schema a model would:

- the forecast: the conditional outcomes in the workspace for this feed and this
  trailing-move bucket (``golem.perception.market.move_bucket``) are pooled by
  ``golem.cognition.forecast.combine`` with its "no change" prior: those learned in
  the situation's own regime (``tape_regime``, as consolidation counts them); only
  when none of those is usable, those of other regimes, at OTHER_REGIME_WEIGHT of
  their confidence (another regime's behaviour is a weak guide and would dilute the
  own regime's);
- the prior (a newborn, or memory wiped, or nothing matching): no change on average,
  with the spread the tape itself shows (``forecast.horizon_stddev`` of the recent
  answers over ``horizon_s``; DEFAULT_PRIOR_STDDEV without enough tape). So the
  prediction is a three-way outlook (down, flat, up, flat being the scoring's
  ``FLAT_BAND``), not a confident "flat": when the tape's usual move over the horizon
  is wide, "flat" is the least likely class and up and down are even;
- the knowledge's forecast is mixed with the prior's by the weight it has earned over
  the last scored predictions (``golem.cognition.experts``: 0 until a mixture has
  beaten the prior clearly; Theta passes the record in ``Situation.record``, none: the
  knowledge alone, as a test or an experiment may ask): the outlook is
  w x knowledge + (1 - w) x prior, the expected move and each entry's share of it
  are w times the knowledge's, and at w = 0 nothing learned moves the prediction (so
  nothing is traded). Both outlooks are recorded (``Decision.outlooks``) so the
  next records can be kept;
- the prediction is the outlook's most likely class with its probability as the
  confidence; an exact tie between up and down (the symmetric prior) goes to the
  trailing move's sign (up without a move). The magnitude is the forecast's absolute
  mean. The decision records the outlook (``Decision.outlook``) and which entries
  moved the forecast and by how much (``Decision.attribution``);
- a trade needs a learned expected move beyond the swap's cost (``Situation.swap_cost``:
  the trading pool's current fee, read from the pool, plus IMPACT_ALLOWANCE for price
  impact; SWAP_COST at V2's 0.3% fee when unknown) by MIN_EDGE, in the predicted
  direction: the prior alone never trades. It is sized by
  how far the outlook leans (up minus down) and by the golem's own record, its
  procedural facts (``FactKind.PROCEDURAL``, "strategy" "swap"): how often its swaps
  went through, and how often its swaps of this side (buy: up, sell: down) in this
  regime and move bucket paid after costs (``consolidation.outcomes.trade_outcomes``),
  each as min(1, 2 (good + 1) / (total + 2)), multiplied: a record at even odds or
  better leaves the size, a losing one shrinks it;
- trades are swaps on the trading pool (buy WETH with USDC when up, sell it
  when down), at most TRADE_CAP_SHARE of the cage's per-action cap and
  TRADE_WALLET_SHARE of what the wallet holds of the asset it pays with; never
  with a warning in view that bears on the trade; "hold" otherwise, or under
  MIN_TRADE_USD;
- a fact with numbers that make no sense (NaN, a count below 1, a negative stddev,
  shares outside [0, 1]) is skipped, never used, and counted in
  ``Decision.skipped_knowledge`` (Theta logs and counts it);
- referenced: the entries whose text bears on the situation (warnings and
  anti-knowledge always, others when they name the subject or the move, and
  every knowledge entry the forecast or the sizing used).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from golem.actions.proposal import ProposedAction
from golem.cognition.decisions import Decision, Prediction
from golem.cognition.experts import Record, mix
from golem.cognition.forecast import (
    DEFAULT_PRIOR_STDDEV,
    DIRECTIONS,
    Evidence,
    Forecast,
    combine,
    horizon_stddev,
    usable,
)
from golem.cognition.predictions import Outlook
from golem.governor.workspace import Knowledge
from golem.perception.market import TREND_MOVE, PricePoint, move_bucket

TRADE_CAP_SHARE = 0.25
TRADE_WALLET_SHARE = 0.1
MIN_TRADE_USD = 1.0
BASE, QUOTE = "WETH", "USDC"
_TRADE_WORDS = ("weth", "usdc", "eth/usd", "eth ")
HORIZON_TICKS = 5
PROVIDER = "offline"
CONDITIONAL_OUTCOME = "conditional_outcome"  # FactKind.CONDITIONAL_OUTCOME
PROCEDURAL = "procedural"  # FactKind.PROCEDURAL
HORIZON_S = 300.0  # HORIZON_TICKS of Theta's default 60 s
MIN_PRIOR_STDDEV = 1e-4  # a flat tape still leaves the prior some spread
TIE = 1e-9
OTHER_REGIME_WEIGHT = 0.5
IMPACT_ALLOWANCE = 0.0005  # price impact a small swap pays beside the fee, a fraction
SWAP_COST = 0.003 + IMPACT_ALLOWANCE  # at a V2 pool's 0.3% fee
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
    horizon_s: float = HORIZON_S  # the predictions' horizon in seconds
    record: Record | None = None  # the forecasters' recent record; None: knowledge alone
    swap_cost: float = SWAP_COST  # a swap's cost on the trade pool (fee + impact), fraction


def decide(situation: Situation) -> Decision:
    move = trailing_move(situation.prices)
    words = _words(move)
    if move is None:
        return Decision(
            analysis=f"No price history for {situation.subject} yet; holding.",
            actions=(ProposedAction("hold", reason="offline tier: no price history"),),
            referenced=tuple(e.uri for e in situation.entries
                             if _bears_on(e, situation, words)),
            missing_context=() if situation.prices else ("price feed history",))
    forecast, used, skipped = _forecast(situation, move)
    prior = combine((), _prior_stddev(situation))
    outlooks = (forecast.outlook, prior.outlook)
    weight = situation.record.weight if situation.record is not None else 1.0
    weighed = not forecast.from_prior and weight < 1.0
    if weighed:
        forecast = _weighed(forecast, prior, weight)
        used = used if weight > 0 else ()
    direction = _direction(forecast.outlook, move)
    sizing, why_size, size_entries, bad_procedural = _procedural(situation, direction, move)
    skipped += bad_procedural
    confidence = forecast.outlook[DIRECTIONS.index(direction)]
    prediction = Prediction(situation.subject, "price_move", direction,
                            round(min(abs(forecast.mean), 1.0), 6), round(confidence, 3),
                            HORIZON_TICKS)
    down, flat, up = forecast.outlook
    minutes = situation.horizon_s / 60
    if weighed and weight == 0:
        assert situation.record is not None
        source = (f"the learned outcomes are not used ({situation.record.describe()}): "
                  f"the no-change prior with the tape's spread ({forecast.stddev:.2%} over "
                  f"{minutes:g} min)")
    elif weighed:
        assert situation.record is not None
        source = (f"from {len(used)} learned outcome(s) of such moves at a {weight:.0%} "
                  f"share against the prior ({situation.record.describe()}): expect "
                  f"{forecast.mean:+.2%}")
    elif forecast.from_prior:
        source = (f"nothing learned about such moves yet: the no-change prior with the "
                  f"tape's spread ({forecast.stddev:.2%} over {minutes:g} min)")
    else:
        source = (f"from {len(used)} learned outcome(s) of such moves: expect "
                  f"{forecast.mean:+.2%} (stddev {forecast.stddev:.2%})")
    analysis = (f"{situation.subject} moved {move:+.2%} over the window ({words}); {source}. "
                f"Outlook down {down:.0%}, flat {flat:.0%}, up {up:.0%}: {direction} over "
                f"{HORIZON_TICKS} ticks.")
    if skipped:
        analysis += f" {skipped} malformed fact(s) ignored."
    cautions = sum(1 for e in situation.entries if _cautionary(e))
    if cautions:
        analysis += f" {cautions} warning(s) in view."
    if situation.escalations:
        analysis += f" {situation.escalations} escalated event(s) this tick."
    action = _trade(situation, forecast, direction, sizing, why_size)
    if action.kind != "hold":
        analysis += f" Acting: {action.reason}"
    cited = {e.uri for e in (*used, *size_entries)}
    referenced = tuple(e.uri for e in situation.entries
                       if e.uri in cited or _bears_on(e, situation, words))
    return Decision(analysis=analysis, predictions=(prediction,), actions=(action,),
                    referenced=referenced,
                    attribution=tuple((uri, round(share, 8))
                                      for uri, share in forecast.contributions),
                    outlook=(round(down, 6), round(flat, 6), round(up, 6)),
                    skipped_knowledge=skipped, outlooks=outlooks)


def cited_attribution(situation: Situation, cited: frozenset[str] | set[str],
                      ) -> tuple[tuple[tuple[str, float], ...], int]:
    """A model tier's attribution: the entries it cited, pooled as this tier pools them
    (the conditional outcomes for this feed and move bucket among the cited entries,
    ``_forecast``), each with its share of the pooled mean; and how many of the cited
    facts were malformed. Nothing cited that carries numbers: ()."""
    move = trailing_move(situation.prices)
    if move is None:
        return (), 0
    only = replace(situation, entries=tuple(e for e in situation.entries if e.uri in cited))
    forecast, _, skipped = _forecast(only, move)
    return tuple((uri, round(share, 8)) for uri, share in forecast.contributions), skipped


def _direction(outlook: Outlook, move: float) -> str:
    """The most likely class; an exact up/down tie goes to the trailing move's sign."""
    down, flat, up = outlook
    if abs(up - down) <= TIE and max(up, down) >= flat:
        return "down" if move < 0 else "up"
    return DIRECTIONS[max(range(3), key=lambda i: (outlook[i], -abs(i - 1)))]


def _forecast(situation: Situation,
              move: float) -> tuple[Forecast, tuple[Entry, ...], int]:
    """The pooled forecast of the matching conditional outcomes (the prior without any),
    the entries it used, and how many matching facts were malformed."""
    bucket, feed = move_bucket(move), situation.subject.lower()
    matching = [e for e in situation.entries if e.knowledge is not None
                and e.knowledge.kind == CONDITIONAL_OUTCOME
                and str(e.knowledge.fact.get("feed", "")).lower() == feed
                and e.knowledge.fact.get("bucket") == bucket]
    own = [e for e in matching if not situation.regime
           or (e.knowledge is not None and e.knowledge.fact.get("regime") == situation.regime)]
    usable_own = [e for e in own if usable(_evidence(e, 1.0))]
    # another regime's outcomes stand in only when this regime's say nothing usable
    chosen = [(e, 1.0) for e in own] if usable_own else \
        [(e, 1.0 if e in own else OTHER_REGIME_WEIGHT) for e in matching]
    evidence = [_evidence(e, scale) for e, scale in chosen]
    used = [e for e, _ in chosen]
    forecast = combine(evidence, _prior_stddev(situation))
    kept = tuple(e for e, ev in zip(used, evidence, strict=True) if usable(ev))
    return forecast, kept, forecast.skipped


def _weighed(knowledge: Forecast, prior: Forecast, weight: float) -> Forecast:
    """The knowledge's forecast at ``weight`` against the prior's (module docstring): the
    prior's mean is 0, so the mean and each entry's share scale by the weight; at weight
    0 it is the prior's, with no evidence weight (so nothing is traded)."""
    return replace(knowledge, mean=weight * knowledge.mean,
                   p_up=weight * knowledge.p_up + (1.0 - weight) * prior.p_up,
                   weight=weight * knowledge.weight,
                   contributions=tuple((k, weight * v) for k, v in knowledge.contributions
                                       if weight > 0),
                   outlook=mix(knowledge.outlook, prior.outlook, weight))


def prior_outlook(prices: Sequence[PricePoint], horizon_s: float = HORIZON_S) -> Outlook:
    """The outlook of a forecaster that knows nothing but the tape: no change on
    average, the tape's spread over ``horizon_s`` (the offline tier's prior). The
    epistemic clock judges every tier's predictions against it."""
    return combine((), _spread(prices, horizon_s)).outlook


def _prior_stddev(situation: Situation) -> float:
    return _spread(situation.prices, situation.horizon_s)


def _spread(prices: Sequence[PricePoint], horizon_s: float) -> float:
    """The prior's spread over the horizon: the tape's (at least MIN_PRIOR_STDDEV),
    DEFAULT_PRIOR_STDDEV without enough tape."""
    prior = horizon_stddev(prices, horizon_s)
    if prior is None:
        return DEFAULT_PRIOR_STDDEV
    return max(prior, MIN_PRIOR_STDDEV)


def _evidence(entry: Entry, scale: float) -> Evidence:
    """A conditional-outcome entry as evidence, its confidence times ``scale``."""
    assert entry.knowledge is not None
    k = entry.knowledge
    count = k.fact.get("n_eff", k.fact.get("n"))  # independent spans where counted
    return Evidence(entry.uri, _number(count), _number(k.fact.get("mean")),
                    _number(k.fact.get("stddev")), _number(k.fact.get("p_up")),
                    _number(k.confidence) * scale)


def _procedural(situation: Situation, direction: str,
                move: float) -> tuple[float, str, tuple[Entry, ...], int]:
    """The size factor from the golem's own record with swaps (module docstring), why,
    the entries it came from, and how many such facts were malformed."""
    side = {"up": "buy", "down": "sell"}.get(direction)
    bucket = move_bucket(move)
    attempts = succeeded = trades = paid = 0.0
    used: list[Entry] = []
    bad = 0
    for entry in situation.entries:
        k = entry.knowledge
        if k is None or k.kind != PROCEDURAL or k.fact.get("strategy") != "swap":
            continue
        if "trades" in k.fact:  # the market's verdict on our swaps in one situation
            if (k.fact.get("side"), k.fact.get("regime"), k.fact.get("bucket")) != (
                    side, situation.regime, bucket):
                continue
            n, ok = _number(k.fact.get("trades")), _number(k.fact.get("paid"))
        else:  # whether our swaps went through at all
            n, ok = _number(k.fact.get("attempts")), _number(k.fact.get("succeeded"))
        if not (math.isfinite(n) and math.isfinite(ok) and n >= 1 and 0 <= ok <= n):
            bad += 1
            continue
        if "trades" in k.fact:
            trades, paid = trades + n, paid + ok
        else:
            attempts, succeeded = attempts + n, succeeded + ok
        used.append(entry)
    if not used:
        return 1.0, "", (), bad
    went = _record_factor(succeeded, attempts)
    won = _record_factor(paid, trades)
    why = [f"{succeeded:g} of {attempts:g} of our swaps went through"] if attempts else []
    if trades:
        why.append(f"{paid:g} of {trades:g} of our {side}s in this situation paid")
    factor = went * won
    return factor, f"size x{factor:.2f} ({'; '.join(why)})", tuple(used), bad


def _record_factor(good: float, total: float) -> float:
    """min(1, 2 (good + 1) / (total + 2)): 1 without a record or with one at even odds or
    better (a uniform prior on the rate, doubled), below 1 for a losing one."""
    return min(1.0, 2.0 * (good + 1.0) / (total + 2.0)) if total else 1.0


def _number(value: object) -> float:
    """A fact's number, NaN when it is not one (combine() then skips the item)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return float(value)


def _trade(situation: Situation, forecast: Forecast, direction: str, sizing: float,
           why_size: str) -> ProposedAction:
    """A swap in the predicted direction when the learned edge clears the costs."""
    if forecast.from_prior:
        return ProposedAction("hold", reason="offline tier: nothing learned about this "
                                             "situation yet (the prior expects no change)")
    edge = abs(forecast.mean) - situation.swap_cost
    agrees = (direction == "up" and forecast.mean > 0) or \
        (direction == "down" and forecast.mean < 0)
    if not agrees or edge < MIN_EDGE:
        return ProposedAction("hold", reason="offline tier: no edge after costs "
                                             f"({forecast.mean:+.2%} expected)")
    down, _, up = forecast.outlook
    why = f"{forecast.mean:+.2%} expected from learned outcomes"
    if why_size:
        why += f"; {why_size}"
    return _swap(situation, up=direction == "up", share=min(1.0, abs(up - down)) * sizing,
                 why=why)


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


def trailing_move(prices: Sequence[PricePoint]) -> float | None:
    """The feed's move over the tape (newest answer over oldest, minus 1); None with
    fewer than two answers or a first answer that is not positive."""
    if len(prices) < 2 or prices[0].price <= 0:
        return None
    return prices[-1].price / prices[0].price - 1.0


def _words(move: float | None) -> str:
    if move is None:
        return "unknown"
    if move <= -0.05:
        return "crashing"
    if move <= -TREND_MOVE:
        return "falling"
    if move >= 0.05:
        return "surging"
    return "rising" if move >= TREND_MOVE else "steady"


def _cautionary(entry: Entry) -> bool:
    text = f"{entry.category} {entry.text}".lower()
    return any(word in text for word in _CAUTION)


def _bears_on(entry: Entry, situation: Situation, words: str) -> bool:
    text = entry.text.lower()
    return (_cautionary(entry) or situation.subject.lower() in text
            or (words != "unknown" and words in text))

"""What a recall query asks of numbers and order, read without a model (pure).

`read_intent` finds, in plain English:

- an order: "latest", "last", "most recent", "newest" (newest first), "first",
  "earliest", "oldest" (oldest first): by time; "largest", "biggest", "highest",
  "greatest", "maximum" (largest first), "smallest", "lowest", "least", "minimum"
  (smallest first):
  by size. "last week" and "the last 3 days" are calendar windows (query_words), not
  orders;
- a threshold: "more than", "over", "above", "greater than", "exceeding", "at least",
  "less than", "under", "below", "at most", or ">", ">=", "<", "<=", then a number
  ("5", "1,000", "2.5"), then optionally a unit: "%" or "percent", a token symbol
  ("USDC"), "$" before the number or "usd"/"dollars" after it. A percentage with a move
  word ("fall", "drop", "down", "rise", "jump", "up", ...) is a move in that direction:
  "fall more than 2%" is a move of -2% or less;
- an event anchor: "after", "since", "following", "before", "prior to", "until",
  then "the" (an event is a definite one: "after oracle feed X moved" is not an anchor),
  then optionally "last"/"latest"/"most recent" (the default) or "first",
  then the event's words up to the end of the clause: "after the last liquidation",
  "before the crash", "since the last oracle update". The anchor's words are removed
  from the query recall searches with (`Intent.rest`), since they name another event.

What a query does not say is None; nothing here is ever an error. Which records an
intent applies to, and how, is golem.grimoire.quantities and recall's business.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Literal

Direction = Literal["up", "down"]

_LATEST = r"latest|last|most recent|newest|most recently"
_EARLIEST = r"first|earliest|oldest"
_LARGEST = r"largest|biggest|highest|greatest|maximum"
_SMALLEST = r"smallest|lowest|least|minimum"
# "last" followed by a calendar unit, or a count and a unit, is a window, not an order.
_NOT_ORDER = re.compile(r"\s+(?:\d+|one|two|three|few|couple)?\s*(?:minute|hour|day|week|"
                        r"month|year)s?\b")
_ORDER = re.compile(rf"\b({_LATEST}|{_EARLIEST}|{_LARGEST}|{_SMALLEST})\b")
_DOWN = ("fall", "fell", "fallen", "falls", "falling", "drop", "dropped", "drops", "dropping",
         "down", "decline", "declined", "declines", "decrease", "decreased", "dip", "dipped",
         "sink", "sank", "plunge", "plunged", "crash", "crashed", "lose", "lost", "loss")
_UP = ("rise", "rose", "risen", "rises", "rising", "jump", "jumped", "jumps", "up",
       "increase", "increased", "gain", "gained", "gains", "climb", "climbed", "surge",
       "surged", "spike", "spiked", "rally", "rallied")
_MOVE = re.compile(r"\b(" + "|".join(_DOWN + _UP) + r")\b")
_OPS = {"more than": ">", "over": ">", "above": ">", "greater than": ">", "exceeding": ">",
        "in excess of": ">", "at least": ">=", "no less than": ">=", "less than": "<",
        "under": "<", "below": "<", "fewer than": "<", "at most": "<=", "no more than": "<=",
        ">=": ">=", "<=": "<=", ">": ">", "<": "<"}
_OP = "|".join(re.escape(o) for o in sorted(_OPS, key=len, reverse=True))
_NUMBER = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
_THRESHOLD = re.compile(
    rf"(?<![\w])({_OP})\s*(\$)?\s*{_NUMBER}\s*(%|percent\b|[a-z][a-z0-9]{{1,9}}\b)?",
    re.IGNORECASE)
_TIME_UNITS = frozenset(("min", "mins", "minute", "minutes", "hour", "hours", "day", "days",
                         "week", "weeks", "month", "months", "year", "years", "sec",
                         "second", "seconds", "block", "blocks", "times", "and", "or", "the",
                         "of", "in", "on", "at", "to", "from", "for", "by", "with"))
_ANCHOR = re.compile(
    r"\b(after|since|following|before|prior to|until)\s+the\s+"
    r"(?:(last|latest|most recent|first|earliest)\s+)?"
    r"([a-z0-9/][a-z0-9/'\- ]*?)\s*(?=[,.;:?!]|\s+(?:and|when|where|while|in the|on the)\b|$)")
_CALENDAR = frozenset((*(m.lower() for m in calendar.month_name if m),
                       *(m.lower() for m in calendar.month_abbr if m),
                       "yesterday", "today", "tomorrow", "noon", "midnight", "last", "next"))
_ANCHOR_AFTER = frozenset(("after", "since", "following"))


@dataclass(frozen=True)
class Order:
    """Rank by ``key`` ("time" or "size"), largest or newest first when ``descending``;
    ``at`` is the word's offset in the lowercased query (a size's unit is looked for
    after it first)."""

    key: Literal["time", "size"]
    descending: bool
    phrase: str
    at: int


@dataclass(frozen=True)
class Threshold:
    """A number a record's quantity must pass: ``op`` one of > >= < <=, ``value`` > 0.
    ``unit``: "%" (a move, in ``direction`` when the query names one), "usd", a
    lowercase symbol, or None when the query names none."""

    op: str
    value: float
    unit: str | None
    direction: Direction | None
    phrase: str

    def passes(self, quantity: float) -> bool:
        """Whether ``quantity`` passes: a move down compares its size below zero, a move
        with no direction its absolute size."""
        if self.unit == "%":
            if self.direction == "down":
                quantity = -quantity
            elif self.direction is None:
                quantity = abs(quantity)
        if self.op == ">":
            return quantity > self.value
        if self.op == ">=":
            return quantity >= self.value
        if self.op == "<":
            return quantity < self.value
        return quantity <= self.value


@dataclass(frozen=True)
class Anchor:
    """An event that bounds the query in time: records ``after`` it or ``before`` it; the
    ``last`` occurrence (or the first) of the event ``words`` name."""

    after: bool
    last: bool
    words: str
    phrase: str


@dataclass(frozen=True)
class Intent:
    """What ``read_intent`` found; ``rest`` is the query without the anchor clause."""

    order: Order | None
    threshold: Threshold | None
    anchor: Anchor | None
    rest: str

    @property
    def ranks_by_quantity(self) -> bool:
        """Whether recall must see a wide pool: an order or a threshold decides ranks."""
        return self.order is not None or self.threshold is not None


def read_intent(query: str) -> Intent:
    """The order, threshold and event anchor ``query`` names (each None when it names
    none); never raises."""
    text = query.lower().replace("\u2019", "'")
    if len(text) != len(query):  # a lowercase form of another length: keep offsets valid
        query = text
    anchor, rest = _anchor(text, query)
    body = text if anchor is None else text.replace(anchor.phrase, " ")
    return Intent(order=_order(body), threshold=_threshold(body), anchor=anchor, rest=rest)


def _order(text: str) -> Order | None:
    for m in _ORDER.finditer(text):
        word = m.group(1)
        if word in ("last", "first") and _NOT_ORDER.match(
                text, m.end()):
            continue
        if re.fullmatch(_LATEST, word):
            return Order("time", True, word, m.start())
        if re.fullmatch(_EARLIEST, word):
            return Order("time", False, word, m.start())
        return Order("size", re.fullmatch(_LARGEST, word) is not None, word, m.start())
    return None


def _threshold(text: str) -> Threshold | None:
    for m in _THRESHOLD.finditer(text):
        op, dollar, whole, frac, unit = m.groups()
        value = float(whole.replace(",", "") + (f".{frac}" if frac else ""))
        unit_word = unit.lower() if unit else None
        if unit_word in _TIME_UNITS:
            if unit_word in ("and", "or", "the", "of", "in", "on", "at", "to", "from", "for",
                             "by", "with"):
                unit_word = None
            else:
                continue  # "over 10 min" is a duration, not a threshold
        if unit_word == "percent":
            unit_word = "%"
        if dollar or unit_word in ("usd", "dollars", "dollar"):
            unit_word = "usd"
        direction: Direction | None = None
        if unit_word == "%":
            moves = [w.group(1) for w in _MOVE.finditer(text[:m.start()])]
            if moves:
                direction = "down" if moves[-1] in _DOWN else "up"
        return Threshold(_OPS[op.lower()], value, unit_word, direction, m.group(0).strip())
    return None


def _anchor(text: str, query: str) -> tuple[Anchor | None, str]:
    for m in _ANCHOR.finditer(text):
        relation, which, words = m.group(1), m.group(2), m.group(3).strip()
        # "since 2023", "before May", "after 3 days": calendar words, not events
        if not words or re.fullmatch(r"[\d ,/:-]+|(?:\d+ )?(?:minute|hour|day|week|month|"
                                     r"year)s?(?: ago)?|yesterday|today|\w+ \d{4}", words):
            continue
        first = words.split()[0]
        if first[0].isdigit() or first in _CALENDAR or first in (
                "that", "this", "it", "which", "what", "we", "i", "you", "then", "now"):
            continue
        rest = (query[:m.start()] + query[m.end():]).strip()
        anchor = Anchor(after=relation in _ANCHOR_AFTER, last=which not in ("first", "earliest"),
                        words=words, phrase=m.group(0))
        return anchor, re.sub(r"\s+([,.;:?!])", r"\1", " ".join(rest.split()))
    return None, query

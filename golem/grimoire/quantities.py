"""The numbers a record's text states, and how a query's order and threshold rank by them (pure).

A record's quantities are read from its text as the golem writes them
(golem.chain.render, golem.grimoire.payloads, perception's context line):

- amounts: a number then a token symbol in capitals ("0.5684 WETH", "157,827 USDC"),
  with the word after it ("sold", "debt", "collateral") as its role; "$" then a number
  ("$0.0278") is an amount in "usd", its role the word before it ("loss", "equity");
- moves: a subject word, then "up"/"down" and a percentage, or a signed percentage
  ("Answer down 2.3% from the previous one", "price -2.1% over 7 min"), or "unchanged"
  (a move of 0). A record's move is the first one its text states: the event's own
  change leads its text when it has one (a price feed's answer), else perception's
  market move.

`arrange` applies an Intent (golem.grimoire.query_numbers) to ranked candidates: within
the candidates of the compared kind (the most relevant one's, or for an order by time
the most relevant observed event's when it is nearly as relevant: `compared`), which are
the records the query is about (the same event from the same contract; for entries, the
same type and a relevance within CLOSE of the best, since every remembered sentence may
share a type), those that pass the threshold and have the quantity the order needs come
first, in the order asked; the others keep their ranks after them. A size order
measures the amount in the unit the query names after its order word ("the largest
USDC borrow": USDC), or before it, and in the role the query names after that unit
when records use it ("the biggest WETH sold": WETH amounts followed by "sold").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from golem.grimoire.query_numbers import Intent

_NUM = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?"
_AMOUNT = re.compile(rf"(?<![\w.,$]){_NUM}\s+([A-Z][A-Z0-9]{{1,9}})\b(?:\s+([a-z]+))?")
_USD = re.compile(rf"(?:\b([a-z]+)\s+(?:of\s+)?)?(-)?\${_NUM}")
# A move after a word: "Answer down 2.3%" (groups 1-3), "price: +7.9%" (4-6), "price
# unchanged". One pattern, so the first move is its first match.
_MOVE = re.compile(rf"\b[a-z]+(?:\s+(up|down)\s+{_NUM}%|:?\s+([+\-\u2212]){_NUM}%"
                   r"|\s+unchanged\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Amount:
    value: float
    unit: str  # lowercase symbol, or "usd"
    role: str | None  # the word after it (a symbol's) or before it (a dollar amount's)


def _number(whole: str, frac: str | None) -> float:
    return float(whole.replace(",", "") + (f".{frac}" if frac else ""))


def amounts(text: str) -> list[Amount]:
    """The amounts ``text`` states, in order."""
    found = [(m.start(), Amount(_number(m.group(1), m.group(2)), m.group(3).lower(),
                                m.group(4))) for m in _AMOUNT.finditer(text)]
    found += [(m.start(), Amount(_number(m.group(3), m.group(4)) * (-1 if m.group(2) else 1),
                                 "usd", m.group(1))) for m in _USD.finditer(text)]
    return [a for _, a in sorted(found, key=lambda pair: pair[0])]


def first_move(text: str) -> float | None:
    """The first move ``text`` states, in percent (negative: down), or None. A text with
    neither a percent sign nor "unchanged" states none, and is not searched."""
    if "%" not in text and "unchanged" not in text.lower():
        return None
    m = _MOVE.search(text)
    if m is None:
        return None
    if m.group(1) is not None:
        size = _number(m.group(2), m.group(3))
        return -size if m.group(1).lower() == "down" else size
    if m.group(4) is not None:
        size = _number(m.group(5), m.group(6))
        return size if m.group(4) == "+" else -size
    return 0.0


T = TypeVar("T")
# A record of a loose kind is about what the query asks when its relevance is at least
# this share of the best one's.
CLOSE = 0.9
# An order by time compares observed events when one is at least this share as relevant
# as the best candidate: knowledge entries restate the words of the events they were
# learned from ("after oracle feed X fell 1.5% or more ..."), and an entry is not an
# event that happened "last". (A threshold alone keeps the best candidate's kind: "after
# oracle feed X moved less than 0.5%, what ..." asks for the lessons when they are the
# most relevant.)
EVENT_SHARE = 0.75


@dataclass(frozen=True)
class Measured:
    """One candidate as arrange sees it: its relevance, time, text and kind (what makes
    records comparable: an episode's category, event and contract, an entry's type)."""

    relevance: float
    when: float
    text: str
    kind: str
    # whether the kind alone says what a record is about (an event from a contract);
    # records of a loose kind (an entry type) must also be CLOSE in relevance to the best
    structural: bool = True


def size_unit(intent: Intent, query: str, texts: Sequence[str]) -> tuple[str | None, str | None]:
    """The unit a size order or a threshold measures, and the role the query names for it:
    the threshold's own unit, else the first query word after the order word (then
    before it) that is the unit of an amount in ``texts``; the role is the word after
    that unit, or the word right before the threshold ("sold more than 5 WETH"), when
    ``texts`` use it as a role. (None, None) when no unit is found."""
    units: set[str] = set()
    roles: set[str] = set()
    for text in texts:
        for a in amounts(text):
            units.add(a.unit)
            if a.role:
                roles.add(a.role)
    words = [(m.start(), m.group(0)) for m in re.finditer(r"[a-z0-9$]+", query.lower())]
    at = intent.order.at if intent.order is not None else 0
    ordered = [w for w in words if w[0] >= at] + [w for w in words if w[0] < at]
    # a role right before a threshold: "sold more than 5 WETH"
    threshold = intent.threshold
    where = query.lower().find(threshold.phrase) if threshold is not None else -1
    before = [w for pos, w in words if pos < where][-1:] if where > 0 else []
    if threshold is not None and threshold.unit in units:
        return threshold.unit, (before[0] if before and before[0] in roles else None)
    for i, (_pos, word) in enumerate(ordered):
        unit = "usd" if word in ("$", "usd", "dollars", "dollar") else word
        if unit in units:
            nxt = ordered[i + 1][1] if i + 1 < len(ordered) else None
            role = nxt if nxt in roles else (before[0] if before and before[0] in roles
                                             else None)
            return unit, role
    return None, None


def measure(text: str, unit: str | None, role: str | None) -> float | None:
    """The largest amount in ``unit`` (in ``role`` when given) ``text`` states, or None."""
    values = [a.value for a in amounts(text)
              if (unit is None or a.unit == unit) and (role is None or a.role == role)]
    return max(values) if values else None


def move_admits(intent: Intent) -> Callable[[float | None], bool] | None:
    """For a threshold on a move ("above 5 percent"): whether a text's first move
    (``first_move``, None when it states none) passes it, as arrange decides; None for any
    other intent. A text's first move is all the threshold reads, so a record that fails
    it can be skipped before it is decoded."""
    threshold = intent.threshold
    if threshold is None or threshold.unit != "%":
        return None

    def passes(move: float | None) -> bool:
        return move is not None and threshold.passes(move)
    return passes


def compared(seen: Sequence[Measured], intent: Intent) -> int:
    """The index of the record whose kind the intent's order or threshold compares: for
    an order by time, the most relevant observed event (a structural kind) when it is at
    least EVENT_SHARE as relevant as the best of ``seen``; else the best. ``seen`` must
    not be empty."""
    best = max(range(len(seen)), key=lambda i: (seen[i].relevance, -i))
    if intent.order is None or intent.order.key != "time":
        return best
    events = [i for i in range(len(seen)) if seen[i].structural
              and seen[i].relevance >= EVENT_SHARE * seen[best].relevance]
    return max(events, key=lambda i: (seen[i].relevance, -i)) if events else best


def arrange(items: Sequence[T], view: Callable[[T], Measured], intent: Intent,
            query: str) -> tuple[list[T], list[float | None], int]:
    """``items`` (ranked best first) with the intent's order and threshold applied to the
    topical ones (see the module doc); beside each the quantity it was ranked by (None
    for the items left in their places, and for a time order's); and how many came to
    the front. ``query`` is what the intent was read from. Without an order or a
    threshold, ``items`` as given."""
    if not intent.ranks_by_quantity or not items:
        return list(items), [None] * len(items), 0
    seen = [view(item) for item in items]
    top = seen[compared(seen, intent)]
    topical = [i for i, m in enumerate(seen) if m.kind == top.kind and (
        m.structural or m.relevance >= CLOSE * top.relevance)]
    threshold, order = intent.threshold, intent.order
    unit = role = None
    if (order is not None and order.key == "size") or (
            threshold is not None and threshold.unit != "%"):
        unit, role = size_unit(intent, query, [seen[i].text for i in topical])
        if threshold is not None and threshold.unit not in (None, "%", unit):
            unit, role = threshold.unit, None
    quantity: dict[int, float | None] = {}
    for i in topical:
        text = seen[i].text
        value: float | None = None
        if threshold is not None:
            value = first_move(text) if threshold.unit == "%" else measure(text, unit, role)
            if value is None or not threshold.passes(value):
                continue
        if order is not None and order.key == "size":
            value = measure(text, unit, role)
            if value is None:
                continue
        quantity[i] = value
    front = list(quantity)
    if order is not None:
        sign = -1.0 if order.descending else 1.0
        if order.key == "time":
            front.sort(key=lambda i: (sign * seen[i].when, i))
        else:
            front.sort(key=lambda i: (sign * (quantity[i] or 0.0), i))
    rest = [i for i in range(len(items)) if i not in quantity]
    return ([items[i] for i in front] + [items[i] for i in rest],
            [quantity[i] for i in front] + [None] * len(rest), len(front))

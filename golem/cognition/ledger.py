"""The spend ledger: every model call reserves its worst case before it is sent.

Money is counted in integer micro-USD, rounded up, so sums are exact and a
settlement never exceeds its reservation when the usage fits what was reserved
(price per MTok in USD is exactly micro-USD per token). A reservation counts in
full until it is settled (actual cost) or released (the API did not bill, e.g.
a 429 or 529): a crash between sending and settling leaves it counted, which
errs on the side of the budget. The day is the UTC date of the reservation.
The death reserve is a separate channel: once opened, calls booked under
RESERVE_PURPOSE pass even when the daily or lifetime cap is spent, up to the
reserve (counting every earlier reserve call), and are refused beyond it.
Blocking SQLite: call from a worker thread in async code.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

from golem.cognition.errors import BudgetExceeded, LedgerError
from golem.runtime.state import damage, damaged_message

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_spend (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    day TEXT NOT NULL,
    model TEXT NOT NULL,
    purpose TEXT NOT NULL DEFAULT '',
    reserved_micro INTEGER NOT NULL,
    settled_micro INTEGER,
    state TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'released')),
    usage TEXT,
    settled_at REAL
);
CREATE INDEX IF NOT EXISTS llm_spend_day ON llm_spend(day);
"""
RESERVE_PURPOSE = "thanatopsis"
_COUNTED = ("CASE state WHEN 'settled' THEN settled_micro"
            " WHEN 'reserved' THEN reserved_micro ELSE 0 END")


@dataclass(frozen=True)
class TokenUsage:
    """Usage as the API reports it; input_tokens excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True)
class ModelPrice:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def worst_case_micro(self, input_tokens: int, max_tokens: int) -> int:
        """All input at the dearer of input and cache-write price, plus max_tokens of output."""
        top = max(Fraction(self.input), Fraction(self.cache_write))
        return math.ceil(input_tokens * top + max_tokens * Fraction(self.output))

    def cost_micro(self, usage: TokenUsage) -> int:
        return math.ceil(usage.input_tokens * Fraction(self.input)
                         + usage.output_tokens * Fraction(self.output)
                         + usage.cache_read_input_tokens * Fraction(self.cache_read)
                         + usage.cache_creation_input_tokens * Fraction(self.cache_write))


@dataclass(frozen=True)
class SpendTotals:
    """What `golem status` shows; open reservations are included in the spend figures."""

    day: str
    today_usd: float
    lifetime_usd: float
    open_reservations: int
    daily_cap_usd: float | None
    lifetime_cap_usd: float | None
    calls_settled: int


def worst_case_input_tokens(request: Mapping[str, Any]) -> int:
    """A safe upper bound on a request's input tokens: the UTF-8 bytes of its JSON.

    Byte-level tokenizers never emit a token for less than one byte, and the JSON
    punctuation more than pays for the per-message framing tokens.
    """
    keys = ("system", "messages", "tools", "tool_choice")
    body = {k: request[k] for k in keys if request.get(k) is not None}
    return len(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())


def _day(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).date().isoformat()


def _micro(usd: float | None) -> int | None:
    return None if usd is None else math.floor(Fraction(usd) * 1_000_000)


class SpendLedger:
    """SQLite-backed reservations and settlements with daily and lifetime caps."""

    def __init__(self, path: Path, prices: Mapping[str, ModelPrice], *,
                 daily_cap_usd: float | None = None,
                 lifetime_cap_usd: float | None = None) -> None:
        self.path = Path(path)
        self.prices = dict(prices)
        self.daily_cap_usd = daily_cap_usd
        self.lifetime_cap_usd = lifetime_cap_usd
        self._daily_cap = _micro(daily_cap_usd)
        self._lifetime_cap = _micro(lifetime_cap_usd)
        self._death_reserve: int | None = None
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            problem = damage(self._db)
            if problem is None:
                self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"spend ledger {self.path} is unreadable: {exc}") from exc
        if problem is not None:
            self._db.close()
            raise LedgerError(damaged_message(self.path, "the spend ledger", problem))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SpendLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open_death_reserve(self, reserve_usd: float) -> None:
        """Let RESERVE_PURPOSE calls spend up to ``reserve_usd`` past the normal caps."""
        self._death_reserve = _micro(max(0.0, reserve_usd))

    def limit_life(self, usd: float) -> None:
        """Normal life may spend at most ``usd`` over the golem's life (its starting budget
        less the death reserve): the reserve is left for the death protocol alone."""
        cap = _micro(max(0.0, usd))
        assert cap is not None
        if self._lifetime_cap is None or cap < self._lifetime_cap:
            self._lifetime_cap, self.lifetime_cap_usd = cap, max(0.0, usd)

    def price(self, model: str) -> ModelPrice:
        try:
            return self.prices[model]
        except KeyError:
            raise LedgerError(f"no price configured for model {model!r}") from None

    def reserve(self, model: str, input_tokens: int, max_tokens: int, *, now: float,
                purpose: str = "") -> int:
        """Reserve the worst case of one call; BudgetExceeded if a cap would be passed."""
        if input_tokens < 0 or max_tokens < 1:
            raise LedgerError("need input_tokens >= 0 and max_tokens >= 1")
        amount = self.price(model).worst_case_micro(input_tokens, max_tokens)
        day = _day(now)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if purpose == RESERVE_PURPOSE and self._death_reserve is not None:
                    self._check_reserve(amount)
                else:
                    self._check_caps(day, amount)
                cursor = self._db.execute(
                    "INSERT INTO llm_spend (created_at, day, model, purpose, reserved_micro, state)"
                    " VALUES (?, ?, ?, ?, ?, 'reserved')", (now, day, model, purpose, amount))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _check_reserve(self, amount: int) -> None:
        assert self._death_reserve is not None
        spent = int(self._db.execute(
            f"SELECT COALESCE(SUM({_COUNTED}), 0) FROM llm_spend WHERE purpose = ?",  # noqa: S608
            (RESERVE_PURPOSE,)).fetchone()[0])
        if spent + amount > self._death_reserve:
            raise BudgetExceeded(
                f"death reserve ${self._death_reserve / 1e6:.6f} reached: spent "
                f"${spent / 1e6:.6f} from it, this call may cost ${amount / 1e6:.6f}",
                cap="death_reserve")

    def _check_caps(self, day: str, amount: int) -> None:
        today, lifetime = self._spent(day)
        if self._daily_cap is not None and today + amount > self._daily_cap:
            raise BudgetExceeded(
                f"daily LLM cap ${self.daily_cap_usd:g} reached: spent "
                f"${today / 1e6:.6f} today, this call may cost ${amount / 1e6:.6f}",
                cap="daily")
        if self._lifetime_cap is not None and lifetime + amount > self._lifetime_cap:
            raise BudgetExceeded(
                f"lifetime LLM cap ${self.lifetime_cap_usd:g} reached: spent "
                f"${lifetime / 1e6:.6f}, this call may cost ${amount / 1e6:.6f}",
                cap="lifetime")

    def settle(self, reservation_id: int, usage: TokenUsage, *, now: float) -> int:
        """Record the actual cost (micro-USD) of a reserved call; returns it."""
        with self._lock:
            row = self._open_row(reservation_id)
            cost = self.price(row[0]).cost_micro(usage)
            self._db.execute(
                "UPDATE llm_spend SET state='settled', settled_micro=?, usage=?, settled_at=?"
                " WHERE id=? AND state='reserved'",
                (cost, json.dumps(usage.__dict__, sort_keys=True), now, reservation_id))
        return cost

    def release(self, reservation_id: int, *, now: float) -> None:
        """The call was never billed (refused before the model ran): it costs nothing."""
        with self._lock:
            self._open_row(reservation_id)
            self._db.execute("UPDATE llm_spend SET state='released', settled_micro=0,"
                             " settled_at=? WHERE id=?", (now, reservation_id))

    def totals(self, *, now: float) -> SpendTotals:
        day = _day(now)
        with self._lock:
            today, lifetime = self._spent(day)
            open_count, settled = self._db.execute(
                "SELECT COALESCE(SUM(state='reserved'), 0), COALESCE(SUM(state='settled'), 0)"
                " FROM llm_spend").fetchone()
        return SpendTotals(day, today / 1e6, lifetime / 1e6, int(open_count),
                           self.daily_cap_usd, self.lifetime_cap_usd, int(settled))

    def token_totals(self) -> dict[str, int]:
        """Tokens of the settled calls by kind: input, output, cache_read, cache_write."""
        kinds = {"input": "input_tokens", "output": "output_tokens",
                 "cache_read": "cache_read_input_tokens",
                 "cache_write": "cache_creation_input_tokens"}
        sums = ", ".join(f"COALESCE(SUM(json_extract(usage, '$.{f}')), 0)"
                         for f in kinds.values())
        with self._lock:
            row = self._db.execute(
                f"SELECT {sums} FROM llm_spend WHERE state='settled'").fetchone()  # noqa: S608
        return {kind: int(n) for kind, n in zip(kinds, row, strict=True)}

    def _spent(self, day: str) -> tuple[int, int]:
        today, lifetime = self._db.execute(
            f"SELECT COALESCE(SUM(CASE WHEN day=? THEN {_COUNTED} ELSE 0 END), 0),"  # noqa: S608
            f" COALESCE(SUM({_COUNTED}), 0) FROM llm_spend", (day,)).fetchone()
        return int(today), int(lifetime)

    def _open_row(self, reservation_id: int) -> tuple[str, str]:
        row = self._db.execute("SELECT model, state FROM llm_spend WHERE id=?",
                               (reservation_id,)).fetchone()
        if row is None:
            raise LedgerError(f"unknown reservation {reservation_id}")
        if row[1] != "reserved":
            raise LedgerError(f"reservation {reservation_id} is already {row[1]}")
        return str(row[0]), str(row[1])

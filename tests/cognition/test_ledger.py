"""The spend ledger in real SQLite: reservations, settlements, caps, crashes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.cognition.errors import BudgetExceeded, LedgerError
from golem.cognition.ledger import (
    ModelPrice,
    SpendLedger,
    TokenUsage,
    worst_case_input_tokens,
)

PRICES = {"cheap": ModelPrice(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25),
          "strong": ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)}
DAY = 1_800_000_000.0  # 2027-01-15 08:00 UTC
NEXT_DAY = DAY + 86400
SHM = Path("/dev/shm")


def ledger(path: Path, daily: float | None = None, lifetime: float | None = None) -> SpendLedger:
    return SpendLedger(path / "spend.sqlite", PRICES, daily_cap_usd=daily,
                       lifetime_cap_usd=lifetime)


def test_reserve_counts_the_worst_case(tmp_path: Path) -> None:
    with ledger(tmp_path) as book:
        book.reserve("strong", input_tokens=10_000, max_tokens=1_000, now=DAY)
        # all input at the dearer write price (3.75/MTok) + all output (15/MTok)
        totals = book.totals(now=DAY)
        assert totals.today_usd == pytest.approx(0.0375 + 0.015)
        assert totals.open_reservations == 1 and totals.calls_settled == 0


def test_settlement_cost_is_exact(tmp_path: Path) -> None:
    with ledger(tmp_path) as book:
        rid = book.reserve("strong", input_tokens=10_000, max_tokens=1_000, now=DAY)
        usage = TokenUsage(input_tokens=100, output_tokens=200, cache_read_input_tokens=9000,
                           cache_creation_input_tokens=500)
        assert book.settle(rid, usage, now=DAY + 5) == 7875
        totals = book.totals(now=DAY)
        assert totals.today_usd == totals.lifetime_usd == pytest.approx(0.007875)
        assert totals.open_reservations == 0 and totals.calls_settled == 1


def test_daily_cap_refuses_and_resets_the_next_day(tmp_path: Path) -> None:
    with ledger(tmp_path, daily=0.05, lifetime=1.0) as book:
        book.reserve("cheap", 1000, 4000, now=DAY)  # 0.00125 + 0.02 = 0.02125
        book.reserve("cheap", 1000, 4000, now=DAY)  # 0.0425
        with pytest.raises(BudgetExceeded) as err:
            book.reserve("cheap", 1000, 4000, now=DAY)
        assert err.value.cap == "daily" and "daily LLM cap" in str(err.value)
        book.reserve("cheap", 1000, 4000, now=NEXT_DAY)
        totals = book.totals(now=NEXT_DAY)
        assert totals.today_usd == pytest.approx(0.02125)
        assert totals.lifetime_usd == pytest.approx(0.06375)
        assert totals.open_reservations == 3


def test_lifetime_cap_refuses(tmp_path: Path) -> None:
    with ledger(tmp_path, lifetime=0.03) as book:
        rid = book.reserve("cheap", 1000, 4000, now=DAY)
        with pytest.raises(BudgetExceeded) as err:
            book.reserve("cheap", 1000, 4000, now=NEXT_DAY)
        assert err.value.cap == "lifetime"
        book.settle(rid, TokenUsage(input_tokens=1000, output_tokens=100), now=DAY)
        book.reserve("cheap", 1000, 4000, now=NEXT_DAY)  # settling freed the headroom


def test_unsettled_reservation_survives_a_crash(tmp_path: Path) -> None:
    # a crash: another process reserves, then dies without settling or closing
    script = ("import os, sys; from pathlib import Path; from golem.cognition.ledger import *\n"
              "book = SpendLedger(Path(sys.argv[1]), {'cheap': ModelPrice(1.0, 5.0, 0.1, 1.25)})\n"
              f"book.reserve('cheap', 1000, 4000, now={DAY})\n"
              "os._exit(9)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "spend.sqlite")],
                          timeout=60, check=False)
    assert done.returncode == 9
    with ledger(tmp_path, daily=0.03) as reopened:
        totals = reopened.totals(now=DAY)
        assert totals.open_reservations == 1 and totals.today_usd == pytest.approx(0.02125)
        with pytest.raises(BudgetExceeded):
            reopened.reserve("cheap", 1000, 4000, now=DAY)


def test_release_frees_and_misuse_is_refused(tmp_path: Path) -> None:
    with ledger(tmp_path, daily=0.03) as book:
        rid = book.reserve("cheap", 1000, 4000, now=DAY)
        book.release(rid, now=DAY)
        assert book.totals(now=DAY).today_usd == 0
        with pytest.raises(LedgerError):
            book.settle(rid, TokenUsage(), now=DAY)
        with pytest.raises(LedgerError):
            book.settle(999, TokenUsage(), now=DAY)
        with pytest.raises(LedgerError):
            book.reserve("unknown-model", 10, 10, now=DAY)
        with pytest.raises(LedgerError):
            book.reserve("cheap", 10, 0, now=DAY)


def test_a_corrupt_file_is_a_ledger_error(tmp_path: Path) -> None:
    (tmp_path / "spend.sqlite").write_bytes(b"not a database" * 100)
    with pytest.raises(LedgerError):
        ledger(tmp_path)


def test_worst_case_input_tokens_bounds_the_text() -> None:
    request = {"model": "m", "max_tokens": 5, "system": "sys",
               "messages": [{"role": "user", "content": "héllo wörld " * 50}]}
    bound = worst_case_input_tokens(request)
    assert bound >= len(("héllo wörld " * 50).encode()) + 3


def test_the_table_is_durable_sqlite(tmp_path: Path) -> None:
    with ledger(tmp_path) as book:
        book.reserve("cheap", 10, 10, now=DAY)
    db = sqlite3.connect(tmp_path / "spend.sqlite")
    try:
        assert db.execute("SELECT state FROM llm_spend").fetchall() == [("reserved",)]
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    finally:
        db.close()


op = st.tuples(st.sampled_from(["cheap", "strong"]), st.integers(0, 200_000),
               st.integers(1, 8_000), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1),
               st.integers(0, 2), st.sampled_from(["settle", "release", "crash"]))


@settings(max_examples=60)
@given(st.lists(op, min_size=1, max_size=25), st.floats(0.01, 2.0), st.floats(0.01, 5.0))
def test_settled_never_exceeds_reserved_and_caps_hold(
        ops: list[tuple[str, int, int, float, float, float, int, str]],
        daily: float, lifetime: float) -> None:
    # tmpfs where there is one: the same SQLite, without a disk fsync per commit
    with tempfile.TemporaryDirectory(dir=SHM if SHM.is_dir() else None) as tmp:
        book = ledger(Path(tmp), daily, lifetime)
        try:
            for i, (model, prompt, max_out, read_share, write_share, out_share, days, end) \
                    in enumerate(ops):
                now = DAY + days * 86400 + i
                try:
                    rid = book.reserve(model, prompt, max_out, now=now)
                except BudgetExceeded:
                    continue
                reserved = book.price(model).worst_case_micro(prompt, max_out)
                read = int(prompt * read_share)
                write = int((prompt - read) * write_share)
                usage = TokenUsage(input_tokens=prompt - read - write,
                                   output_tokens=int(max_out * out_share),
                                   cache_read_input_tokens=read,
                                   cache_creation_input_tokens=write)
                if end == "settle":
                    assert book.settle(rid, usage, now=now) <= reserved
                elif end == "release":
                    book.release(rid, now=now)
                totals = book.totals(now=now)
                assert totals.today_usd <= daily + 1e-9
                assert totals.lifetime_usd <= lifetime + 1e-9
        finally:
            book.close()

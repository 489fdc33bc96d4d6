"""The position book's one P&L rule, as a property over arbitrary holdings histories."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.actions.positions import Holding, PositionBook, Snapshot, read_book

KEYS = ("usdc", "weth", "lp:pool", "supply:weth")
units = st.integers(min_value=0, max_value=10**12)
prices = st.floats(min_value=0.01, max_value=1e4)
snapshots = st.lists(st.tuples(units, prices), min_size=len(KEYS), max_size=len(KEYS)).map(
    lambda rows: Snapshot(tuple(Holding(k, k, u, u / 1e6 * p) for k, (u, p) in
                                zip(KEYS, rows, strict=True) if u)))


@settings(max_examples=60, deadline=None)
@given(st.lists(snapshots, min_size=1, max_size=6))
def test_realised_plus_unrealised_is_equity_minus_funding(history: list[Snapshot]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        book = PositionBook.open(Path(folder))
        try:
            book.observe(history[0])
            for i, (before, after) in enumerate(itertools.pairwise(history)):
                seq, _ = book.record(before, after, tick=i, now=float(i), kind="swap",
                                     contract="pool", status="ok", detail="", tx_hashes=[])
                assert seq == i + 1
            last = history[-1]
            pnl = book.pnl(last)
            if history[0].holdings:
                assert pnl["funded_usd"] == pytest.approx(history[0].equity_usd)
            # float sums of holdings worth up to ~1e10 USD cancel: allow their rounding
            scale = max((abs(h.usd) for s in history for h in s.holdings), default=0.0)
            assert pnl["realised_usd"] + pnl["unrealised_usd"] == pytest.approx(
                last.equity_usd - pnl["funded_usd"], rel=1e-9, abs=1e-6 + 1e-12 * scale)
            assert pnl["peak_equity_usd"] == pytest.approx(
                history[0].equity_usd if history[0].holdings else 0.0)
        finally:
            book.close()
        summary = read_book(Path(folder))
        assert summary is not None and summary["executions"] == (
            {"ok": len(history) - 1} if len(history) > 1 else {})


def test_a_sale_realises_the_difference_to_its_cost() -> None:
    with tempfile.TemporaryDirectory() as folder:
        book = PositionBook.open(Path(folder))
        try:
            start = Snapshot((Holding("usdc", "USDC", 100, 100.0), Holding("weth", "WETH", 10,
                                                                            50.0)))
            book.observe(start)
            # sell half the WETH (cost $25) for $30 of USDC
            after = Snapshot((Holding("usdc", "USDC", 130, 130.0),
                              Holding("weth", "WETH", 5, 30.0)))
            _, realised = book.record(start, after, tick=1, now=1.0, kind="swap",
                                      contract="p", status="ok", detail="", tx_hashes=[])
            assert realised == pytest.approx(30.0 - 25.0)
            assert book.pnl(after)["unrealised_usd"] == pytest.approx(30.0 - 25.0)
        finally:
            book.close()

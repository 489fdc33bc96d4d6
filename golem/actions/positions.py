"""Positions and P&L: what the wallet holds on chain, marked to market, and its cost basis.

Holdings are read from chain state every time (token balances, LP shares, lending
supply), never from our own bookkeeping, so a crash between a transaction and its
record cannot make the book disagree with the chain. The book (positions.db) keeps
only what the chain cannot say: each holding's cost basis, realised P&L, peak
equity and the list of executions.

Marking: USDC at $1, WETH at the oracle, other tokens through their pool's reserves,
LP shares at their share of both reserves. Native ETH is gas, not capital: not
counted. One rule covers every action: holdings that shrank give up their basis
pro rata, holdings that grew enter at market value, and the difference is realised.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from golem.actions.cage import Portfolio
from golem.chain.abi import AbiError, decode_result, encode_call
from golem.chain.compile import load_artifacts
from golem.chain.evm import ChainError, Evm
from golem.chain.fees import V2_FEE_PIPS
from golem.chain.market import ORACLE_UNIT, Market, Token
from golem.errors import StateError
from golem.runtime.state import connect_durable, durable_write, read_only_rows

POSITIONS_DB = "positions.db"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS basis (key TEXT PRIMARY KEY, cost_usd REAL NOT NULL);
CREATE TABLE IF NOT EXISTS totals (key TEXT PRIMARY KEY, value REAL NOT NULL);
CREATE TABLE IF NOT EXISTS executions (
    seq INTEGER PRIMARY KEY,
    tick INTEGER NOT NULL,
    golem_time REAL NOT NULL,
    kind TEXT NOT NULL,
    contract TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    tx_hashes TEXT NOT NULL,
    pnl_usd REAL NOT NULL,
    equity_before REAL NOT NULL,
    equity_after REAL NOT NULL
);
"""


def read_book(folder: Path) -> dict[str, Any] | None:
    """For `golem status`, read-only: totals and executions by status; None before any."""
    path = folder / POSITIONS_DB
    totals = read_only_rows(path, "the position book", "SELECT key, value FROM totals")
    if totals is None:
        return None
    counts = read_only_rows(path, "the position book",
                            "SELECT status, COUNT(*) FROM executions GROUP BY status") or []
    return {"totals": {str(k): float(v) for k, v in totals},
            "executions": {str(k): int(n) for k, n in counts}}


@dataclass(frozen=True)
class Holding:
    key: str  # token address, "lp:<pair>" or "supply:<asset>" (lower case)
    label: str  # "WETH", "LP WETH/USDC", "supplied USDC"
    units: int  # raw units (token decimals; LP shares)
    usd: float
    asset: str = ""  # symbol the cage's position cap applies to


@dataclass(frozen=True)
class Snapshot:
    holdings: tuple[Holding, ...]

    @property
    def equity_usd(self) -> float:
        return sum(h.usd for h in self.holdings)

    def get(self, key: str) -> Holding | None:
        return next((h for h in self.holdings if h.key == key.lower()), None)

    def units(self, key: str) -> int:
        held = self.get(key)
        return held.units if held is not None else 0


class Valuer:
    """Reads the wallet's holdings off chain state (synchronous: run in a worker thread)."""

    def __init__(self, evm: Evm, market: Market, address: str) -> None:
        self.evm, self.market, self.address = evm, market, address
        self.abi = {name: a.abi for name, a in load_artifacts().items()}
        self.pairs = (market.pair_weth_usdc, market.pair_wbtc_usdc, market.pair_honey_weth)

    def call(self, address: str, kind: str, fn: str, *args: Any) -> Any:
        return self.evm.call(address, self.abi[kind], fn, *args)

    def token(self, ref: str) -> Token | None:
        """A market token by symbol or address."""
        ref = ref.lower()
        return next((t for t in self.market.tokens
                     if ref in (t.symbol.lower(), t.address.lower())), None)

    def pair_tokens(self, pair: str) -> tuple[Token, Token]:
        t0, t1 = (self.token(str(self.call(pair, "PairV2", fn))) for fn in ("token0", "token1"))
        assert t0 is not None and t1 is not None
        return t0, t1

    def reserves(self, pair: str) -> tuple[int, int]:
        r0, r1, _ = self.call(pair, "PairV2", "getReserves")
        return int(r0), int(r1)

    def fee(self, pair: str) -> int:
        """The pair's current swap fee in pips (golem.chain.fees); V2's 0.30% for a pair
        whose ``fee()`` reverts (a plain Uniswap V2 pair has none). ChainError when the
        chain does not answer or the answer is not a fee."""
        abi = self.abi["PairV2"]
        data = self.evm.raw_call(pair, "0x" + encode_call(abi, "fee").hex())
        if not data:
            return V2_FEE_PIPS
        try:
            return int(decode_result(abi, "fee", data))
        except AbiError as exc:
            raise ChainError(f"fee() of {pair}: {exc}") from None

    def price(self, token: Token) -> float:
        """USD per whole token."""
        m = self.market
        if token.address == m.usdc.address:
            return 1.0
        if token.address == m.weth.address:
            answer = int(self.call(m.oracle_eth_usd, "OracleFeed", "latestAnswer"))
            return float(answer / ORACLE_UNIT)
        pair = m.pair_wbtc_usdc if token.address == m.wbtc.address else m.pair_honey_weth
        (t0, t1), (r0, r1) = self.pair_tokens(pair), self.reserves(pair)
        mine, other, r_mine, r_other = (t0, t1, r0, r1) if t0 == token else (t1, t0, r1, r0)
        if r_mine == 0:
            return 0.0
        per_unit = (r_other / 10**other.decimals) / (r_mine / 10**mine.decimals)
        return float(per_unit) * self.price(other)

    def snapshot(self) -> Snapshot:
        out: list[Holding] = []
        for t in self.market.tokens:
            units = int(self.call(t.address, "ERC20", "balanceOf", self.address))
            if units:
                out.append(Holding(t.address.lower(), t.symbol, units,
                                   units / 10**t.decimals * self.price(t), t.symbol))
        for pair in self.pairs:
            shares = int(self.call(pair, "PairV2", "balanceOf", self.address))
            if shares:
                total = int(self.call(pair, "PairV2", "totalSupply"))
                (t0, t1), (r0, r1) = self.pair_tokens(pair), self.reserves(pair)
                usd = shares / total * (r0 / 10**t0.decimals * self.price(t0)
                                        + r1 / 10**t1.decimals * self.price(t1))
                out.append(Holding(f"lp:{pair.lower()}", f"LP {t0.symbol}/{t1.symbol}",
                                   shares, usd))
        lending = self.market.lending
        for fn, t in (("collateralOf", self.market.weth), ("liquidityOf", self.market.usdc)):
            units = int(self.call(lending, "LendingPool", fn, self.address))
            if units:
                out.append(Holding(f"supply:{t.address.lower()}", f"supplied {t.symbol}",
                                   units, units / 10**t.decimals * self.price(t), t.symbol))
        debt = int(self.call(lending, "LendingPool", "debtOf", self.address))
        if debt:
            usdc = self.market.usdc
            out.append(Holding("debt:" + usdc.address.lower(), "borrowed USDC", debt,
                               -debt / 10**usdc.decimals))
        return Snapshot(tuple(out))


class PositionBook:
    """Cost basis, realised P&L, peak equity and executions (positions.db)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn, self.path = conn, path

    @classmethod
    def open(cls, folder: Path) -> PositionBook:
        path = folder / POSITIONS_DB
        return cls(connect_durable(path, "the position book", _SCHEMA), path)

    def close(self) -> None:
        self._conn.close()

    def observe(self, snap: Snapshot) -> Portfolio:
        """Start the basis at first sight (the funding), track the peak; the cage's view."""
        equity = snap.equity_usd
        with durable_write(self._conn, self.path) as conn:
            if conn.execute("SELECT COUNT(*) FROM totals WHERE key = 'funded_usd'"
                            ).fetchone()[0] == 0 and snap.holdings:
                conn.executemany("INSERT OR REPLACE INTO basis VALUES (?, ?)",
                                 [(h.key, h.usd) for h in snap.holdings])
                conn.execute("INSERT INTO totals VALUES ('funded_usd', ?)", (equity,))
            conn.execute("INSERT INTO totals VALUES ('peak_equity_usd', ?) ON CONFLICT(key) "
                         "DO UPDATE SET value = max(value, excluded.value)", (equity,))
        peak = self._total("peak_equity_usd")
        positions: dict[str, float] = {}
        for h in snap.holdings:
            for name in {h.key, h.asset.lower()} - {""}:
                positions[name] = positions.get(name, 0.0) + h.usd
        return Portfolio(positions, equity_usd=equity, peak_equity_usd=peak)

    def record(self, before: Snapshot, after: Snapshot, *, tick: int, now: float, kind: str,
               contract: str, status: str, detail: str, tx_hashes: list[str]) -> tuple[int, float]:
        """Move cost basis by the one rule above; (execution seq, realised P&L)."""
        with durable_write(self._conn, self.path) as conn:
            basis = {k: float(v) for k, v in conn.execute("SELECT key, cost_usd FROM basis")}
            realised = 0.0
            for key in {h.key for h in (*before.holdings, *after.holdings)}:
                was, now_units = before.units(key), after.units(key)
                if now_units < was:
                    cost = basis.get(key, 0.0) * (was - now_units) / was
                    basis[key] = basis.get(key, 0.0) - cost
                    realised -= cost
                elif now_units > was:
                    held = after.get(key)
                    assert held is not None
                    value = held.usd * (now_units - was) / now_units
                    basis[key] = basis.get(key, 0.0) + value
                    realised += value
            conn.execute("DELETE FROM basis")
            conn.executemany("INSERT INTO basis VALUES (?, ?)",
                             [(k, v) for k, v in basis.items() if after.units(k)])
            conn.execute("INSERT INTO totals VALUES ('realised_usd', ?) ON CONFLICT(key) "
                         "DO UPDATE SET value = value + excluded.value", (realised,))
            cur = conn.execute(
                "INSERT INTO executions (tick, golem_time, kind, contract, status, detail, "
                "tx_hashes, pnl_usd, equity_before, equity_after) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (tick, now, kind, contract, status, detail[:500], json.dumps(tx_hashes),
                 realised, before.equity_usd, after.equity_usd))
            seq = int(cur.lastrowid or 0)
        return seq, realised

    def executed_at(self, tick: int, golem_time: float) -> bool:
        """Whether the book holds an execution of Theta's `tick` at `golem_time`."""
        return bool(self._rows("SELECT 1 FROM executions WHERE tick = ? AND golem_time = ? "
                               "LIMIT 1", (tick, golem_time)))

    def pnl(self, snap: Snapshot) -> dict[str, float]:
        """Realised, unrealised (equity minus the basis of what is held) and funded capital."""
        basis = sum(float(v) for (v,) in self._rows("SELECT cost_usd FROM basis"))
        return {"equity_usd": snap.equity_usd, "realised_usd": self._total("realised_usd"),
                "unrealised_usd": snap.equity_usd - basis,
                "funded_usd": self._total("funded_usd"),
                "peak_equity_usd": self._total("peak_equity_usd")}

    def executions(self) -> list[dict[str, Any]]:
        cols = ("seq", "tick", "golem_time", "kind", "contract", "status", "detail",
                "tx_hashes", "pnl_usd", "equity_before", "equity_after")
        return [dict(zip(cols, row, strict=True)) for row in
                self._rows("SELECT seq, tick, golem_time, kind, contract, status, detail, "
                           "tx_hashes, pnl_usd, equity_before, equity_after "
                           "FROM executions ORDER BY seq")]

    def _total(self, key: str) -> float:
        rows = self._rows("SELECT value FROM totals WHERE key = ?", (key,))
        return float(rows[0][0]) if rows else 0.0

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn.execute(sql, args).fetchall())
        except sqlite3.Error as exc:
            raise StateError(f"{self.path}: read failed: {exc}") from None

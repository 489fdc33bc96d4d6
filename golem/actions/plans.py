"""Turn a ProposedAction into the contract calls that carry it out on the simulated market.

A plan is a short list of calls (V2 pairs take tokens transferred in first, then
swap/mint; the lending pool takes an exact approval, never an unlimited one, then
supply). Anything that cannot work is refused here with a reason, before a key
is touched: an unknown pool or asset, a balance too small, a swap whose quote from
the reserves moves more than max_slippage against us (fee included: the pool's current
fee, read from the pool, golem.chain.fees).

Amounts: `amount` is in whole units of asset_in; with no amount, notional_usd is
converted at the asset's marked price.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from golem.actions.positions import Snapshot, Valuer
from golem.actions.proposal import ProposedAction
from golem.chain.fees import V2_FEE_PIPS, amount_out
from golem.chain.market import MAX_UINT, Token


@dataclass(frozen=True)
class Call:
    address: str
    kind: str  # artifact name: its ABI
    fn: str
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Plan:
    calls: tuple[Call, ...]
    summary: str
    protocol: str  # "PairV2" | "LendingPool"
    function: str  # the call that does the work (for anti-knowledge)
    token: str = ""  # asset_in address


class Refused(Exception):
    """The action cannot be carried out; the message says why."""


def plan(action: ProposedAction, v: Valuer, snap: Snapshot, max_slippage: float,
         exact: int | None = None) -> Plan:
    """The calls for `action` (raises Refused); `exact` raw units of asset_in override
    `amount` (settling sells whole balances, which a float cannot carry)."""
    contract = action.contract.lower()
    pairs = {p.lower(): p for p in v.pairs}
    if action.kind in ("swap", "add_liquidity", "remove_liquidity"):
        if contract not in pairs:
            raise Refused(f"{action.kind} needs a V2 pool; {action.contract or '(none)'} is not")
        pair = pairs[contract]
        if action.kind == "swap":
            return _swap(action, v, snap, pair, max_slippage=max_slippage, exact=exact)
        if action.kind == "add_liquidity":
            return _add(action, v, snap, pair)
        if snap.units(f"lp:{pair}") == 0:
            raise Refused(f"no liquidity held in {pair}")
        return Plan((Call(pair, "PairV2", "burn", (v.address,)),),
                    f"remove all liquidity from {pair}", "PairV2", "burn")
    if action.kind in ("supply", "withdraw"):
        if contract != v.market.lending.lower():
            raise Refused(f"{action.kind} needs the lending pool; "
                          f"{action.contract or '(none)'} is not")
        return _lending(action, v, snap)
    raise Refused(f"action kind {action.kind!r} is not executed")


def _token(v: Valuer, ref: str, what: str) -> Token:
    token = v.token(ref) if ref else None
    if token is None:
        raise Refused(f"{what} {ref or '(none)'} is not a market token")
    return token


def _units(action: ProposedAction, v: Valuer, token: Token, snap: Snapshot,
           share: float = 1.0) -> int:
    if action.amount > 0:
        units = int(action.amount * 10**token.decimals)
    elif action.notional_usd > 0:
        price = v.price(token)
        units = int(action.notional_usd * share / price * 10**token.decimals) if price else 0
    else:
        raise Refused("neither amount nor notional_usd is given")
    if units <= 0:
        raise Refused("the amount rounds to zero")
    held = snap.units(token.address)
    if units > held:
        raise Refused(f"the wallet holds {held / 10**token.decimals:g} {token.symbol}, "
                      f"{units / 10**token.decimals:g} needed")
    return units


def quote(amount_in: int, r_in: int, r_out: int, fee_pips: int = V2_FEE_PIPS) -> int:
    """V2 amount out for amount_in at a fee of ``fee_pips`` (default V2's 0.30%)."""
    return amount_out(amount_in, r_in, r_out, fee_pips)


def price_impact(amount_in: int, amount_out: int, r_in: int, r_out: int) -> float:
    """How much worse than the pool's mid price the quote is (fee included), 0..1."""
    mid = amount_in * r_out / r_in if r_in else 0.0
    return 1.0 - amount_out / mid if mid > 0 else 1.0


def _sides(v: Valuer, pair: str, token_in: Token) -> tuple[Token, int, int, bool]:
    (t0, t1), (r0, r1) = v.pair_tokens(pair), v.reserves(pair)
    if token_in not in (t0, t1):
        raise Refused(f"{token_in.symbol} is not in pool {pair}")
    zero_for_one = token_in == t0
    return (t1, r0, r1, True) if zero_for_one else (t0, r1, r0, False)


def _swap(action: ProposedAction, v: Valuer, snap: Snapshot, pair: str, *,
          max_slippage: float, exact: int | None) -> Plan:
    token_in = _token(v, action.asset_in, "asset_in")
    token_out, r_in, r_out, zero_for_one = _sides(v, pair, token_in)
    if action.asset_out and _token(v, action.asset_out, "asset_out") != token_out:
        raise Refused(f"pool {pair} does not trade {token_in.symbol} for {action.asset_out}")
    units = exact if exact is not None else _units(action, v, token_in, snap)
    out = quote(units, r_in, r_out, v.fee(pair))
    if out <= 0:
        raise Refused("the quote is zero")
    impact = price_impact(units, out, r_in, r_out)
    if impact > max_slippage:
        raise Refused(f"the quote moves {impact:.2%} against us, above max_slippage "
                      f"{max_slippage:.2%}")
    outs = (0, out) if zero_for_one else (out, 0)
    return Plan((Call(token_in.address, "ERC20", "transfer", (pair, units)),
                 Call(pair, "PairV2", "swap", (*outs, v.address))),
                f"swap {units / 10**token_in.decimals:g} {token_in.symbol} for "
                f"{out / 10**token_out.decimals:g} {token_out.symbol} (impact {impact:.2%})",
                "PairV2", "swap", token_in.address)


def _add(action: ProposedAction, v: Valuer, snap: Snapshot, pair: str) -> Plan:
    token_in = _token(v, action.asset_in, "asset_in")
    other, r_in, r_other, _ = _sides(v, pair, token_in)
    units = _units(action, v, token_in, snap, share=0.5)
    other_units = units * r_other // r_in + 1 if r_in else 0
    if other_units > snap.units(other.address):
        raise Refused(f"adding liquidity needs {other_units / 10**other.decimals:g} "
                      f"{other.symbol}, the wallet holds less")
    return Plan((Call(token_in.address, "ERC20", "transfer", (pair, units)),
                 Call(other.address, "ERC20", "transfer", (pair, other_units)),
                 Call(pair, "PairV2", "mint", (v.address,))),
                f"add {units / 10**token_in.decimals:g} {token_in.symbol} and "
                f"{other_units / 10**other.decimals:g} {other.symbol} to {pair}",
                "PairV2", "mint", token_in.address)


def _lending(action: ProposedAction, v: Valuer, snap: Snapshot) -> Plan:
    lending = v.market.lending
    if action.kind == "supply":
        token = _token(v, action.asset_in, "asset_in")
        units = _units(action, v, token, snap)
        return Plan((Call(token.address, "ERC20", "approve", (lending, units)),
                     Call(lending, "LendingPool", "supply", (token.address, units, v.address, 0))),
                    f"supply {units / 10**token.decimals:g} {token.symbol}", "LendingPool",
                    "supply", token.address)
    token = _token(v, action.asset_out or action.asset_in, "asset")
    supplied = snap.units(f"supply:{token.address}")
    if supplied == 0:
        raise Refused(f"no {token.symbol} supplied to withdraw")
    units = MAX_UINT if action.amount <= 0 else int(action.amount * 10**token.decimals)
    what = "all" if units == MAX_UINT else f"{units / 10**token.decimals:g}"
    return Plan((Call(lending, "LendingPool", "withdraw", (token.address, units, v.address)),),
                f"withdraw {what} {token.symbol}", "LendingPool", "withdraw", token.address)

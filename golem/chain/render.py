"""One faithful line of English per decoded event, for the embedder.

Amounts are exact (scaled by the token's decimals when its metadata is known,
raw base units otherwise), and token metadata read from the chain is untrusted:
it is cleaned before it can reach a rendering.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from golem.chain.decoding import AAVE, V2, V3, DecodedEvent
from golem.chain.untrusted import clean


@dataclass(frozen=True)
class TokenMeta:
    """A token's symbol, name and decimals as read from the chain (untrusted).

    Symbol and name are cleaned on construction (see `golem.chain.untrusted`);
    decimals must fit ERC20's uint8.
    """

    symbol: str
    name: str
    decimals: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "symbol", clean(self.symbol, 16))
        object.__setattr__(self, "name", clean(self.name, 64))
        if not 0 <= self.decimals <= 255:
            raise ValueError(f"token decimals out of range: {self.decimals}")


def format_amount(raw: int, meta: TokenMeta | None, fallback: str) -> str:
    """Exact amount: scaled by decimals with the symbol, or raw base units otherwise."""
    if meta is None:
        return f"{raw} base units of {fallback}"
    sign, raw = ("-", -raw) if raw < 0 else ("", raw)
    whole, frac = divmod(raw, 10**meta.decimals)
    text = f"{whole:,}"
    if frac:
        text += "." + str(frac).rjust(meta.decimals, "0").rstrip("0")
    return f"{sign}{text} {meta.symbol or fallback}"


_Amt = Callable[[int, str], str]


def _swap_v2(a: dict[str, Any], amt: _Amt) -> str:
    ins = [amt(a[f"amount{i}In"], f"token{i}") for i in (0, 1) if a[f"amount{i}In"]]
    outs = [amt(a[f"amount{i}Out"], f"token{i}") for i in (0, 1) if a[f"amount{i}Out"]]
    return (f"{' + '.join(ins) or 'nothing'} in, {' + '.join(outs) or 'nothing'} out, "
            f"by {a['sender']} to {a['to']}")


def _liquidity_v2(a: dict[str, Any], amt: _Amt) -> str:
    pair = f"{amt(a['amount0'], 'token0')} + {amt(a['amount1'], 'token1')}"
    verb, tail = ("removed", f", to {a['to']}") if "to" in a else ("added", "")
    return f"{pair} {verb} by {a['sender']}{tail}"


def _sync_v2(a: dict[str, Any], amt: _Amt) -> str:
    return f"reserves {amt(a['reserve0'], 'token0')}, {amt(a['reserve1'], 'token1')}"


def _swap_v3(a: dict[str, Any], amt: _Amt) -> str:
    legs = [(a[f"amount{i}"], f"token{i}") for i in (0, 1)]
    ins = [amt(v, k) for v, k in legs if v > 0]
    outs = [amt(-v, k) for v, k in legs if v < 0]
    return (f"{' + '.join(ins) or 'nothing'} in, {' + '.join(outs) or 'nothing'} out, "
            f"by {a['sender']} to {a['recipient']}; tick {a['tick']}, "
            f"sqrtPriceX96 {a['sqrtPriceX96']}, liquidity {a['liquidity']}")


def _liquidity_v3(a: dict[str, Any], amt: _Amt) -> str:
    verb = "added" if "sender" in a else "removed"
    return (f"liquidity {a['amount']} {verb} in ticks [{a['tickLower']}, {a['tickUpper']}] "
            f"for owner {a['owner']}, {amt(a['amount0'], 'token0')} + "
            f"{amt(a['amount1'], 'token1')}")


def _aave(a: dict[str, Any], amt: _Amt) -> str:
    parts = [amt(a["amount"], a["reserve"])]
    parts += [f"{k} {a[k]}" for k in ("user", "onBehalfOf", "to", "repayer") if k in a]
    if "interestRateMode" in a:
        parts.append(f"rate mode {a['interestRateMode']}, borrow rate {a['borrowRate']}")
    if "useATokens" in a:
        parts.append(f"with aTokens {str(a['useATokens']).lower()}")
    if "referralCode" in a:
        parts.append(f"referral {a['referralCode']}")
    return ", ".join(parts)


def _liquidation(a: dict[str, Any], amt: _Amt) -> str:
    return (f"user {a['user']} liquidated by {a['liquidator']}, "
            f"{amt(a['debtToCover'], a['debtAsset'])} debt covered, "
            f"{amt(a['liquidatedCollateralAmount'], a['collateralAsset'])} collateral "
            f"seized, receive aToken {str(a['receiveAToken']).lower()}")


# The emitting contract is the token (ERC20/721) or the feed (Chainlink): key "self".
_TEMPLATES: dict[tuple[str, str], Callable[[dict[str, Any], _Amt], str]] = {
    (V2, "Swap"): _swap_v2, (V2, "Mint"): _liquidity_v2, (V2, "Burn"): _liquidity_v2,
    (V2, "Sync"): _sync_v2, (V3, "Swap"): _swap_v3, (V3, "Mint"): _liquidity_v3,
    (V3, "Burn"): _liquidity_v3,
    ("ERC20", "Transfer"): lambda a, amt: f"{amt(a['value'], 'self')} from {a['from']} "
    f"to {a['to']}",
    ("ERC20", "Approval"): lambda a, amt: f"{a['owner']} allows {a['spender']} to spend "
    f"{amt(a['value'], 'self')}",
    ("ERC721", "Transfer"): lambda a, _: f"token #{a['tokenId']} from {a['from']} to {a['to']}",
    ("ERC721", "Approval"): lambda a, _: f"{a['owner']} approves {a['approved']} for token "
    f"#{a['tokenId']}",
    **{(AAVE, n): _aave for n in ("Supply", "Withdraw", "Borrow", "Repay")},
    (AAVE, "LiquidationCall"): _liquidation,
    ("Chainlink", "AnswerUpdated"): lambda a, amt: f"answer {amt(a['current'], 'answer')}, "
    f"round {a['roundId']}, updated at {a['updatedAt']}",
}


def render(event: DecodedEvent, token_meta: Mapping[str, TokenMeta] | None = None) -> str:
    """One faithful line of English for embedding.

    `token_meta` maps an address to its TokenMeta (for ERC20 events, the token
    itself; for a Chainlink feed, decimals of the answer); pool events, whose
    tokens are not in the log, look up the keys "token0" and "token1" instead.
    Amounts without metadata are shown exactly, in raw base units.
    """
    meta = {k.lower(): v for k, v in (token_meta or {}).items()}
    meta_self = meta.get(event.address.lower())

    def amt(raw: int, key: str) -> str:
        if key == "answer":  # a feed's answer is a number, scaled by the feed's decimals
            return format_amount(raw, meta_self, "").rstrip() if meta_self else str(raw)
        if key == "self":
            return format_amount(raw, meta_self, "this token")
        return format_amount(raw, meta.get(key.lower()), key)

    if not event.known:
        raw = event.raw or {}
        return (f"Unknown event on {event.address}: topic0 {raw.get('topic0')}, "
                f"{len(raw.get('topics', []))} topics, "
                f"{(len(raw.get('data', '0x')) - 2) // 2} bytes of data")
    template = _TEMPLATES.get((event.protocol, event.name))
    body = template(event.args, amt) if template else ", ".join(
        f"{k} {v}" for k, v in event.args.items())
    return f"{event.protocol} {event.name} on {event.address}: {body}"

"""One sentence per decoded event, for the embedder, and the exact identifiers beside it.

The sentence names things: token symbols, venues ("the WETH/USDC pool", "the
lending pool"), the golem's own wallet, and a short stable alias for any other
address ("trader ab12"; see golem.chain.names). Raw hex addresses are not in
it: each is dozens of word pieces that cost embedding time and say nothing to a
sentence model. They are returned beside the sentence (`Rendering.identifiers`)
for the full-text index, and the episode's payload keeps every decoded value
exactly. Amounts in the sentence are rounded to four significant digits (whole
units are never rounded away); token metadata read from the chain is untrusted
and cleaned before it can reach a rendering. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

from golem.chain.decoding import AAVE, RAMSES, V2, V3, DecodedEvent
from golem.chain.fees import fee_percent
from golem.chain.names import Names, alias, pool_name
from golem.chain.untrusted import clean

MAX_UINT = 2**256 - 1
SIGNIFICANT = 4
RAY = 10**27  # Aave's rates are rays


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


@dataclass(frozen=True)
class Rendering:
    """``text``: the sentence that is embedded and shown; ``identifiers``: the exact hex
    values it names by alias or name (the emitting contract, the addresses in the args,
    an unknown event's topic0), first seen first, for the full-text index."""

    text: str
    identifiers: tuple[str, ...]


def round_amount(raw: int, meta: TokenMeta | None, fallback: str) -> str:
    """An amount as a sentence says it: four significant digits ("2.104 WETH", "6,313 USDC",
    whole units never rounded away: "1,234,568 USDC"), raw base units without metadata."""
    if meta is None:
        return f"{raw} base units of {fallback}"
    with localcontext() as ctx:
        ctx.prec = 100
        value = Decimal(raw).scaleb(-meta.decimals)
        if value == 0:
            text = "0"
        else:
            digits = value.adjusted() + 1  # digits before the point
            places = max(0, SIGNIFICANT - digits)
            rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
            text = f"{rounded:,f}"
            if "." in text:
                text = text.rstrip("0").rstrip(".")
    return f"{text} {meta.symbol or fallback}"


_Amt = Callable[[int, str], str]


@dataclass(frozen=True)
class _Ctx:
    """What a template needs: the event, its amount formatter and how to name addresses."""

    event: DecodedEvent
    amt: _Amt
    names: Names
    venue: str  # the emitting contract as the sentence calls it
    symbol: str  # the emitting token's symbol, or the venue

    def who(self, key: str, role: str = "account") -> str:
        value = self.event.args.get(key)
        return self.names.label(value, role) if isinstance(value, str) else str(value)

    def also(self, key: str, other: str, word: str, role: str = "account") -> str:
        """", {word} {label}" when args ``key`` and ``other`` differ, else nothing."""
        a = self.event.args
        if str(a.get(key, "")).lower() == str(a.get(other, "")).lower():
            return ""
        return f", {word} {self.who(key, role)}"


def _legs(ins: list[str], outs: list[str]) -> str:
    sold, bought = " and ".join(ins) or "nothing", " and ".join(outs) or "nothing"
    return f"{sold} sold for {bought}"


def _swap_v2(c: _Ctx) -> str:
    a = c.event.args
    ins = [c.amt(a[f"amount{i}In"], f"token{i}") for i in (0, 1) if a[f"amount{i}In"]]
    outs = [c.amt(a[f"amount{i}Out"], f"token{i}") for i in (0, 1) if a[f"amount{i}Out"]]
    return (f"Uniswap V2 swap on {c.venue}: {_legs(ins, outs)} by {c.who('sender', 'trader')}"
            f"{c.also('to', 'sender', 'sent to')}")


def _swap_v3(c: _Ctx) -> str:
    a = c.event.args
    legs = [(a[f"amount{i}"], f"token{i}") for i in (0, 1)]
    ins = [c.amt(v, k) for v, k in legs if v > 0]
    outs = [c.amt(-v, k) for v, k in legs if v < 0]
    return (f"Uniswap V3 swap on {c.venue}: {_legs(ins, outs)} by {c.who('sender', 'trader')}"
            f"{c.also('recipient', 'sender', 'sent to')}; tick {a['tick']}")


def _pair(c: _Ctx, k0: str, k1: str) -> str:
    a = c.event.args
    return f"{c.amt(a[k0], 'token0')} and {c.amt(a[k1], 'token1')}"


def _liquidity_v2(c: _Ctx) -> str:
    if c.event.name == "Mint":
        return (f"Uniswap V2 liquidity added to {c.venue}: {_pair(c, 'amount0', 'amount1')} "
                f"by {c.who('sender', 'provider')}")
    return (f"Uniswap V2 liquidity removed from {c.venue}: {_pair(c, 'amount0', 'amount1')} "
            f"by {c.who('sender', 'provider')}{c.also('to', 'sender', 'sent to')}")


def _sync_v2(c: _Ctx) -> str:
    return f"Uniswap V2 reserves of {c.venue}: {_pair(c, 'reserve0', 'reserve1')}"


def _liquidity_v3(c: _Ctx) -> str:
    a = c.event.args
    added = c.event.name == "Mint"
    where = f"{'to' if added else 'from'} {c.venue}"
    return (f"Uniswap V3 liquidity {'added' if added else 'removed'} {where} between ticks "
            f"{a['tickLower']} and {a['tickUpper']} for {c.who('owner', 'provider')}: "
            f"{_pair(c, 'amount0', 'amount1')}")


def _aave(c: _Ctx) -> str:
    a, name = c.event.args, c.event.name
    amount = c.amt(a["amount"], a["reserve"])
    if name == "Supply":
        text = (f"Aave V3 supply to {c.venue}: {amount} by {c.who('user')}"
                f"{c.also('onBehalfOf', 'user', 'for')}")
    elif name == "Withdraw":
        text = (f"Aave V3 withdrawal from {c.venue}: {amount} by {c.who('user')}"
                f"{c.also('to', 'user', 'sent to')}")
    elif name == "Borrow":
        mode = {1: "stable", 2: "variable"}.get(a["interestRateMode"],
                                                f"mode {a['interestRateMode']}")
        rate = f" of {a['borrowRate'] / RAY:.2%}" if a["borrowRate"] else ""
        text = (f"Aave V3 borrow from {c.venue}: {amount} by {c.who('user', 'borrower')}"
                f"{c.also('onBehalfOf', 'user', 'for', 'borrower')} at a {mode} rate{rate}")
    else:  # Repay
        text = (f"Aave V3 repayment to {c.venue}: {amount} for {c.who('user', 'borrower')}"
                f"{c.also('repayer', 'user', 'paid by')}"
                f"{' with aTokens' if a['useATokens'] else ''}")
    return text


def _liquidation(c: _Ctx) -> str:
    a = c.event.args
    return (f"Aave V3 liquidation on {c.venue}: {c.who('user', 'borrower')} liquidated by "
            f"{c.who('liquidator', 'liquidator')}, {c.amt(a['debtToCover'], a['debtAsset'])} "
            f"debt covered, {c.amt(a['liquidatedCollateralAmount'], a['collateralAsset'])} "
            f"collateral seized{' as aTokens' if a['receiveAToken'] else ''}")


def _transfer(c: _Ctx) -> str:
    a = c.event.args
    amount = c.amt(a["value"], "self")
    if c.names.label(a["from"]) == "the zero address":
        return f"ERC20 mint: {amount} minted to {c.who('to')}"
    if c.names.label(a["to"]) == "the zero address":
        return f"ERC20 burn: {amount} burned from {c.who('from')}"
    return f"ERC20 transfer: {amount} from {c.who('from')} to {c.who('to')}"


def _approval(c: _Ctx) -> str:
    a = c.event.args
    amount = (f"unlimited {c.symbol}" if a["value"] == MAX_UINT
              else c.amt(a["value"], "self"))
    return f"ERC20 approval: {c.who('owner')} allows {c.who('spender')} to spend {amount}"


def _nft(c: _Ctx) -> str:
    a = c.event.args
    if c.event.name == "Transfer":
        return (f"ERC721 transfer: token #{a['tokenId']} of {c.venue} from {c.who('from')} "
                f"to {c.who('to')}")
    return (f"ERC721 approval: {c.who('owner')} approves {c.who('approved')} for token "
            f"#{a['tokenId']} of {c.venue}")


def _answer(c: _Ctx) -> str:
    return f"Chainlink price update on {c.venue}: {c.amt(c.event.args['current'], 'answer')}"


def _fee(c: _Ctx) -> str:
    a = c.event.args
    return (f"Ramses V3 fee adjustment: fee of {c.venue} set from {fee_percent(a['oldFee'])} "
            f"to {fee_percent(a['newFee'])}")


_TEMPLATES: dict[tuple[str, str], Callable[[_Ctx], str]] = {
    (V2, "Swap"): _swap_v2, (V2, "Mint"): _liquidity_v2, (V2, "Burn"): _liquidity_v2,
    (V2, "Sync"): _sync_v2, (V3, "Swap"): _swap_v3, (V3, "Mint"): _liquidity_v3,
    (V3, "Burn"): _liquidity_v3,
    ("ERC20", "Transfer"): _transfer, ("ERC20", "Approval"): _approval,
    ("ERC721", "Transfer"): _nft, ("ERC721", "Approval"): _nft,
    **{(AAVE, n): _aave for n in ("Supply", "Withdraw", "Borrow", "Repay")},
    (AAVE, "LiquidationCall"): _liquidation,
    ("Chainlink", "AnswerUpdated"): _answer,
    (RAMSES, "FeeAdjustment"): _fee,
}
_VENUE_ROLE = {V2: "pool", V3: "pool", RAMSES: "pool", AAVE: "lending pool",
               "Chainlink": "price feed", "ERC20": "token", "ERC721": "collection"}


def _venue(event: DecodedEvent, meta: Mapping[str, TokenMeta], names: Names) -> str:
    """The emitter as the sentence calls it: its registered name; a pool by its tokens'
    symbols; a token by its symbol; else its role and alias."""
    known = names.name(event.address)
    if known is not None:
        return known
    if event.protocol in (V2, V3, RAMSES):
        t0, t1 = meta.get("token0"), meta.get("token1")
        if t0 is not None and t1 is not None and t0.symbol and t1.symbol:
            return pool_name(t0.symbol, t1.symbol, event.protocol)
    own = meta.get(event.address.lower())
    if event.protocol == "ERC20" and own is not None and own.symbol:
        return f"the {own.symbol} token"
    return f"{_VENUE_ROLE.get(event.protocol, 'contract')} {alias(event.address)}"


def identifiers(event: DecodedEvent) -> tuple[str, ...]:
    """The exact hex values of an event: its emitter, its address args, an unknown
    event's topic0; first seen first."""
    found = [event.address]
    found += [v for v in event.args.values() if isinstance(v, str) and v.startswith("0x")]
    topic0 = (event.raw or {}).get("topic0") if not event.known else None
    if isinstance(topic0, str):
        found.append(topic0)
    return tuple(dict.fromkeys(found))


def render(event: DecodedEvent, token_meta: Mapping[str, TokenMeta] | None = None,
           names: Names | None = None) -> Rendering:
    """The event's sentence and identifiers (see the module docstring).

    `token_meta` maps an address to its TokenMeta (for ERC20 events, the token
    itself; for a Chainlink feed, decimals of the answer); pool events, whose
    tokens are not in the log, look up the keys "token0" and "token1" instead.
    `names` names known addresses (default: none; every address gets an alias).
    """
    names = names or Names()
    meta = {k.lower(): v for k, v in (token_meta or {}).items()}
    meta_self = meta.get(event.address.lower())
    venue = _venue(event, meta, names)

    def amt(raw: int, key: str) -> str:
        if key == "answer":  # a feed's answer is a number, scaled by the feed's decimals
            return round_amount(raw, meta_self, "").rstrip() if meta_self else str(raw)
        if key == "self":
            return round_amount(raw, meta_self, venue)
        token = meta.get(key.lower())
        if token is None and key.startswith("0x"):
            return f"{raw} base units of {names.label(key, 'token')}"
        return round_amount(raw, token, key)

    ids = identifiers(event)
    if not event.known:
        raw = event.raw or {}
        topic0 = raw.get("topic0")
        return Rendering(
            f"Unknown event on {venue}: topic0 {str(topic0)[:10]}, "
            f"{len(raw.get('topics', []))} topics, "
            f"{(len(raw.get('data', '0x')) - 2) // 2} bytes of data", ids)
    template = _TEMPLATES.get((event.protocol, event.name))
    if template is None:
        body = ", ".join(f"{k} {names.label(v) if isinstance(v, str) and v.startswith('0x') else v}"
                         for k, v in event.args.items())
        return Rendering(f"{event.protocol} {event.name} on {venue}: {body}", ids)
    symbol = meta_self.symbol if meta_self is not None and meta_self.symbol else venue
    return Rendering(template(_Ctx(event, amt, names, venue, symbol)), ids)

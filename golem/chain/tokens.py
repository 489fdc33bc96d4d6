"""Token metadata read from the chain (symbol, name, decimals), cached per address.

What a log needs for rendering: an ERC20 event its emitter's metadata, a pool
event its token0/token1 (asked from the pool), a lending event the assets named
in its args, a price feed its decimals. Strings come from contracts anyone can
deploy, so they are cleaned (untrusted.clean) and truncated before use. A
contract that does not answer is remembered as unknown; amounts then render in
raw base units, exactly.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from golem.chain.decoding import RAMSES, V2, V3, DecodedEvent
from golem.chain.render import TokenMeta
from golem.chain.untrusted import clean

SYMBOL, NAME, DECIMALS = "0x95d89b41", "0x06fdde03", "0x313ce567"
TOKEN0, TOKEN1 = "0x0dfe1681", "0xd21220a7"
POOL_PROTOCOLS = (V2, V3, RAMSES)  # events of pools that answer token0(), token1()
ASSET_ARGS = ("reserve", "collateralAsset", "debtAsset")
MAX_SYMBOL, MAX_NAME = 16, 48

EthCall = Callable[[str, str], Awaitable[bytes | None]]  # (address, calldata) -> bytes


def decode_string(data: bytes | None) -> str | None:
    """An ABI `string` or a bytes32 (old tokens like MKR), or None when neither."""
    if not data:
        return None
    if len(data) == 32:
        return data.rstrip(b"\0").decode("utf-8", "replace")
    if len(data) >= 64:
        offset = int.from_bytes(data[:32], "big")
        if offset + 32 <= len(data):
            length = int.from_bytes(data[offset:offset + 32], "big")
            if offset + 32 + length <= len(data):
                return data[offset + 32:offset + 32 + length].decode("utf-8", "replace")
    return None


def decode_uint(data: bytes | None, bits: int = 256) -> int | None:
    if not data or len(data) < 32:
        return None
    value = int.from_bytes(data[:32], "big")
    return value if value < 2**bits else None


def decode_address(data: bytes | None) -> str | None:
    if not data or len(data) < 32 or any(data[:12]):
        return None
    return "0x" + data[12:32].hex()


class TokenDirectory:
    """Cached chain reads of token and pool metadata through `eth_call`."""

    def __init__(self, eth_call: EthCall) -> None:
        self._call = eth_call
        self._tokens: dict[str, TokenMeta | None] = {}
        self._pools: dict[str, tuple[str, str] | None] = {}

    async def token(self, address: str) -> TokenMeta | None:
        key = address.lower()
        if key not in self._tokens:
            decimals = decode_uint(await self._call(key, DECIMALS), bits=8)
            if decimals is None:
                self._tokens[key] = None
            else:
                symbol = clean(decode_string(await self._call(key, SYMBOL)) or "", MAX_SYMBOL)
                name = clean(decode_string(await self._call(key, NAME)) or "", MAX_NAME)
                self._tokens[key] = TokenMeta(symbol, name or symbol, decimals)
        return self._tokens[key]

    async def pool_tokens(self, address: str) -> tuple[str, str] | None:
        key = address.lower()
        if key not in self._pools:
            t0 = decode_address(await self._call(key, TOKEN0))
            t1 = decode_address(await self._call(key, TOKEN1))
            self._pools[key] = (t0, t1) if t0 and t1 else None
        return self._pools[key]

    async def meta_for(self, event: DecodedEvent) -> dict[str, TokenMeta]:
        """What `render` needs for this event: keys are addresses, or token0/token1."""
        out: dict[str, TokenMeta] = {}

        async def put(key: str, address: Any) -> None:
            if isinstance(address, str):
                meta = await self.token(address)
                if meta is not None:
                    out[key] = meta

        if event.protocol in POOL_PROTOCOLS:
            pair = await self.pool_tokens(event.address)
            if pair is not None:
                await put("token0", pair[0])
                await put("token1", pair[1])
        elif event.known:
            await put(event.address, event.address)
            for arg in ASSET_ARGS:
                await put(str(event.args.get(arg, "")), event.args.get(arg))
        return out

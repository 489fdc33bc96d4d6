"""What the renderings call an address: a registry of names, and stable aliases for the rest.

Pure: no I/O, no clock. The names come from what the golem is told (the
simulated market's or `actions.market_file`'s venues and tokens, the golem's own
wallet), never from the chain: a contract can call itself anything, so a name
read from the chain is not a name here. Every other address is shown by a short
alias that is the same wherever it appears: a role word and the address's first
four hex digits ("trader ab12"). Two addresses may share an alias (1 in 65,536
per pair); the exact addresses are kept in the episode's payload and its
identifiers, which the full-text index sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # market.py imports the EVM; names only read its plain fields
    from golem.chain.market import Market

ZERO_ADDRESS = "0x" + "0" * 40
ALIAS_DIGITS = 4
OWN_WALLET = "our wallet"


def alias(address: str) -> str:
    """The short stable alias of an address: its first four hex digits, lowercase."""
    text = address.lower()
    return text[2:2 + ALIAS_DIGITS] if text.startswith("0x") else text[:ALIAS_DIGITS]


def pool_name(symbol0: str, symbol1: str, protocol: str) -> str:
    """e.g. "the WETH/USDC pool" (Uniswap V2) or "the WETH/USDC V3 pool" (Uniswap V3)."""
    version = " V3" if protocol.endswith("V3") else ""
    return f"the {symbol0}/{symbol1}{version} pool"


class Names:
    """Names for known addresses (keys compared lowercase); `label` falls back to an alias.

    A name is written as it reads inside a sentence, article included ("the WETH/USDC
    pool", "our wallet").
    """

    def __init__(self, known: Mapping[str, str] | None = None) -> None:
        self._known = {address.lower(): name for address, name in (known or {}).items()}

    def name(self, address: str) -> str | None:
        """The registered name of ``address``, or None."""
        return self._known.get(address.lower())

    def label(self, address: str, role: str = "account") -> str:
        """The name of ``address``; "the zero address"; else ``role`` and its alias."""
        known = self.name(address)
        if known is not None:
            return known
        if address.lower() == ZERO_ADDRESS:
            return "the zero address"
        return f"{role} {alias(address)}"

    def with_names(self, extra: Mapping[str, str]) -> Names:
        """A registry with ``extra`` added (a name already registered is kept)."""
        merged = {address.lower(): name for address, name in extra.items()}
        merged.update(self._known)
        return Names(merged)

    def known(self) -> dict[str, str]:
        """Every registered (lowercase address, name) pair."""
        return dict(self._known)

    def __len__(self) -> int:
        return len(self._known)


def market_names(market: Market, own: Iterable[str] = ()) -> Names:
    """The venues and tokens of a market by what they are, and ``own`` (the golem's wallet
    addresses) as "our wallet". The simulation's roles (whale, liquidator, ...) are not
    named: a golem watching a real chain would not know them."""
    known: dict[str, str] = {t.address: f"the {t.symbol} token" for t in market.tokens}
    known[market.pair_weth_usdc] = pool_name(market.weth.symbol, market.usdc.symbol, "V2")
    known[market.pair_wbtc_usdc] = pool_name(market.wbtc.symbol, market.usdc.symbol, "V2")
    known[market.pair_honey_weth] = pool_name(market.honey.symbol, market.weth.symbol, "V2")
    known[market.pool_v3_weth_usdc] = pool_name(market.weth.symbol, market.usdc.symbol, "V3")
    known[market.oracle_eth_usd] = "the ETH/USD price feed"
    known[market.lending] = "the lending pool"
    for address in own:
        if address:
            known[address] = OWN_WALLET
    return Names(known)

"""Deploy the simulated market: tokens, pools, an oracle, a lending market, a honeypot.

Everything is deployed by one owner account and seeded with liquidity; roles
(traders, whale, arbitrageur, LPs, borrowers, liquidator) get fixed accounts
and balances here so the simulator only has to trade. The returned Market is
plain addresses, so the capture side can build its watch list from `to_dict()`.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eth_utils.address import to_checksum_address

from golem.chain.compile import Artifact, load_artifacts
from golem.chain.evm import ChainError, Evm
from golem.errors import ConfigError

E18 = 10**18
USDC_UNIT = 10**6
WBTC_UNIT = 10**8
ORACLE_UNIT = 10**8
MAX_UINT = 2**256 - 1

N_NOISE = 8
N_LPS = 2
N_BORROWERS = 8


@dataclass(frozen=True)
class Token:
    address: str
    symbol: str
    decimals: int


@dataclass(frozen=True)
class Market:
    """Addresses of everything deployed, and which account plays which role."""

    owner: str
    usdc: Token
    weth: Token
    wbtc: Token
    honey: Token
    pair_weth_usdc: str
    pair_wbtc_usdc: str
    pair_honey_weth: str
    pool_v3_weth_usdc: str
    oracle_eth_usd: str
    lending: str
    initial_eth_usd: float
    noise_traders: tuple[str, ...]
    whale: str
    arbitrageur: str
    lps: tuple[str, ...]
    borrowers: tuple[str, ...]
    liquidator: str

    @property
    def tokens(self) -> tuple[Token, ...]:
        return (self.usdc, self.weth, self.wbtc, self.honey)

    @property
    def contracts(self) -> tuple[str, ...]:
        """Every market address whose logs are worth watching."""
        return (*(t.address for t in self.tokens), self.pair_weth_usdc, self.pair_wbtc_usdc,
                self.pair_honey_weth, self.pool_v3_weth_usdc, self.oracle_eth_usd, self.lending)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("noise_traders", "lps", "borrowers"):
            data[key] = list(data[key])
        return data

    @classmethod
    def from_dict(cls, data: Any) -> Market:
        """The inverse of `to_dict` (ValueError says what is wrong). The simulation's roles
        and `owner` may be left out: acting needs only the venues."""
        if not isinstance(data, dict):
            raise ValueError("must be a JSON object")
        missing = [k for k in (*_TOKENS, *_VENUES) if k not in data]
        if missing:
            raise ValueError(f"missing keys: {', '.join(missing)}")
        t, v = {k: _token(k, data[k]) for k in _TOKENS}, {k: _address(k, data[k]) for k in _VENUES}
        one = {k: _address(k, data[k]) if data.get(k) else ""
               for k in ("owner", "whale", "arbitrageur", "liquidator")}
        many = {k: tuple(_address(f"{k}[{i}]", a) for i, a in enumerate(_list(k, data)))
                for k in ("noise_traders", "lps", "borrowers")}
        price = data.get("initial_eth_usd", 0.0)
        if isinstance(price, bool) or not isinstance(price, (int, float)):
            raise ValueError(f"initial_eth_usd: must be a number, got {price!r}")
        return cls(
            owner=one["owner"], usdc=t["usdc"], weth=t["weth"], wbtc=t["wbtc"],
            honey=t["honey"], pair_weth_usdc=v["pair_weth_usdc"],
            pair_wbtc_usdc=v["pair_wbtc_usdc"], pair_honey_weth=v["pair_honey_weth"],
            pool_v3_weth_usdc=v["pool_v3_weth_usdc"], oracle_eth_usd=v["oracle_eth_usd"],
            lending=v["lending"], initial_eth_usd=float(price),
            noise_traders=many["noise_traders"], whale=one["whale"],
            arbitrageur=one["arbitrageur"], lps=many["lps"], borrowers=many["borrowers"],
            liquidator=one["liquidator"])


_TOKENS = ("usdc", "weth", "wbtc", "honey")
_VENUES = ("pair_weth_usdc", "pair_wbtc_usdc", "pair_honey_weth", "pool_v3_weth_usdc",
           "oracle_eth_usd", "lending")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")


def _address(key: str, value: Any) -> str:
    if not isinstance(value, str) or not _ADDRESS.fullmatch(value):
        raise ValueError(f"{key}: not an address (0x and 40 hex digits): {value!r}")
    checksummed = str(to_checksum_address(value))
    if value != checksummed and value not in (value.lower(), "0x" + value[2:].upper()):
        raise ValueError(f"{key}: bad EIP-55 checksum in {value} (a typo?)")
    return checksummed


def _token(key: str, value: Any) -> Token:
    if not isinstance(value, dict) or not {"address", "symbol", "decimals"} <= value.keys():
        raise ValueError(f"{key}: must be an object with address, symbol and decimals")
    decimals = value["decimals"]
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 36:
        raise ValueError(f"{key}.decimals: must be an integer 0..36, got {decimals!r}")
    if not isinstance(value["symbol"], str) or not value["symbol"]:
        raise ValueError(f"{key}.symbol: must be a non-empty string")
    return Token(_address(f"{key}.address", value["address"]), value["symbol"], decimals)


def _list(key: str, data: dict[str, Any]) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key}: must be a list of addresses")
    return value


def load_market(path: Path) -> Market:
    """The venues of a deployed market from a JSON file in `Market.to_dict()` form
    (actions.market_file: how RPC mode knows where to act)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"actions.market_file: {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"actions.market_file: {path}: cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"actions.market_file: {path}: not valid JSON: {exc}") from None
    try:
        return Market.from_dict(data)
    except ValueError as exc:
        raise ConfigError(f"actions.market_file: {path}: {exc}") from None


class _Deployer:
    def __init__(self, evm: Evm, artifacts: dict[str, Artifact]) -> None:
        self.evm = evm
        self.artifacts = artifacts
        self.owner = evm.accounts[0]

    def deploy(self, name: str, *args: Any) -> str:
        return self.evm.deploy(self.artifacts[name], *args, sender=self.owner)

    def send(self, name: str, address: str, fn: str, *args: Any, sender: str = "") -> None:
        result = self.evm.transact(address, self.artifacts[name].abi, fn, *args,
                                   sender=sender or self.owner)
        if not result.ok:
            raise ChainError(f"market set-up step {name}.{fn} reverted: {result.error}")

    def token(self, symbol: str, decimals: int, kind: str = "ERC20") -> Token:
        return Token(self.deploy(kind, symbol, symbol, decimals), symbol, decimals)

    def pair(self, kind: str, a: Token, b: Token, amount_a: int, amount_b: int) -> str:
        address = self.deploy(kind, a.address, b.address)
        for token, amount in ((a, amount_a), (b, amount_b)):
            self.send("ERC20", token.address, "mint", address, amount)
        if kind == "PairV2":
            self.send(kind, address, "mint", self.owner)
        else:
            self.send(kind, address, "mint")
        return address


def deploy_market(evm: Evm, seed: int) -> Market:
    """Deploy and fund the market; the seed jitters the opening ETH price."""
    d = _Deployer(evm, load_artifacts())
    accounts = evm.accounts
    needed = 1 + N_NOISE + 2 + N_LPS + N_BORROWERS + 1
    if len(accounts) < needed:
        raise ChainError(f"the market needs {needed} funded accounts, the chain has "
                         f"{len(accounts)}")
    rng = random.Random(seed)  # noqa: S311 - simulation, not crypto
    eth_usd = round(2000 * rng.uniform(0.9, 1.1), 2)
    usdc, weth, wbtc = d.token("USDC", 6), d.token("WETH", 18), d.token("WBTC", 8)
    honey = d.token("HONEY", 18, kind="Honeypot")
    oracle = d.deploy("OracleFeed", int(eth_usd * ORACLE_UNIT))
    weth_amount = 1_000 * E18
    pair_weth_usdc = d.pair("PairV2", weth, usdc, weth_amount, int(1_000 * eth_usd) * USDC_UNIT)
    pair_wbtc_usdc = d.pair("PairV2", wbtc, usdc, 50 * WBTC_UNIT, 2_000_000 * USDC_UNIT)
    # the honeypot pool is seeded by the owner (the only account allowed to sell)
    pair_honey = d.deploy("PairV2", honey.address, weth.address)
    d.send("Honeypot", honey.address, "setPool", pair_honey)
    d.send("Honeypot", honey.address, "mint", d.owner, 1_000_000 * E18)
    d.send("Honeypot", honey.address, "transfer", pair_honey, 1_000_000 * E18)
    d.send("ERC20", weth.address, "mint", pair_honey, 20 * E18)
    d.send("PairV2", pair_honey, "mint", d.owner)
    pool_v3 = d.pair("PoolV3Like", weth, usdc, 500 * E18, int(500 * eth_usd) * USDC_UNIT)
    lending = d.deploy("LendingPool", weth.address, usdc.address, oracle)
    d.send("ERC20", usdc.address, "mint", d.owner, 5_000_000 * USDC_UNIT)
    d.send("ERC20", usdc.address, "approve", lending, MAX_UINT)
    d.send("LendingPool", lending, "supply", usdc.address, 5_000_000 * USDC_UNIT, d.owner, 0)

    roles = iter(accounts[1:])
    noise = tuple(next(roles) for _ in range(N_NOISE))
    whale, arb = next(roles), next(roles)
    lps = tuple(next(roles) for _ in range(N_LPS))
    borrowers = tuple(next(roles) for _ in range(N_BORROWERS))
    liquidator = next(roles)
    traders = [(a, 1) for a in noise] + [(whale, 20), (arb, 20)] + [(a, 5) for a in lps]
    for account, scale in traders:
        d.send("ERC20", weth.address, "mint", account, 50 * scale * E18)
        d.send("ERC20", usdc.address, "mint", account, 100_000 * scale * USDC_UNIT)
    for account in (*noise, whale):
        d.send("ERC20", wbtc.address, "mint", account, 2 * WBTC_UNIT)
    for account in borrowers:
        d.send("ERC20", weth.address, "mint", account, 100 * E18)
        d.send("ERC20", weth.address, "approve", lending, MAX_UINT, sender=account)
        d.send("ERC20", usdc.address, "approve", lending, MAX_UINT, sender=account)
    d.send("ERC20", usdc.address, "mint", liquidator, 5_000_000 * USDC_UNIT)
    d.send("ERC20", usdc.address, "approve", lending, MAX_UINT, sender=liquidator)
    return Market(
        owner=d.owner, usdc=usdc, weth=weth, wbtc=wbtc, honey=honey,
        pair_weth_usdc=pair_weth_usdc, pair_wbtc_usdc=pair_wbtc_usdc,
        pair_honey_weth=pair_honey, pool_v3_weth_usdc=pool_v3, oracle_eth_usd=oracle,
        lending=lending, initial_eth_usd=eth_usd, noise_traders=noise, whale=whale,
        arbitrageur=arb, lps=lps, borrowers=borrowers, liquidator=liquidator,
    )

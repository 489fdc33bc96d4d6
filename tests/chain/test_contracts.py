"""The simulated market's contracts on the real in-process EVM (revm, golem.chain.revm).

Event signatures are the exact mainnet strings: topic0 must match what the
decoders see on Uniswap, Chainlink and Aave.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from eth_abi import decode
from eth_utils.crypto import keccak
from hypothesis import example, given, settings
from hypothesis import strategies as st

from golem.chain.compile import (
    ARTIFACTS_DIR,
    Artifact,
    ArtifactError,
    compile_all,
    load_artifacts,
    source_sha256,
)
from golem.chain.contracts import CONTRACTS_DIR
from golem.chain.fees import V2_FEE_PIPS
from golem.chain.fees import amount_out as out_at_fee
from golem.chain.revm import RevmEvm

E18 = 10**18
USDC = 10**6

SIG = {
    "Transfer": "Transfer(address,address,uint256)",
    "Approval": "Approval(address,address,uint256)",
    "V2Swap": "Swap(address,uint256,uint256,uint256,uint256,address)",
    "V2Mint": "Mint(address,uint256,uint256)",
    "V2Burn": "Burn(address,uint256,uint256,address)",
    "Sync": "Sync(uint112,uint112)",
    "AnswerUpdated": "AnswerUpdated(int256,uint256,uint256)",
    "Supply": "Supply(address,address,address,uint256,uint16)",
    "Borrow": "Borrow(address,address,address,uint256,uint8,uint256,uint16)",
    "Repay": "Repay(address,address,address,uint256,bool)",
    "LiquidationCall": "LiquidationCall(address,address,address,uint256,uint256,address,bool)",
    "V3Swap": "Swap(address,address,int256,int256,uint160,uint128,int24)",
    "FeeAdjustment": "FeeAdjustment(uint24,uint24)",
}
TOPIC = {name: keccak(text=sig) for name, sig in SIG.items()}


def test_known_mainnet_topics() -> None:
    """Guards the signature strings themselves against typos."""
    assert TOPIC["V2Swap"].hex() == (
        "d78ad95fa46c994b6551d0da85fc275fe613ce37657fb8d5e3d130840159d822"
    )
    assert TOPIC["Sync"].hex() == (
        "1c411e9a96e071241c2f21f7726b17ae89e3cab4c78be50e062b03a9fffbbad1"
    )
    assert TOPIC["V3Swap"].hex() == (
        "c42079f94a6350d7e6235f29174924f928cc2ac818eb64fed8004e115fbcca67"
    )


# --- artifact cache -------------------------------------------------------------


def test_cache_matches_sources() -> None:
    artifacts = load_artifacts()
    assert set(artifacts) == {
        "ERC20",
        "PairV2",
        "OracleFeed",
        "LendingPool",
        "Honeypot",
        "PoolV3Like",
    }
    for name, artifact in artifacts.items():
        assert artifact.source_sha256 == source_sha256(CONTRACTS_DIR / f"{name}.vy")
        assert artifact.vyper_version == "0.4.3"


def test_recompiling_reproduces_cached_bytecode() -> None:
    fresh = compile_all(CONTRACTS_DIR, None)
    cached = load_artifacts()
    for name, artifact in fresh.items():
        assert artifact == cached[name], name


def test_stale_or_missing_artifact_is_reported(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CONTRACTS_DIR, src, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    (src / "OracleFeed.vy").write_text(
        (src / "OracleFeed.vy").read_text(encoding="utf-8") + "\n", encoding="utf-8"
    )
    with pytest.raises(ArtifactError, match=r"OracleFeed.*python -m golem.chain.compile"):
        load_artifacts(src, ARTIFACTS_DIR)
    art = tmp_path / "art"
    shutil.copytree(ARTIFACTS_DIR, art)
    (art / "OracleFeed.json").unlink()
    with pytest.raises(ArtifactError, match="no artifact for OracleFeed"):
        load_artifacts(CONTRACTS_DIR, art)
    (art / "OracleFeed.json").write_text("{", encoding="utf-8")
    with pytest.raises(ArtifactError, match="unreadable"):
        load_artifacts(CONTRACTS_DIR, art)


# --- chain helpers -----------------------------------------------------------------


@pytest.fixture(scope="module")
def artifacts() -> dict[str, Artifact]:
    return load_artifacts()


@pytest.fixture
def evm() -> RevmEvm:
    return RevmEvm()


class TransactionFailed(Exception):
    """A mined transaction that reverted (its message holds the revert reason)."""


@dataclass(frozen=True)
class Bound:
    contract: Contract
    fn: str
    args: tuple[Any, ...]

    def call(self) -> Any:
        c = self.contract
        return c.evm.call(c.address, c.abi, self.fn, *self.args)


class Functions:
    def __init__(self, contract: Contract) -> None:
        self._contract = contract

    def __getattr__(self, fn: str) -> Any:
        return lambda *args: Bound(self._contract, fn, args)


class Contract:
    """contract.functions.fn(*args).call(), as the web3 tests read."""

    def __init__(self, evm: RevmEvm, address: str, abi: Any) -> None:
        self.evm, self.address, self.abi = evm, address, abi
        self.functions = Functions(self)


class Chain:
    def __init__(self, evm: RevmEvm, artifacts: dict[str, Artifact]) -> None:
        self.evm = evm
        self.artifacts = artifacts
        self.owner, self.alice, self.bob, self.carol = evm.accounts[:4]

    def deploy(self, name: str, *args: Any) -> Contract:
        art = self.artifacts[name]
        return Contract(self.evm, self.evm.deploy(art, *args, sender=self.owner), art.abi)

    def send(self, bound: Bound, sender: str | None = None) -> list[Any]:
        """Transact; a mined revert raises TransactionFailed with its reason."""
        c = bound.contract
        result = self.evm.transact(c.address, c.abi, bound.fn, *bound.args,
                                   sender=sender or self.owner)
        if not result.ok:
            raise TransactionFailed(result.error)
        assert self.evm.receipt(result.tx_hash) is not None
        return [{"address": log.address, "blockNumber": log.block_number,
                 "topics": [bytes.fromhex(t[2:]) for t in log.topics],
                 "data": bytes.fromhex(log.data[2:])} for log in result.logs]

    def token(self, symbol: str, decimals: int = 18) -> Any:
        return self.deploy("ERC20", symbol, symbol, decimals)


@pytest.fixture
def chain(evm: RevmEvm, artifacts: dict[str, Artifact]) -> Chain:
    return Chain(evm, artifacts)


def logs_of(logs: list[Any], contract: Any) -> list[Any]:
    return [log for log in logs if log["address"] == contract.address]


def topic0s(logs: list[Any]) -> list[bytes]:
    return [bytes(log["topics"][0]) for log in logs]


def addr_topic(address: str) -> bytes:
    return bytes(12) + bytes.fromhex(address[2:])


def data(log: Any, types: list[str]) -> tuple[Any, ...]:
    return decode(types, bytes(log["data"]))


# --- ERC20 ----------------------------------------------------------------------


def test_erc20_transfer_approve_and_owner_only_mint(chain: Chain) -> None:
    t = chain.token("WETH")
    assert t.functions.decimals().call() == 18
    assert t.functions.symbol().call() == "WETH"
    chain.send(t.functions.mint(chain.alice, 5 * E18))
    logs = chain.send(t.functions.transfer(chain.bob, 2 * E18), chain.alice)
    assert topic0s(logs) == [TOPIC["Transfer"]]
    assert logs[0]["topics"][1:] == [addr_topic(chain.alice), addr_topic(chain.bob)]
    assert data(logs[0], ["uint256"]) == (2 * E18,)
    logs = chain.send(t.functions.approve(chain.carol, E18), chain.bob)
    assert topic0s(logs) == [TOPIC["Approval"]]
    chain.send(t.functions.transferFrom(chain.bob, chain.carol, E18), chain.carol)
    assert t.functions.balanceOf(chain.carol).call() == E18
    assert t.functions.allowance(chain.bob, chain.carol).call() == 0
    with pytest.raises(TransactionFailed):
        chain.send(t.functions.transferFrom(chain.bob, chain.carol, 1), chain.carol)
    with pytest.raises(TransactionFailed, match="only owner"):
        chain.send(t.functions.mint(chain.alice, 1), chain.alice)


# --- Uniswap V2-like pair -----------------------------------------------------------


def amount_out(amount_in: int, reserve_in: int, reserve_out: int) -> int:
    """UniswapV2Library.getAmountOut."""
    fee_in = amount_in * 997
    return fee_in * reserve_out // (reserve_in * 1000 + fee_in)


def test_pair_v2_liquidity_swaps_and_events(chain: Chain) -> None:
    a, b = chain.token("A"), chain.token("B")
    pair = chain.deploy("PairV2", a.address, b.address)
    for t in (a, b):
        chain.send(t.functions.mint(chain.owner, 1_000 * E18))
        chain.send(t.functions.mint(chain.alice, 1_000 * E18))

    chain.send(a.functions.transfer(pair.address, 100 * E18))
    chain.send(b.functions.transfer(pair.address, 400 * E18))
    logs = logs_of(chain.send(pair.functions.mint(chain.owner)), pair)
    assert topic0s(logs) == [TOPIC["Sync"], TOPIC["V2Mint"]]
    assert data(logs[0], ["uint112", "uint112"]) == (100 * E18, 400 * E18)
    assert data(logs[1], ["uint256", "uint256"]) == (100 * E18, 400 * E18)
    assert pair.functions.balanceOf(chain.owner).call() == 200 * E18 - 1000

    k = 100 * E18 * 400 * E18
    for i, amount in enumerate([E18, 3 * E18 // 7, 25 * E18, 12345, 9 * E18]):
        r0, r1, _ = pair.functions.getReserves().call()
        zero_for_one = i % 2 == 0
        t_in = a if zero_for_one else b
        out = amount_out(amount, r0, r1) if zero_for_one else amount_out(amount, r1, r0)
        chain.send(t_in.functions.transfer(pair.address, amount), chain.alice)
        args = (0, out + 1) if zero_for_one else (out + 1, 0)
        with pytest.raises(TransactionFailed, match="K"):
            chain.send(pair.functions.swap(*args, chain.alice), chain.alice)
        args = (0, out) if zero_for_one else (out, 0)
        logs = logs_of(chain.send(pair.functions.swap(*args, chain.alice), chain.alice), pair)
        assert topic0s(logs) == [TOPIC["Sync"], TOPIC["V2Swap"]]
        assert logs[1]["topics"][1:] == [addr_topic(chain.alice), addr_topic(chain.alice)]
        ins = (amount, 0) if zero_for_one else (0, amount)
        assert data(logs[1], ["uint256"] * 4) == (*ins, *args)
        n0, n1, _ = pair.functions.getReserves().call()
        assert (n0, n1) == data(logs[0], ["uint112", "uint112"])
        assert n0 * n1 >= k
        k = n0 * n1

    r0, r1, _ = pair.functions.getReserves().call()
    logs = logs_of(chain.send(pair.functions.burn(chain.bob)), pair)
    assert topic0s(logs) == [TOPIC["Sync"], TOPIC["V2Burn"]]
    assert logs[1]["topics"][1:] == [addr_topic(chain.owner), addr_topic(chain.bob)]
    amounts = data(logs[1], ["uint256", "uint256"])
    supply = 200 * E18
    assert amounts == (r0 * (supply - 1000) // supply, r1 * (supply - 1000) // supply)
    assert (a.functions.balanceOf(chain.bob).call(), b.functions.balanceOf(chain.bob).call()) == (
        amounts
    )
    assert pair.functions.balanceOf(chain.owner).call() == 0


def test_pair_v2_fee_is_state_its_owner_sets_and_swaps_pay(chain: Chain) -> None:
    """0.30% from deployment; only the deployer sets it, in whole basis points up to 10%,
    with a FeeAdjustment log of the old and the new fee (pips); swaps then pay it: the
    exact quote at the new fee goes through, one unit more fails the K check."""
    a, b = chain.token("A"), chain.token("B")
    pair = chain.deploy("PairV2", a.address, b.address)
    assert pair.functions.fee().call() == V2_FEE_PIPS
    assert pair.functions.owner().call() == chain.owner
    for t in (a, b):
        chain.send(t.functions.mint(chain.owner, 1_000 * E18))
        chain.send(t.functions.mint(chain.alice, 1_000 * E18))
        chain.send(t.functions.transfer(pair.address, 100 * E18))
    chain.send(pair.functions.mint(chain.owner))
    with pytest.raises(TransactionFailed, match="only owner"):
        chain.send(pair.functions.setFee(10_000), chain.alice)
    for bad in (10_050, 100_100, 150):
        with pytest.raises(TransactionFailed, match="bad fee"):
            chain.send(pair.functions.setFee(bad))
    [log] = chain.send(pair.functions.setFee(10_000))
    assert topic0s([log]) == [TOPIC["FeeAdjustment"]] and len(log["topics"]) == 1
    assert data(log, ["uint24", "uint24"]) == (V2_FEE_PIPS, 10_000)
    assert pair.functions.fee().call() == 10_000
    for fee in (10_000, 0, 100_000):
        if fee != pair.functions.fee().call():
            chain.send(pair.functions.setFee(fee))
        r0, r1, _ = pair.functions.getReserves().call()
        out = out_at_fee(3 * E18, r0, r1, fee)
        assert out < out_at_fee(3 * E18, r0, r1, V2_FEE_PIPS) or fee < V2_FEE_PIPS
        chain.send(a.functions.transfer(pair.address, 3 * E18), chain.alice)
        with pytest.raises(TransactionFailed, match="K"):
            chain.send(pair.functions.swap(0, out + 1, chain.alice), chain.alice)
        chain.send(pair.functions.swap(0, out, chain.alice), chain.alice)
        assert pair.functions.getReserves().call()[:2] == (r0 + 3 * E18, r1 - out)


# --- Chainlink-like feed ------------------------------------------------------------


def test_oracle_update_emits_answer_updated(chain: Chain, evm: RevmEvm) -> None:
    feed = chain.deploy("OracleFeed", 2000 * 10**8)
    assert feed.functions.decimals().call() == 8
    logs = chain.send(feed.functions.update(-5))
    assert topic0s(logs) == [TOPIC["AnswerUpdated"]]
    assert decode(["int256"], bytes(logs[0]["topics"][1])) == (-5,)
    assert decode(["uint256"], bytes(logs[0]["topics"][2])) == (2,)
    stamp = evm.block(logs[0]["blockNumber"]).timestamp
    assert data(logs[0], ["uint256"]) == (stamp,)
    assert feed.functions.latestAnswer().call() == -5
    assert feed.functions.latestRoundData().call() == (2, -5, stamp, stamp, 2)
    with pytest.raises(TransactionFailed, match="only owner"):
        chain.send(feed.functions.update(1), chain.alice)


# --- Aave-like lending --------------------------------------------------------------


def test_lending_supply_borrow_and_liquidation(chain: Chain) -> None:
    weth, usdc = chain.token("WETH"), chain.token("USDC", 6)
    feed = chain.deploy("OracleFeed", 2000 * 10**8)
    pool = chain.deploy("LendingPool", weth.address, usdc.address, feed.address)
    alice, bob, carol = chain.alice, chain.bob, chain.carol
    chain.send(usdc.functions.mint(chain.owner, 100_000 * USDC))
    chain.send(usdc.functions.approve(pool.address, 100_000 * USDC))
    chain.send(pool.functions.supply(usdc.address, 100_000 * USDC, chain.owner, 0))
    chain.send(weth.functions.mint(alice, 10 * E18))
    chain.send(weth.functions.approve(pool.address, 10 * E18), alice)

    logs = logs_of(chain.send(pool.functions.supply(weth.address, 10 * E18, alice, 7), alice), pool)
    assert topic0s(logs) == [TOPIC["Supply"]]
    assert logs[0]["topics"][1:] == [addr_topic(weth.address), addr_topic(alice), (7).to_bytes(32)]

    with pytest.raises(TransactionFailed, match="loan to value"):
        chain.send(pool.functions.borrow(usdc.address, 16_001 * USDC, 2, 0, alice), alice)
    logs = logs_of(
        chain.send(pool.functions.borrow(usdc.address, 15_000 * USDC, 2, 0, alice), alice), pool
    )
    assert topic0s(logs) == [TOPIC["Borrow"]]
    assert data(logs[0], ["address", "uint256", "uint8", "uint256"])[1:] == (15_000 * USDC, 2, 0)
    assert usdc.functions.balanceOf(alice).call() == 15_000 * USDC

    chain.send(usdc.functions.approve(pool.address, 1_000 * USDC), alice)
    logs = logs_of(
        chain.send(pool.functions.repay(usdc.address, 1_000 * USDC, 2, alice), alice), pool
    )
    assert topic0s(logs) == [TOPIC["Repay"]]
    assert data(logs[0], ["uint256", "bool"]) == (1_000 * USDC, False)
    # 20000 * 0.825 / 14000
    assert pool.functions.healthFactor(alice).call() == 20_000 * 8250 * E18 // (14_000 * 10_000)

    chain.send(usdc.functions.mint(bob, 10_000 * USDC))
    chain.send(usdc.functions.approve(pool.address, 10_000 * USDC), bob)
    with pytest.raises(TransactionFailed, match="health factor not below 1"):
        chain.send(pool.functions.liquidate(alice, 5_000 * USDC), bob)
    with pytest.raises(TransactionFailed, match="no debt"):
        chain.send(pool.functions.liquidate(carol, 5_000 * USDC), bob)

    chain.send(feed.functions.update(1_650 * 10**8))  # 16500 * 0.825 = 13612 < 14000
    assert pool.functions.healthFactor(alice).call() < E18
    logs = logs_of(chain.send(pool.functions.liquidate(alice, 5_000 * USDC), bob), pool)
    assert topic0s(logs) == [TOPIC["LiquidationCall"]]
    assert logs[0]["topics"][1:] == [
        addr_topic(weth.address),
        addr_topic(usdc.address),
        addr_topic(alice),
    ]
    seized = 5_000 * 10**8 * 10_500 * E18 // (10_000 * 1_650 * 10**8)
    assert data(logs[0], ["uint256", "uint256", "address", "bool"]) == (
        5_000 * USDC,
        seized,
        bob.lower(),
        False,
    )
    assert weth.functions.balanceOf(bob).call() == seized
    assert pool.functions.debtOf(alice).call() == 9_000 * USDC
    assert pool.functions.collateralOf(alice).call() == 10 * E18 - seized
    assert pool.functions.healthFactor(alice).call() > E18


# --- honeypot -------------------------------------------------------------------------


def test_honeypot_buys_work_and_sells_revert(chain: Chain) -> None:
    hp, weth = chain.deploy("Honeypot", "Moon", "MOON", 18), chain.token("WETH")
    pair = chain.deploy("PairV2", hp.address, weth.address)
    chain.send(hp.functions.setPool(pair.address))
    chain.send(hp.functions.mint(chain.owner, 1_000_000 * E18))
    chain.send(weth.functions.mint(chain.owner, 10 * E18))
    chain.send(weth.functions.mint(chain.alice, E18))
    chain.send(hp.functions.transfer(pair.address, 1_000_000 * E18))
    chain.send(weth.functions.transfer(pair.address, 10 * E18))
    chain.send(pair.functions.mint(chain.owner))

    chain.send(weth.functions.transfer(pair.address, E18), chain.alice)
    out = amount_out(E18, 10 * E18, 1_000_000 * E18)
    chain.send(pair.functions.swap(out, 0, chain.alice), chain.alice)
    assert hp.functions.balanceOf(chain.alice).call() == out
    chain.send(hp.functions.transfer(chain.bob, 5), chain.alice)  # wallet transfers work
    with pytest.raises(TransactionFailed, match="sell blocked"):
        chain.send(hp.functions.transfer(pair.address, out // 2), chain.alice)
    with pytest.raises(TransactionFailed, match="only owner"):
        chain.send(hp.functions.setPool(chain.alice), chain.alice)


# --- Uniswap V3-like pool ---------------------------------------------------------------


def sqrt_price_x96(r0: int, r1: int) -> int:
    """The contract's documented formula."""
    if r1 < 2**64:
        return math.isqrt(r1 * 2**192 // r0)
    return math.isqrt(r1 * 2**96 // r0) * 2**48


def test_pool_v3_like_swap_emits_v3_event(chain: Chain) -> None:
    a, b = chain.token("A"), chain.token("B", 6)
    pool = chain.deploy("PoolV3Like", a.address, b.address)
    chain.send(a.functions.mint(chain.owner, 1_000 * E18))
    chain.send(b.functions.mint(chain.owner, 10_000_000 * USDC))
    chain.send(a.functions.transfer(pool.address, 100 * E18))
    chain.send(b.functions.transfer(pool.address, 300_000 * USDC))
    chain.send(pool.functions.mint())

    r0, r1 = 100 * E18, 300_000 * USDC
    for zero_for_one, amount in [(True, E18), (False, 50_000 * USDC), (True, 40 * E18)]:
        t_in = a if zero_for_one else b
        chain.send(t_in.functions.transfer(pool.address, amount))
        logs = logs_of(chain.send(pool.functions.swap(chain.alice, zero_for_one)), pool)
        assert topic0s(logs) == [TOPIC["V3Swap"]]
        assert logs[0]["topics"][1:] == [addr_topic(chain.owner), addr_topic(chain.alice)]
        a0, a1, sqrt_p, liquidity, tick = data(
            logs[0], ["int256", "int256", "uint160", "uint128", "int24"]
        )
        if zero_for_one:
            out = amount_out(amount, r0, r1)
            assert (a0, a1) == (amount, -out)
            r0, r1 = r0 + amount, r1 - out
        else:
            out = amount_out(amount, r1, r0)
            assert (a0, a1) == (-out, amount)
            r0, r1 = r0 - out, r1 + amount
        assert sqrt_p == sqrt_price_x96(r0, r1)
        assert abs(sqrt_p / 2**96 - math.sqrt(r1 / r0)) < 1e-9 * math.sqrt(r1 / r0)
        assert liquidity == math.isqrt(r0 * r1)
        assert tick == math.floor(math.log(sqrt_p / 2**96) / math.log(math.sqrt(1.0001)))
        assert tick < 0  # token1 has 6 decimals: raw price far below 1
        assert pool.functions.slot0().call() == (sqrt_p, tick)


def test_pool_v3_like_tick_is_floor_log_base_1_0001(artifacts: dict[str, Artifact]) -> None:
    """Property: for any reserves, sqrtPriceX96 and tick follow the documented formulas."""
    chain = Chain(RevmEvm(), artifacts)
    a, b = chain.token("A"), chain.token("B")
    amounts = st.integers(min_value=10**3, max_value=10**36)

    pool = chain.deploy("PoolV3Like", a.address, b.address)

    @settings(max_examples=150, deadline=None)
    @given(r0=amounts, r1=amounts)
    @example(r0=E18, r1=E18)
    @example(r0=E18, r1=4 * E18)
    @example(r0=10**36, r1=10**3)
    @example(r0=10**3, r1=10**36)
    def check(r0: int, r1: int) -> None:
        sqrt_p, tick = pool.functions.priceAt(r0, r1).call()
        assert sqrt_p == sqrt_price_x96(r0, r1)
        exact = math.log(sqrt_p / 2**96) / math.log(math.sqrt(1.0001))
        assert tick == math.floor(exact) or abs(exact - round(exact)) < 1e-6

    check()

"""Where Gamma's logs come from. Today: the in-process simulated market.

The simulated source owns the EVM, the deployed market and the seeded driver.
Each Gamma tick it advances the market to the golem time and returns the logs
of the blocks mined since the last read, with token metadata for rendering.
Synchronous (py-evm is): the capture handler calls it in a worker thread.

The chain lives in memory, so a restarted daemon starts a fresh simulated chain
(block hashes differ because block times do); RPC and anvil sources, which
outlive the process, are later work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from golem.chain.decoding import RawLog
from golem.chain.evm import SimulatedEvm
from golem.chain.market import Market, Token, deploy_market
from golem.chain.render import TokenMeta
from golem.chain.simulator import MarketSimulator, RegimeSwitch, StepReport


@dataclass(frozen=True)
class SourceBatch:
    """New logs since the last read, and what the market did (ground truth)."""

    logs: tuple[RawLog, ...]
    head: int
    step: StepReport


class SimulatedSource:
    def __init__(self, evm: SimulatedEvm, market: Market, simulator: MarketSimulator) -> None:
        self.evm = evm
        self.market = market
        self.simulator = simulator
        self.chain_id = evm.chain_id
        self._cursor = evm.head().number
        self.watched = frozenset(a.lower() for a in market.contracts)
        self.token_meta = _token_meta(market)

    @classmethod
    def create(cls, seed: int, start_time: float) -> SimulatedSource:
        evm = SimulatedEvm(genesis_timestamp=int(start_time) - 3600)
        market = deploy_market(evm, seed)
        return cls(evm, market, MarketSimulator(evm, market, seed))

    @property
    def ground_truth(self) -> list[RegimeSwitch]:
        return self.simulator.ground_truth

    def advance(self, golem_time: float, dt: float) -> SourceBatch:
        """Drive the market to ``golem_time`` and return the watched logs it produced."""
        step = self.simulator.step(golem_time, dt)
        head = self.evm.head().number
        logs: list[RawLog] = []
        if head > self._cursor:
            logs = [log for log in self.evm.get_logs(self._cursor + 1, head)
                    if log.address.lower() in self.watched]
        self._cursor = head
        return SourceBatch(tuple(logs), head, step)

    def meta_for(self, address: str) -> Mapping[str, TokenMeta]:
        """Rendering metadata for a log's emitter: itself if a token, its pair if a pool."""
        return self.token_meta.get(address.lower(), {})


def _token_meta(market: Market) -> dict[str, dict[str, TokenMeta]]:
    def meta(token: Token) -> TokenMeta:
        return TokenMeta(token.symbol, token.symbol, token.decimals)

    pools = {
        market.pair_weth_usdc: (market.weth, market.usdc),
        market.pair_wbtc_usdc: (market.wbtc, market.usdc),
        market.pair_honey_weth: (market.honey, market.weth),
        market.pool_v3_weth_usdc: (market.weth, market.usdc),
    }
    out: dict[str, dict[str, TokenMeta]] = {
        t.address.lower(): {t.address: meta(t)} for t in market.tokens}
    for address, (token0, token1) in pools.items():
        out[address.lower()] = {"token0": meta(token0), "token1": meta(token1)}
    out[market.oracle_eth_usd.lower()] = {
        market.oracle_eth_usd: TokenMeta("USD", "ETH / USD", 8)}
    lending = {"token0": meta(market.weth), "token1": meta(market.usdc)}
    lending.update({t.address: meta(t) for t in (market.weth, market.usdc)})
    out[market.lending.lower()] = lending
    return out

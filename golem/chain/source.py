"""The simulated market as a chain source: EVM, deployed market, seeded driver, journal.

Each Gamma tick `advance` drives the market to the golem time; capture then reads
the chain through `reader` like any other node. The chain lives in memory, so
every market step is journalled (golem time and dt, in the capture store) before
it runs: a restarted daemon redeploys with the same seed and genesis time and
replays the journal, which rebuilds the identical chain (same transactions, same
block hashes), and capture resumes from its committed cursor. Replay costs about
0.15 s per journalled step at start-up.
"""

from __future__ import annotations

import structlog

from golem.chain.cursor import CaptureStore
from golem.chain.evm import SimulatedEvm
from golem.chain.market import Market, deploy_market
from golem.chain.reader import InProcessReader
from golem.chain.simulator import MarketSimulator, RegimeSwitch, StepReport
from golem.chain.watch import WatchList
from golem.errors import ConfigError

log = structlog.get_logger("golem.chain.source")


class SimulatedSource:
    def __init__(self, evm: SimulatedEvm, market: Market, simulator: MarketSimulator,
                 store: CaptureStore | None = None) -> None:
        self.evm = evm
        self.market = market
        self.simulator = simulator
        self.store = store
        self.chain_id = evm.chain_id
        self.first_block = evm.head().number + 1  # market activity starts after deployment
        self.reader = InProcessReader(evm)
        self.watch = WatchList.build(market.contracts)

    @classmethod
    def create(cls, seed: int, start_time: float,
               store: CaptureStore | None = None) -> SimulatedSource:
        """Deploy the market; with a store, reuse its genesis and replay its journal."""
        genesis = int(start_time) - 3600
        steps: list[tuple[float, float]] = []
        if store is not None:
            stored_seed = store.sim_meta("seed")
            if stored_seed is not None and int(stored_seed) != seed:
                raise ConfigError(
                    f"golem.seed: this data dir's simulated chain was built with seed "
                    f"{stored_seed}, not {seed}; restore the seed or use a new data_dir")
            stored_genesis = store.sim_meta("genesis_timestamp")
            if stored_genesis is None:
                store.set_sim_meta("seed", str(seed))
                store.set_sim_meta("genesis_timestamp", str(genesis))
            else:
                genesis = int(stored_genesis)
            steps = store.sim_steps()
        evm = SimulatedEvm(genesis_timestamp=genesis)
        market = deploy_market(evm, seed)
        source = cls(evm, market, MarketSimulator(evm, market, seed), store)
        if steps:
            log.info("replaying the simulated market", steps=len(steps))
            for golem_time, dt in steps:
                source.simulator.step(golem_time, dt)
            log.info("simulated market replayed", steps=len(steps), head=evm.head().number)
        return source

    @property
    def ground_truth(self) -> list[RegimeSwitch]:
        return self.simulator.ground_truth

    def advance(self, golem_time: float, dt: float) -> StepReport:
        """Journal, then drive the market to ``golem_time``."""
        if self.store is not None:
            self.store.append_sim_step(golem_time, dt)
        return self.simulator.step(golem_time, dt)

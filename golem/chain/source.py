"""The simulated market as a chain source: EVM, deployed market, seeded driver, journal.

The EVM is revm in process (golem.chain.revm.RevmEvm): real execution of the
market's Vyper contracts and of the golem's own signed transactions.

Each Gamma tick `advance` drives the market to the golem time; capture then reads
the chain through `reader` like any other node. The chain lives in memory, so
every market step is journalled (golem time and dt, in the capture store) before
it runs: a restarted daemon redeploys with the same seed and genesis time and
replays the journal, which rebuilds the identical chain (same transactions, same
block hashes), and capture resumes from its committed cursor. Replay re-runs every
journalled step, so start-up takes longer the longer the chain has run. The store
records the chain's rules (`EVM_RULES`, compaction interval); a data dir written
under other rules (the py-evm chain of earlier versions) is refused with a
ConfigError instead of being rebuilt into a different chain.

The golem's own transactions change the chain too, so they are journalled the same
way (signed raw bytes, or the wallet's funding, with the number of market steps
before them) and replayed in order. One lock keeps Gamma's market step (a worker
thread) and an executing action (another) from interleaving their transactions.
"""

from __future__ import annotations

import json
import threading

import structlog

from golem.chain.compile import load_artifacts
from golem.chain.cursor import CaptureStore
from golem.chain.evm import ChainError, TxResult
from golem.chain.market import E18, ORACLE_UNIT, USDC_UNIT, Market, deploy_market
from golem.chain.planted import PlantedDrops
from golem.chain.reader import InProcessReader
from golem.chain.revm import COMPACT_EVERY, RevmEvm
from golem.chain.simulator import ACTIVITIES, MarketSimulator, RegimeSwitch, StepReport
from golem.chain.transactions import send_eth, submit_raw
from golem.chain.watch import WatchList
from golem.errors import ConfigError

log = structlog.get_logger("golem.chain.source")

GAS_ETH = 10 * E18  # native ETH for gas: not counted as capital
# the chain's rules (EVM, block hashing, compaction): a journal replays to the same chain
# only under the rules that wrote it; change this string when they change
EVM_RULES = "revm 1"
RAW, FUND = "raw", "fund"


class SimulatedSource:
    def __init__(self, evm: RevmEvm, market: Market, simulator: MarketSimulator,
                 store: CaptureStore | None = None) -> None:
        self.evm = evm
        self.market = market
        self.simulator = simulator
        self.store = store
        self.chain_id = evm.chain_id
        self.first_block = evm.head().number + 1  # market activity starts after deployment
        self.reader = InProcessReader(evm)
        self.watch = WatchList.build(market.contracts)
        self.lock = threading.RLock()
        self.steps_done = 0
        self.funded: set[str] = set()

    @classmethod
    def create(cls, seed: int, start_time: float, store: CaptureStore | None = None, *,
               compact_every: int = COMPACT_EVERY, activity: str = "busy",
               planted: PlantedDrops | None = None) -> SimulatedSource:
        """Deploy the market; with a store, reuse its genesis and replay its journal.
        `compact_every` (blocks between revm state rebuilds), `activity` (the market's,
        a key of ACTIVITIES) and `planted` (a planted regularity, fresh: no step taken)
        are part of the chain's determinism: a data dir must always be opened with the
        same values (tests lower compact_every to reach a compaction in a few steps)."""
        genesis = int(start_time) - 3600
        steps: list[tuple[float, float]] = []
        golem_txs: list[tuple[int, float, str, bytes]] = []
        if store is not None:
            stored_seed = store.sim_meta("seed")
            if stored_seed is not None and int(stored_seed) != seed:
                raise ConfigError(
                    f"golem.seed: this data dir's simulated chain was built with seed "
                    f"{stored_seed}, not {seed}; restore the seed or use a new data_dir")
            stored_genesis = store.sim_meta("genesis_timestamp")
            chain = f"{EVM_RULES} compact_every={compact_every}"
            if activity != "busy":  # data dirs of the busy market predate the option
                chain += f" activity={activity}"
            if planted is not None:
                chain += f" planted={planted.describe()}"
            if stored_genesis is None:
                store.set_sim_meta("seed", str(seed))
                store.set_sim_meta("genesis_timestamp", str(genesis))
                store.set_sim_meta("evm", chain)
            else:
                genesis = int(stored_genesis)
                built = store.sim_meta("evm")
                if built != chain:
                    raise ConfigError(
                        f"this data dir's simulated chain was built by "
                        f"{built or 'the py-evm chain of earlier versions'}; this version "
                        f"runs {chain} and would rebuild a different chain from its "
                        f"journal: use a new data_dir")
            steps = store.sim_steps()
            golem_txs = store.sim_golem_txs()
        evm = RevmEvm(genesis_timestamp=genesis, seed=seed, compact_every=compact_every)
        market = deploy_market(evm, seed)
        simulator = MarketSimulator(evm, market, seed, activity=ACTIVITIES[activity],
                                    planted=planted)
        source = cls(evm, market, simulator, store)
        if steps or golem_txs:
            log.info("replaying the simulated market", steps=len(steps), golem_txs=len(golem_txs))
            pending = iter(golem_txs)
            nxt = next(pending, None)
            for i in range(len(steps) + 1):
                while nxt is not None and nxt[0] <= i:
                    source._apply(*nxt[1:])
                    nxt = next(pending, None)
                if i < len(steps):
                    source.simulator.step(*steps[i])
                    source.steps_done += 1
            log.info("simulated market replayed", steps=len(steps), head=evm.head().number)
        return source

    @property
    def ground_truth(self) -> list[RegimeSwitch]:
        return self.simulator.ground_truth

    def advance(self, golem_time: float, dt: float) -> StepReport:
        """Journal, then drive the market to ``golem_time``."""
        with self.lock:
            if self.store is not None:
                self.store.append_sim_step(golem_time, dt)
            report = self.simulator.step(golem_time, dt)
            self.steps_done += 1
            return report

    def submit(self, raw: bytes, golem_time: float) -> TxResult:
        """Journal, then send one of the golem's signed transactions."""
        with self.lock:
            self._journal(golem_time, RAW, raw)
            return submit_raw(self.evm, raw, golem_time)

    def fund_wallet(self, address: str, usd: float, golem_time: float) -> bool:
        """Once per address: half `usd` in USDC, half in WETH at the oracle price, plus gas
        ETH, from the market owner. False when already funded (journal replayed)."""
        with self.lock:
            if address.lower() in self.funded:
                return False
            abi = load_artifacts()["OracleFeed"].abi
            price = int(self.evm.call(self.market.oracle_eth_usd, abi, "latestAnswer"))
            data = {"to": address, "usdc": int(usd / 2 * USDC_UNIT),
                    "weth": int(usd / 2 * E18 * ORACLE_UNIT) // max(price, 1), "eth": GAS_ETH}
            blob = json.dumps(data, sort_keys=True).encode()
            self._journal(golem_time, FUND, blob)
            self._apply(golem_time, FUND, blob)
            return True

    def _journal(self, golem_time: float, kind: str, data: bytes) -> None:
        if self.store is not None:
            self.store.append_sim_golem_tx(self.steps_done, golem_time, kind, data)

    def _apply(self, golem_time: float, kind: str, data: bytes) -> None:
        """Run one journalled golem transaction (live or in replay)."""
        if kind == RAW:
            try:
                submit_raw(self.evm, data, golem_time)
            except ChainError as exc:  # it failed the same way when it was first sent
                log.warning("a journalled golem transaction was refused", error=str(exc))
            return
        fund = json.loads(data)
        m, abi = self.market, load_artifacts()["ERC20"].abi
        self.evm.set_next_block_time(golem_time)
        send_eth(self.evm, m.owner, fund["to"], int(fund["eth"]))
        for token, amount in ((m.usdc.address, fund["usdc"]), (m.weth.address, fund["weth"])):
            result = self.evm.transact(token, abi, "mint", fund["to"], int(amount),
                                       sender=m.owner)
            if not result.ok:
                raise ChainError(f"funding the wallet reverted: {result.error}")
        self.funded.add(str(fund["to"]).lower())

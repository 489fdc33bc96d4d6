"""The simulated market as a chain source: EVM, deployed market, seeded driver, journal.

The EVM is revm in process (golem.chain.revm.RevmEvm): real execution of the
market's Vyper contracts and of the golem's own signed transactions.

Each Gamma tick `advance` drives the market to the golem time; capture then reads
the chain through `reader` like any other node. The chain lives in memory, so
every market step is journalled (golem time and dt, in the capture store) before
it runs: a restarted daemon rebuilds the identical chain (same transactions, same
block hashes) and capture resumes from its committed cursor. A step is taken at most
once per golem time: `advance` to a golem time the journal already reached does
nothing (a restart after a kill may tick again through times the journal holds), and
its dt is the time since the last journalled step, so a restarted run steps the
market exactly as an uninterrupted one.

Restarts: between two market steps, when a block since the last revm compaction
reached a multiple of `compact_every`, the chain is compacted and a snapshot of the
whole simulated market is written to data/chain/snapshots/ (golem.chain.snapshots:
the EVM's state and head block, the market driver's RNG and state, this source's
counters, the journal position; checksummed, atomic, the newest three kept). On
start the newest intact snapshot whose head is at or below capture's committed
cursor (capture reads from its cursor on; blocks below a snapshot's head are not in
it) is restored and only the journal's tail after it is replayed; with none, the
journal replays from genesis (and writes the snapshots it passes). A data dir of
the first revm chain (rules "revm 1", compaction inside a market step, where no
snapshot can be taken) still replays from genesis every time.

A journal that does not replay stops start-up with a DataError (exit 65) naming the
step: every journal row records the chain's head before it ran, and replay compares;
capture's committed window must be blocks of the replayed chain (a cursor past the
replayed head means rows were cut off the journal's end); a snapshot needs the
journal rows it stands for. The store also records the chain's rules (`EVM_RULES`,
compaction interval, and the market's activity, planted regularity and fact changes
when not the default); a data dir written under other rules (the py-evm chain of
earlier versions) is refused with a ConfigError instead of being rebuilt into a
different chain.

The golem's own transactions change the chain too, so they are journalled the same
way (signed raw bytes, or the wallet's funding, with the number of market steps
before them) and replayed in order. One lock keeps Gamma's market step (a worker
thread) and an executing action (another) from interleaving their transactions.
"""

from __future__ import annotations

import copy
import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from golem.chain.changes import FactChange, FactChanges
from golem.chain.compile import load_artifacts
from golem.chain.cursor import CaptureStore, JournalStep, JournalTx
from golem.chain.evm import ChainError, TxResult
from golem.chain.market import E18, ORACLE_UNIT, USDC_UNIT, Market, deploy_market
from golem.chain.planted import PlantedDrops
from golem.chain.reader import InProcessReader
from golem.chain.revm import COMPACT_EVERY, RevmEvm
from golem.chain.simulator import (
    ACTIVITIES,
    MarketRules,
    MarketSimulator,
    RegimeSwitch,
    StepReport,
)
from golem.chain.snapshots import BadSnapshot, newest_usable, write_snapshot
from golem.chain.transactions import send_eth, submit_raw
from golem.chain.watch import WatchList
from golem.errors import ConfigError, DataError

log = structlog.get_logger("golem.chain.source")

GAS_ETH = 10 * E18  # native ETH for gas: not counted as capital
# the chain's rules (EVM, block hashing, compaction, the market's contracts): a journal
# replays to the same chain only under the rules that wrote it; change this string when
# they change. "revm 2" compacts between market steps (snapshots possible); "revm 1"
# compacted inside a step; "revm 3" is revm 2 with the V2 pairs' swap fee as pair state
# (PairV2's bytecode and gas changed, so the same journal gives other block hashes).
EVM_RULES = "revm 3"
OLD_RULES = ("revm 1",)
RAW, FUND = "raw", "fund"
_WHOLE_WINDOW = 1_000_000


class SimulatedSource:
    def __init__(self, evm: RevmEvm, market: Market, simulator: MarketSimulator,
                 store: CaptureStore | None = None, *, rules: str = EVM_RULES) -> None:
        self.evm = evm
        self.market = market
        self.simulator = simulator
        self.store = store
        self.rules = rules
        self.chain_id = evm.chain_id
        self.first_block = evm.head().number + 1  # market activity starts after deployment
        self.reader = InProcessReader(evm)
        self.watch = WatchList.build(market.contracts)
        self.lock = threading.RLock()
        self.steps_done = 0
        self.funded: set[str] = set()
        self.last_time: float | None = None  # golem time of the last market step
        self.restored_from: int | None = None  # steps in the snapshot restored, if any
        self.genesis = evm.genesis_timestamp
        self._step_seq = 0  # journal row of the last market step run
        self._tx_seq = 0  # journal row of the last golem transaction run
        self._snapshots = (store is not None and rules.startswith(EVM_RULES + " "))

    @classmethod
    def create(cls, seed: int, start_time: float, store: CaptureStore | None = None, *,
               compact_every: int = COMPACT_EVERY, activity: str = "busy",
               regime_hold: float = 1.0, planted: PlantedDrops | None = None,
               changes: FactChanges | None = None,
               pull_half_life_s: float = 0.0) -> SimulatedSource:
        """Deploy the market; with a store, reuse its genesis and rebuild its chain (the
        newest usable snapshot and the journal after it, or the whole journal).
        `compact_every` (blocks between revm state rebuilds), `activity` (the market's,
        a key of ACTIVITIES), `regime_hold` (how many times longer each regime lasts,
        golem.chain.simulator.held_transitions), `planted` (a planted regularity, fresh:
        no step taken), `changes` (facts that change mid-life, fresh; none asked for
        counts as None) and `pull_half_life_s` (the oracle's pull toward its initial
        price, golem.chain.simulator.oracle_move; 0: none) are
        part of the chain's determinism: a data dir must always be opened with the same
        values (tests lower compact_every to reach a compaction in a few steps).
        DataError when the journal does not replay; ConfigError when the data dir's
        chain has another seed or rules."""
        genesis = int(start_time) - 3600
        market = MarketRules(ACTIVITIES[activity], planted, changes, regime_hold,
                             pull_half_life_s)
        market_rules = market.describe()
        rules = f"{EVM_RULES} compact_every={compact_every}{market_rules}"
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
                store.set_sim_meta("evm", rules)
            else:
                genesis = int(stored_genesis)
                built = store.sim_meta("evm")
                accepted = [rules, *(f"{old} compact_every={compact_every}{market_rules}"
                                     for old in OLD_RULES)]
                if built not in accepted:
                    unpulled = rules.replace(f" pull_half_life_s={pull_half_life_s:g}", "")
                    hint = " (or set [chain] price_pull_half_life_s = 0: it predates the " \
                        "price pull)" if pull_half_life_s > 0 and built == unpulled else ""
                    raise ConfigError(
                        f"this data dir's simulated chain was built by "
                        f"{built or 'the py-evm chain of earlier versions'}; this version "
                        f"runs {rules} and would rebuild a different chain from its "
                        f"journal: use a new data_dir{hint}")
                rules = built
        source = cls.fresh(seed, genesis, compact_every, rules, store, market=market)
        if store is None:
            return source
        snapshot = source._newest_snapshot(seed, genesis)
        if snapshot is not None:
            try:
                source._restore(snapshot)
            except (KeyError, TypeError, ValueError, ChainError) as exc:
                log.warning("a market snapshot did not restore; replaying from genesis",
                            steps=snapshot.get("steps_done"), error=str(exc))
                source = cls.fresh(seed, genesis, compact_every, rules, store, market=market)
        source._replay_tail()
        return source

    @classmethod
    def fresh(cls, seed: int, genesis: int, compact_every: int, rules: str,
              store: CaptureStore | None, *,
              market: MarketRules | None = None) -> SimulatedSource:
        """The market just deployed on a new chain (no journal read); ``market``: its
        activity, planted regularity, fact changes (copied: each chain gets its own),
        regime hold and price pull (None: the busy market as it always was)."""
        market = market or MarketRules()
        evm = RevmEvm(genesis_timestamp=genesis, seed=seed, compact_every=compact_every,
                      compact_when_asked=rules.startswith(EVM_RULES + " "))
        deployed = deploy_market(evm, seed)
        simulator = MarketSimulator(evm, deployed, seed, activity=market.activity,
                                    planted=copy.deepcopy(market.planted),
                                    changes=copy.deepcopy(market.changes),
                                    regime_hold=market.regime_hold,
                                    pull_half_life_s=market.pull_half_life_s)
        return cls(evm, deployed, simulator, store, rules=rules)

    # --- snapshots and replay --------------------------------------------------------

    @property
    def _chain_dir(self) -> Path:
        assert self.store is not None
        return self.store.path.parent

    def _capture_window(self) -> tuple[tuple[int, str], ...]:
        """(number, hash) of the blocks in capture's committed window, oldest first."""
        assert self.store is not None
        window, _ = self.store.load(self.chain_id, _WHOLE_WINDOW)
        return tuple((h.number, h.hash) for h in window.headers)

    def _newest_snapshot(self, seed: int, genesis: int) -> dict[str, Any] | None:
        """The newest intact snapshot of this chain capture can resume from (its head at
        or below the committed cursor)."""
        if not self._snapshots:
            return None
        window = self._capture_window()
        if not window:
            return None
        cursor = window[-1][0]

        def usable(data: dict[str, Any]) -> bool:
            try:
                return (data.get("rules") == self.rules and data.get("seed") == seed
                        and data.get("genesis") == genesis
                        and int(data["evm"]["head"][0]) <= cursor)
            except (KeyError, TypeError, ValueError, IndexError):
                return False

        def bad(exc: BadSnapshot) -> None:
            log.warning("a market snapshot is damaged; trying an older one", error=str(exc))

        return newest_usable(self._chain_dir, usable, bad)

    def _snapshot_data(self) -> dict[str, Any]:
        return {"rules": self.rules, "seed": self.evm.seed, "genesis": self.genesis,
                "steps_done": self.steps_done,
                "funded": sorted(self.funded), "last_time": self.last_time,
                "journal": {"step_seq": self._step_seq, "tx_seq": self._tx_seq},
                "evm": self.evm.snapshot(), "market": self.simulator.state()}

    def _restore(self, data: dict[str, Any]) -> None:
        self.evm.restore(data["evm"])
        self.simulator.restore_state(data["market"])
        self.steps_done = int(data["steps_done"])
        self.funded = {str(a) for a in data["funded"]}
        last = data["last_time"]
        self.last_time = None if last is None else float(last)
        self._step_seq = int(data["journal"]["step_seq"])
        self._tx_seq = int(data["journal"]["tx_seq"])
        self.restored_from = self.steps_done
        assert self.store is not None
        held = self.store.count_steps(self._step_seq)
        if held != self.steps_done:
            raise DataError(
                f"{self.store.path}: the market journal does not replay: a snapshot was "
                f"taken after market step {self.steps_done} (journal row {self._step_seq}), "
                f"but the journal holds {held} steps up to that row: rows were deleted; "
                f"restore the data dir from a backup (`golem restore`)")

    def _replay_tail(self) -> None:
        """Replay the journal after the restored point, checking each row's recorded head,
        then check capture's committed window against the rebuilt chain."""
        assert self.store is not None
        steps = self.store.journal_steps(self._step_seq)
        txs = self.store.journal_golem_txs(self._tx_seq)
        if steps or txs:
            log.info("replaying the simulated market", snapshot_steps=self.restored_from,
                     steps=len(steps), golem_txs=len(txs))
        pending = iter(txs)
        nxt = next(pending, None)
        for i in range(len(steps) + 1):
            while nxt is not None and nxt.after_step <= self.steps_done:
                self._replay_tx(nxt)
                nxt = next(pending, None)
            if i < len(steps):
                self._replay_step(steps[i])
        if nxt is not None:
            raise DataError(
                f"{self.store.path}: the market journal does not replay: golem transaction "
                f"row {nxt.seq} follows market step {nxt.after_step}, but the journal ends "
                f"after step {self.steps_done}: rows were deleted; restore the data dir from "
                f"a backup (`golem restore`)")
        self._check_capture_window()
        if steps or txs:
            log.info("simulated market replayed", steps=self.steps_done,
                     head=self.evm.head().number)

    def _replay_step(self, step: JournalStep) -> None:
        self._before_step()
        self._expect(step.head, f"market step {self.steps_done + 1} (journal row {step.seq}, "
                                f"golem time {_iso(step.golem_time)})")
        self.simulator.step(step.golem_time, step.dt)
        self.steps_done += 1
        self.last_time, self._step_seq = step.golem_time, step.seq

    def _replay_tx(self, tx: JournalTx) -> None:
        self._expect(tx.head, f"the golem transaction after market step {tx.after_step} "
                              f"(journal row {tx.seq}, golem time {_iso(tx.golem_time)})")
        self._apply(tx.golem_time, tx.kind, tx.data)
        self._tx_seq = tx.seq

    def _head_mark(self) -> str:
        head = self.evm.head()
        return f"{head.number}:{head.hash}"

    def _expect(self, recorded: str | None, what: str) -> None:
        if recorded is None:  # a row from before the journal recorded heads
            return
        mark = self._head_mark()
        if mark != recorded:
            assert self.store is not None
            raise DataError(
                f"{self.store.path}: the market journal does not replay at {what}: before "
                f"it the journal recorded the chain's head {recorded}, the replayed chain's "
                f"is {mark}; a journal row was edited or deleted: restore the data dir "
                f"from a backup (`golem restore`)")

    def _check_capture_window(self) -> None:
        """Capture's committed blocks must be blocks of the rebuilt chain."""
        assert self.store is not None
        head = self.evm.head().number
        for number, block_hash in self._capture_window():
            if number > head:
                raise DataError(
                    f"{self.store.path}: the market journal does not replay: capture's "
                    f"cursor is at block {number}, but the journal replays only to block "
                    f"{head} (market step {self.steps_done}): rows were cut off its end; "
                    f"restore the data dir from a backup (`golem restore`)")
            try:
                found = self.evm.block(number).hash
            except ChainError:
                continue  # below a restored snapshot's head: not kept
            if found != block_hash:
                raise DataError(
                    f"{self.store.path}: the market journal does not replay: capture "
                    f"committed block {number} as {block_hash}, the replayed chain's block "
                    f"{number} is {found} (by market step {self.steps_done}); a journal row "
                    f"was edited or deleted: restore the data dir from a backup "
                    f"(`golem restore`)")

    def _before_step(self) -> None:
        """Between two market steps: compact when due, and write a snapshot there."""
        if not self.evm.compact_if_due() or not self._snapshots:
            return
        name = self._chain_dir / "snapshots" / f"market-{self.steps_done:010d}.snap"
        if name.exists():
            return
        try:
            write_snapshot(self._chain_dir, self.steps_done, self._snapshot_data())
        except OSError as exc:  # a restart replays further back; the chain is unchanged
            log.warning("could not write a market snapshot", error=str(exc))

    @property
    def ground_truth(self) -> list[RegimeSwitch]:
        return self.simulator.ground_truth

    @property
    def fact_changes(self) -> list[FactChange]:
        """The facts that changed so far (golem.chain.changes), oldest first."""
        changes = self.simulator.changes
        return [] if changes is None else changes.happened

    def advance(self, golem_time: float, dt: float) -> StepReport:
        """Journal, then drive the market to ``golem_time``. `dt` counts only for the
        first step ever; later steps take the time since the last one (at least 1 s). A
        golem time the market already reached is no step: an empty report."""
        with self.lock:
            if self.last_time is not None:
                if golem_time <= self.last_time:
                    return StepReport(golem_time, self.simulator.regime, self.simulator.price)
                dt = max(golem_time - self.last_time, 1.0)
            self._before_step()
            if self.store is not None:
                self._step_seq = self.store.append_sim_step(golem_time, dt, self._head_mark())
            report = self.simulator.step(golem_time, dt)
            self.steps_done += 1
            self.last_time = golem_time
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
            self._tx_seq = self.store.append_sim_golem_tx(self.steps_done, golem_time, kind,
                                                          data, self._head_mark())

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


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace(
        "+00:00", "Z")

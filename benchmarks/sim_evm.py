"""The simulated market's speed on the retired py-evm chain and on revm, in one run.

Both sides deploy the default market with the same seed and drive it through the
same golem times (10 s steps) with the real `MarketSimulator`:

* before: eth-tester + py-evm behind web3 (the `SimulatedEvm` this repo used until
  the revm switch), rebuilt here from `Web3Evm`; it needs the dev extra
  (eth-tester[py-evm]) and is reported as skipped without it;
* after: `golem.chain.revm.RevmEvm` (pyrevm), as `golem run` uses it.

Reported: market steps, transactions and blocks per second; the events of the
first `--check-steps` steps compared between the two chains (address, topics, data,
block number: the same contracts give the same events; hashes differ by design);
RSS growth over the revm run; and one ECDSA signature with eth-keys' pure-Python
backend vs libsecp256k1 (coincurve), the cost the market's signing used to carry.

    .venv/bin/python benchmarks/sim_evm.py [--seed 42] [--before-steps 200]
        [--after-steps 5000] [--check-steps 60]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from machine import machine  # benchmarks/ is on sys.path when run

from golem.chain.evm import Evm, Head
from golem.chain.market import deploy_market
from golem.chain.revm import RevmEvm
from golem.chain.simulator import MarketSimulator

T0 = 1_800_000_000
DT = 10.0


def py_evm_chain() -> Evm | None:
    """The retired eth-tester/py-evm chain, or None without the dev extra."""
    try:
        from eth_tester import EthereumTester, PyEVMBackend  # noqa: PLC0415
        from eth_utils.crypto import keccak  # noqa: PLC0415
        from web3 import EthereumTesterProvider, Web3  # noqa: PLC0415

        from golem.chain.web3_evm import Web3Evm  # noqa: PLC0415
    except ImportError:
        return None

    class Backend(PyEVMBackend):  # type: ignore[misc]
        def mine_blocks(self, num_blocks: int = 1, coinbase: Any = None) -> tuple[bytes, ...]:
            hashes = []
            for _ in range(num_blocks):
                number = self.chain.header.block_number
                block = self.chain.mine_block(mix_hash=keccak(number.to_bytes(32, "big")))
                hashes.append(block.hash)
            return tuple(hashes)

    class PyEvm(Web3Evm):
        def __init__(self) -> None:
            genesis = 1_700_000_000
            params = PyEVMBackend.generate_genesis_params({"timestamp": genesis})
            state = PyEVMBackend.generate_genesis_state(num_accounts=40)
            self._backend = Backend(genesis_parameters=params, genesis_state=state)
            self._backend.chain.chain_id = 31337
            super().__init__(Web3(EthereumTesterProvider(EthereumTester(self._backend))),
                             31337, genesis + 1)

        def _stamp_pending(self) -> None:
            ts = self._next_block_time()
            self._backend.chain.header = self._backend.chain.header.copy(timestamp=ts)

        def mine(self) -> Head:
            self._stamp_pending()
            self._backend.mine_blocks()
            return self.head()

    return PyEvm()


def rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def drive(evm: Evm, seed: int, steps: int, check_steps: int) -> dict[str, Any]:
    started = time.perf_counter()
    market = deploy_market(evm, seed)
    deployed = time.perf_counter() - started
    first = evm.head().number + 1
    sim = MarketSimulator(evm, market, seed)
    rss0, txs, check = rss_mb(), 0, []
    started = time.perf_counter()
    for i in range(steps):
        txs += sim.step(T0 + DT * i, DT).tx_count
        if i + 1 == check_steps:  # (read now: old blocks are pruned later)
            paused = time.perf_counter()
            check = evm.get_logs(first, evm.head().number)
            started += time.perf_counter() - paused
    wall = time.perf_counter() - started
    blocks = evm.head().number - first + 1
    return {
        "deploy_s": round(deployed, 3), "steps": steps, "wall_s": round(wall, 2),
        "steps_per_s": round(steps / wall, 1), "tx_per_s": round(txs / wall, 1),
        "blocks_per_s": round(blocks / wall, 1), "tx_per_step": round(txs / steps, 2),
        "rss_growth_mb": round(rss_mb() - rss0, 1),
        "_events": [(log.block_number, log.address, log.topics, log.data) for log in check],
    }


def signing_us() -> dict[str, float]:
    """One secp256k1 signature of a 32-byte hash: eth-keys native vs coincurve."""
    from eth_keys.backends import CoinCurveECCBackend, NativeECCBackend  # noqa: PLC0415
    from eth_keys.datatypes import PrivateKey  # noqa: PLC0415

    from golem.chain.rawtx import DevKey  # noqa: PLC0415

    secret, msg = (7).to_bytes(32, "big"), bytes(range(32))
    out = {}
    for name, backend in (("eth_keys_native", NativeECCBackend()),
                          ("eth_keys_coincurve", CoinCurveECCBackend())):
        key = PrivateKey(secret, backend=backend)
        n = 200 if name.endswith("native") else 2000
        started = time.perf_counter()
        for _ in range(n):
            key.sign_msg_hash(msg)
        out[name] = round((time.perf_counter() - started) / n * 1e6, 1)
    dev = DevKey(secret)
    started = time.perf_counter()
    for _ in range(2000):
        dev.sign_hash(msg)
    out["devkey_coincurve"] = round((time.perf_counter() - started) / 2000 * 1e6, 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--before-steps", type=int, default=200)
    parser.add_argument("--after-steps", type=int, default=5000)
    parser.add_argument("--check-steps", type=int, default=60)
    args = parser.parse_args()
    check = min(args.check_steps, args.before_steps, args.after_steps)
    after = drive(RevmEvm(), args.seed, args.after_steps, check)
    old = py_evm_chain()
    before = drive(old, args.seed, args.before_steps, check) if old is not None else None
    report: dict[str, Any] = {
        "benchmark": "sim_evm", "seed": args.seed, "step_s": DT,
        "machine": {**machine(), "loadavg_1m": round(os.getloadavg()[0], 2)},
        "after_revm": {k: v for k, v in after.items() if not k.startswith("_")},
        "before_py_evm": ({k: v for k, v in before.items() if not k.startswith("_")}
                          if before is not None else "skipped: eth-tester[py-evm] not installed"),
        "signing_us": signing_us(),
    }
    if before is not None:
        report["speedup_steps_per_s"] = round(after["steps_per_s"] / before["steps_per_s"], 1)
        report["same_events_first_steps"] = {
            "steps": check, "events": len(after["_events"]),
            "equal": after["_events"] == before["_events"]}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

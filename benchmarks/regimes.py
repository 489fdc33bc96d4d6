"""Compare the market's true regime switches with the regime changes perception detected.

Reads only a golem's data dir (after e.g. ``scripts/run --stop-after 1h``):
``chain/ground_truth.jsonl`` (the simulator's regime switches, by block) and the
episodes' ``payload.perceived_regime`` on the price-feed channel (Chainlink
AnswerUpdated), where perception's CUSUM detector watches the price. A detection
is an episode whose perceived regime leaves "stationary" after a stationary one.
A true switch counts as detected when a detection falls within ``--within``
blocks after it; detections near no switch are false alarms. Switches into and
out of "calm" differ in how visible they are, so hits are broken down by regime.

    .venv/bin/python benchmarks/regimes.py --config bardo.toml [--within 60]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import bisect
import json
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

from golem.config import load_config
from golem.grimoire.grimoire import Grimoire


async def feed_regimes(config_path: Path) -> list[tuple[int, str]]:
    config = load_config(config_path)
    g = await Grimoire.open(config, now=lambda: 0.0)
    try:
        rows = await g.scan_episodes(lambda batches: [
            (e.block_number, e.log_index, str(e.payload.get("perceived_regime")))
            for batch in batches for e in batch if e.payload.get("event") == "AnswerUpdated"])
    finally:
        await g.close()
    return [(block, regime) for block, _, regime in sorted(rows)]


def compare(truth: list[dict[str, Any]], perceived: list[tuple[int, str]],
            within: int) -> dict[str, Any]:
    detections = [block for (block, regime), (_, before) in
                  zip(perceived[1:], perceived[:-1], strict=True)
                  if regime != "stationary" and before == "stationary"]
    switches = truth[1:]  # the first record is the starting regime, not a switch
    hits, delays, by_regime = 0, [], Counter[str]()
    for switch in switches:
        at = bisect.bisect_left(detections, switch["block_number"])
        if at < len(detections) and detections[at] - switch["block_number"] <= within:
            hits += 1
            delays.append(detections[at] - switch["block_number"])
            by_regime[switch["regime"]] += 1
    starts = [s["block_number"] for s in switches]
    false_alarms = 0
    for block in detections:
        at = bisect.bisect_right(starts, block) - 1
        if at < 0 or block - starts[at] > within:
            false_alarms += 1
    return {
        "true_switches": len(switches),
        "switches_by_regime": dict(Counter(s["regime"] for s in switches)),
        "feed_observations": len(perceived),
        "detections": len(detections),
        "detected_switches": hits,
        "detected_by_regime": dict(by_regime),
        "recall": round(hits / len(switches), 3) if switches else None,
        "false_alarms": false_alarms,
        "median_delay_blocks": statistics.median(delays) if delays else None,
        "within_blocks": within,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("bardo.toml"))
    parser.add_argument("--within", type=int, default=60,
                        help="blocks after a true switch in which a detection counts")
    args = parser.parse_args()
    config = load_config(args.config)
    truth_path = config.data_dir / "chain" / "ground_truth.jsonl"
    truth = [json.loads(line) for line in truth_path.read_text().splitlines() if line]
    perceived = anyio.run(feed_regimes, args.config)
    print(json.dumps(compare(truth, perceived, args.within)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

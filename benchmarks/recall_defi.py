"""Recall on a golem's own chain memory: questions with gold episodes from ground truth.

A seeded simulated run of the default config (``golem run --stop-after H``, offline
cognition) fills a data dir; or ``--config`` names a golem that already ran. Questions are
generated from what the episodes' decoded payloads say happened (the chain's ground
truth, not the renderings' words): the latest oracle fall past a threshold, the
reverted sells, liquidity added to and removed from the WETH/USDC pool, the largest
USDC borrow and WETH sell, repayments, WETH supplied, the golem's own losing trades.
Each question is one ``Grimoire.recall(question, k=max(K))`` through the public API, at
a golem clock one minute after the newest episode. recall@k = |gold in top k| /
min(|gold|, k): a question whose answer is a set of 15 reverts is fully answered by 10
of them at k = 10. Baselines in the same run on the same episodes: BM25 (bm25s, English
stopwords) on what the full-text index sees (the text and the exact identifiers) and dense
(the golem's embedder, exact cosine) on the text.

The ten templates of ``questions`` were written before the Grimoire was run on them,
but recall's order, threshold and event-anchor reading was then developed against their
misses: they are a development set. ``held_out`` holds ten templates written after
those features (reported apart, as ``held_out_mean``); run a second seed (``--config``
of a golem run with another ``seed``) to see the features on data not looked at. Refusal
is measured too: the answerable questions' best similarity beside that of DeFi questions
about what the simulated market does not have and of REALTALK questions.

    .venv/bin/python benchmarks/recall_defi.py [--hours 1] [--config FILE] [--k 5,10]

Prints one JSON object; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from machine import embed_compute, machine  # benchmarks/ is on sys.path when run

from golem.config import load_config
from golem.grimoire.embedder import Embedder
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.records import Episode, search_text
from golem.logging import configure_logging

sys.path.insert(0, str(Path(__file__).resolve().parent))
from recall_quality import DATA, bm25_top, dense_top, load_chat

REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Question:
    name: str
    text: str
    gold: frozenset[str]


def _event(e: Episode, name: str) -> bool:
    return e.payload.get("event") == name


def _args(e: Episode) -> dict[str, Any]:
    args = e.payload.get("args")
    return args if isinstance(args, dict) else {}


def _symbols(e: Episode) -> tuple[str, str]:
    tokens = e.payload.get("tokens") or {}
    return (str((tokens.get("token0") or {}).get("symbol", "")),
            str((tokens.get("token1") or {}).get("symbol", "")))


def _weth_usdc(e: Episode) -> bool:
    return _symbols(e) == ("WETH", "USDC")


def _reserve_symbol(e: Episode) -> str:
    reserve = str(_args(e).get("reserve", ""))
    return str((e.payload.get("tokens") or {}).get(reserve, {}).get("symbol", ""))


def _oracle_falls(eps: Sequence[Episode], threshold: float) -> frozenset[str]:
    """The latest answer that fell more than ``threshold`` from the one before it."""
    answers = sorted((e for e in eps if _event(e, "AnswerUpdated")),
                     key=lambda e: (e.observed_at, e.block_number, e.log_index))
    falls = [b.id for a, b in itertools.pairwise(answers)
             if _args(a).get("current") and _args(b).get("current") is not None
             and _args(b)["current"] / _args(a)["current"] - 1 < -threshold]
    return frozenset(falls[-1:])


def _oracle_moves(eps: Sequence[Episode], threshold: float, *, rise: bool,
                  latest: bool = True) -> frozenset[str]:
    """The latest answer that moved more than ``threshold`` (a fraction) up or down from
    the one before it (or every such answer, when not ``latest``)."""
    answers = sorted((e for e in eps if _event(e, "AnswerUpdated")), key=_when)
    moved = [b.id for a, b in itertools.pairwise(answers)
             if _args(a).get("current") and _args(b).get("current") is not None
             and (1 if rise else -1) * (_args(b)["current"] / _args(a)["current"] - 1)
             > threshold]
    return frozenset(moved[-1:] if latest else moved)


def _when(e: Episode) -> tuple[float, int, int]:
    return (e.observed_at, e.block_number, e.log_index)


def _largest(eps: Sequence[Episode], keep: Callable[[Episode], bool],
             size: Callable[[Episode], float]) -> frozenset[str]:
    chosen = [e for e in eps if keep(e)]
    return frozenset([max(chosen, key=size).id]) if chosen else frozenset()


def _smallest(eps: Sequence[Episode], keep: Callable[[Episode], bool],
              size: Callable[[Episode], float]) -> frozenset[str]:
    chosen = [e for e in eps if keep(e)]
    return frozenset([min(chosen, key=size).id]) if chosen else frozenset()


def _amount(e: Episode, key: str = "amount") -> float:
    return float(_args(e).get(key, 0))


def _pool_event(e: Episode) -> bool:
    return e.category in ("swap", "liquidity") and _weth_usdc(e)


def held_out(eps: Sequence[Episode]) -> list[Question]:
    """Templates written after the order, threshold and anchor reading was built, and
    never used to change it (see benchmarks/README); a template with no gold is dropped."""
    def ids(keep: Callable[[Episode], bool]) -> frozenset[str]:
        return frozenset(e.id for e in eps if keep(e))

    liquidations = sorted((e for e in eps if _event(e, "LiquidationCall")), key=_when)
    usdc_borrow = [e for e in eps if _event(e, "Borrow") and _reserve_symbol(e) == "USDC"]
    found = [
        Question("h_oracle_rise_1pct", "When did the ETH price feed last rise by more than 1%?",
                 _oracle_moves(eps, 0.01, rise=True)),
        Question("h_oracle_falls_3pct", "ETH oracle answers that fell more than 3%",
                 _oracle_moves(eps, 0.03, rise=False, latest=False)),
        Question("h_smallest_weth_supply", "What was the smallest WETH supply to the lending pool?",
                 _smallest(eps, lambda e: _event(e, "Supply") and _reserve_symbol(e) == "WETH",
                           _amount)),
        Question("h_first_usdc_borrow", "When was the first USDC borrow from the lending pool?",
                 frozenset([min(usdc_borrow, key=_when).id]) if usdc_borrow else frozenset()),
        Question("h_latest_liquidation", "The most recent liquidation on the lending pool",
                 frozenset([liquidations[-1].id]) if liquidations else frozenset()),
        Question("h_largest_repayment", "The largest USDC repayment to the lending pool",
                 _largest(eps, lambda e: _event(e, "Repay") and _reserve_symbol(e) == "USDC",
                          _amount)),
        Question("h_big_usdc_borrows", "USDC borrows of more than 15,000 USDC",
                 ids(lambda e: e in usdc_borrow and _amount(e) > 15_000 * 10**6)),
        Question("h_weth_sells_over_5", "Swaps that sold more than 5 WETH in the WETH/USDC pool",
                 ids(lambda e: _event(e, "Swap") and _weth_usdc(e)
                     and _amount(e, "amount0In") > 5 * 10**18)),
        Question("h_pool_after_liquidation",
                 "What happened in the WETH/USDC pool after the last liquidation?",
                 ids(lambda e: _pool_event(e) and bool(liquidations)
                     and e.observed_at >= liquidations[-1].observed_at)),
        Question("h_pool_before_liquidation",
                 "Liquidity added to the WETH/USDC pool before the first liquidation",
                 ids(lambda e: _event(e, "Mint") and _weth_usdc(e) and bool(liquidations)
                     and e.observed_at < liquidations[0].observed_at)),
    ]
    return [q for q in found if q.gold]


def questions(eps: Sequence[Episode]) -> list[Question]:
    """The templates, instantiated on these episodes; a template with no gold is dropped."""
    def ids(keep: Callable[[Episode], bool]) -> frozenset[str]:
        return frozenset(e.id for e in eps if keep(e))

    found = [
        Question("oracle_fall_2pct", "When did the ETH price feed last fall more than 2%?",
                 _oracle_falls(eps, 0.02)),
        Question("oracle_fall_1pct", "When did the ETH oracle last drop by over 1%?",
                 _oracle_falls(eps, 0.01)),
        Question("reverted_sells", "Which token's sells revert?",
                 ids(lambda e: e.category == "revert" and e.payload.get("action") == "sell")),
        Question("liquidity_removed", "Who removed liquidity from the WETH/USDC pool?",
                 ids(lambda e: _event(e, "Burn") and _weth_usdc(e))),
        Question("liquidity_added", "Liquidity added to the WETH/USDC pool",
                 ids(lambda e: _event(e, "Mint") and _weth_usdc(e))),
        Question("losing_trades", "Which of our own trades lost money?",
                 ids(lambda e: e.category == "strategy_outcome"
                     and float(e.payload.get("pnl_usd") or 0.0) < 0)),
        Question("largest_borrow", "What was the largest USDC borrow on the lending pool?",
                 _largest(eps, lambda e: _event(e, "Borrow") and _reserve_symbol(e) == "USDC",
                          lambda e: float(_args(e).get("amount", 0)))),
        Question("largest_weth_sell", "The biggest WETH sold for USDC in the WETH/USDC pool",
                 _largest(eps, lambda e: _event(e, "Swap") and _weth_usdc(e),
                          lambda e: float(_args(e).get("amount0In", 0)))),
        Question("repayments", "USDC loans repaid to the lending pool",
                 ids(lambda e: _event(e, "Repay") and _reserve_symbol(e) == "USDC")),
        Question("weth_supplied", "WETH supplied to the lending pool as collateral",
                 ids(lambda e: _event(e, "Supply") and _reserve_symbol(e) == "WETH")),
    ]
    return [q for q in found if q.gold]


# Questions this memory cannot answer: venues, tokens and events the simulated market does
# not have (written without looking at the store), asked to measure refusal.
UNANSWERABLE = (
    "When was the DAI/USDT Curve pool drained?",
    "Which NFT collection did we mint last night?",
    "How much did the Compound governance proposal change the reserve factor?",
    "When did the stETH peg break on Lido?",
    "Which bridge transfer to Arbitrum failed?",
    "What was the largest flash loan taken from Balancer?",
    "Did the Maker stability fee go up this month?",
    "Who voted on the Uniswap fee switch?",
    "How much SOL did we stake with Marinade?",
    "When did the Chainlink BTC/EUR feed last update?",
    "Which airdrop did our wallet claim?",
    "What were the gas fees on Polygon yesterday?",
)


def realtalk_questions(limit: int) -> list[str]:
    """Up to ``limit`` questions from the REALTALK chats (other people's conversations:
    nothing in a golem's chain memory answers them), every n-th so all chats count."""
    paths = sorted(DATA.glob("Chat_*.json"))
    asked = [q.text for p in paths for q in load_chat(p).questions]
    step = max(len(asked) // max(limit, 1), 1)
    return asked[::step][:limit]


def refusal_report(answerable: Sequence[float], near: Sequence[float],
                   far: Sequence[float], threshold: float) -> dict[str, Any]:
    """Refused shares (best similarity below the threshold) as run and at other thresholds:
    on this set's questions (answerable), on DeFi questions about what the market does not
    have (near) and on REALTALK questions (far)."""
    def share(values: Sequence[float], t: float) -> float | None:
        return round(float(np.mean([v < t for v in values])), 4) if values else None

    return {
        "threshold": threshold,
        "questions": {"answerable": len(answerable), "unanswerable_defi": len(near),
                      "unanswerable_realtalk": len(far)},
        "best_similarity_median": {name: round(float(np.median(v)), 4) if v else None
                                   for name, v in (("answerable", answerable),
                                                   ("unanswerable_defi", near),
                                                   ("unanswerable_realtalk", far))},
        "by_threshold": {f"{t:.2f}": {"answerable_refused": share(answerable, t),
                                      "unanswerable_defi_refused": share(near, t),
                                      "unanswerable_realtalk_refused": share(far, t)}
                         for t in np.arange(0.20, 0.61, 0.05)},
    }


def _best(result: Any) -> float:
    best = result.best_similarity
    return float(best) if best is not None else 0.0


def score(ranked: Sequence[str], gold: frozenset[str], k: int) -> float:
    return len(gold & set(ranked[:k])) / min(len(gold), k)


def run_golem(hours: float, directory: Path) -> Path:
    """The default config on a fresh data dir for ``hours`` golem hours; its config path."""
    text = (REPO / "bardo.toml").read_text()
    text = text.replace('data_dir = "data"', f'data_dir = "{directory / "data"}"')
    text = text.replace('model_dir = "models/', f'model_dir = "{REPO}/models/')
    config = directory / "bardo.toml"
    config.write_text(text)
    print(f"running the default golem for {hours:g} golem hour(s)...", file=sys.stderr,
          flush=True)
    subprocess.run([sys.executable, "-m", "golem", "run", "--config", str(config),
                    "--stop-after", f"{hours:g}h"], check=True, stdout=subprocess.DEVNULL)
    return config


async def evaluate(config_path: Path, ks: list[int], far: int) -> dict[str, Any]:
    config = load_config(config_path)
    embedder = Embedder.load(REPO / "models" / "all-minilm-l6-v2-int8", 1,
                             compute=embed_compute())
    grimoire = await Grimoire.open(config, now=lambda: 0.0, embedder=embedder)
    try:
        eps: list[Episode] = await grimoire.scan_episodes(
            lambda batches: [e for batch in batches for e in batch])
    finally:
        await grimoire.close()
    now = max(e.observed_at for e in eps) + 60.0
    dev = questions(eps)
    qs = [*dev, *held_out(eps)]
    grimoire = await Grimoire.open(config, now=lambda: now, embedder=embedder)
    k = max(ks)
    runs: dict[str, list[list[str]]] = {"grimoire": [], "bm25": [], "dense": []}
    best: dict[str, list[float]] = {"answerable": [], "near": [], "far": []}
    try:
        for q in qs:
            result = await grimoire.recall(q.text, k=k)
            runs["grimoire"].append([] if result.refused else [h.id for h in result.hits])
            best["answerable"].append(_best(result))
        for name, asked in (("near", UNANSWERABLE), ("far", realtalk_questions(far))):
            for text in asked:
                best[name].append(_best(await grimoire.recall(text, k=k)))
    finally:
        await grimoire.close()
    # Each baseline sees what its Grimoire counterpart sees: the full-text index an
    # episode's text and its exact identifiers, the embedder its text.
    texts, asked = [e.text for e in eps], [q.text for q in qs]
    runs["bm25"] = [[eps[i].id for i in top]
                    for top in bm25_top([search_text(e) for e in eps], asked, k)]
    runs["dense"] = [[eps[i].id for i in top] for top in dense_top(embedder, texts, asked, k)]
    report: dict[str, Any] = {"benchmark": "recall_defi", "machine": machine(),
                              "episodes": len(eps),
                              "questions": {q.name: {"text": q.text, "gold": len(q.gold)}
                                            for q in qs}}
    for name, ranked in runs.items():
        per = {q.name: {f"recall@{kk}": round(score(r, q.gold, kk), 3) for kk in ks}
               for q, r in zip(qs, ranked, strict=True)}
        report[name] = {part: {f"recall@{kk}": round(float(np.mean(
            [score(r, q.gold, kk) for i, (q, r) in enumerate(zip(qs, ranked, strict=True))
             if (i < len(dev)) == (part == "mean")])), 3) for kk in ks}
            for part in ("mean", "held_out_mean") if part == "mean" or len(qs) > len(dev)}
        report[name]["per_question"] = per
    report["refusal"] = refusal_report(best["answerable"], best["near"], best["far"],
                                       config.grimoire.refusal_threshold)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=1.0, help="golem hours to run (default 1)")
    ap.add_argument("--config", type=Path, default=None,
                    help="the config file of a golem that already ran (skips the run)")
    ap.add_argument("--k", default="5,10")
    ap.add_argument("--realtalk", type=int, default=200,
                    help="REALTALK questions asked as unanswerable (0: none)")
    args = ap.parse_args()
    configure_logging("warning", "json", sys.stderr)
    ks = sorted(int(k) for k in args.k.split(","))
    with tempfile.TemporaryDirectory(prefix="golem-recall-defi-") as tmp:
        config = args.config or run_golem(args.hours, Path(tmp))
        report = anyio.run(evaluate, config, ks, args.realtalk)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

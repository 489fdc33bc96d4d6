"""Context Governor benchmarks (issue 5): workspace assembly latency, and prompt-cache
share and tokens per decision over a simulated run.

1. Assembly: 100k episodes (``grimoire_search.build_store``) and 5k semantic entries of
   every entry type (insights, heuristics, warnings, anti-knowledge, causal links,
   strategy fragments; the first ``REAL_ENTRIES`` really embedded, the rest noisy copies
   of those vectors like the episode bulk). ``ContextGovernor.assemble`` with the default
   ContextPolicy, Theta's live items and queries shaped like Theta's ``_query`` over a
   synthetic price window, one escalated episode per call (Gamma's escalations). Target:
   p95 <= 50 ms. The recall share (``Grimoire.recall`` and the escalated-episode fetch,
   timed inside the call) and the pure ``golem.governor.assembly.assemble`` on the same
   candidates (timed alone) are reported apart.
2. Tokens: the real daemon (``golem.wiring.setup``, simulated market, virtual clock) on
   the same data dir, Theta on the anthropic tier against the caching-emulating
   ``MessagesServer`` (default reply: a valid decision; min cacheable prefix 1024 tokens,
   the API's for Sonnet; cache TTLs on the golem clock). An escalator queues one very
   curious escalation per Gamma tick so every Theta tick calls the strong model. Gamma
   ticks every 60 s instead of 10 s (one market step per tick either way) to keep the run
   short. Cache share = cache_read / (input + cache_read + cache_write) over the server's
   usage. The naive baseline is built from the same tick's recall hits: every hit (and
   the escalated episode) in full, the live state, the same system text and tools, no
   budget, no cache_control; counted with the server's ceil(chars / 4) per element.

3. ``--golem CONFIG``: part 1 only, on a copy of a golem's own memory (its config's
   data dir: the episode store and grimoire.db, copied, never opened in place), as that
   golem left it: the rows written since the last fold (in small fragments, not yet in
   the indexes) and the rows retention deleted, still in their files. Then the store's
   own fold (``Grimoire.optimize``, what the daemon's maintenance runs) and part 1 again.
   The escalated episodes are the store's newest; now is just after the newest.

    .venv/bin/python benchmarks/governor.py [--quick] [--episodes 100000] [--ticks 200]
    .venv/bin/python benchmarks/governor.py --golem path/to/bardo.toml [--queries 200]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from machine import machine  # benchmarks/ is on sys.path when run

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.cognition.model import IDENTITY
from golem.cognition.prompt import ANSWER_REQUEST, SCHEMA_INSTRUCTIONS
from golem.cognition.theta import STRATEGY, ThetaCycle, market_regime
from golem.config import CognitionSection, load_config, parse_config
from golem.gamma.capture import GammaCapture
from golem.gamma.handoff import Escalation
from golem.governor.assembly import AssemblySettings, assemble
from golem.governor.categories import Category, Phase
from golem.governor.governor import (
    Assembly,
    ContextGovernor,
    LiveItem,
    hit_candidate,
    live_candidate,
)
from golem.governor.policy import ContextPolicy
from golem.governor.workspace import Candidate
from golem.grimoire import episodes_layout as layout
from golem.grimoire.grimoire import EPISODES_DIR, SEMANTIC_FILE, Grimoire
from golem.grimoire.recall import Hit, RecallResult
from golem.grimoire.records import EntryType, Episode, MemoryType, SemanticEntry
from golem.grimoire.semantic import SemanticStore
from golem.logging import configure_logging
from golem.perception.market import PricePoint, move_phrase
from golem.runtime.daemon import Daemon, SetupContext
from golem.runtime.handlers import HandlerRegistry, TickContext, TickCounters
from golem.testing.messages_server import (
    MessagesServer,
    PromptCache,
    approx_tokens,
    prompt_elements,
)
from golem.wiring import setup

sys.path.insert(0, str(Path(__file__).resolve().parent))
import itertools

from grimoire_ingest import MODEL_DIR, peak_rss_mb, synthetic_episodes
from grimoire_search import build_store, embedder, summary

ENTRIES = 5000
REAL_ENTRIES = 1000
REAL_EPISODES = 1000  # build_store's really embedded rows (its default 3000 costs ~40 s more)
FEED = "ETH/USD"
POOLS = ["ETH/USDC", "WBTC/ETH", "DAI/USDC", "stETH/ETH", "ARB/USDC", "LINK/ETH"]
REGIMES = ["calm", "trending", "volatile", "crash"]
# (entry type, memory type, template): short, realistic distilled knowledge
TEMPLATES: list[tuple[EntryType, MemoryType, str]] = [
    (EntryType.INSIGHT, MemoryType.FACT,
     "Whale swaps above {k}00k USDC on {p} move the price by about {a} percent within "
     "{b} blocks; the move mostly reverts within the hour."),
    (EntryType.INSIGHT, MemoryType.FACT,
     "Liquidations on aave cluster within {b} blocks after a chainlink update for {p} "
     "larger than {a} percent."),
    (EntryType.HEURISTIC, MemoryType.PREFERENCE,
     "When gas is above {k} gwei, delay rebalancing {p} positions until it falls: "
     "fees ate {a} percent of the edge last time."),
    (EntryType.HEURISTIC, MemoryType.PREFERENCE,
     "Split swaps on {p} larger than {k}0k USDC into {b} parts to keep slippage under "
     "{a} percent."),
    (EntryType.WARNING, MemoryType.CONSTRAINT,
     "Warning: never provide liquidity to {p} when TVL is under {k}00k USDC; slippage "
     "above {a} percent on 10k trades."),
    (EntryType.WARNING, MemoryType.CONSTRAINT,
     "Warning: token 0x{h} paired with {p} is a honeypot: every sell reverts."),
    (EntryType.ANTI_KNOWLEDGE, MemoryType.FACT,
     "Disproven: large {p} swaps do not predict a price rise within {b} minutes "
     "(tested {k} times, hit rate {a}0 percent)."),
    (EntryType.CAUSAL_LINK, MemoryType.FACT,
     "Chainlink {p} updates above {a} percent are followed by borrower liquidations "
     "within {b} blocks (lag about {k} seconds)."),
    (EntryType.STRATEGY_FRAGMENT, MemoryType.STRATEGY_OUTCOME,
     "In a {r} market, keep {p} exposure under {k} percent of equity and exit after a "
     "{a} percent adverse move."),
]
DECISION = {"analysis": "Large sells during a falling market; holding.",
            "predictions": [{"subject": FEED, "quantity": "price_move", "direction": "down",
                             "magnitude": 0.01, "confidence": 0.6, "horizon_ticks": 3}],
            "actions": [{"kind": "hold", "reason": "observe"}],
            "referenced": [], "missing_context": []}
KEY = "sk-ant-bench-0123456789abcdefghijklmnop"


# --- stores ------------------------------------------------------------------------------

def semantic_entries(n: int, now: float) -> list[SemanticEntry]:
    rng = random.Random(11)
    out = []
    for i in range(n):
        entry_type, memory_type, template = TEMPLATES[i % len(TEMPLATES)]
        text = template.format(p=rng.choice(POOLS), r=rng.choice(REGIMES), k=rng.randint(2, 60),
                               a=rng.randint(1, 9), b=rng.randint(2, 40),
                               h=f"{rng.getrandbits(160):040x}")
        out.append(SemanticEntry(
            id=f"entry-{i}", namespace="main", text=text, entry_type=entry_type,
            memory_type=memory_type, created_at=now - rng.uniform(0, 30 * 86400),
            confidence=rng.uniform(0.4, 0.95), importance=rng.uniform(0.3, 0.9)))
    return out


def seed_semantic(path: Path, n: int, now: float) -> None:
    entries = semantic_entries(n, now)
    real = min(REAL_ENTRIES, n)
    base = embedder().embed([e.text for e in entries[:real]])
    vectors = base[np.arange(n) % real].copy()
    rng = np.random.default_rng(n)
    noise = rng.standard_normal((n - real, vectors.shape[1])).astype(np.float32)
    vectors[real:] += 0.6 * noise / np.sqrt(vectors.shape[1])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = SemanticStore.open(path, embedder().signature.id, embedder().signature.dim)
    try:
        store.put(entries, vectors)
    finally:
        store.close()


def open_grimoire(data_dir: Path, now: float) -> Grimoire:
    config = parse_config(f'[golem]\nname = "main"\ndata_dir = "{data_dir}"\n')
    from golem.grimoire.episodes import EpisodeStore  # noqa: PLC0415

    episodes = EpisodeStore.open(data_dir / EPISODES_DIR, embedder().signature,
                                 index_min_rows=config.grimoire.index_min_rows)
    semantic = SemanticStore.open(data_dir / SEMANTIC_FILE, embedder().signature.id,
                                  embedder().signature.dim)
    return Grimoire(cfg=config.grimoire, data_dir=data_dir, embedder=embedder(),
                    episodes=episodes, semantic=semantic, now=lambda: now)


# --- taps (composition at the benchmark's edge, nothing in golem/ is patched) ------------

class RecallTap:
    """Delegates to a Grimoire, keeping each recall's result and the time recall and
    the escalated-episode fetches took."""

    def __init__(self, grimoire: Grimoire) -> None:
        self.grimoire = grimoire
        self.last: RecallResult | None = None
        self.recall_s = 0.0
        self.get_s = 0.0
        self.fetched: list[Any] = []

    def reset(self) -> None:
        self.last, self.recall_s, self.get_s, self.fetched = None, 0.0, 0.0, []

    async def recall(self, query: str, **kw: Any) -> RecallResult:
        t0 = time.perf_counter()
        self.last = await self.grimoire.recall(query, **kw)
        self.recall_s += time.perf_counter() - t0
        return self.last

    async def episodes_by_ids(self, ids: Sequence[str]) -> list[Any]:
        """The escalated-episode fetch (those not among the recall's hits)."""
        t0 = time.perf_counter()
        records = await self.grimoire.episodes_by_ids(ids)
        self.get_s += time.perf_counter() - t0
        self.fetched.extend(records)
        return records

    def __getattr__(self, name: str) -> Any:
        return getattr(self.grimoire, name)


class TappedGovernor(ContextGovernor):
    """The real Governor, over a RecallTap, remembering each call's inputs and hits."""

    def __init__(self, grimoire: Grimoire, total_budget: int) -> None:
        self.tap = RecallTap(grimoire)
        super().__init__(self.tap, total_budget)  # type: ignore[arg-type]
        self.calls: list[dict[str, Any]] = []

    async def assemble(self, policy: ContextPolicy, *, query: str, live: Sequence[LiveItem],
                       escalated_ids: Sequence[str], **kw: Any) -> Assembly:
        self.tap.reset()
        out = await super().assemble(policy, query=query, live=live,
                                     escalated_ids=escalated_ids, **kw)
        handed = kw.get("escalated_episodes") or {}
        fetched = [*self.tap.fetched, *(handed[i] for i in escalated_ids if i in handed
                                        and i not in {h.id for h in self._hits()})]
        self.calls.append({"query": query, "live": list(live), "escalated": list(escalated_ids),
                           "result": self.tap.last, "fetched": fetched,
                           "used": out.workspace.used,
                           "delta_tokens": out.workspace.delta.tokens
                           if out.workspace.delta else None,
                           "by_category": {c.value: r.used for c, r in
                                           out.workspace.reasons.items() if r.used}})
        return out

    def _hits(self) -> list[Hit]:
        last = self.tap.last
        return [] if last is None or last.refused else list(last.hits)


# --- part 1: assembly latency ------------------------------------------------------------

def price_window(rng: random.Random, t: float) -> tuple[PricePoint, ...]:
    """Eleven feed answers over ten minutes, drifting in one of the four regimes' ways."""
    drift, vol = rng.choice([(0.0, 0.001), (0.002, 0.002), (0.0, 0.012), (-0.008, 0.004)])
    price, points = 2000.0 * rng.uniform(0.8, 1.2), []
    for j in range(11):
        points.append(PricePoint(t - 600 + 60 * j, price))
        price *= 1.0 + drift + vol * rng.gauss(0.0, 1.0)
    return tuple(points)


def live_items(prices: tuple[PricePoint, ...], escalated: int) -> list[LiveItem]:
    """Theta's ``_live`` items, same texts (the cage as the simulated market's)."""
    snapshot = (f"Price feed {FEED}: latest answer {prices[-1].price:g}; "
                f"{move_phrase(prices)}; {escalated} escalated "
                "event(s) this tick. Positions: none.")
    cage = ("Policy cage: 7 allowlisted contracts, assets none, at most $1,000 per action "
            "and $5,000 per position, drawdown limit 20%, no unlimited approvals.")
    return [
        LiveItem("invariants/cage", Category.INVARIANTS, cage, importance=1.0),
        LiveItem("defi_snapshot", Category.DEFI_SNAPSHOT, snapshot),
        LiveItem("mortality", Category.MORTALITY,
                 "Vitality: not built yet (taken as 1.0); phase stable."),
        LiveItem("affect", Category.AFFECT, "Affect: neutral (PAD 0, 0, 0; not built yet)."),
        LiveItem("tool_state", Category.TOOL_STATE, "Tools: query_grimoire, working_memory_note."),
        LiveItem("owner_control", Category.OWNER_CONTROL, "Owner instructions: none."),
        LiveItem("strategy", Category.STRATEGY, f"Strategy: {STRATEGY}"),
    ]


def candidates_of(call: dict[str, Any], policy: ContextPolicy) -> list[Candidate]:
    """The candidates ContextGovernor.assemble built for a call (same rules, same order)."""
    result = call["result"]
    hits: list[Hit] = [] if result.refused else list(result.hits)
    if not result.refused:
        hits += [h for h in result.anti_knowledge if h.id not in {x.id for x in hits}]
    escalated = set(call["escalated"])
    out = [hit_candidate(h, 1.0, h.id in escalated) for h in hits
           if h.similarity >= policy.retrieval.similarity_threshold
           or h.id in escalated or h.is_anti_knowledge]
    for episode in call["fetched"]:  # the Governor fetched only those not among the hits
        out.append(Candidate(id=episode.id, category=Category.EPISODES,
                             source=f"grimoire://main/episode/{episode.id}",
                             text=episode.text, untrusted=True, score=1.0))
    return out + [live_candidate(item, 1.0) for item in call["live"]]


class AssemblySamples:
    """One kind of query's measurements, and the governor that answered it (its own, so
    workspace deltas are between its own assemblies)."""

    def __init__(self, grimoire: Grimoire) -> None:
        self.governor = TappedGovernor(grimoire, parse_config("").theta_context.total_budget)
        self.totals: list[float] = []
        self.recall_s: list[float] = []
        self.get_s: list[float] = []
        self.pure_s: list[float] = []
        self.build_s: list[float] = []
        self.stats: dict[str, list[float]] = {"candidates": [], "used": [], "pressure": [],
                                              "compacted": [], "hits": [], "refused": []}

    async def call(self, policy: ContextPolicy, query: str, prices: tuple[PricePoint, ...],
                   escalated: dict[str, Episode], *, keep: bool) -> None:
        governor = self.governor
        t0 = time.perf_counter()
        out = await governor.assemble(policy, query=query,
                                      live=live_items(prices, 1), escalated_ids=list(escalated),
                                      phase=Phase.STABLE, regime=market_regime(prices),
                                      escalated_episodes=escalated)
        total = time.perf_counter() - t0
        call = governor.calls[-1]
        t1 = time.perf_counter()
        cands = candidates_of(call, policy)
        t2 = time.perf_counter()
        allocations = policy.effective(phase=Phase.STABLE, regime=market_regime(prices))
        settings = AssemblySettings.from_retrieval(policy.retrieval)
        reps = 5
        t3 = time.perf_counter()
        for _ in range(reps):
            assemble(cands, allocations, governor.total_budget, settings, governor.previous)
        t4 = time.perf_counter()
        if not keep:
            return
        self.totals.append(total)
        self.recall_s.append(governor.tap.recall_s)
        self.get_s.append(governor.tap.get_s)
        self.build_s.append(t2 - t1)
        self.pure_s.append((t4 - t3) / reps)
        ws = out.workspace
        result = call["result"]
        self.stats["candidates"].append(len(cands))
        self.stats["hits"].append(0 if result.refused else len(result.hits))
        self.stats["refused"].append(float(result.refused))
        self.stats["used"].append(ws.used)
        self.stats["pressure"].append(ws.pressure)
        self.stats["compacted"].append(float(ws.compacted))

    def report(self, target_ms: float | None) -> dict[str, Any]:
        total_arr = np.asarray(self.totals)
        recall_arr = np.asarray(self.recall_s) + np.asarray(self.get_s)
        p95 = float(np.percentile(total_arr, 95)) * 1000
        stats = self.stats
        return {
            "queries": len(self.totals), "governor_assemble": summary(self.totals),
            **({"target_p95_ms": target_ms, "target_met": p95 <= target_ms}
               if target_ms is not None else {}),
            "recall": summary(self.recall_s), "escalated_fetch": summary(self.get_s),
            "recall_plus_fetch_share_of_total": round(float(recall_arr.sum()
                                                            / total_arr.sum()), 3),
            "pure_assembly": summary(self.pure_s),
            "pure_assembly_share_of_total": round(float(np.sum(self.pure_s)
                                                        / total_arr.sum()), 4),
            "scoring_candidates_rebuilt": summary(self.build_s),
            "rest_of_governor_ms_mean": round(float(np.mean(
                total_arr - recall_arr - np.asarray(self.pure_s))) * 1000, 2),
            "recall_hits_mean": round(float(np.mean(stats["hits"])), 1),
            "refused_share": round(float(np.mean(stats["refused"])), 3),
            "candidates_mean": round(float(np.mean(stats["candidates"])), 1),
            "workspace_used_tokens_p50": float(np.percentile(stats["used"], 50)),
            "workspace_pressure_p50": round(float(np.percentile(stats["pressure"], 50)), 3),
            "compacted_share": round(float(np.mean(stats["compacted"])), 3),
        }


async def measure_assembly(grimoire: Grimoire, episodes: dict[str, Episode],
                           queries: int) -> dict[str, Any]:
    """Each call escalates one stored episode, handed in as Gamma hands Theta its
    escalations (so no store read: ``escalated_fetch`` stays 0). Theta's queries name the
    kind of market, so they repeat and their vectors come from the embedder's cache. Each
    step also makes a cold call: the same query plus the step's number, so it is embedded.
    The two alternate in order (the second of a pair finds LanceDB's caches warmer)."""
    episode_ids = list(episodes)
    policy = ContextPolicy()
    theta, cold = AssemblySamples(grimoire), AssemblySamples(grimoire)
    rng = random.Random(5)
    for i in range(queries + 5):
        prices = price_window(rng, 1e9 + 60 * i)
        chosen = rng.choice(episode_ids)
        query = ThetaCycle._query(FEED, prices)
        pair = [(theta, query), (cold, f"{query} (step {i})")]
        for samples, text in pair if i % 2 else pair[::-1]:
            await samples.call(policy, text, prices, {chosen: episodes[chosen]}, keep=i >= 5)
    return {**theta.report(target_ms=50.0), "cold_query": cold.report(target_ms=None)}


# --- part 2: cache share and tokens per decision -----------------------------------------

class RecordingCache(PromptCache):
    """The server's emulated cache, keeping every usage it reports."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.usages: list[dict[str, Any]] = []

    def usage(self, body: dict[str, Any]) -> dict[str, Any]:
        out = super().usage(body)
        self.usages.append(out)
        return out


class Escalator:
    """Gamma's stand-in stimulus: one very curious escalation of a stored episode per tick."""

    name = "bench-escalator"

    def __init__(self, ids: list[str]) -> None:
        self.capture: GammaCapture | None = None
        self.ids, self.rng = ids, random.Random(9)

    async def __call__(self, ctx: TickContext) -> TickCounters | None:
        assert self.capture is not None
        self.capture.to_theta.escalate([Escalation(self.rng.choice(self.ids), 0.95, "bench")])
        return None


def naive_request(call: dict[str, Any], tools: list[Any], model: str) -> dict[str, Any]:
    """Everything recalled, in full, with the live state: no budget, no cache_control."""
    result = call["result"]
    hits = [] if result.refused else list(result.hits)
    hits += [h for h in result.anti_knowledge if h.id not in {x.id for x in hits}]
    seen = {h.id for h in hits}
    lines = [f"- [{h.uri}] {h.text}" for h in hits]
    lines += [f"- [grimoire://main/episode/{e.id}] {e.text}" for e in call["fetched"]
              if e.id not in seen]
    live = [f"- [state://{i.key}] {i.text}" for i in call["live"]]
    text = lambda t: {"type": "text", "text": t}  # noqa: E731
    return {"model": model, "max_tokens": 4096, "tools": tools,
            "system": [text(f"{IDENTITY}\n\n{SCHEMA_INSTRUCTIONS}"),
                       text(f"# Strategy\n{STRATEGY}")],
            "messages": [{"role": "user", "content": [
                text("# Memory (everything recalled)\n" + "\n".join(lines)),
                text("# Live state\n" + "\n".join(live)),
                text(f"# Situation\n{call['query']}"), text(ANSWER_REQUEST)]}]}


def tokens(body: dict[str, Any]) -> int:
    return sum(approx_tokens(t) for t, _ in prompt_elements(body))


TAIL_STARTS = ("Reminder, invariants", "# Situation", ANSWER_REQUEST)


def where_tokens_go(body: dict[str, Any]) -> dict[str, int]:
    """Tokens by part: tools, system, the frame (up to its breakpoint), the delta after
    it (P-frames), the tail (echo, situation, request), and tool-round messages."""
    out: dict[str, int] = {}
    part = "user_frame"
    for text, ttl in prompt_elements(body):
        tag, *rest, block = json.loads(text)
        if tag in ("tool", "system"):
            key = {"tool": "tools", "system": "system"}[tag]
        elif rest[0] > 0:
            key = "tool_rounds"
        else:
            if part != "user_frame" and block.get("text", "").startswith(TAIL_STARTS):
                part = "user_tail"
            key = part
            if ttl is not None:  # the frame's breakpoint: the delta follows
                part = "user_delta"
        out[key] = out.get(key, 0) + approx_tokens(text)
    return out


def run_daemon(data_dir: Path, ticks: int, episode_ids: list[str]) -> dict[str, Any]:
    key_file = data_dir.parent / "anthropic.key"
    key_file.write_text(KEY)
    key_file.chmod(0o600)
    escalator = Escalator(episode_ids)
    clock: list[Any] = [time.monotonic]
    governors: list[TappedGovernor] = []

    async def wired(ctx: SetupContext, stack: AsyncExitStack) -> None:
        clock[0] = ctx.clock.now
        await setup(ctx, stack)
        capture = ctx.registry.for_loop("gamma")[0]
        assert isinstance(capture, GammaCapture)
        escalator.capture = capture
        ctx.registry.register("gamma", escalator)
        theta = ctx.registry.for_loop("theta")[0]
        assert isinstance(theta, ThetaCycle)
        gov = TappedGovernor(theta.grimoire_governor.grimoire,
                             theta.grimoire_governor.total_budget)
        theta.grimoire_governor = gov
        governors.append(gov)

    with MessagesServer(default_text=json.dumps(DECISION),
                        clock=lambda: float(clock[0]())) as api:
        api.cache = RecordingCache(api.cache.clock, api.cache.min_tokens)
        path = data_dir.parent / "golem.toml"
        path.write_text("\n".join([
            "[golem]", 'name = "main"', f'data_dir = "{data_dir}"', "seed = 5", "",
            "[grimoire]", f'model_dir = "{MODEL_DIR}"', "",
            "[logging]", 'format = "json"', 'level = "warning"', "",
            "[gamma]", "interval_s = 60.0", "deadline_s = 60.0", "backoff_max_s = 120.0", "",
            "[cognition]", 'provider = "anthropic"', f'base_url = "{api.url}"',
            f'api_key_file = "{key_file}"', "timeout_s = 10", "daily_cap_usd = 1000.0",
            "lifetime_cap_usd = 10000.0", ""]))
        config = load_config(path)
        daemon = Daemon(config, HandlerRegistry(), stop_after=ticks * 60.0, setup=wired)
        configure_logging("warning", "json", io.StringIO())
        started = time.perf_counter()
        assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
        wall = time.perf_counter() - started
        requests = list(api.requests)
        usages = list(api.cache.usages)
        min_tokens = api.cache.min_tokens
    report = token_report(requests, usages, journal_rows(config.data_dir), governors[0])
    theta = daemon.loops[1].counters
    return {"theta_ticks": theta.ticks, "theta_ok": theta.ok, "wall_s": round(wall, 1),
            "min_cache_tokens": min_tokens, **report}


def journal_rows(data_dir: Path) -> list[tuple[int, str, str, str]]:
    """(tick, provider, status, frame kind/why) per decision."""
    conn = sqlite3.connect(data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        rows = conn.execute("SELECT tick, provider, status, record FROM decisions "
                            "ORDER BY tick").fetchall()
    finally:
        conn.close()
    out = []
    for tick, provider, status, record in rows:
        frame = json.loads(record).get("frame") or {}
        out.append((tick, provider, status, f"{frame.get('kind')}/{frame.get('why')}"))
    return out


def token_report(requests: list[Any], usages: list[dict[str, Any]],
                 rows: list[tuple[int, str, str, str]], gov: TappedGovernor) -> dict[str, Any]:
    cfg = CognitionSection()
    model_ticks = [t for t, p, *_ in rows if p == "anthropic"]
    frames = [f for _, p, _, f in rows if p == "anthropic"]
    sums = {k: sum(u[k] for u in usages) for k in
            ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
    ours_total = sum(sums.values())
    tools = requests[0].body.get("tools", []) if requests else []
    model = requests[0].body["model"] if requests else cfg.model_t2
    naive = [tokens(naive_request(gov.calls[t - 1], tools, model)) for t in model_ticks]
    per_request = [u["input_tokens"] + u["cache_read_input_tokens"]
                   + u["cache_creation_input_tokens"] for u in usages]
    price = cfg.prices_t2  # USD per million: input, output, cache read, cache write
    ours_usd = (sums["input_tokens"] * price[0] + sums["cache_read_input_tokens"] * price[2]
                + sums["cache_creation_input_tokens"] * price[3]) / 1e6
    naive_usd = sum(naive) * price[0] / 1e6
    split = [where_tokens_go(r.body) for r in requests]
    layers = layer_churn(requests)
    decisions = max(1, len(model_ticks))
    return {
        "model_decisions": len(model_ticks), "requests": len(requests),
        "statuses": {s: sum(1 for _, _, x, _ in rows if x == s)
                     for s in {x for _, _, x, _ in rows}},
        "frames_of_model_decisions": {f: frames.count(f) for f in sorted(set(frames))},
        "usage_sums": sums,
        "cache_read_share": round(sums["cache_read_input_tokens"] / max(1, ours_total), 4),
        "target_cache_read_share": 0.6,
        "target_met": sums["cache_read_input_tokens"] / max(1, ours_total) >= 0.6,
        "requests_reading_cache": sum(u["cache_read_input_tokens"] > 0 for u in usages),
        "requests_writing_cache": sum(u["cache_creation_input_tokens"] > 0 for u in usages),
        "ours_input_tokens_per_decision": round(ours_total / decisions, 1),
        "ours_input_tokens_per_request": summary_tokens(per_request),
        "ours_uncached_tokens_per_decision": round(
            (sums["input_tokens"] + sums["cache_creation_input_tokens"]) / decisions, 1),
        "naive_input_tokens_per_decision": round(float(np.mean(naive)), 1) if naive else None,
        "naive_tokens": summary_tokens(naive),
        "ours_over_naive_tokens": round(ours_total / max(1, sum(naive)), 3),
        "input_usd_per_decision_ours": round(ours_usd / decisions, 5),
        "input_usd_per_decision_naive": round(naive_usd / decisions, 5),
        "ours_over_naive_input_usd": round(ours_usd / max(1e-12, naive_usd), 3),
        "where_tokens_go_mean": {k: round(float(np.mean([s.get(k, 0) for s in split])), 1)
                                 for k in ("tools", "system", "user_frame", "user_delta",
                                           "user_tail", "tool_rounds")},
        "system_layers": layers,
        "recall_hits_mean": round(float(np.mean([
            0 if c["result"].refused else len(c["result"].hits) for c in gov.calls])), 1),
        "workspace_used_mean": round(float(np.mean([c["used"] for c in gov.calls])), 1),
        "workspace_delta_tokens_mean": round(float(np.mean([
            c["delta_tokens"] for c in gov.calls if c["delta_tokens"] is not None] or [0])), 1),
        "workspace_tokens_by_category_mean": {
            cat.value: round(float(np.mean([c["by_category"].get(cat.value, 0)
                                            for c in gov.calls])), 1) for cat in Category},
    }


def layer_churn(requests: Sequence[Any]) -> list[dict[str, Any]]:
    """Per system block position: its cumulative prefix size (tools + system up to and
    including it), whether it is a breakpoint, and how often it differs from the
    previous request's block (a changed block uncaches everything after it)."""
    bodies = [r.body for r in requests]
    out = []
    tools = sum(approx_tokens(json.dumps(t)) for t in (bodies[0].get("tools") or [])) \
        if bodies else 0
    width = max((len(b["system"]) for b in bodies), default=0)
    for i in range(width):
        texts = [b["system"][i]["text"] if i < len(b["system"]) else None for b in bodies]
        prefix = [tools + sum(approx_tokens(x["text"]) for x in b["system"][:i + 1])
                  for b in bodies if i < len(b["system"])]
        out.append({"block": i, "title": (texts[0] or "").split("\n")[0][:40],
                    "breakpoint_share": round(float(np.mean([
                        "cache_control" in b["system"][i] for b in bodies
                        if i < len(b["system"])])), 3),
                    "prefix_tokens_p50": float(np.percentile(prefix, 50)),
                    "changed_vs_previous": sum(a != b for a, b in itertools.pairwise(texts))})
    return out


def summary_tokens(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    arr = np.asarray(values, dtype=float)
    return {"p50": float(np.percentile(arr, 50)), "p95": float(np.percentile(arr, 95)),
            "mean": round(float(arr.mean()), 1)}


def store_shape(grimoire: Grimoire) -> dict[str, Any]:
    """The episode store's physical state, as a fold sees it (rows no index holds yet,
    deleted rows still in their files, index segments)."""
    import lance  # noqa: PLC0415 - pylance, as the store's fold uses it

    directory = grimoire.data_dir / EPISODES_DIR
    meta = layout.read_meta(directory)
    assert meta is not None, f"{directory} has no live table"
    dataset = lance.dataset(str(layout.table_dir(directory, meta.table)))
    fragments = dataset.get_fragments()
    indices = {i.name: i for i in dataset.describe_indices()}
    physical = sum(f.metadata.physical_rows for f in fragments)

    def outside(name: str) -> int:
        """Live rows in fragments the index ``name`` does not cover."""
        index = indices.get(name)
        covered = {int(f) for seg in (index.segments if index else [])
                   for f in seg.fragment_ids}
        return sum(f.count_rows() for f in fragments if f.fragment_id not in covered)

    return {"rows": dataset.count_rows(), "fragments": len(fragments),
            "rows_deleted_in_files": physical - dataset.count_rows(),
            "rows_in_no_text_index": outside(layout.TEXT_INDEX),
            "rows_in_no_vector_index": outside(layout.VECTOR_INDEX),
            "index_segments": {name: len(i.segments) for name, i in indices.items()
                               if name in (layout.TEXT_INDEX, layout.VECTOR_INDEX)}}


def golem_store(config_path: Path, queries: int) -> dict[str, Any]:
    """Part 1 on a copy of a golem's memory, as found and after the store's own fold."""
    config = load_config(config_path)
    source = config.data_dir
    if not (source / EPISODES_DIR).is_dir() or not (source / SEMANTIC_FILE).is_file():
        raise SystemExit(f"--golem: {source} holds no golem memory ({EPISODES_DIR}/ and "
                         f"{SEMANTIC_FILE}); run the golem first")
    result: dict[str, Any] = {"benchmark": "governor", "machine": machine(),
                              "golem_data_dir": str(source), "namespace": config.golem.name}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir(mode=0o700)
        shutil.copytree(source / EPISODES_DIR, data_dir / EPISODES_DIR)
        shutil.copy2(source / SEMANTIC_FILE, data_dir / SEMANTIC_FILE)
        copied = dataclasses.replace(config, golem=dataclasses.replace(config.golem,
                                                                       data_dir=data_dir))

        async def run() -> dict[str, Any]:
            clock = [0.0]
            grimoire = await Grimoire.open(copied, now=lambda: clock[0], embedder=embedder())
            try:
                snap = await grimoire.retention_snapshot(until=lambda _total: 1e15,
                                                         limit=2**31 - 1, fact_statuses=())
                if not snap.episodes:
                    raise SystemExit(f"--golem: {source} holds no episodes")
                clock[0] = max(e.observed_at for e in snap.episodes) + 60.0
                newest = [e.id for e in snap.episodes[-500:]]
                episodes = {e.id: e for e in await grimoire.episodes_by_ids(newest)}
                out: dict[str, Any] = {"as_found": {"store": store_shape(grimoire)}}
                out["as_found"]["assembly"] = await measure_assembly(grimoire, episodes,
                                                                     queries)
                await grimoire.optimize()
                out["after_fold"] = {"store": store_shape(grimoire)}
                out["after_fold"]["assembly"] = await measure_assembly(grimoire, episodes,
                                                                       queries)
                return out
            finally:
                await grimoire.close()

        result.update(anyio.run(run, backend_options={"use_uvloop": True}))
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--golem", type=Path, metavar="CONFIG",
                        help="part 1 on a copy of this golem's memory (its bardo.toml)")
    parser.add_argument("--quick", action="store_true",
                        help="10k episodes, 1k entries, 50 queries, 20 Theta ticks")
    parser.add_argument("--episodes", type=int)
    parser.add_argument("--entries", type=int)
    parser.add_argument("--queries", type=int)
    parser.add_argument("--ticks", type=int)
    args = parser.parse_args()
    configure_logging("warning", "json", sys.stderr)  # stdout carries the JSON report
    if args.golem is not None:
        print(json.dumps(golem_store(args.golem, args.queries or 200)))
        return 0
    n = args.episodes or (10_000 if args.quick else 100_000)
    n_entries = args.entries or (1000 if args.quick else ENTRIES)
    queries = args.queries or (50 if args.quick else 200)
    ticks = args.ticks or (20 if args.quick else 200)
    result: dict[str, Any] = {"benchmark": "governor", "machine": machine(),
                              "episodes": n, "semantic_entries": n_entries}
    mine = {e.id: e for e in synthetic_episodes(n, other_every=10) if e.namespace == "main"}
    all_ids = list(mine)
    now = 1.7e9 + 4.0 * n + 600.0  # just after the newest synthetic episode
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir(mode=0o700)
        started = time.perf_counter()
        build_store(n, data_dir / EPISODES_DIR, real=REAL_EPISODES)
        seed_semantic(data_dir / SEMANTIC_FILE, n_entries, now)
        result["build_s"] = round(time.perf_counter() - started, 1)
        grimoire = open_grimoire(data_dir, now)

        async def part1() -> dict[str, Any]:
            try:
                return await measure_assembly(grimoire, mine, queries)
            finally:
                await grimoire.close()

        result["assembly"] = anyio.run(part1, backend_options={"use_uvloop": True})
        result["tokens"] = run_daemon(data_dir, ticks, all_ids)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The one typed, frozen configuration, built from TOML.

Every section is a frozen dataclass; field metadata carries the range checks.
Loading rejects unknown keys and reports the first problem as a single line
naming the key path (``theta.interval_s: must be > 0, got -5``), so an operator
can fix a file without reading code.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import re
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from golem import config_checks
from golem.errors import ConfigError

if sys.version_info >= (3, 11):  # noqa: UP036 - tomli is the documented fallback below 3.11
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LoopName = Literal["gamma", "theta", "delta"]
LOOP_NAMES: tuple[LoopName, ...] = ("gamma", "theta", "delta")
_NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def _check(**rules: Any) -> dict[str, Any]:
    """Field metadata: gt, ge, le, lt (numbers), min_len, max_len (strings)."""
    return {"rules": rules}


@dataclass(frozen=True)
class GolemSection:
    """Identity and where the golem keeps its data."""

    name: str = field(default="golem", metadata=_check(min_len=1, max_len=64))
    data_dir: Path = Path("data")
    seed: int = field(default=42, metadata=_check(ge=0, lt=2**63))


@dataclass(frozen=True)
class ClockSection:
    """Golem time: the wall clock, or virtual time that jumps when every loop waits."""

    mode: Literal["simulated", "real"] = "simulated"
    speed: float | Literal["max"] = field(default="max", metadata=_check(gt=0, le=1e9))
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class LoopSection:
    """One tick loop: how often it ticks, how long a tick may run, how far failures back off."""

    interval_s: float = field(default=10.0, metadata=_check(gt=0, le=86400))
    deadline_s: float = field(default=30.0, metadata=_check(gt=0, le=86400))
    backoff_max_s: float = field(default=120.0, metadata=_check(ge=0, le=7 * 86400))


@dataclass(frozen=True)
class RuntimeSection:
    """Lifecycle: shutdown grace, cleanup bound, how often counters reach disk."""

    shutdown_grace_s: float = field(default=20.0, metadata=_check(gt=0, le=3600))
    cleanup_timeout_s: float = field(default=5.0, metadata=_check(gt=0, le=600))
    state_flush_interval_s: float = field(default=1.0, metadata=_check(gt=0, le=3600))
    # Stop (exit 73) when the data dir's filesystem has less than this free, before a
    # write fails half-way; checked at start and every wall second. 0: no floor.
    min_free_mb: int = field(default=64, metadata=_check(ge=0, le=1 << 20))
    # Hand the heap's free pages back to the OS this often (wall seconds) while the
    # loops run: glibc keeps what a tick freed inside its arenas. 0: never.
    heap_trim_interval_s: float = field(default=10.0, metadata=_check(ge=0, le=86_400))


@dataclass(frozen=True)
class LoggingSection:
    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "json", "console"] = "auto"


@dataclass(frozen=True)
class EventsSection:
    """The JSONL event log in the data dir, rotated by size."""

    max_bytes: int = field(default=64 * 1024 * 1024, metadata=_check(ge=4096, le=2**40))
    keep: int = field(default=3, metadata=_check(ge=0, le=100))


@dataclass(frozen=True)
class GrimoireSection:
    """Memory: the embedding model, retrieval weights, refusal, decay, namespaces."""

    # The local embedding model directory (assembled by scripts/setup; never downloaded).
    model_dir: Path = Path("models/all-minilm-l6-v2-int8")
    # Identity all writes and reads carry; empty means golem.name.
    namespace: str = field(default="", metadata=_check(max_len=64))
    # Other namespaces this golem may read (explicit grants; reads never cross otherwise).
    read_grants: tuple[str, ...] = ()
    # Texts per model run. One: no padding and the lowest peak RSS, for somewhat fewer
    # texts a second than a small batch.
    embed_batch_size: int = field(default=1, metadata=_check(ge=1, le=1024))
    # Which graph embeds: "int8" products (smaller), "float" ones (~2x faster on x86
    # without VNNI, ~19 MB more RSS), or "auto": an existing store's own, else by CPU.
    # The two are different vector spaces; switching a store asks for a re-embed.
    embed_compute: Literal["auto", "int8", "float"] = "auto"
    max_text_chars: int = field(default=8000, metadata=_check(ge=16, le=1_000_000))
    # Four-factor retrieval weights (seed 000); must sum to 1.
    weight_semantic: float = field(default=0.40, metadata=_check(ge=0, le=1))
    weight_temporal: float = field(default=0.20, metadata=_check(ge=0, le=1))
    weight_importance: float = field(default=0.25, metadata=_check(ge=0, le=1))
    weight_emotional: float = field(default=0.15, metadata=_check(ge=0, le=1))
    # Hard refusal: recall refuses when the best candidate's similarity is below this.
    refusal_threshold: float = field(default=0.30, metadata=_check(ge=0, le=1))
    # Anti-knowledge at least this similar to the query is always surfaced.
    anti_knowledge_relevance: float = field(default=0.30, metadata=_check(ge=0, le=1))
    anti_knowledge_floor: float = field(default=0.30, metadata=_check(ge=0, le=1))
    # Candidates taken from each dense and lexical list; after fusion the best
    # max(3k, candidates) are scored in full.
    candidates: int = field(default=30, metadata=_check(ge=1, le=10_000))
    # Recency of access/reinforcement used by the temporal factor.
    temporal_half_life_s: float = field(default=7 * 86400.0, metadata=_check(gt=0))
    # Ebbinghaus half-lives per decay class, before stability from episode_count.
    half_life_structural_s: float = field(default=365 * 86400.0, metadata=_check(gt=0))
    half_life_strategic_s: float = field(default=60 * 86400.0, metadata=_check(gt=0))
    half_life_tactical_s: float = field(default=3 * 86400.0, metadata=_check(gt=0))
    half_life_ephemeral_s: float = field(default=6 * 3600.0, metadata=_check(gt=0))
    # Entries whose decayed confidence falls below this become eviction candidates.
    eviction_threshold: float = field(default=0.10, metadata=_check(ge=0, le=1))
    # A contradicting claim against an entry this confident (or anchored) is quarantined.
    quarantine_confidence: float = field(default=0.80, metadata=_check(ge=0, le=1))
    # An episode table of at least this many rows gets an ANN index (IVF_RQ); below it
    # search is exact.
    # Exact search time grows with the rows, an indexed search's barely: the default is
    # about where the index becomes the faster of the two.
    index_min_rows: int = field(default=5_000, metadata=_check(ge=256, le=10**9))
    # LanceDB's caches, bounded (its defaults, 6 GB and 1 GB, grow RSS without limit over
    # a long run). A cache smaller than the indexes (vector ~200 bytes an episode, full
    # text ~170) re-reads index pages from the OS file cache: slower searches for a lower
    # RSS. Raise it when memory is plentiful.
    lance_index_cache_mb: int = field(default=32, metadata=_check(ge=8, le=65_536))
    lance_metadata_cache_mb: int = field(default=16, metadata=_check(ge=8, le=65_536))


@dataclass(frozen=True)
class RpcSection:
    """A JSON-RPC node (chain.mode = "rpc") and what to watch on it."""

    # http(s):// for polling with eth_getLogs, ws(s):// for eth_subscribe.
    url: str = ""
    # The chain the node must be on (0: accept whatever it reports).
    chain_id: int = field(default=0, metadata=_check(ge=0, lt=2**63))
    timeout_s: float = field(default=10.0, metadata=_check(gt=0, le=300))
    backoff_base_s: float = field(default=1.0, metadata=_check(gt=0, le=3600))
    backoff_max_s: float = field(default=60.0, metadata=_check(gt=0, le=86400))
    # Blocks per eth_getLogs request at most (halved while the node refuses).
    max_log_span: int = field(default=2000, metadata=_check(ge=1, le=1_000_000))
    # First block to capture; -1: the confirmed head when capture first starts.
    start_block: int = field(default=-1, metadata=_check(ge=-1))
    addresses: tuple[str, ...] = ()
    events: tuple[str, ...] = ()


@dataclass(frozen=True)
class PlantedSection:
    """A planted regularity in the simulated market's oracle (golem.chain.planted): after
    a move of at least ``drop`` over ``lookback_s``, the next ``horizon_s`` pull the price
    back by ``pull`` in regime ``revert_in`` and further along in ``continue_in``; from
    ``swap_after_s`` golem seconds after birth on (0: never) the two regimes trade
    places. Off by default: the lab's market turns it on. Part of the chain a data dir
    replays."""

    enabled: bool = False
    drop: float = field(default=0.015, metadata=_check(gt=0, le=1))
    max_drop: float = field(default=0.1, metadata=_check(gt=0, le=10))
    lookback_s: float = field(default=600.0, metadata=_check(gt=0, le=86_400))
    horizon_s: float = field(default=300.0, metadata=_check(gt=0, le=86_400))
    pull: float = field(default=0.02, metadata=_check(gt=0, le=1))
    revert_in: Literal["calm", "trending", "volatile", "crash"] = "volatile"
    continue_in: Literal["calm", "trending", "volatile", "crash"] = "calm"
    swap_after_s: float = field(default=0.0, metadata=_check(ge=0))


@dataclass(frozen=True)
class ChangesSection:
    """Facts that change mid-life in the simulated market (golem.chain.changes), each off
    (0) by default; times are golem seconds after the market's first step. The oracle
    feed is silent from ``stale_oracle_at_s`` for ``stale_oracle_for_s``; at
    ``drain_at_s`` the WETH/USDC V2 pool loses ``drain_share`` of its liquidity; HONEY
    trades normally until ``honeypot_at_s``, when its sells start to revert; at
    ``fee_change_at_s`` the WETH/USDC V2 pool's swap fee goes from 0.3% to
    ``fee_change_to`` (a fraction: 0.01 is 1%; whole basis points, 0 to 0.1). The lab's
    market turns them on. Part of the chain a data dir replays."""

    stale_oracle_at_s: float = field(default=0.0, metadata=_check(ge=0, le=1e9))
    stale_oracle_for_s: float = field(default=0.0, metadata=_check(ge=0, le=1e9))
    drain_at_s: float = field(default=0.0, metadata=_check(ge=0, le=1e9))
    drain_share: float = field(default=0.8, metadata=_check(gt=0, lt=1))
    honeypot_at_s: float = field(default=0.0, metadata=_check(ge=0, le=1e9))
    fee_change_at_s: float = field(default=0.0, metadata=_check(ge=0, le=1e9))
    fee_change_to: float = field(default=0.01, metadata=_check(ge=0, le=0.1))


@dataclass(frozen=True)
class ChainSection:
    """Where Gamma reads events: the in-process market, a node over RPC, or nowhere."""

    mode: Literal["simulated", "rpc", "off"] = "simulated"
    escalation_queue: int = field(default=256, metadata=_check(ge=1, le=100_000))
    # A block is captured once this many blocks sit on top of it.
    confirmations: int = field(default=2, metadata=_check(ge=0, le=10_000))
    # Captured headers kept to detect reorgs; a deeper reorg halts capture.
    reorg_window: int = field(default=64, metadata=_check(ge=1, le=100_000))
    # Catch-up bounds: blocks and logs captured per Gamma tick at most (whole blocks).
    max_blocks_per_tick: int = field(default=500, metadata=_check(ge=1, le=1_000_000))
    max_logs_per_tick: int = field(default=200, metadata=_check(ge=1, le=1_000_000))
    # Also capture reverted transactions to watched contracts (they emit no log); over
    # RPC this reads every captured block in full (catching up on mainnet: MBs a tick).
    capture_reverts: bool = True
    # The simulated market's activity (golem.chain.simulator.ACTIVITIES): "busy" sends
    # the actors' trades every step; "pools" on a few steps an hour. Part of the chain:
    # a data dir keeps the activity it was built with.
    market_activity: Literal["busy", "pools"] = "busy"
    # How many times longer the simulated market stays in each regime than its Markov
    # chain's own rows say (golem.chain.simulator.held_transitions): 1 is the market as
    # it always was (a regime lasts 40 s to 3 golem minutes); the lab's market holds
    # them 10 times longer. Part of the chain a data dir replays.
    regime_hold: float = field(default=1.0, metadata=_check(ge=1, le=10_000))
    # Golem seconds in which the simulated oracle's distance from its initial price
    # (in log terms) halves (golem.chain.simulator.oracle_move): crashes are followed by
    # recoveries. 0: no pull; the price then drifts down with the crashes and sits at
    # its floor (a tenth of where it started) after a few golem hours. Part of the
    # chain: data dirs made before the option hold an unpulled chain (set 0 for them).
    price_pull_half_life_s: float = field(default=1800.0, metadata=_check(ge=0, le=1e9))
    planted: PlantedSection = field(default_factory=PlantedSection)
    changes: ChangesSection = field(default_factory=ChangesSection)
    rpc: RpcSection = field(default_factory=RpcSection)


@dataclass(frozen=True)
class CageSection:
    """The policy cage every proposed action passes before it may act."""

    # Contracts actions may touch; empty: the contracts capture watches.
    allowed_contracts: tuple[str, ...] = ()
    # Assets (symbols or addresses) actions may move; empty: none.
    allowed_assets: tuple[str, ...] = ()
    max_notional_usd: float = field(default=1_000.0, metadata=_check(ge=0))
    max_position_usd: float = field(default=5_000.0, metadata=_check(ge=0))
    max_drawdown: float = field(default=0.2, metadata=_check(ge=0, le=1))
    max_approval: float = field(default=1_000_000.0, metadata=_check(ge=0))


@dataclass(frozen=True)
class ThetaContextSection:
    """The Context Governor's budget and learning schedule."""

    # Soft token budget of one assembled workspace (estimated at 4 characters a token).
    total_budget: int = field(default=8_000, metadata=_check(ge=500, le=1_000_000))
    # Loop 2 (policy learning) runs every this many Theta ticks, and on a regime change.
    loop2_every: int = field(default=50, metadata=_check(ge=1, le=100_000))
    # Off: Theta decides without memory (no recall, no PLAYBOOK.md, no MEMORY.md, no scratch
    # notes; this tick's live state and Gamma's escalated events only). The lab's
    # `no-memory` arm; memory is still written and consolidated.
    memory: bool = True


@dataclass(frozen=True)
class CognitionSection:
    """Which cognitive tier decides, and the bounds on every model call."""

    # "offline": the deterministic reasoner (no key, no network); "anthropic": the
    # Messages API, with the key read from api_key_file or the systemd credential
    # "anthropic_api_key" (never from this file or the environment).
    provider: Literal["offline", "anthropic"] = "offline"
    base_url: str = ""
    api_key_file: str = ""
    model_t1: str = "claude-haiku-4-5"
    model_t2: str = "claude-sonnet-5"
    max_tokens_t1: int = field(default=1024, metadata=_check(ge=1, le=64_000))
    max_tokens_t2: int = field(default=4096, metadata=_check(ge=1, le=64_000))
    # USD per million tokens: input, output, cache read, cache write.
    prices_t1: tuple[float, ...] = (1.0, 5.0, 0.1, 1.25)
    prices_t2: tuple[float, ...] = (3.0, 15.0, 0.3, 3.75)
    timeout_s: float = field(default=30.0, metadata=_check(gt=0, le=600))
    max_attempts: int = field(default=3, metadata=_check(ge=1, le=10))
    daily_cap_usd: float = field(default=2.0, metadata=_check(ge=0))
    lifetime_cap_usd: float = field(default=50.0, metadata=_check(ge=0))
    max_tool_rounds: int = field(default=3, metadata=_check(ge=0, le=10))
    # Escalated events at least this curious call the strong tier (T2).
    t2_curiosity: float = field(default=0.8, metadata=_check(ge=0, le=1))


@dataclass(frozen=True)
class ConsolidationSection:
    """Delta's slow learning: consolidation, the curator, dreams, the MEMORY.md rewrite."""

    # Every Delta tick consolidates; off leaves only store maintenance.
    enabled: bool = True
    # Share of each replay drawn from new episodes (the rest: older ones by utility).
    recent_share: float = field(default=0.7, metadata=_check(ge=0, le=1))
    # Episodes replayed per run at most.
    replay_budget: int = field(default=2_000, metadata=_check(ge=1, le=1_000_000))
    # The curator cycle runs every this many Delta ticks.
    curator_every: int = field(default=50, metadata=_check(ge=1, le=100_000))
    # A dream cycle every this many Delta ticks, or after idle_dream_every when idle.
    dream_every: int = field(default=12, metadata=_check(ge=1, le=100_000))
    idle_dream_every: int = field(default=3, metadata=_check(ge=1, le=100_000))
    # Loop 3: counterfactual context experiments that stage policy mutations.
    loop3: bool = True
    # Rewrite MEMORY.md after each dream (deterministic synthesis offline).
    memory_rewrite: bool = True
    # Decisions scored at least this well count as a useful recall of what they cited.
    useful_quality: float = field(default=0.5, metadata=_check(ge=0, le=1))
    # Off: nothing is forgotten (no confidence decay or eviction of entries, no curator
    # archive or prune, no episode retention). Memory grows without bound; the lab's
    # no-forgetting arm.
    forgetting: bool = True
    # On (with forgetting on): each pass that forgets keeps its count but draws what it
    # forgets at random (entries for decay and the curator, scanned episodes for
    # retention), seeded by golem.seed: memory of the size the golem's own forgetting
    # keeps, chosen blindly. The lab's random-eviction arm.
    forget_at_random: bool = False
    # Forgetting episodes (consolidated ones only; what facts rest on is kept): older
    # than episode_horizon_days go, reverts and action outcomes after
    # failure_horizon_days, salient or cited ones after salient_horizon_days; past
    # max_episodes the least useful consolidated ones go first: protected ones past
    # protected_share of the cap (never a live fact's evidence), then unprotected ones.
    # Past the cap they go down to 90% of it (retention.RetentionParams.low_water), so
    # the next full scan waits until the store is full again. Every retention_every
    # Delta ticks, at most retention_max_per_run at a time (above a tenth of
    # max_episodes, or every check past the cap scans every episode).
    episode_horizon_days: float = field(default=14.0, metadata=_check(gt=0, le=36_500))
    failure_horizon_days: float = field(default=60.0, metadata=_check(gt=0, le=36_500))
    salient_horizon_days: float = field(default=90.0, metadata=_check(gt=0, le=36_500))
    max_episodes: int = field(default=100_000, metadata=_check(ge=1_000, le=10**9))
    protected_share: float = field(default=0.5, metadata=_check(ge=0, le=1))
    retention_every: int = field(default=6, metadata=_check(ge=1, le=100_000))
    retention_max_per_run: int = field(default=20_000, metadata=_check(ge=1, le=10**7))
    # With cognition.provider = "anthropic": the cheap tier summarises clusters into
    # staged insights, tidies recent entries, writes MEMORY.md and judges Loop 3
    # counterfactuals, each run bounded by model_max_run_usd (and the spend caps).
    model_assist: bool = True
    model_max_run_usd: float = field(default=0.05, metadata=_check(ge=0, le=100))
    # Store maintenance: compaction every N Delta ticks, old LanceDB versions kept this
    # many wall seconds (for readers in other processes) but never more than
    # version_retention_max of them (at simulated max speed a golem commits about two a
    # second, and each old version can hold files), and a warning past disk_cap_mb.
    optimize_every: int = field(default=144, metadata=_check(ge=1, le=100_000))
    version_retention_s: float = field(default=600.0, metadata=_check(ge=0))
    version_retention_max: int = field(default=100, metadata=_check(ge=1))
    disk_cap_mb: int = field(default=2_048, metadata=_check(ge=0))


@dataclass(frozen=True)
class MortalitySection:
    """Vitality (economic x epistemic x stochastic), phases and the death protocol."""

    # Vitality is computed every Delta tick; off: the golem is immortal (and says so).
    enabled: bool = True
    # The budget the golem was given (USD): economic vitality is equity above the death
    # reserve relative to this. In simulated mode the wallet is funded with it.
    starting_budget_usd: float = field(default=100.0, metadata=_check(gt=0, le=1e12))
    # Death reserve: max(reserve_floor_usd, reserve_fraction x starting budget),
    # ring-fenced for the death protocol.
    reserve_floor_usd: float = field(default=0.30, metadata=_check(ge=0))
    reserve_fraction: float = field(default=0.02, metadata=_check(ge=0, le=0.5))
    # Epistemic: predictive fitness, the share of the predictions that differed from a
    # no-knowledge reference (the tape's no-change outlook) in which the golem scored the
    # better Brier, over its last epistemic_window such predictions whose horizons do
    # not overlap (at least epistemic_min_samples); below senescence_threshold it is
    # dying of staleness.
    epistemic_window: int = field(default=100, metadata=_check(ge=1, le=100_000))
    epistemic_min_samples: int = field(default=10, metadata=_check(ge=1, le=100_000))
    senescence_threshold: float = field(default=0.35, metadata=_check(ge=0, le=1))
    # Stochastic: the Hayflick ratio (golem age / lifespan_days) and a seeded hazard:
    # each Delta tick a shock arrives with probability hazard_per_day scaled to the
    # tick, taking hazard_shock off the stochastic component.
    lifespan_days: float = field(default=30.0, metadata=_check(gt=0, le=36_500))
    hazard_per_day: float = field(default=0.02, metadata=_check(ge=0, le=1))
    hazard_shock: float = field(default=0.1, metadata=_check(ge=0, le=1))
    # Where the death notification goes (http(s)://); empty: logged only.
    webhook_url: str = ""
    webhook_timeout_s: float = field(default=5.0, metadata=_check(gt=0, le=120))
    # Testament: semantic facts at or above this confidence cross (anti-knowledge always).
    testament_min_confidence: float = field(default=0.5, metadata=_check(ge=0, le=1))
    testament_max_entries: int = field(default=2048, metadata=_check(ge=1, le=2048))


@dataclass(frozen=True)
class ActionsSection:
    """Acting on chain: the wallet and the execution of accepted decisions."""

    # Execute accepted actions; off: decisions are recorded, nothing is signed.
    enabled: bool = True
    # "auto": false in simulated mode, true otherwise (nothing is sent, every action is
    # logged as a dry run). Set false explicitly to sign and send over RPC.
    dry_run: bool | Literal["auto"] = "auto"
    # The wallet key: a file with mode 0600 holding a 0x-hex private key, or the systemd
    # credential "golem_wallet_key". Empty in simulated mode: a key is created in
    # <data_dir>/wallet/key (0600). Never put a key in this file.
    key_file: str = ""
    # RPC mode: the venues to act on, a JSON file in Market.to_dict() form (relative to
    # this file). Empty: no executor over RPC, accepted actions are recorded only.
    market_file: str = ""
    # Refuse a swap whose quote moves more than this against us.
    max_slippage: float = field(default=0.01, metadata=_check(ge=0, le=0.5))
    gas_limit: int = field(default=500_000, metadata=_check(ge=21_000, le=30_000_000))


@dataclass(frozen=True)
class SuccessionSection:
    """Booting from a predecessor's testament, and the local vault (Styx L0)."""

    # A testament file to inherit from (same as `golem run --inherit PATH`).
    inherit: str = ""
    # Local vault: testaments and Grimoire snapshots exported to this directory.
    # Off by default: nothing leaves the data dir unless configured.
    vault_enabled: bool = False
    vault_dir: str = ""
    # Early Delta ticks replay inherited knowledge against the golem's own observations.
    inherited_replay_ticks: int = field(default=12, metadata=_check(ge=0, le=100_000))


@dataclass(frozen=True)
class ApiSection:
    """The operator's HTTP surface (health, metrics, the memory API, the dashboard).

    Off by default: the default configuration opens no socket. When on, it binds
    loopback unless told otherwise, and every route but /healthz needs the bearer token.
    """

    enabled: bool = False
    host: str = field(default="127.0.0.1", metadata=_check(min_len=1, max_len=255))
    port: int = field(default=8421, metadata=_check(ge=1, le=65535))
    # The bearer token: a file with mode 0600 holding one line (relative to this file),
    # or, when empty, the systemd credential "golem_api_token". Never put a token here.
    token_file: str = ""
    # Request limits: a larger body or query string is refused (413 / 414) unread.
    max_body_bytes: int = field(default=65_536, metadata=_check(ge=1024, le=16 << 20))
    max_query_bytes: int = field(default=2_048, metadata=_check(ge=64, le=65_536))
    # Memory API calls let through to the Grimoire at once (the rest wait in the API), so
    # the golem's own store calls never queue behind a burst of the operator's.
    memory_concurrency: int = field(default=1, metadata=_check(ge=1, le=64))


def _gamma() -> LoopSection:
    return LoopSection(interval_s=10.0, deadline_s=30.0, backoff_max_s=120.0)


def _theta() -> LoopSection:
    return LoopSection(interval_s=60.0, deadline_s=180.0, backoff_max_s=600.0)


def _delta() -> LoopSection:
    return LoopSection(interval_s=600.0, deadline_s=1800.0, backoff_max_s=3600.0)


@dataclass(frozen=True)
class Config:
    """The whole configuration. ``source`` is the file it came from, if any."""

    golem: GolemSection = field(default_factory=GolemSection)
    clock: ClockSection = field(default_factory=ClockSection)
    gamma: LoopSection = field(default_factory=_gamma)
    theta: LoopSection = field(default_factory=_theta)
    delta: LoopSection = field(default_factory=_delta)
    runtime: RuntimeSection = field(default_factory=RuntimeSection)
    logging: LoggingSection = field(default_factory=LoggingSection)
    events: EventsSection = field(default_factory=EventsSection)
    grimoire: GrimoireSection = field(default_factory=GrimoireSection)
    chain: ChainSection = field(default_factory=ChainSection)
    cage: CageSection = field(default_factory=CageSection)
    theta_context: ThetaContextSection = field(default_factory=ThetaContextSection)
    cognition: CognitionSection = field(default_factory=CognitionSection)
    consolidation: ConsolidationSection = field(default_factory=ConsolidationSection)
    mortality: MortalitySection = field(default_factory=MortalitySection)
    actions: ActionsSection = field(default_factory=ActionsSection)
    succession: SuccessionSection = field(default_factory=SuccessionSection)
    api: ApiSection = field(default_factory=ApiSection)
    source: Path | None = field(default=None, metadata={"internal": True})

    @property
    def data_dir(self) -> Path:
        return self.golem.data_dir

    @property
    def dry_run(self) -> bool:
        """Whether actions are only logged: "auto" means everywhere but the simulated chain."""
        value = self.actions.dry_run
        return self.chain.mode != "simulated" if value == "auto" else bool(value)

    def loop(self, name: LoopName) -> LoopSection:
        section: LoopSection = getattr(self, name)
        return section


def load_config(path: Path) -> Config:
    """Read, parse and validate a config file; relative paths resolve against its folder."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    return parse_config(text, source=path)


def parse_config(text: str, source: Path | None = None) -> Config:
    where = str(source) if source is not None else "<config>"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: invalid TOML: {exc}") from None
    cfg: Config = _build(Config, data, "")
    base = source.resolve().parent if source is not None else Path.cwd()
    data_dir = _resolve(cfg.golem.data_dir, base)
    golem = dataclasses.replace(cfg.golem, data_dir=data_dir)
    grimoire = dataclasses.replace(
        cfg.grimoire, model_dir=_resolve(cfg.grimoire.model_dir, base),
        namespace=cfg.grimoire.namespace or cfg.golem.name)
    actions = dataclasses.replace(cfg.actions, market_file=str(
        _resolve(Path(cfg.actions.market_file), base))) if cfg.actions.market_file \
        else cfg.actions
    cfg = dataclasses.replace(cfg, golem=golem, grimoire=grimoire, actions=actions,
                              source=source)
    _cross_checks(cfg)
    return cfg


def _resolve(path: Path, base: Path) -> Path:
    path = path.expanduser()
    return path if path.is_absolute() else base / path


def _cross_checks(cfg: Config) -> None:
    g = cfg.grimoire
    total = g.weight_semantic + g.weight_temporal + g.weight_importance + g.weight_emotional
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"grimoire.weight_*: the four retrieval weights must sum to 1, "
                          f"got {total:.4g}")
    for name in g.read_grants:
        if not _NAMESPACE.fullmatch(name):
            raise ConfigError(f"grimoire.read_grants: {name!r} is not a valid namespace "
                              "(letters, digits, '-', '_', '.'; 1-64 characters)")
    if g.namespace and not _NAMESPACE.fullmatch(g.namespace):
        raise ConfigError(f"grimoire.namespace: {g.namespace!r} is not a valid namespace "
                          "(letters, digits, '-', '_', '.'; 1-64 characters)")
    if cfg.consolidation.forget_at_random and not cfg.consolidation.forgetting:
        raise ConfigError("consolidation.forget_at_random: needs consolidation.forgetting "
                          "on (it draws what each forgetting pass forgets)")
    _check_chain(cfg.chain)
    _check_cognition(cfg)
    _check_mortality(cfg)
    for name in LOOP_NAMES:
        loop = cfg.loop(name)
        if loop.backoff_max_s and loop.backoff_max_s < loop.interval_s:
            raise ConfigError(
                f"{name}.backoff_max_s: must be 0 (no backoff) or >= {name}.interval_s "
                f"({_fmt(loop.interval_s)}), got {_fmt(loop.backoff_max_s)}"
            )


def _check_cognition(cfg: Config) -> None:
    cog = cfg.cognition
    for key in ("prices_t1", "prices_t2"):
        prices = getattr(cog, key)
        if len(prices) != 4 or any(p < 0 for p in prices):
            raise ConfigError(f"cognition.{key}: must be 4 prices >= 0 (USD per million "
                              "tokens: input, output, cache read, cache write)")
    if cog.timeout_s >= cfg.theta.interval_s:
        raise ConfigError(f"cognition.timeout_s: must be below theta.interval_s "
                          f"({_fmt(cfg.theta.interval_s)}), got {_fmt(cog.timeout_s)}")
    if cog.base_url:
        problem = config_checks.url_problem(cog.base_url)
        if problem or not cog.base_url.startswith(("http://", "https://")):
            raise ConfigError(f"cognition.base_url: {problem or 'must be http(s)://'}")


def _check_mortality(cfg: Config) -> None:
    url = cfg.mortality.webhook_url
    if url and not url.startswith(("http://", "https://")):
        raise ConfigError(f"mortality.webhook_url: must be http(s)://, got {_fmt(url)}")
    if cfg.mortality.epistemic_min_samples > cfg.mortality.epistemic_window:
        raise ConfigError("mortality.epistemic_min_samples: must be <= "
                          f"mortality.epistemic_window ({cfg.mortality.epistemic_window})")
    if cfg.succession.vault_enabled and not cfg.succession.vault_dir:
        raise ConfigError("succession.vault_dir: required when succession.vault_enabled = true")


def _check_changes(changes: ChangesSection) -> None:
    if changes.stale_oracle_at_s > 0 and changes.stale_oracle_for_s <= 0:
        raise ConfigError("chain.changes.stale_oracle_for_s: must be > 0 when "
                          "chain.changes.stale_oracle_at_s is set (how long the oracle "
                          "stays silent)")
    if changes.stale_oracle_for_s > 0 and changes.stale_oracle_at_s <= 0:
        raise ConfigError("chain.changes.stale_oracle_at_s: must be > 0 when "
                          "chain.changes.stale_oracle_for_s is set (when the oracle goes "
                          "silent; 0 is never)")
    bps = changes.fee_change_to * 10_000
    if abs(bps - round(bps)) > 1e-6:
        raise ConfigError("chain.changes.fee_change_to: must be a whole number of basis "
                          f"points (a multiple of 0.0001), got {changes.fee_change_to!r}")
    if changes.fee_change_at_s > 0 and round(bps) == 30:
        raise ConfigError("chain.changes.fee_change_to: must differ from the pool's fee "
                          "(0.003) when chain.changes.fee_change_at_s is set")


def _check_chain(chain: ChainSection) -> None:
    planted = chain.planted
    if planted.enabled and planted.revert_in == planted.continue_in:
        raise ConfigError("chain.planted.continue_in: must differ from revert_in")
    if planted.enabled and planted.max_drop <= planted.drop:
        raise ConfigError("chain.planted.max_drop: must be above chain.planted.drop")
    _check_changes(chain.changes)
    rpc = chain.rpc
    if rpc.url:
        problem = config_checks.url_problem(rpc.url)
        if problem:
            raise ConfigError(f"chain.rpc.url: {problem}")
    for key, values, check in (("addresses", rpc.addresses, config_checks.address_problem),
                               ("events", rpc.events, config_checks.event_problem)):
        found = config_checks.first_problem(values, check)
        if found:
            raise ConfigError(f"chain.rpc.{key}[{found[0]}]: {found[1]}")
    if rpc.backoff_max_s < rpc.backoff_base_s:
        raise ConfigError(f"chain.rpc.backoff_max_s: must be >= chain.rpc.backoff_base_s "
                          f"({_fmt(rpc.backoff_base_s)}), got {_fmt(rpc.backoff_max_s)}")
    if chain.mode == "rpc":
        if not rpc.url:
            raise ConfigError('chain.rpc.url: required when chain.mode = "rpc" '
                              "(http(s):// or ws(s):// of a node)")
        if not rpc.addresses:
            raise ConfigError('chain.rpc.addresses: required when chain.mode = "rpc" '
                              "(the contracts whose events Gamma captures)")


class _WrongType(ConfigError):
    """The value has the wrong type (as opposed to an out-of-range value)."""


def _build(cls: type[Any], data: Mapping[str, Any], prefix: str) -> Any:
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        key = f"{prefix}{unknown[0]}"
        raise ConfigError(f"{key}: unknown key (expected one of: {', '.join(fields)})")
    values: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        hint = hints[name]
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if not isinstance(value, dict):
                raise ConfigError(f"{key}: must be a table [{key}], got {_fmt(value)}")
            values[name] = _build(hint, value, f"{key}.")
        else:
            values[name] = _coerce(hint, value, key, fields[name].metadata.get("rules", {}))
    return cls(**values)


def _coerce(hint: Any, value: Any, key: str, rules: Mapping[str, Any]) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        for option in options:
            try:
                return _coerce(option, value, key, rules)
            except _WrongType:
                continue
        expected = " or ".join(_expected(o) for o in options)
        raise _WrongType(f"{key}: must be {expected}, got {_fmt(value)}")
    if origin is tuple:
        if not isinstance(value, list):
            raise _WrongType(f"{key}: must be an array, got {_fmt(value)}")
        item = typing.get_args(hint)[0]
        return tuple(_coerce(item, v, f"{key}[{i}]", rules) for i, v in enumerate(value))
    if origin is Literal:
        if value not in typing.get_args(hint) or isinstance(value, bool):
            raise _WrongType(f"{key}: must be {_expected(hint)}, got {_fmt(value)}")
        return value
    convert = _SCALARS.get(hint)
    if convert is None:
        raise TypeError(f"config field {key} has unsupported type {hint!r}")  # a bug in this file
    return convert(value, key, rules)


def _as_bool(value: Any, key: str, rules: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise _WrongType(f"{key}: must be true or false, got {_fmt(value)}")
    return value


def _as_int(value: Any, key: str, rules: Mapping[str, Any]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _WrongType(f"{key}: must be an integer, got {_fmt(value)}")
    _range(value, key, rules)
    return value


def _as_float(value: Any, key: str, rules: Mapping[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _WrongType(f"{key}: must be a number, got {_fmt(value)}")
    if not math.isfinite(value):
        raise ConfigError(f"{key}: must be a finite number, got {_fmt(value)}")
    _range(value, key, rules)
    return float(value)


def _as_str(value: Any, key: str, rules: Mapping[str, Any]) -> str:
    if not isinstance(value, str):
        raise _WrongType(f"{key}: must be a string, got {_fmt(value)}")
    _length(value, key, rules)
    return value


def _as_path(value: Any, key: str, rules: Mapping[str, Any]) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise _WrongType(f"{key}: must be a non-empty path string, got {_fmt(value)}")
    return Path(value)


def _datetime(value: Any, key: str, rules: Mapping[str, Any]) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"{key}: must be an RFC 3339 date-time, got {_fmt(value)}") from None
    if not isinstance(value, datetime):
        raise _WrongType(f"{key}: must be an RFC 3339 date-time, got {_fmt(value)}")
    if value.tzinfo is None:
        raise ConfigError(f"{key}: must carry a UTC offset (e.g. 2026-01-01T00:00:00Z), "
                          f"got {value.isoformat()}")
    return value.astimezone(UTC)


_SCALARS: dict[Any, Any] = {bool: _as_bool, int: _as_int, float: _as_float, str: _as_str,
                            Path: _as_path, datetime: _datetime}


def _range(value: float, key: str, rules: Mapping[str, Any]) -> None:
    checks = (("gt", operator.gt, ">"), ("ge", operator.ge, ">="),
              ("lt", operator.lt, "<"), ("le", operator.le, "<="))
    for rule, ok, symbol in checks:
        if rule in rules and not ok(value, rules[rule]):
            raise ConfigError(f"{key}: must be {symbol} {_fmt(rules[rule])}, got {_fmt(value)}")


def _length(value: str, key: str, rules: Mapping[str, Any]) -> None:
    if "min_len" in rules and len(value) < rules["min_len"]:
        raise ConfigError(f"{key}: must be at least {rules['min_len']} characters, "
                          f"got {_fmt(value)}")
    if "max_len" in rules and len(value) > rules["max_len"]:
        raise ConfigError(f"{key}: must be at most {rules['max_len']} characters, "
                          f"got {len(value)}")


def _expected(hint: Any) -> str:
    if typing.get_origin(hint) is Literal:
        return "one of " + ", ".join(f'"{c}"' for c in typing.get_args(hint))
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string",
             Path: "a path string", datetime: "an RFC 3339 date-time"}
    return names.get(hint, str(hint))


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def speed_label(cfg: Config) -> str:
    speed = cfg.clock.speed
    return "max speed" if speed == "max" else f"{_fmt(speed)}x"

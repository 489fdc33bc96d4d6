"""The CognitiveWorkspace: what the Governor assembled, how, and what changed (seed 002 S2).

Plain frozen data. assembly.py builds it from scored candidates; the renderer
turns its blocks into an LLM request; Loop 1 reads its reasons. The I-frame /
P-frame helper (seed 000 "Context delta compression", seed 002 S2.2) decides
when the next request must be a full re-assembly rather than a delta.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from golem.governor.categories import HARD, Category, MarketRegime, Phase

CHARS_PER_TOKEN = 4
SUMMARY_MAX_CHARS = 200


def estimate_tokens(text: str) -> int:
    """Rough token count, ceil(chars / 4) (seeds 000 and 003 use len / 4).

    Rounded up so that any non-empty text costs at least one token. Good enough
    to budget with; the provider's usage report is the truth for spend.
    """
    return -(-len(text) // CHARS_PER_TOKEN)


def one_line(text: str, max_chars: int = SUMMARY_MAX_CHARS) -> str:
    """A fallback one-line summary: the first non-empty line, cut at max_chars."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= max_chars else line[: max_chars - 3].rstrip() + "..."


@dataclass(frozen=True)
class Knowledge:
    """A consolidated fact's numbers, carried beside its text for a reasoner that reads
    them (the offline tier): its kind (a FactKind value), the fact, its confidence, and
    the golem time of the newest episode it rests on (None: not recorded)."""

    kind: str
    fact: Mapping[str, Any] = field(hash=False)
    confidence: float = 0.0
    observed_to: float | None = None


@dataclass(frozen=True)
class Candidate:
    """One thing that could enter the context: a recalled memory or a piece of live state.

    ``source`` is the citation address (``grimoire://ns/type/id`` for memories,
    e.g. ``state://defi_snapshot`` for live state). ``hard`` marks an item that
    must never be compacted or dropped; every item of a HARD category is hard.
    ``untrusted`` marks on-chain text the renderer must fence.
    """

    id: str
    category: Category
    source: str
    text: str
    score: float
    summary: str = ""  # empty: derived from the text's first line
    hard: bool = False
    untrusted: bool = False
    knowledge: Knowledge | None = None
    text_tokens: int = field(init=False)
    summary_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("candidate: id must not be empty")
        if not math.isfinite(self.score):
            raise ValueError(f"candidate {self.id}: score must be finite, got {self.score!r}")
        if not self.summary:
            object.__setattr__(self, "summary", one_line(self.text))
        object.__setattr__(self, "text_tokens", estimate_tokens(self.text))
        object.__setattr__(self, "summary_tokens", estimate_tokens(self.summary))

    @property
    def is_hard(self) -> bool:
        return self.hard or self.category in HARD


class Disclosure(StrEnum):
    FULL = "full"
    SUMMARY = "summary"


class Why(StrEnum):
    """Why a candidate is not in the workspace (it stays reachable via query_grimoire)."""

    OVER_BUDGET = "over_budget"  # would push the category past 95% of its budget
    NO_BUDGET = "no_budget"  # the category's allocation is zero
    MASKED = "masked"  # an episode beyond the full + summary slots
    COMPACTED = "compacted"  # dropped to bring total pressure under the threshold
    DUPLICATE = "duplicate"  # the same id appeared twice in one category


@dataclass(frozen=True)
class Placed:
    """A candidate in the workspace, in full or as its one-line summary."""

    candidate: Candidate
    disclosure: Disclosure

    @property
    def content(self) -> str:
        c = self.candidate
        return c.text if self.disclosure is Disclosure.FULL else c.summary

    @property
    def tokens(self) -> int:
        c = self.candidate
        return c.text_tokens if self.disclosure is Disclosure.FULL else c.summary_tokens


@dataclass(frozen=True)
class Exclusion:
    id: str
    category: Category
    why: Why


@dataclass(frozen=True)
class Block:
    """One category's items in rank order. ``echo`` marks the closing restatement of
    the invariants (summaries) that puts safety constraints at the end as well."""

    category: Category
    items: tuple[Placed, ...]
    echo: bool = False

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.items)


@dataclass(frozen=True)
class AssemblyReason:
    """Per-category audit line (seed 002 S2.1) that Loop 1 learns from."""

    category: Category
    allocated: int
    used: int
    full: int
    summarized: int
    excluded: int
    why: str

    @property
    def included(self) -> int:
        return self.full + self.summarized


@dataclass(frozen=True)
class WorkspaceDelta:
    """What changed since the previous assembly (seed 002 S2.2).

    ``changed`` holds ids present in both whose shown content differs (new text,
    or full <-> summary). ``tokens`` counts what a delta request would resend:
    added and changed items; ``share`` is that over the total budget.
    """

    added: Mapping[Category, tuple[str, ...]]
    removed: Mapping[Category, tuple[str, ...]]
    changed: Mapping[Category, tuple[str, ...]]
    changed_categories: tuple[Category, ...]
    tokens: int
    share: float


@dataclass(frozen=True)
class CognitiveWorkspace:
    blocks: tuple[Block, ...]  # final order: invariants, U-curve of the rest, echo
    total_budget: int
    used: int
    reasons: Mapping[Category, AssemblyReason]
    exclusions: tuple[Exclusion, ...]
    compacted: bool
    delta: WorkspaceDelta | None  # None on the first assembly

    @property
    def pressure(self) -> float:
        return self.used / self.total_budget if self.total_budget > 0 else math.inf

    def placed(self, category: Category) -> dict[str, Placed]:
        """Items of a category by id (the echo block is not counted twice)."""
        return {p.candidate.id: p for b in self.blocks
                if b.category is category and not b.echo for p in b.items}

    def included_ids(self) -> frozenset[tuple[Category, str]]:
        return frozenset((b.category, p.candidate.id)
                         for b in self.blocks if not b.echo for p in b.items)


def workspace_delta(
    previous: CognitiveWorkspace, blocks: tuple[Block, ...], total_budget: int
) -> WorkspaceDelta:
    """Compare the previous assembly with new blocks, category by category."""
    added: dict[Category, tuple[str, ...]] = {}
    removed: dict[Category, tuple[str, ...]] = {}
    changed: dict[Category, tuple[str, ...]] = {}
    tokens = 0
    for cat in Category:
        before = previous.placed(cat)
        now = {p.candidate.id: p for b in blocks
               if b.category is cat and not b.echo for p in b.items}
        new = tuple(sorted(set(now) - set(before)))
        gone = tuple(sorted(set(before) - set(now)))
        diff = tuple(sorted(i for i in set(now) & set(before)
                            if now[i].content != before[i].content))
        tokens += sum(now[i].tokens for i in (*new, *diff))
        for target, ids in ((added, new), (removed, gone), (changed, diff)):
            if ids:
                target[cat] = ids
    cats = tuple(c for c in Category if c in added or c in removed or c in changed)
    share = tokens / total_budget if total_budget > 0 else math.inf
    return WorkspaceDelta(added, removed, changed, cats, tokens, share)


class FrameKind(StrEnum):
    I_FRAME = "i_frame"  # the whole workspace sent (and cached) as the new keyframe
    P_FRAME = "p_frame"  # the keyframe from the cache plus the changes since it


@dataclass(frozen=True)
class FrameState:
    """What the I-frame decision remembers between Theta ticks."""

    p_frames: int  # consecutive P-frames since the last I-frame
    phase: Phase
    regime: MarketRegime


@dataclass(frozen=True)
class FrameDecision:
    kind: FrameKind
    why: str
    state: FrameState


I_FRAME_INTERVAL = 10  # seed 002 S2.2: force an I-frame after 10 consecutive deltas
MAX_DELTA_SHARE = 0.3  # ... or when delta tokens exceed 30% of the budget


def next_frame(
    previous: FrameState | None,
    *,
    phase: Phase,
    regime: MarketRegime,
    delta_share: float | None,
    interval: int = I_FRAME_INTERVAL,
    max_delta_share: float = MAX_DELTA_SHARE,
    stable_changed: bool = False,
    cache_warm: bool = True,
) -> FrameDecision:
    """I-frame on the first tick, a phase or regime change, a change of the stable
    (system) context, a cold cache (the last I-frame was never sent, or too long ago to
    be cached still), a large delta, or when ``interval`` P-frames have run; otherwise a
    P-frame. ``delta_share`` is the delta since the last I-frame over the budget (what a
    P-frame resends); None means there is nothing to diff against."""
    if interval < 1:
        raise ValueError(f"next_frame: interval must be >= 1, got {interval}")
    why = ""
    if previous is None or delta_share is None:
        why = "first"
    elif phase is not previous.phase:
        why = "phase_change"
    elif regime is not previous.regime:
        why = "regime_change"
    elif stable_changed:
        why = "stable_changed"
    elif not cache_warm:
        why = "cache_cold"
    elif delta_share > max_delta_share:
        why = "delta_share"
    elif previous.p_frames >= interval:
        why = "interval"
    if why:
        return FrameDecision(FrameKind.I_FRAME, why, FrameState(0, phase, regime))
    assert previous is not None
    return FrameDecision(FrameKind.P_FRAME, "delta",
                         FrameState(previous.p_frames + 1, phase, regime))

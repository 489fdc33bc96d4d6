"""Bootstrap sizing: how much of MEMORY.md and the scratch log a prompt gets (seed 004).

Pure: the budget scales with the model's context window, and the text is cut
to fit (scratch notes that cannot fit go first, then the least important,
then the oldest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.working_memory import (
    CHARS_PER_TOKEN,
    MEMORY_LABEL,
    SCRATCH_LABEL,
    TRUNCATED_NOTE,
)

if TYPE_CHECKING:
    from golem.grimoire.scratch import ScratchNote


@dataclass(frozen=True)
class BootstrapBudget:
    context_window_tokens: int
    memory_tokens: int
    scratch_tokens: int

    @property
    def memory_chars(self) -> int:
        return self.memory_tokens * CHARS_PER_TOKEN

    @property
    def scratch_chars(self) -> int:
        return self.scratch_tokens * CHARS_PER_TOKEN


# (window at least, MEMORY.md tokens, scratch tokens): the seed's table, scratch at half.
_TIERS = ((200_000, 2000, 1000), (128_000, 1500, 750), (64_000, 1000, 500), (32_000, 800, 400))


def bootstrap_budget(context_window_tokens: int) -> BootstrapBudget:
    """Prompt room for MEMORY.md and scratch, scaled by the model's context window.

    ======== ====================== =================
    window   MEMORY.md              scratch notes
    ======== ====================== =================
    >= 200K  2000 tok (8000 chars)  1000 tok (4000)
    >= 128K  1500 tok (6000 chars)   750 tok (3000)
    >= 64K   1000 tok (4000 chars)   500 tok (2000)
    >= 32K    800 tok (3200 chars)   400 tok (1600)
    smaller  min(500, window/8)     min(250, window/16)
    ======== ====================== =================
    """
    w = context_window_tokens
    if isinstance(w, bool) or not isinstance(w, int) or w < 1000:
        raise InvalidMemory(f"context window: at least 1000 tokens, got {w!r}")
    for floor, memory, scratch in _TIERS:
        if w >= floor:
            return BootstrapBudget(w, memory, scratch)
    return BootstrapBudget(w, min(500, w // 8), min(250, w // 16))


def _fit_memory(text: str, limit: int) -> str:
    text = text.strip() or "(none yet: no dream cycle has written MEMORY.md)"
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(TRUNCATED_NOTE) - 1)]
    if "\n" in cut:
        cut = cut[: cut.rindex("\n")]
    return f"{cut.rstrip()}\n{TRUNCATED_NOTE}"


def _omitted(k: int) -> str:
    return f"[{k} older or less important notes not shown; memory_search finds them]"


def _fit_notes(notes: Sequence[ScratchNote], limit: int) -> str:
    lines = [n.prompt_line() for n in notes]
    kept = set(range(len(notes)))
    # Drop what can never fit first, then lowest importance, oldest first.
    order = sorted(kept, key=lambda i: (len(lines[i]) < limit, notes[i].importance,
                                        notes[i].at, i))
    size = sum(len(line) + 1 for line in lines)
    for i in order:
        dropped = len(notes) - len(kept)
        if size + (len(_omitted(dropped)) if dropped else 0) <= limit:
            break
        kept.discard(i)
        size -= len(lines[i]) + 1
    shown = [lines[i] for i in sorted(kept, key=lambda i: (notes[i].at, i))]
    if len(kept) < len(notes):
        shown.append(_omitted(len(notes) - len(kept)))
    return "\n".join(shown) if shown else "(none)"


def bootstrap_text(memory_text: str | None, scratch_notes: Sequence[ScratchNote],
                   budget: BootstrapBudget) -> str:
    """MEMORY.md as committed state plus scratch as pending notes, within ``budget``."""
    memory = _fit_memory(memory_text or "", budget.memory_chars)
    notes = _fit_notes(scratch_notes, budget.scratch_chars)
    return f"{MEMORY_LABEL}\n\n{memory}\n\n{SCRATCH_LABEL}\n\n{notes}\n"

"""Seed-crystal migration of a hand-written MEMORY.md (seed 004), the pure part.

A MEMORY.md that does not parse into the schema was written by hand before the
working-memory system ran. Its content must survive: it is chunked into seed
crystals (~400 tokens, 80 overlapping, as the seed says) that the caller stores,
and the first rewrite keeps it verbatim in a "Seed Memory" section (see rewrite.py
for the conservative first cycle and the gradual take-over).
"""

from __future__ import annotations

import math
import re

from golem.consolidation import memory_items as mi
from golem.grimoire.working_memory import MAX_MEMORY_CHARS, parse_memory

SEED_HEADING = "Seed Memory (hand-written, kept by migration)"


def needs_migration(old_text: str | None) -> bool:
    """A MEMORY.md that does not parse into the schema (hand-written): migrate it."""
    return old_text is not None and bool(parse_memory(old_text).missing_sections())


def seed_chunks(text: str, chunk_chars: int = 1600, overlap_chars: int = 320,
                ) -> tuple[tuple[str, str], ...]:
    """(id, text) seed crystals of a hand-written file: ~400-token chunks, 80 overlapping."""
    step, out, start = chunk_chars - overlap_chars, [], 0
    while start < len(text):
        piece = text[start:start + chunk_chars]
        if piece.strip():
            out.append((mi.content_id("seed", piece), piece))
        start += step
    return tuple(out)


def allowed_chars(old_text: str | None, cap: int = MAX_MEMORY_CHARS,
                  keep: float = 0.6) -> int:
    """The size cap for a rewrite of ``old_text``: the cap, or for an oversized (migrated)
    state ``keep`` of it, so it shrinks to the cap over a few cycles without a mass drop."""
    old_len = len(old_text.strip()) if old_text else 0
    return max(cap, math.ceil(keep * old_len))


def demote(text: str) -> str:
    """Headings two levels down (outside code fences): none can pass for a schema section."""
    out, fenced = [], False
    for line in text.strip("\n").split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        m = None if fenced else re.match(r"^(#{1,6})(\s)", line)
        out.append(line if m is None else "#" * min(6, len(m.group(1)) + 2) + line[len(
            m.group(1)):])
    return "\n".join(out)

"""The ``<agent_memory>`` block injected into a prompt (seed 003 "Context injection").

Shape (seed 003): two-space indented ``<memory>`` elements with type, importance
(two decimals) and age attributes, content indented four spaces, e.g.::

    <agent_memory>
      <memory type="constraint" importance="0.95" age="2d">
        Never LP in pools with less than $100K TVL.
      </memory>
    </agent_memory>

``id`` and ``source`` attributes are added only for items that carry them. Memory
content can be untrusted chain text, so content and attributes are XML-escaped and
stripped of control and bidi-override characters: an injected ``</agent_memory>``
stays inert text inside its element.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from golem.grimoire.errors import InvalidMemory
from golem.grimoire.records import MemoryType, SemanticEntry, Source, finite_unit

if TYPE_CHECKING:
    from golem.grimoire.recall import RecallResult

OPEN = "<agent_memory>\n"
CLOSE = "</agent_memory>"
EMPTY_BLOCK = OPEN + CLOSE


def _unit(value: float, name: str) -> float:
    try:
        return finite_unit(value, name)
    except ValueError as exc:
        raise InvalidMemory(str(exc)) from None

# C0 controls except \t and \n, DEL and C1, the Arabic letter mark, LRM/RLM, the bidi
# embeddings/overrides U+202A-202E and isolates U+2066-2069, lone surrogates and
# U+FFFE/U+FFFF (not XML characters).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def estimate_tokens(text: str) -> int:
    """Rough token count: UTF-8 bytes / 4, rounded up (the seed's len/4 estimate).

    Bytes rather than characters, as the seed's Rust ``len()`` counts, so non-Latin text
    (several bytes, often a token per character) is not underestimated; rounding up
    means a non-empty text never costs 0.
    """
    return -(-len(text.encode("utf-8", "surrogatepass")) // 4)


def sanitize(text: str) -> str:
    """Drop control and bidi-override characters (keeps \\n and \\t)."""
    return _UNSAFE.sub("", text)


def _escape(text: str) -> str:
    return html.escape(sanitize(text), quote=True)


def _attr(text: str) -> str:
    """An attribute value: escaped and on one line (parsers turn \n and \t into spaces)."""
    return _escape(text.replace("\n", " ").replace("\t", " "))


def age_display(seconds: float) -> str:
    """Compact age: "45m" under an hour, "3h" under a day, "2d" under a week, then "5w".

    Whole units, rounded down; a negative age (clock skew) shows as "0m".
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(
        seconds
    ):
        raise InvalidMemory(f"age: must be a finite number of seconds, got {seconds!r}")
    s = max(float(seconds), 0.0)
    if s < 3600:
        return f"{int(s // 60)}m"
    if s < 86400:
        return f"{int(s // 3600)}h"
    if s < 7 * 86400:
        return f"{int(s // 86400)}d"
    return f"{int(s // (7 * 86400))}w"


@dataclass(frozen=True)
class AgentMemoryItem:
    """One memory as it is shown to the model."""

    memory_type: MemoryType
    importance: float
    age_s: float
    content: str
    id: str | None = None
    source: Source | None = None

    def __post_init__(self) -> None:
        _unit(self.importance, "importance")
        age_display(self.age_s)
        if not isinstance(self.content, str):
            raise InvalidMemory(f"content: must be text, got {type(self.content).__name__}")


def render_item(item: AgentMemoryItem) -> str:
    """One ``<memory>`` element with its trailing newline, escaped."""
    attrs = (f'type="{_attr(str(item.memory_type))}" importance="{item.importance:.2f}" '
             f'age="{age_display(item.age_s)}"')
    if item.id is not None:
        attrs += f' id="{_attr(item.id)}"'
    if item.source is not None:
        attrs += f' source="{_attr(str(item.source))}"'
    body = "\n".join("    " + line for line in _escape(item.content).split("\n"))
    return f"  <memory {attrs}>\n{body}\n  </memory>\n"


def fit_agent_memory(
    memories: Sequence[AgentMemoryItem], budget_tokens: int
) -> tuple[str, tuple[int, ...]]:
    """The block and the indices of the items it holds (for citation feedback).

    Items go in the given order; one that would push the whole block past
    ``budget_tokens`` is left out whole (never cut) and later, smaller items may
    still fit. The open/close tags count against the budget; when not even they fit,
    the empty block is returned (``estimate_tokens(EMPTY_BLOCK)`` tokens).
    """
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens < 0:
        raise InvalidMemory(f"budget_tokens: must be an integer >= 0, got {budget_tokens!r}")
    limit_bytes = budget_tokens * 4  # estimate_tokens(x) <= budget iff bytes(x) <= budget*4
    used = len(EMPTY_BLOCK.encode())
    parts: list[str] = []
    kept: list[int] = []
    for index, item in enumerate(memories):
        entry = render_item(item)
        size = len(entry.encode("utf-8"))
        if used + size > limit_bytes:
            continue
        used += size
        parts.append(entry)
        kept.append(index)
    return OPEN + "".join(parts) + CLOSE, tuple(kept)


def render_agent_memory(memories: Sequence[AgentMemoryItem], budget_tokens: int) -> str:
    """The ``<agent_memory>`` block of ``memories`` within ``budget_tokens`` (estimated)."""
    return fit_agent_memory(memories, budget_tokens)[0]


def render_recall(result: RecallResult, now: float, budget_tokens: int) -> str:
    """A recall as an ``<agent_memory>`` block: anti-knowledge first (a warning is never
    the item the budget drops), then hits in rank order."""
    hits = [*result.anti_knowledge,
            *(h for h in getattr(result, "hits", ()) if not h.is_anti_knowledge)]
    items = []
    for hit in hits:
        record = hit.record
        is_entry = isinstance(record, SemanticEntry)
        born = record.created_at if isinstance(record, SemanticEntry) else record.observed_at
        items.append(AgentMemoryItem(
            memory_type=record.memory_type if isinstance(record, SemanticEntry)
            else MemoryType.EPISODE,
            importance=min(max(hit.score.importance, 0.0), 1.0),
            age_s=max(now - born, 0.0), content=hit.text, id=hit.uri,
            source=hit.provenance.source if is_entry else None))
    return render_agent_memory(items, budget_tokens)

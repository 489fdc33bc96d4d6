"""The model's tools: query_grimoire and working_memory_note, and the bounded tool loop.

The model reaches memory only through the Grimoire's one recall path, in this
golem's own namespace (no namespace argument is offered, so a model cannot ask
for another golem's memory), and a refusal reaches it as a refusal, never as a
list of weak guesses. Notes go to the scratch write-ahead log. A Theta tick runs
at most ``max_rounds`` tool rounds; the last resend forbids tools so the cap ends
in an answer rather than another request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from golem.cognition.anthropic_provider import LlmResult
from golem.cognition.errors import CognitionError
from golem.grimoire.errors import InvalidMemory, NamespaceRefused
from golem.grimoire.grimoire import Grimoire
from golem.grimoire.recall import HitKind, RecallFilters
from golem.grimoire.records import EntryType

MAX_K = 10
DEFAULT_K = 5
MAX_QUERY_CHARS = 500
MAX_NOTE_CHARS = 2000
RESULT_BUDGET_TOKENS = 1500  # the rendered hits of one query_grimoire call
KINDS: tuple[str, ...] = ("episode", *(t.value for t in EntryType))

QUERY_GRIMOIRE: Mapping[str, Any] = {
    "name": "query_grimoire",
    "description": (
        "Search this golem's memory (episodes, insights, heuristics, warnings, causal links, "
        "strategy fragments, anti-knowledge). Use it when context you need is missing or was "
        "shown only as a summary. Returns the best matches with their grimoire:// sources, or "
        "an explicit refusal when nothing in memory is close enough: then do not guess."),
    "input_schema": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS,
                      "description": "what to look for, in plain words"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K,
                  "description": f"how many results (default {DEFAULT_K})"},
            "kinds": {"type": "array", "items": {"type": "string", "enum": list(KINDS)},
                      "description": "only these kinds of memory (default: all)"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
}
WORKING_MEMORY_NOTE: Mapping[str, Any] = {
    "name": "working_memory_note",
    "description": (
        "Write a short note to working memory (kept across ticks until consolidated). Use it "
        "for an observation or intention worth remembering, not for the decision itself."),
    "input_schema": {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1,
                                "maxLength": MAX_NOTE_CHARS}},
        "required": ["text"],
        "additionalProperties": False,
    },
}
TOOLS: tuple[Mapping[str, Any], ...] = (QUERY_GRIMOIRE, WORKING_MEMORY_NOTE)


class ToolInputError(CognitionError):
    """The model called an unknown tool or with input the schema does not allow."""


class Completer(Protocol):
    """What the tool loop sends through: AnthropicProvider, or a ledger-wrapping caller."""

    def complete(self, request: Mapping[str, Any]) -> Awaitable[LlmResult]: ...


@dataclass(frozen=True)
class ToolRounds:
    """The final reply, the tool rounds used, and every call's result (for the ledger)."""

    result: LlmResult
    rounds: int
    results: tuple[LlmResult, ...]
    messages: tuple[dict[str, Any], ...]  # the conversation as last sent, plus the reply


async def run_tool(name: str, tool_input: Mapping[str, Any], grimoire: Grimoire) -> str:
    """Execute one tool call; raises ToolInputError for a bad call (sent back as is_error)."""
    if not isinstance(tool_input, Mapping):
        raise ToolInputError(f"{name}: input must be an object")
    if name == "query_grimoire":
        return await _query(tool_input, grimoire)
    if name == "working_memory_note":
        _only(name, tool_input, {"text"})
        text = _string(tool_input, "text", MAX_NOTE_CHARS)
        note = await grimoire.note(text, source="working_memory_note")
        return f"noted in working memory (#{note.id})"
    raise ToolInputError(f"unknown tool {name!r}; available: query_grimoire, "
                         "working_memory_note")


async def run_tool_rounds(provider: Completer, request: Mapping[str, Any], grimoire: Grimoire,
                          max_rounds: int = 3) -> ToolRounds:
    """Send; while the model asks for tools, run them and resend, at most ``max_rounds`` times.

    The tools are always sent (the same list every call, so the cached prefix holds).
    The last allowed resend carries ``tool_choice: none``; if the model still stops
    for tool_use the loop ends there and the caller records no decision.
    """
    if max_rounds < 0:
        raise ValueError(f"max_rounds must be >= 0, got {max_rounds}")
    base = {**request, "tools": [dict(t) for t in request.get("tools") or TOOLS]}
    messages: list[dict[str, Any]] = [dict(m) for m in request.get("messages") or ()]
    results: list[LlmResult] = []
    rounds = 0
    while True:
        sent = {**base, "messages": messages}
        if rounds >= max_rounds:
            sent["tool_choice"] = {"type": "none"}
        result = await provider.complete(sent)
        results.append(result)
        calls = [b for b in result.content if b.get("type") == "tool_use"]
        if result.stop_reason != "tool_use" or not calls or rounds >= max_rounds:
            reply = {"role": "assistant", "content": list(result.content)}
            return ToolRounds(result, rounds, tuple(results), (*messages, reply))
        rounds += 1
        answers = [await _answer(call, grimoire) for call in calls]
        messages = [*messages, {"role": "assistant", "content": list(result.content)},
                    {"role": "user", "content": answers}]


async def _answer(call: Mapping[str, Any], grimoire: Grimoire) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.get("id", "")}
    try:
        text = await run_tool(str(call.get("name", "")), call.get("input") or {}, grimoire)
    except (ToolInputError, InvalidMemory, NamespaceRefused) as exc:
        block.update(content=[{"type": "text", "text": f"error: {exc}"}], is_error=True)
        return block
    block["content"] = [{"type": "text", "text": text}]
    return block


async def _query(tool_input: Mapping[str, Any], grimoire: Grimoire) -> str:
    _only("query_grimoire", tool_input, {"query", "k", "kinds"})
    query = _string(tool_input, "query", MAX_QUERY_CHARS)
    k = tool_input.get("k", DEFAULT_K)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ToolInputError(f"query_grimoire: k must be an integer from 1 to {MAX_K}")
    filters = _filters(tool_input.get("kinds"))
    # namespace=None: this golem's own namespace only, whatever the model asks.
    result = await grimoire.recall(query, k=k, filters=filters)
    if result.refused:
        text = (f"refused: nothing in memory is close enough to {query!r} "
                f"({result.reason}); do not guess.")
        if result.anti_knowledge:
            text += "\nWarnings that still apply:\n" + grimoire.agent_memory(
                result, RESULT_BUDGET_TOKENS)
        return text
    return grimoire.agent_memory(result, RESULT_BUDGET_TOKENS)


def _filters(kinds: Any) -> RecallFilters:
    if kinds is None:
        return RecallFilters()
    if (not isinstance(kinds, list) or not kinds
            or not all(isinstance(k, str) and k in KINDS for k in kinds)):
        raise ToolInputError(f"query_grimoire: kinds must be a non-empty list of "
                             f"{', '.join(KINDS)}")
    types = tuple(EntryType(k) for k in dict.fromkeys(kinds) if k != "episode")
    hit_kinds: tuple[HitKind, ...] = (*(("episode",) if "episode" in kinds else ()),
                                      *(("entry",) if types else ()))
    return RecallFilters(kinds=hit_kinds, entry_types=types or None)


def _only(name: str, tool_input: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(tool_input) - allowed)
    if extra:
        raise ToolInputError(f"{name}: unknown input keys {', '.join(extra)}")


def _string(tool_input: Mapping[str, Any], key: str, max_chars: int) -> str:
    value = tool_input.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"{key}: a non-empty string is required")
    if len(value) > max_chars:
        raise ToolInputError(f"{key}: at most {max_chars} characters, got {len(value)}")
    return value

"""On-chain strings are untrusted: clean them, mark them, and fence them for the LLM.

Anyone can deploy a token whose symbol is a prompt injection, carries bidi
overrides that reorder what a reader sees, or hides text in zero-width or tag
characters. Everything read from the chain passes through `clean` before use,
travels as `UntrustedText`, and reaches a prompt only inside a `fence` block,
never in the system prompt.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

FENCE_TAG = "untrusted_chain_data"
ELLIPSIS = "..."  # ASCII: NFKC would turn U+2026 into this anyway

# Stripped explicitly (most are also caught by the category rule below): C0, DEL, C1,
# zero-width and directional marks, bidi embeddings/overrides and isolates, word
# joiner and invisible operators, the Arabic letter mark, the BOM.
_STRIP_RANGES = (
    (0x00, 0x1F), (0x7F, 0x9F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2069), (0x061C, 0x061C), (0xFEFF, 0xFEFF),
)
# Cc controls, Cf format characters (soft hyphen, tag characters used for hidden
# "ASCII smuggling"), Cs lone surrogates.
_STRIP_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})
_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/ -]")


def _is_stripped(ch: str) -> bool:
    code = ord(ch)
    if any(lo <= code <= hi for lo, hi in _STRIP_RANGES):
        return True
    return unicodedata.category(ch) in _STRIP_CATEGORIES


def clean(text: str, max_len: int = 64) -> str:
    """Return `text` safe to show: NFKC, no controls/bidi/invisibles, one-spaced, bounded.

    Whitespace of any kind (tabs, newlines, U+2028, ...) becomes one space; the
    result is at most `max_len` characters, ending in "..." when cut.
    NFKC folds look-alikes such as fullwidth less-than (U+FF1C) into their ASCII forms, so the
    fence escaping below sees them.
    """
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    # Strip, fold, strip again: NFKC after stripping composes what the strip made
    # adjacent, so a second `clean` changes nothing (idempotent).
    folded = unicodedata.normalize("NFKC", _strip(text))
    out = " ".join(_strip(folded).split())
    if len(out) > max_len:
        cut = max_len - len(ELLIPSIS)
        out = out[:max_len].rstrip() if cut < 1 else out[:cut].rstrip() + ELLIPSIS
    return out


def _strip(text: str) -> str:
    return "".join(" " if ch.isspace() else ch for ch in text
                   if ch.isspace() or not _is_stripped(ch))


@dataclass(frozen=True)
class UntrustedText:
    """Text that came from the chain, cleaned on construction.

    A frozen dataclass rather than a `str` subclass on purpose: it does not
    concatenate or format into a prompt as if it were our own text (its `str()`
    is the dataclass repr); the only way into a prompt is `fence()`.
    `source` says where it came from (e.g. "token 0xabc… symbol").
    """

    text: str
    source: str = ""
    max_len: int = 64

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean(self.text, self.max_len))
        object.__setattr__(self, "source", clean(self.source, 128))


def _escape(text: str) -> str:
    """Escape markup so content can never open or close a tag."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fence(label: str, items: Iterable[UntrustedText | str]) -> str:
    """Wrap items in one `<untrusted_chain_data source="label">` block, one item a line.

    Every item is cleaned (so it is one line) and escaped (so it holds no `<` or
    `>`): nothing inside can end the block early or start a new one. Plain `str`
    items are treated as untrusted too.
    """
    source = _LABEL_UNSAFE.sub("_", clean(label, 128))
    lines = [f'<{FENCE_TAG} source="{source}">']
    for item in items:
        if isinstance(item, UntrustedText):
            body = item.text if not item.source else f"{item.source}: {item.text}"
            lines.append(_escape(body))
        else:
            lines.append(_escape(clean(item)))
    lines.append(f"</{FENCE_TAG}>")
    return "\n".join(lines)

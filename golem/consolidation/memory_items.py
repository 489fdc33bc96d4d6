"""The vocabulary of the working-memory rewrite: inputs, outputs, lines (pure).

A section body is a list of items. Lines the rewrite writes itself carry a tag
with their importance, time and the id of the crystal that holds them in full::

    - Owner caps any position at 10k USDC [0.90 2026-03-12T14:30Z scratch-5f0c2a9e1b7d3c44]

so a later cycle knows what is old, what matters and what it stands for. Lines
written by hand or by a model are kept as they are (importance 0.5, no time).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from golem.grimoire.working_memory import (
    MAX_MEMORY_CHARS,
    CrystalPointer,
    iso_time,
    parse_iso_time,
)

_TAGGED = re.compile(r"^- (?P<text>.*\S) \[(?P<imp>[01]\.\d\d) (?P<at>\d{4}-\d\d-\d\dT\d\d:\d\dZ)"
                     r" (?P<id>[A-Za-z0-9_.:-]{1,64})\]$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.$%/-]*[A-Za-z0-9%$]|[A-Za-z0-9]")
_STOP = frozenset((
    "a", "about", "after", "again", "all", "also", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "but", "by", "can", "could", "did", "do", "does", "for", "from", "had",
    "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "me", "more", "most", "my", "new", "no", "not", "now", "of", "on", "once", "only", "or",
    "other", "our", "out", "over", "per", "same", "she", "should", "so", "some", "such", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "very", "via", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "why", "will", "with", "would", "yet", "you", "your",
))

Note = tuple[str, str, float, float]  # (note id, text, importance, golem time)
Crystal = tuple[str, str, Sequence[str]]  # (crystal id, label, keywords)
Insight = tuple[str, str, float]  # (insight id, text, confidence)
ToIndex = tuple[str, str, float]  # (crystal id, text, importance)


@dataclass(frozen=True)
class RewriteParams:
    max_chars: int = MAX_MEMORY_CHARS  # the validation cap
    target_chars: int = MAX_MEMORY_CHARS - 800  # what the synthesis aims at (room to grow)
    max_pointers: int = 16  # the eviction-runaway guard trips above 20
    fade_after_s: float = 7 * 86400.0  # Active Context lines older than this fade
    low_importance: float = 0.3  # notes below go straight to a pointer
    skill_confidence: float = 0.6  # insights at or above it are emerging skills
    line_chars: int = 280  # a note's line is cut here (the crystal holds it in full)
    min_keep_ratio: float = 0.6  # fading stops here; an oversized state shrinks to it
    seed_fold_chars: int = 1500  # seed text folded per cycle after the migration


@dataclass(frozen=True)
class RewriteInputs:
    old_text: str | None  # MEMORY.md as read, None when there is none
    notes: Sequence[Note] = ()
    crystals: Sequence[Crystal] = ()
    insights: Sequence[Insight] = ()
    now: float = 0.0
    name: str = ""  # golem name and mandate: the starter state and migration need them
    mandate: str = ""
    mood: str | None = None  # None keeps the old mood


@dataclass(frozen=True)
class Rewrite:
    text: str
    max_chars: int  # the cap to validate this rewrite with
    to_index: tuple[ToIndex, ...]  # crystals to store before the write
    placed: dict[str, int] = field(default_factory=dict)  # section key -> items added
    folded: int = 0  # items folded into pointers
    merged: int = 0  # pointer merges
    migrated: bool = False


@dataclass(frozen=True)
class Item:
    """One line (or one fenced block / paragraph) of a section body."""

    text: str  # as rendered
    importance: float = 0.5
    at: float | None = None  # golem time, None when unknown (hand- or model-written)
    crystal: str | None = None  # id of the crystal that holds it in full
    protected: bool = False  # hints, comments, the mandate, fenced blocks: never folded

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    def fold_key(self, position: int) -> tuple[float, float, int]:
        """Folding order: least important first, then oldest, then topmost."""
        return (self.importance, -1.0 if self.at is None else self.at, position)

    def crystal_id(self) -> str:
        return self.crystal or content_id("wm", self.text)


def plain(text: str) -> str:
    """An item's words without the bullet and the tag."""
    m = _TAGGED.match(text)
    return (m.group("text") if m else text).strip().lstrip("-*+# ").strip()


def content_id(prefix: str, text: str) -> str:
    return f"{prefix}-{hashlib.sha256(text.encode(errors='surrogatepass')).hexdigest()[:16]}"


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed to single spaces, cut to ``limit`` chars with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(1, limit - 1)].rstrip() + "…"


def minute(at: float) -> str:
    return iso_time(round(at * 1000))[:16] + "Z"


def tagged(text: str, importance: float, at: float, crystal: str, limit: int) -> Item:
    body = one_line(text, limit).lstrip("-*+# ") or "(note)"
    line = f"- {body} [{importance:.2f} {minute(at)} {crystal}]"
    return Item(line, round(importance, 2), round(at, 3), crystal)


def parse_item(line: str, protected: bool = False) -> Item:
    m = _TAGGED.match(line)
    if m is None:
        s = line.strip().lstrip("-*+ ").strip()
        hint = len(s) > 1 and s[0] == s[-1] == "_"
        return Item(line, protected=protected or hint or s.startswith("<!--"))
    at = parse_iso_time(m.group("at")[:-1] + ":00.000Z") / 1000
    return Item(line, float(m.group("imp")), at, m.group("id"), protected)


def split_body(body: str, *, paragraphs: bool = False) -> list[Item]:
    """Items of a body: lines (or blank-line separated paragraphs); a fenced block is one
    protected item."""
    items: list[Item] = []
    block: list[str] = []
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            block.append(line)
            if not fenced:
                items.append(Item("\n".join(block), protected=not paragraphs))
                block = []
        elif fenced or (paragraphs and line.strip()):
            block.append(line)
        else:
            if block:
                items.append(Item("\n".join(block)))
                block = []
            items.append(parse_item(line) if line.strip() else Item(""))
    if block:  # an unclosed fence or a last paragraph
        items.append(Item("\n".join(block), protected=fenced and not paragraphs))
    return items


def join_items(items: Sequence[Item]) -> str:
    """Body text: runs of blank items collapse to one blank line, none at the ends."""
    lines: list[str] = []
    for item in items:
        if item.blank and (not lines or not lines[-1]):
            continue
        lines.append("" if item.blank else item.text)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def keywords(texts: Sequence[str], limit: int = 6) -> tuple[str, ...]:
    """The most frequent content words, first occurrence breaking ties; never empty."""
    counts: Counter[str] = Counter()
    first: dict[str, tuple[int, str]] = {}
    for text in texts:
        for word in _WORD.findall(text):
            key = word.lower()
            if key in _STOP or len(word) > 64 or (len(word) < 3 and not word.isdigit()):
                continue
            counts[key] += 1
            first.setdefault(key, (len(first), word))
    ranked = sorted(counts, key=lambda k: (-counts[k], first[k][0]))
    return tuple(first[k][1] for k in ranked[:limit]) or ("memory",)


def safe_label(text: str, limit: int = 120) -> str:
    flat = one_line(text.replace("`", "'").replace("→", "to").replace("->", "to"), limit)
    flat = re.sub(r"(?i)search:", "search", flat).strip()
    return flat or "memory"


def pointer(label: str, words: Sequence[str], ids: Sequence[str]) -> CrystalPointer:
    clean = [w.replace("`", "") for w in words]
    kws = tuple(dict.fromkeys(w for w in clean if w and len(w) <= 64 and len(w.split()) == 1))
    return CrystalPointer(safe_label(label, 160), kws[:12] or ("memory",),
                          tuple(dict.fromkeys(ids))[:16])


def merge(older: CrystalPointer, newer: CrystalPointer) -> CrystalPointer:
    """Two pointers as one: keywords and ids of both (capped), the labels joined."""
    kws = older.keywords[:6] + newer.keywords[:6]
    label = f"{older.label.removeprefix('Older: ')}; {newer.label}"
    return pointer("Older: " + label, kws, older.crystal_ids + newer.crystal_ids)


def group_pointers(groups: Mapping[str, Sequence[Item]], now: float) -> list[CrystalPointer]:
    """One pointer per 16 folded items of a group, labelled by the most important one."""
    out = []
    for group, items in groups.items():
        for start in range(0, len(items), 16):
            chunk = items[start:start + 16]
            best = max(chunk, key=lambda i: i.importance)
            when = max((i.at for i in chunk if i.at is not None), default=now)
            label = (f"{group.split(' (')[0]}, {len(chunk)} to {minute(when)[:10]}: "
                     f"{one_line(plain(best.text), 70)}")
            out.append(pointer(label, keywords([plain(i.text) for i in chunk]),
                               [i.crystal_id() for i in chunk]))
    return out


_ROUTES = (
    ("curiosity_gaps", r"\?|\b(why|unknown|unclear|investigate|explore|wonder|question|anomal\w*"
                       r"|not sure|figure out|hypothes\w*)\b"),
    ("owner_and_mandate", r"\b(owner|mandate|budget|never|always|must|limits?|caps?|constraints?"
                          r"|do not|don't|forbid\w*|allowed)\b"),
    ("self_concept", r"\b(i am|i'm|my style|my risk|temperament|my strengths?|my weakness\w*"
                     r"|i tend)\b"),
    ("emerging_skills", r"\b(patterns?|tends? to|usually|every time|repeated\w*|learned|skills?"
                        r"|heuristics?|works? (?:best|well) when)\b"),
    ("niche", r"\b(pnl|profit|loss|earned|earnings|revenue|runway|spent|roi|tvl|protocols?)\b"),
)


def route(text: str) -> str:
    """The section a note belongs to, by what it says."""
    low = text.lower()
    return next((key for key, rx in _ROUTES if re.search(rx, low)), "active_context")


POINTERS = "crystal_pointers"
SHARE = {"self_concept": 0.08, "owner_and_mandate": 0.14, "niche": 0.12,
         "active_context": 0.26, POINTERS: 0.22, "curiosity_gaps": 0.09,
         "emerging_skills": 0.09}


def pick_worst(items: Sequence[Item], over: int, most: int = 16) -> list[int]:
    """Positions of up to ``most`` foldable items, least important and oldest first, as
    many as it takes (by estimate: the text goes, its id stays) to save ``over`` chars."""
    order = sorted((i.fold_key(n), n) for n, i in enumerate(items)
                   if not i.protected and not i.blank)
    picked = []
    for _, n in order[:most]:
        picked.append(n)
        over -= len(items[n].text) - len(items[n].crystal_id()) - 1
        if over <= 0:
            break
    return picked

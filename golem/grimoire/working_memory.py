"""Working memory: MEMORY.md as the golem's state vector (seed 004), the pure part.

MEMORY.md is not a summary but a state the dream cycle updates,
New_State = f(Old_State + Scratch_Delta + New_Crystals + Dream_Insights). This
module defines its shape, parses and renders it, checks any rewrite before it may
replace the committed state, and sizes what goes into the system prompt. No I/O
and no clock here: file handling is in memory_file.py, times are passed in.

Required sections (the seed's 7-section schema, adapted to a DeFi golem), in order:

1. Self-Concept       who the golem is becoming: style, risk temperament, strengths, weaknesses
2. Owner and Mandate  the owner, the mandate (strategy, budget, limits), hard constraints
3. Niche              chains, protocols and pools it works in; economic results and runway
4. Active Context     open positions, current regime, pending tasks, frictions, breakthroughs
5. Crystal Pointers   faded topics as one-line search directives (format below)
6. Curiosity Gaps     open questions and anomalies worth exploring
7. Emerging Skills    patterns seen repeatedly, with confidence, not yet in PLAYBOOK.md

Headings match case-insensitively, ignoring a "(...)" suffix; the seed's names
(The Phenotype, The Bond, The Niche) are accepted too. Unknown sections are kept
and reported as warnings.

A crystal pointer is one bullet line: a label, the keywords to recall with, and
optionally the ids of the crystals (episodes, semantic entries) it stands for::

    - Past: Curve 3pool depeg scare → search: `3pool depeg USDC` (crystals: ep-1a2b, sem-77)

("->" is accepted for the arrow and "Past:" is optional when parsing.)

A rewrite is rejected when a required section is missing or repeated, a pointer
line is malformed, it exceeds MAX_MEMORY_CHARS, or a collapse guard trips:
mass drop (< 50% of a mature, > 2000-char previous state), eviction runaway
(> 20 crystal pointers), empty synthesis (< 50 chars of substance under the headers).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from golem.grimoire.errors import InvalidMemory

TITLE = "Working Memory State"
SECTIONS: tuple[tuple[str, str], ...] = (
    ("self_concept", "Self-Concept"),
    ("owner_and_mandate", "Owner and Mandate"),
    ("niche", "Niche"),
    ("active_context", "Active Context"),
    ("crystal_pointers", "Crystal Pointers"),
    ("curiosity_gaps", "Curiosity Gaps"),
    ("emerging_skills", "Emerging Skills"),
)
HEADINGS: dict[str, str] = dict(SECTIONS)

MAX_MEMORY_CHARS = 8000  # ~2000 tokens: the largest bootstrap budget, so it always fits
MASS_DROP_MATURE_CHARS = 2000
MASS_DROP_MIN_RATIO = 0.5
MAX_CRYSTAL_POINTERS = 20
MIN_SUBSTANCE_CHARS = 50
CHARS_PER_TOKEN = 4

MEMORY_LABEL = "Working memory (committed state, rewritten by the dream cycle):"
SCRATCH_LABEL = "Unsynthesized notes (pending dream consolidation):"
TRUNCATED_NOTE = "[Full working memory available via memory_search]"


def _norm(heading: str) -> str:
    name = re.sub(r"\s*\(.*\)\s*$", "", heading).lower().replace("&", "and").replace("-", " ")
    return " ".join(name.split())


_KEYS: dict[str, str] = {_norm(h): k for k, h in SECTIONS} | {
    "the phenotype": "self_concept", "phenotype": "self_concept",
    "the bond": "owner_and_mandate", "bond": "owner_and_mandate", "the niche": "niche",
}


def section_key(heading: str) -> str | None:
    """The canonical key of a section heading, or None for an unknown section."""
    return _KEYS.get(_norm(heading))


# -- golem time as text ---------------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MAX_TIME = 253402300799.0  # 9999-12-31T23:59:59Z
_ISO = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?Z")


def golem_time_ms(now: float, name: str = "now") -> int:
    """Validate golem time (epoch seconds) and return it in whole milliseconds."""
    if (isinstance(now, bool) or not isinstance(now, int | float) or not math.isfinite(now)
            or not 0 <= now < _MAX_TIME):
        raise InvalidMemory(f"{name}: must be golem time in epoch seconds, got {now!r}")
    return round(now * 1000)


def iso_time(ms: int) -> str:
    """UTC ISO-8601 with milliseconds, e.g. 2026-03-12T14:30:00.000Z."""
    stamp = (_EPOCH + timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{ms % 1000:03d}Z"


def parse_iso_time(text: str) -> int:
    """Milliseconds since the epoch; raises ValueError on anything but our format."""
    m = _ISO.fullmatch(text)
    if m is None:
        raise ValueError(f"not a UTC timestamp: {text!r}")
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    dt = datetime(y, mo, d, h, mi, s, tzinfo=UTC)
    return (dt - _EPOCH) // timedelta(milliseconds=1) + int(m.group(7) or 0)


# -- crystal pointers ---------------------------------------------------------------------

_POINTER = re.compile(
    r"^\s*[-*]\s+(?:Past:\s*)?+(?P<label>\S.*?)\s*(?:→|->)\s*search:\s*`(?P<kw>[^`]+)`"
    r"(?:\s*\(crystals?:(?P<ids>[^)]*)\))?\s*$", re.IGNORECASE)
_ARROW_SEARCH = re.compile(r"(?:→|->)\s*search:", re.IGNORECASE)
_CRYSTAL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+\.)(?:\s+|$)")


@dataclass(frozen=True)
class CrystalPointer:
    """A faded topic compressed to a search directive: infinite memory, finite tokens."""

    label: str
    keywords: tuple[str, ...]
    crystal_ids: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        label = self.label
        if (not label or label != label.strip() or len(label) > 160 or "`" in label
                or "\n" in label or "\r" in label or _ARROW_SEARCH.search(label)):
            raise InvalidMemory(f"crystal pointer label: one line of 1-160 chars, got {label!r}")
        if not 1 <= len(self.keywords) <= 12 or any(
                not k or len(k) > 64 or "`" in k or len(k.split()) != 1 or k != k.strip()
                for k in self.keywords):
            raise InvalidMemory(f"crystal pointer keywords: 1-12 words, got {self.keywords!r}")
        if len(self.crystal_ids) > 16 or any(
                not _CRYSTAL_ID.fullmatch(i) for i in self.crystal_ids):
            raise InvalidMemory(f"crystal pointer ids: up to 16 ids, got {self.crystal_ids!r}")

    @property
    def query(self) -> str:
        """What to pass to recall to pull the crystals back."""
        return " ".join(self.keywords)

    def render(self) -> str:
        ids = f" (crystals: {', '.join(self.crystal_ids)})" if self.crystal_ids else ""
        return f"- Past: {self.label} → search: `{self.query}`{ids}"

    @classmethod
    def parse(cls, line: str) -> CrystalPointer | None:
        """The pointer on this line, or None when it is not a well-formed pointer."""
        m = _POINTER.match(line)
        if m is None:
            return None
        ids = tuple(i.strip() for i in (m.group("ids") or "").split(",") if i.strip())
        try:
            return cls(m.group("label"), tuple(m.group("kw").split()), ids)
        except InvalidMemory:
            return None


# -- the document -------------------------------------------------------------------------

@dataclass(frozen=True)
class MemorySection:
    heading: str  # as written, e.g. "Active Context (Dopamine/Cortisol-Weighted)"
    body: str = ""  # without surrounding blank lines

    @property
    def key(self) -> str | None:
        return section_key(self.heading)


def _content_lines(body: str) -> list[str]:
    """Lines outside code fences."""
    out, fenced = [], False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return out


@dataclass(frozen=True)
class WorkingMemory:
    """Parsed MEMORY.md; sections in file order, unknown ones kept."""

    sections: tuple[MemorySection, ...]
    title: str | None = TITLE
    last_dream: float | None = None  # golem time of the dream that wrote it (ms precision)
    mood: str | None = None
    preamble: str = ""  # text between the title/meta line and the first section

    def section(self, key: str) -> MemorySection | None:
        return next((s for s in self.sections if s.key == key), None)

    def missing_sections(self) -> tuple[str, ...]:
        present = {s.key for s in self.sections}
        return tuple(h for k, h in SECTIONS if k not in present)

    def unknown_sections(self) -> tuple[str, ...]:
        return tuple(s.heading for s in self.sections if s.key is None)

    def _pointer_lines(self) -> list[str]:
        sec = self.section("crystal_pointers")
        lines = _content_lines(sec.body) if sec else []
        return [line for line in lines if _BULLET.match(line) and _BULLET.sub("", line).strip()]

    def crystal_pointers(self) -> tuple[CrystalPointer, ...]:
        found = (CrystalPointer.parse(line) for line in self._pointer_lines())
        return tuple(p for p in found if p is not None)

    def malformed_pointer_lines(self) -> tuple[str, ...]:
        return tuple(ln for ln in self._pointer_lines() if CrystalPointer.parse(ln) is None)

    def substance_chars(self) -> int:
        """Characters of real content under the required headings (hints excluded)."""
        total = 0
        for sec in (x for x in self.sections if x.key):
            for line in _content_lines(sec.body):
                s = _BULLET.sub("", line.strip()).strip()
                hint = len(s) > 1 and s[0] == s[-1] == "_"
                if s and not hint and not s.startswith("<!--"):
                    total += len(s)
        return total


_TITLE = re.compile(r"^# +(\S.*?)\s*$")
_HEADING = re.compile(r"^## +(\S.*?)\s*$")
_META = re.compile(r"^_Last dream: (?P<ts>never|\S+?)(?: \| Mood: (?P<mood>.*))?_$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


def _trim(lines: list[str]) -> list[str]:
    start = next((i for i, ln in enumerate(lines) if ln.strip()), len(lines))
    end = max((i + 1 for i, ln in enumerate(lines) if ln.strip()), default=start)
    return lines[start:end]


def parse_memory(text: str) -> WorkingMemory:
    """Parse MEMORY.md leniently; ``validate_rewrite`` says whether it is acceptable."""
    head: list[str] = []
    found: list[tuple[str, list[str]]] = []
    fenced = False
    for raw in text.split("\n"):
        line = raw.removesuffix("\r")
        heading = None if fenced else _HEADING.match(line)
        if _FENCE.match(line):
            fenced = not fenced
        if heading:
            found.append((heading.group(1), []))
        else:
            (found[-1][1] if found else head).append(line)
    head = _trim(head)
    title = None
    if head and (t := _TITLE.match(head[0])):
        title, head = t.group(1), _trim(head[1:])
    last_dream, mood = None, None
    if head and (m := _META.match(head[0])):
        try:
            ts = m.group("ts")
            last_dream = None if ts == "never" else parse_iso_time(ts) / 1000
            mood, head = m.group("mood"), _trim(head[1:])
        except ValueError:
            last_dream = None
    sections = tuple(MemorySection(h, "\n".join(_trim(body))) for h, body in found)
    return WorkingMemory(sections, title, last_dream, mood, "\n".join(head))


def render_memory(memory: WorkingMemory) -> str:
    blocks = [f"# {memory.title}"] if memory.title is not None else []
    if memory.last_dream is not None or memory.mood is not None:
        ts = "never" if memory.last_dream is None else iso_time(round(memory.last_dream * 1000))
        mood = "" if memory.mood is None else f" | Mood: {memory.mood}"
        blocks.append(f"_Last dream: {ts}{mood}_")
    if memory.preamble:
        blocks.append(memory.preamble)
    blocks += [f"## {s.heading}" + (f"\n\n{s.body}" if s.body else "") for s in memory.sections]
    return "\n\n".join(blocks) + "\n"


_STARTER: dict[str, str] = {
    "self_concept": "I am {name}, a newly made golem. I have no experience of my own yet: "
                    "what I know comes from my mandate and my playbook.",
    "owner_and_mandate": "Mandate: {mandate}",
    "niche": "_Chains, protocols and pools I work in; my results and runway._\n\n"
             "No markets observed yet.",
    "active_context": "No open positions and no pending tasks. No dream cycle has run yet.",
    "crystal_pointers": "_Faded topics. Recall with these keywords when they come up again:_",
    "curiosity_gaps": "Everything about my markets is still unknown.",
    "emerging_skills": "_Patterns seen repeatedly, not yet in PLAYBOOK.md:_",
}


def starter_memory(name: str, mandate: str) -> WorkingMemory:
    """A valid, structured initial state for a golem that has not dreamed yet."""
    name, mandate = name.strip(), mandate.strip()
    if not name or "\n" in name or len(name) > 64:
        raise InvalidMemory(f"golem name: one line of 1-64 chars, got {name!r}")
    if not mandate or len(mandate) > 2000 or any(
            ln.lstrip().startswith("#") or _FENCE.match(ln) for ln in mandate.split("\n")):
        raise InvalidMemory("mandate: 1-2000 chars of text with no markdown headings or fences")
    bodies = {k: v.format(name=name, mandate=mandate) for k, v in _STARTER.items()}
    return WorkingMemory(tuple(MemorySection(h, bodies[k]) for k, h in SECTIONS), mood="new")


# -- validation ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ValidationResult:
    ok: bool
    problems: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    memory: WorkingMemory | None = None  # the parsed new state


def validate_rewrite(old: WorkingMemory | None, new_text: str,
                     max_chars: int = MAX_MEMORY_CHARS) -> ValidationResult:
    """Whether ``new_text`` may replace ``old`` as the committed state, and why not."""
    if not isinstance(new_text, str) or not new_text.strip():
        return ValidationResult(False, ("MEMORY.md rewrite is empty",))
    new = parse_memory(new_text)
    problems: list[str] = []
    if len(new_text) > max_chars:
        problems.append(f"MEMORY.md is {len(new_text)} chars; the cap is {max_chars} "
                        f"(about {max_chars // CHARS_PER_TOKEN} tokens)")
    problems += [f"missing required section '## {h}'" for h in new.missing_sections()]
    keys = [s.key for s in new.sections if s.key]
    problems += [f"section '## {HEADINGS[k]}' appears {keys.count(k)} times"
                 for k, _ in SECTIONS if keys.count(k) > 1]
    problems += [f"malformed crystal pointer (expected '- Past: label → search: `keywords`'):"
                 f" {line.strip()[:80]!r}" for line in new.malformed_pointer_lines()]
    pointers = len(new.crystal_pointers())
    if pointers > MAX_CRYSTAL_POINTERS:
        problems.append(f"eviction runaway: {pointers} crystal pointers (max "
                        f"{MAX_CRYSTAL_POINTERS}); active topics are being evicted")
    substance = new.substance_chars()
    if not new.missing_sections() and substance < MIN_SUBSTANCE_CHARS:
        problems.append(f"empty synthesis: {substance} chars of substance under the section "
                        f"headers (min {MIN_SUBSTANCE_CHARS})")
    if old is not None:
        before, after = len(render_memory(old).strip()), len(new_text.strip())
        if before > MASS_DROP_MATURE_CHARS and after < MASS_DROP_MIN_RATIO * before:
            problems.append(f"mass drop: new state is {after} chars, {100 * after // before}% "
                            f"of the previous {before} (min {MASS_DROP_MIN_RATIO:.0%} once "
                            f"past {MASS_DROP_MATURE_CHARS} chars)")
    warnings = [f"unknown section '## {h}' kept" for h in new.unknown_sections()]
    order = [k for k, _ in SECTIONS]
    if keys != sorted(keys, key=order.index):
        warnings.append("required sections are out of the usual order")
    return ValidationResult(not problems, tuple(problems), tuple(warnings), new)


# -- bootstrap ----------------------------------------------------------------------------

"""Validated heuristics proposed into PLAYBOOK.md (seed 000: episodes -> insights ->
heuristics -> PLAYBOOK.md).

Pure. A HEURISTIC entry (or a PROCEDURAL fact) that stays ACTIVE and has been
useful often enough at a high enough confidence is proposed once: one bullet
under "## Proposed by the curator" naming its entry id, which is how a later
cycle knows it is already there. Entry text can carry on-chain strings, and the
playbook sits in the stable prompt prefix, so bullets are cleaned (no controls,
bidi or invisible characters, one line, bounded).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from golem.chain.untrusted import clean
from golem.consolidation.curator import CuratorParams
from golem.grimoire.records import EntryType, FactKind, SemanticEntry, Status

SECTION = "## Proposed by the curator"
NO_RULES = "No rules learned yet."  # the starter playbook's placeholder line
MAX_BULLET_CHARS = 300
_ENTRY_ID = re.compile(r"\(entry (?P<id>[^\s;)]+)")


@dataclass(frozen=True)
class Proposal:
    entry_id: str
    text: str
    confidence: float
    successful_recalls: int

    def bullet(self) -> str:
        return (f"- {clean(self.text, MAX_BULLET_CHARS)} (entry {clean(self.entry_id, 80)}; "
                f"confidence {self.confidence:.2f}, {self.successful_recalls} useful recalls)")


def proposed_ids(playbook_text: str) -> set[str]:
    """Entry ids the playbook already names, wherever they are."""
    return {m.group("id") for m in _ENTRY_ID.finditer(playbook_text)}


def is_heuristic(e: SemanticEntry) -> bool:
    return e.entry_type == EntryType.HEURISTIC or e.fact_kind == FactKind.PROCEDURAL


def select_heuristics(entries: Iterable[SemanticEntry], namespace: str, already: set[str],
                      confidence: Callable[[SemanticEntry], float],
                      params: CuratorParams) -> list[Proposal]:
    """ACTIVE heuristics validated over enough uses and not yet in the playbook, the most
    confident first, at most ``max_proposals``."""
    chosen = []
    for e in entries:
        conf = confidence(e)
        if (e.namespace == namespace and e.status == Status.ACTIVE and is_heuristic(e)
                and e.id not in already and e.successful_recalls >= params.playbook_min_recalls
                and conf >= params.playbook_min_confidence):
            chosen.append(Proposal(e.id, e.text, conf, e.successful_recalls))
    chosen.sort(key=lambda p: (-p.confidence, -p.successful_recalls, p.entry_id))
    return chosen[:params.max_proposals]


def with_proposals(playbook_text: str, proposals: Sequence[Proposal]) -> str:
    """The playbook with the new bullets at the end of the curator's section (created at
    the end of the file the first time; the starter's placeholder line goes)."""
    have = proposed_ids(playbook_text)
    bullets = [p.bullet() for p in proposals if p.entry_id not in have]
    if not bullets:
        return playbook_text
    lines = playbook_text.rstrip("\n").split("\n")
    if SECTION not in (line.rstrip() for line in lines):
        lines = [line for line in lines if line.strip() != NO_RULES]
        while lines and not lines[-1].strip():
            lines.pop()
        return "\n".join([*lines, "", SECTION, "", *bullets]) + "\n"
    start = next(i for i, line in enumerate(lines) if line.rstrip() == SECTION)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")),
               len(lines))
    last = end
    while last > start + 1 and not lines[last - 1].strip():
        last -= 1
    body = lines[:last] if last > start + 1 else [*lines[:start + 1], ""]
    tail = lines[end:]
    return "\n".join([*body, *bullets, *(["", *tail] if tail else [])]) + "\n"

"""Reinforcement on use (the testing effect) from Theta's scored decisions.

A decision names the grimoire:// sources it relied on; once its predictions are
scored, each semantic entry it relied on is reinforced as useful (quality at or
above ``useful_quality``) or not. This is what gives ``successful_recalls`` and
recall-driven confidence their meaning: the curator promotes and the playbook
takes heuristics from them. Episodes are not reinforced here (their quality gate
is consolidation's). Each scored tick is used once: a cursor remembers the last.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import structlog

from golem.cognition.journal import JournalReader
from golem.grimoire.grimoire import Grimoire
from golem.runtime import jsondecode

log = structlog.get_logger("golem.consolidation.recall_feedback")

SCHEME = "grimoire://"


def entry_ids(uris: Iterable[str]) -> list[str]:
    """Semantic entry ids from grimoire://namespace/type/id sources (episodes skipped)."""
    ids: list[str] = []
    for uri in uris:
        if not isinstance(uri, str) or not uri.startswith(SCHEME):
            continue
        parts = uri[len(SCHEME):].split("/")
        if len(parts) == 3 and parts[1] != "episode" and parts[2] and parts[2] not in ids:
            ids.append(parts[2])
    return ids


def relied_on(record: dict[str, Any]) -> list[str]:
    """The sources a decision record says it relied on: its referenced list and citations."""
    decision = record.get("decision") or {}
    return entry_ids([*decision.get("referenced", ()), *record.get("cited", ())])


@dataclass(frozen=True)
class FeedbackReport:
    ticks: int
    useful: int
    not_useful: int
    missing: int
    last_tick: int


class RecallFeedback:
    def __init__(self, grimoire: Grimoire, journal: JournalReader, *,
                 useful_quality: float = 0.5, batch: int = 500) -> None:
        self.grimoire = grimoire
        self.journal = journal
        self.useful_quality = useful_quality
        self.batch = batch

    async def run(self, after_tick: int) -> FeedbackReport:
        """Reinforce the entries of decisions scored after ``after_tick``."""
        rows = await anyio.to_thread.run_sync(self._scored, after_tick)
        # every reinforcement of the batch in one store call (one transaction, one fsync)
        items = [(entry_id, quality >= self.useful_quality)
                 for _tick, quality, record in rows for entry_id in relied_on(record)]
        found = await self.grimoire.reinforce_many(items)
        judged = [good for (_, good), there in zip(items, found, strict=True) if there]
        useful, not_useful = sum(judged), len(judged) - sum(judged)
        missing = len(items) - len(judged)
        if missing:  # forgotten since the decision
            log.debug("reinforcements skipped: entries no longer stored", count=missing)
        last = rows[-1][0] if rows else after_tick
        if rows:
            log.info("recall feedback", ticks=len(rows), useful=useful, not_useful=not_useful,
                     missing=missing, last_tick=last)
        return FeedbackReport(len(rows), useful, not_useful, missing, last)

    def _scored(self, after_tick: int) -> list[tuple[int, float, dict[str, Any]]]:
        rows = self.journal.scored_decisions(after_tick, limit=self.batch)
        return [(t, q, jsondecode.loads(r)) for t, q, r in rows]

"""The decision journal grows by a decision a Theta tick for the golem's whole life, so what
a tick does to it (record, settle, Loop 2's read) must find its rows by index, not by
reading every prediction or outcome (which made each Theta tick slower the older the
golem: 5.5 ms a tick at golem day 13 of a month run, against microseconds)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from golem.cognition.journal import DecisionJournal

# The shapes of the journal's per-tick statements that look rows up by tick.
PER_TICK = (
    "DELETE FROM predictions WHERE tick = 7",
    "UPDATE outcomes SET quality = (SELECT AVG(p.quality) FROM predictions p "
    "WHERE p.tick = outcomes.tick AND p.quality IS NOT NULL) "
    "WHERE tick = (SELECT tick FROM predictions WHERE id = 7)",
    "SELECT tick, quality FROM outcomes WHERE learned = 0 AND quality IS NOT NULL "
    "ORDER BY tick",
)
# A scan that reads only a partial index of the rows not yet learnt from (Loop 2 marks
# them learnt, so that index stays small).
BOUNDED_SCANS = {"SCAN outcomes USING INDEX outcomes_unlearned"}


def test_what_a_tick_does_to_the_journal_reads_no_table_whole(tmp_path: Path) -> None:
    journal = DecisionJournal.open(tmp_path)
    path = journal.path
    journal.close()
    conn = sqlite3.connect(path)
    try:
        for statement in PER_TICK:
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]
            scans = [step for step in plan if step.startswith("SCAN")]
            assert plan and set(scans) <= BOUNDED_SCANS, (statement, plan)
    finally:
        conn.close()

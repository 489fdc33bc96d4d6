"""Succession arms: a successor golem on a new market, fresh or booted from its parent's
testament, and the control that inherits the same entries with their content shuffled.

The parent of seed N is the ``full`` arm's life on seed N. Once its life is measured it
dies (``golem die``: the Thanatopsis protocol writes its testament). The successors of
seed N all run on market seed ``N + SUCCESSOR_SEED_OFFSET``: the same kind of market,
another path, so what crosses is the parent's lessons, not a memory of the successor's
own future. ``fresh`` inherits nothing, ``testament`` the parent's testament as written,
``shuffled-testament`` the output of ``shuffled``.

``shuffled`` keeps every entry (kind, confidence, importance, generation, what a fact is
about) and moves content between entries of the same kind and fact kind with a seeded
permutation: an entry's text, and the measurements of its fact (its numeric fields). The
string fields of a fact (a conditional outcome's feed, regime and move bucket) stay, so a
situation now carries another situation's outcome; a conditional outcome's text is
re-rendered from the numbers it now holds, so its text and numbers still agree. The
testament keeps its size, its token count and its kinds; only what its entries say about
which situation is destroyed.
"""

from __future__ import annotations

import dataclasses
import random
from collections import defaultdict
from typing import Any

from golem.consolidation.outcomes import outcome_text
from golem.grimoire.records import FactKind
from golem.mortality.testament import Testament, TestamentEntry

SUCCESSOR_SEED_OFFSET = 1_000_000
PARENT_ARM = "full"
# arm -> what it inherits
SUCCESSORS = {"fresh": None, "testament": "as written", "shuffled-testament": "shuffled"}


def market_seed(arm: str, seed: int) -> int:
    """The market seed a run of ``arm`` on design seed ``seed`` lives on."""
    return seed + SUCCESSOR_SEED_OFFSET if arm in SUCCESSORS else seed


def shuffled(testament: Testament, seed: int) -> Testament:
    """The control testament (module docstring); the same seed, the same shuffle."""
    rng = random.Random(f"lab-shuffle-{seed}")  # noqa: S311 - a seeded experiment, no secret
    groups: dict[tuple[str, str | None], list[int]] = defaultdict(list)
    for i, entry in enumerate(testament.entries):
        groups[(entry.kind.value, entry.fact_kind)].append(i)
    entries = list(testament.entries)
    for members in groups.values():
        if len(members) < 2:
            continue
        donors = members[:]
        while donors == members:  # a permutation that moves something
            rng.shuffle(donors)
        for target, donor in zip(members, donors, strict=True):
            entries[target] = _take_content(testament.entries[target],
                                            testament.entries[donor])
    return dataclasses.replace(testament, entries=tuple(entries))


def _take_content(entry: TestamentEntry, donor: TestamentEntry) -> TestamentEntry:
    fact: dict[str, Any] = dict(entry.fact)
    for key, value in donor.fact.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            fact[key] = value
    text = donor.text
    if entry.fact_kind == FactKind.CONDITIONAL_OUTCOME.value:
        try:
            text = outcome_text(fact)
        except (KeyError, TypeError, ValueError):
            text = donor.text  # a malformed fact: the donor's text, as for any other entry
    return dataclasses.replace(entry, text=text, fact=fact)

"""The deterministic working-memory rewrite and the seed-crystal migration (pure)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from golem.consolidation.rewrite import (
    RewriteInputs,
    RewriteParams,
    route,
    synthesise,
)
from golem.consolidation.seed_migration import SEED_HEADING, needs_migration, seed_chunks
from golem.grimoire.working_memory import (
    MAX_MEMORY_CHARS,
    parse_memory,
    render_memory,
    validate_rewrite,
)

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
DAY = 86400.0
NAME, MANDATE = "Ada", "Market-make ETH/USDC with at most 5k USDC at risk."


def inputs(old: str | None, notes=(), crystals=(), insights=(), now: float = NOW,
           ) -> RewriteInputs:
    return RewriteInputs(old, list(notes), list(crystals), list(insights), now, NAME, MANDATE)


def body(text: str, key: str) -> str:
    sec = parse_memory(text).section(key)
    assert sec is not None
    return sec.body


NOTES = [
    ("n1", "Why does gas spike at 14:00 UTC on weekdays?", 0.8, NOW - 500),
    ("n2", "Owner says: never hold more than 10k USDC in one pool", 0.9, NOW - 400),
    ("n3", "ETH/USDC 0.05% pool volume doubled after the CPI print", 0.7, NOW - 300),
    ("n4", "Liquidations tend to cluster after oracle updates (seen 4 times)", 0.7, NOW - 200),
    ("n5", "Earned 41 USDC in fees this week; runway 212 days", 0.6, NOW - 100),
    ("n6", "block 19,000,123 arrived late", 0.1, NOW - 50),
]


def test_notes_land_in_the_sections_they_belong_to() -> None:
    r = synthesise(inputs(None, NOTES, [("sem-9", "Curve 3pool depeg scare", ["3pool", "depeg"])],
                          [("ins-1", "Gas spikes follow NFT mints", 0.25),
                           ("ins-2", "Sandwiches avoid pools under $1M TVL", 0.8)]))
    expect = {"n1": "curiosity_gaps", "n2": "owner_and_mandate", "n3": "active_context",
              "n4": "emerging_skills", "n5": "niche"}
    for nid, key in expect.items():
        assert f"scratch-{nid}]" in body(r.text, key), (nid, key)
    assert "Mandate: " + MANDATE in body(r.text, "owner_and_mandate")
    wm = parse_memory(r.text)
    ptrs = {p.label: p for p in wm.crystal_pointers()}
    assert ptrs["Curve 3pool depeg scare"].crystal_ids == ("sem-9",)
    minor = next(p for p in ptrs.values() if "scratch-n6" in p.crystal_ids)  # low importance
    assert "scratch-n6" not in body(r.text, "active_context") and minor.keywords
    assert "Hypothesis to test: Gas spikes" in body(r.text, "curiosity_gaps")
    assert "ins-2]" in body(r.text, "emerging_skills")
    assert "No markets observed yet." not in body(r.text, "niche")  # placeholder replaced
    assert validate_rewrite(None, r.text).ok
    assert r.to_index == () and r.folded == 1 and wm.last_dream == NOW


def test_routing_by_content() -> None:
    assert route("Is the oracle stale?") == "curiosity_gaps"
    assert route("Budget cap is 5k") == "owner_and_mandate"
    assert route("I tend to exit too early") == "self_concept"
    assert route("Opened an LP position on WETH/DAI") == "active_context"


def test_synthesis_is_deterministic_and_order_independent() -> None:
    base = synthesise(inputs(None, NOTES[:3])).text
    shuffled = NOTES[:]
    random.Random(7).shuffle(shuffled)
    a, b = synthesise(inputs(base, NOTES)), synthesise(inputs(base, shuffled))
    assert a.text == b.text and a == b


def test_a_replayed_cycle_adds_nothing_twice() -> None:
    """After a crash between the write and the scratch consume, the notes come again."""
    first = synthesise(inputs(None, NOTES)).text
    again = synthesise(inputs(first, NOTES, now=NOW + 60))
    assert again.placed == {} and again.folded == 0
    assert again.text.replace("00:01:00.000Z", "00:00:00.000Z") == first


def test_faded_active_context_becomes_a_pointer_with_its_ids() -> None:
    old = synthesise(inputs(None, [("old1", "Watching the WBTC/ETH pool rebalance", 0.7,
                                    NOW - 10 * DAY)], now=NOW - 10 * DAY)).text
    r = synthesise(inputs(old, [("new1", "Opened a position on WETH/DAI", 0.7, NOW)]))
    active = body(r.text, "active_context")
    assert "scratch-new1" in active and "scratch-old1" not in active
    ptr = next(p for p in parse_memory(r.text).crystal_pointers()
               if "scratch-old1" in p.crystal_ids)
    assert "WBTC/ETH" in ptr.keywords and r.folded == 1
    assert r.to_index == ()  # a note's crystal already exists: scratch-<id>


@given(st.lists(st.tuples(st.text(min_size=1, max_size=600).filter(str.strip),
                          st.floats(0, 1), st.floats(0, 30 * DAY)), max_size=60),
       st.integers(1, 4))
def test_every_cycle_stays_valid_and_within_the_cap(raw: list[tuple[str, float, float]],
                                                    cycles: int) -> None:
    text: str | None = None
    per = max(1, len(raw) // cycles)
    for c in range(cycles):
        now = NOW + (c + 1) * 30 * DAY
        notes = [(f"h{c}x{i}", t, round(imp, 2), now - age)
                 for i, (t, imp, age) in enumerate(raw[c * per:(c + 1) * per])]
        r = synthesise(inputs(text, notes, now=now))
        old = None if text is None else parse_memory(text)
        result = validate_rewrite(old, r.text, r.max_chars)
        assert result.ok, result.problems
        assert len(r.text) <= MAX_MEMORY_CHARS
        assert len(parse_memory(r.text).crystal_pointers()) <= RewriteParams().max_pointers
        text = r.text


def test_over_full_sections_fold_least_important_oldest_first_and_nothing_silently() -> None:
    notes = [(f"n{i:03d}", f"Pool {i} saw a swap of {i * 7} ETH with impact {i % 9}.{i % 7}%",
              0.4 + (i % 5) / 10, NOW - (200 - i) * 60) for i in range(200)]
    r = synthesise(inputs(None, notes))
    assert len(r.text) <= RewriteParams().target_chars and r.folded > 100
    wm = parse_memory(r.text)
    kept = body(r.text, "active_context")
    pointed = {c for p in wm.crystal_pointers() for c in p.crystal_ids}
    ids = [f"scratch-{n[0]}" for n in notes]
    shown = [i for i in ids if i + "]" in kept]
    assert shown and min(notes[ids.index(i)][2] for i in shown) >= 0.6  # most important stay
    # what is not shown is pointed at, unless pointers had to merge (then keywords still find)
    assert len(set(ids) - set(shown) - pointed) <= 16 * r.merged


def test_a_collapsing_rewrite_is_rejected() -> None:
    notes = [(f"m{i}", f"Position {i}: LP in pool {i} with range {i}-{i + 5} ticks", 0.7,
              NOW - i) for i in range(60)]
    mature = synthesise(inputs(None, notes)).text
    assert len(mature) > 2000
    collapsed = mature[: len(mature) // 10]
    result = validate_rewrite(parse_memory(mature), collapsed)
    assert not result.ok
    shrunk = "\n".join(line for line in mature.split("\n") if not line.startswith("- "))
    assert any("mass drop" in p for p in validate_rewrite(parse_memory(mature), shrunk).problems)


HAND_WRITTEN = """# My notes for the golem

Remember: the owner is Douglas and he checks in on Mondays.

## Pools

- ETH/USDC 0.05% is the main pool
- avoid anything under $100k TVL

## Active Context

Testing the new range strategy since March.

```
## not a heading inside a fence
```
"""


def test_a_hand_written_memory_is_migrated_conservatively() -> None:
    assert needs_migration(HAND_WRITTEN) and not needs_migration(None)
    r = synthesise(inputs(HAND_WRITTEN, NOTES[:3]))
    assert r.migrated and r.folded == 0
    wm = parse_memory(r.text)
    assert wm.missing_sections() == ()
    assert [s.heading for s in wm.sections if s.key is None] == [SEED_HEADING]
    seed = next(s.body for s in wm.sections if s.heading == SEED_HEADING)
    for line in HAND_WRITTEN.strip().split("\n"):
        kept = line.lstrip("#").strip()
        assert kept in seed, line
    assert "#### Active Context" in seed and "## not a heading inside a fence" in seed
    result = validate_rewrite(parse_memory(HAND_WRITTEN), r.text, r.max_chars)
    assert result.ok, result.problems
    chunks = seed_chunks(HAND_WRITTEN)
    assert [c[0] for c in r.to_index] == [c[0] for c in chunks]
    assert "scratch-n2]" in body(r.text, "owner_and_mandate")


def test_after_migration_later_cycles_take_over_gradually_and_lose_nothing() -> None:
    paragraphs = [f"Paragraph {i}: the pool {i} had a quirk worth keeping, fee tier {i}bp, "
                  f"seen on chain {i % 3}." * 3 for i in range(120)]
    original = "# Hand notes\n\n" + "\n\n".join(paragraphs) + "\n"
    assert len(original) > 3 * MAX_MEMORY_CHARS
    text = synthesise(inputs(original)).text
    old_text, crystals, cycles = original, 0, 0
    while SEED_HEADING in text or len(text) > MAX_MEMORY_CHARS:
        cycles += 1
        r = synthesise(inputs(text, now=NOW + cycles * DAY))
        result = validate_rewrite(parse_memory(text), r.text, r.max_chars)
        assert result.ok, (cycles, result.problems)
        assert len(r.text) >= 0.5 * len(text)
        crystals += len(r.to_index)
        old_text, text = text, r.text
        assert cycles < 40
    assert old_text and len(text) <= MAX_MEMORY_CHARS
    assert crystals >= len(paragraphs)  # every folded paragraph got its own crystal


def test_render_round_trips_the_synthesised_state() -> None:
    r = synthesise(inputs(None, NOTES))
    assert render_memory(parse_memory(r.text)) == r.text


def test_many_new_crystals_merge_into_at_most_max_pointers() -> None:
    crystals = [(f"sem-{i}", f"Topic {i}: pool {i} fee change", [f"pool{i}", "fee"])
                for i in range(40)]
    r = synthesise(inputs(None, crystals=crystals))
    ptrs = parse_memory(r.text).crystal_pointers()
    assert len(ptrs) <= RewriteParams().max_pointers and r.merged > 0
    assert validate_rewrite(None, r.text).ok
    assert ptrs[-1].crystal_ids == ("sem-39",)  # the newest stay whole; the oldest merge
    again = synthesise(inputs(r.text, crystals=crystals[-5:], now=NOW + 60))
    assert parse_memory(again.text).crystal_pointers() == ptrs  # known ids: nothing added

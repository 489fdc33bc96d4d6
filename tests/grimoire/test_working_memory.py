"""MEMORY.md: schema, parse/render, crystal pointers, collapse guards, bootstrap, file I/O."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.bootstrap import bootstrap_budget, bootstrap_text
from golem.grimoire.errors import InvalidMemory, StoreCorrupt
from golem.grimoire.memory_file import (
    RewriteRejected,
    WriterBusy,
    load_memory,
    prev_path,
    write_memory,
)
from golem.grimoire.scratch import make_note
from golem.grimoire.working_memory import (
    HEADINGS,
    MEMORY_LABEL,
    SCRATCH_LABEL,
    SECTIONS,
    TRUNCATED_NOTE,
    CrystalPointer,
    MemorySection,
    WorkingMemory,
    parse_memory,
    render_memory,
    starter_memory,
    validate_rewrite,
)

from ..conftest import child_env

T0 = 1_773_325_800.0  # 2026-03-12T14:30:00Z
MANDATE = "Provide liquidity on Uniswap v3 ETH/USDC within 2% of spot; at most 10k USDC."


def memory_text(bodies: dict[str, str] | None = None, extra: str = "") -> str:
    """A full MEMORY.md with every required section; ``bodies`` overrides some of them."""
    bodies = bodies or {}
    parts = ["# Working Memory State", "_Last dream: 2026-03-12T16:00:00.000Z | Mood: calm_"]
    for key, heading in SECTIONS:
        parts.append(f"## {heading}\n\n{bodies.get(key, f'Something real about {heading}.')}")
    return "\n\n".join(parts) + extra + "\n"


def padded(chars: int) -> str:
    """A valid MEMORY.md of about ``chars`` characters (padding in Active Context)."""
    base = memory_text()
    filler = "Open LP position on ETH/USDC, watching the range edges. "
    reps = max(0, (chars - len(base)) // len(filler) + 1)
    return memory_text({"active_context": (filler * reps).strip()})


def pointers(n: int) -> str:
    return "\n".join(f"- Past: topic {i} → search: `topic{i} pool`" for i in range(n))


# -- schema, parse, render ------------------------------------------------------------

SEED_STYLE = """# Working Memory State

_Last dream: 2026-03-12T16:00:00.000Z | Mood: motivated, socially engaged_

## The Phenotype

A cautious range LP that has learned to widen ranges in volatile regimes.

## The Bond (Oxytocin-Weighted)

Owner prefers weekly summaries; trust is high.

## The Niche

Uniswap v3 on Base; +3.1% over 30 days.

## Active Context (Dopamine/Cortisol-Weighted)

Rebalanced twice today.

```text
## Not a heading: inside a code fence
```

## Crystal Pointers (Deep Memory Awareness)

_Use memory_search if these come up:_

- Past: P2P bridge CORS debugging → search: `CORS P2P EigenTrust`
- Past: Curve 3pool depeg scare -> search: `3pool depeg USDC` (crystals: ep-1a2b, sem-77)

## Curiosity Gaps

Why does gas spike at 14:00 UTC?

## Emerging Skills

- JIT liquidity detection → Confidence: 72% | Occurrences: 4

## Owner Notes

Kept although unknown.
"""


def test_seed_style_memory_parses_with_aliases_and_keeps_unknown_sections() -> None:
    wm = parse_memory(SEED_STYLE)
    assert wm.title == "Working Memory State"
    assert wm.mood == "motivated, socially engaged"
    assert wm.last_dream == 1_773_331_200.0
    assert [s.key for s in wm.sections] == [k for k, _ in SECTIONS] + [None]
    assert wm.missing_sections() == ()
    assert wm.unknown_sections() == ("Owner Notes",)
    assert "## Not a heading" in wm.section("active_context").body  # type: ignore[union-attr]
    assert wm.crystal_pointers() == (
        CrystalPointer("P2P bridge CORS debugging", ("CORS", "P2P", "EigenTrust")),
        CrystalPointer("Curve 3pool depeg scare", ("3pool", "depeg", "USDC"),
                       ("ep-1a2b", "sem-77")),
    )
    result = validate_rewrite(None, SEED_STYLE)
    assert result.ok, result.problems
    assert result.warnings == ("unknown section '## Owner Notes' kept",)


def test_starter_memory_is_valid_and_round_trips() -> None:
    wm = starter_memory("Ada", MANDATE)
    text = render_memory(wm)
    assert parse_memory(text) == wm
    assert [s.heading for s in wm.sections] == [h for _, h in SECTIONS]
    assert MANDATE in wm.section("owner_and_mandate").body  # type: ignore[union-attr]
    result = validate_rewrite(None, text)
    assert result.ok and result.problems == () and result.warnings == ()


@given(st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=64)
       .filter(lambda s: s.strip() and len(s.strip()) <= 64),
       st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=300)
       .filter(lambda s: s.strip() and not s.lstrip().startswith(("#", "```", "~~~"))))
def test_starter_memory_is_valid_for_any_name_and_mandate(name: str, mandate: str) -> None:
    text = render_memory(starter_memory(name, mandate))
    assert validate_rewrite(None, text).ok
    assert parse_memory(text) == starter_memory(name, mandate)


@pytest.mark.parametrize(("name", "mandate"), [
    ("", MANDATE), ("a\nb", MANDATE), ("x" * 65, MANDATE), ("Ada", "  "),
    ("Ada", "fine\n## Self-Concept\nsmuggled"), ("Ada", "x" * 2001),
])
def test_starter_memory_rejects_bad_name_or_mandate(name: str, mandate: str) -> None:
    with pytest.raises(InvalidMemory):
        starter_memory(name, mandate)


_SAFE = st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp"), exclude_characters="\r")


def _body_line() -> st.SearchStrategy[str]:
    return st.text(_SAFE, max_size=40).filter(
        lambda s: not s.startswith("## ") and not s.lstrip(" ").startswith(("```", "~~~"))
        and not (s.startswith("##") and s[2:3] in (" ", "")))


_BODY = st.lists(_body_line(), max_size=6).map(lambda ls: "\n".join(_strip_blank(ls)))


def _strip_blank(lines: list[str]) -> list[str]:
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


_HEADING = st.one_of(st.sampled_from([h for _, h in SECTIONS] + ["The Bond (Oxytocin)"]),
                     st.from_regex(r"[A-Za-z][A-Za-z0-9 ]{0,20}[A-Za-z0-9]", fullmatch=True))
_ONE_LINE = st.text(_SAFE, min_size=1, max_size=30).map(str.strip).filter(bool)


@st.composite
def memories(draw: st.DrawFn) -> WorkingMemory:
    sections = draw(st.lists(st.builds(MemorySection, _HEADING, _BODY), max_size=9))
    return WorkingMemory(
        tuple(sections),
        title=draw(st.none() | _ONE_LINE),
        last_dream=draw(st.none() | st.integers(0, 4_102_444_800_000).map(lambda ms: ms / 1000)),
        mood=draw(st.none() | st.text(_SAFE, max_size=20)),
        preamble=draw(st.just("") | _ONE_LINE.map(lambda s: f"Note: {s}")),
    )


@given(memories())
def test_parse_inverts_render(wm: WorkingMemory) -> None:
    text = render_memory(wm)
    assert parse_memory(text) == wm
    assert render_memory(parse_memory(text)) == text


def test_parse_tolerates_crlf_and_text_without_title() -> None:
    wm = parse_memory(memory_text().replace("\n", "\r\n"))
    assert wm.missing_sections() == () and wm.title == "Working Memory State"
    bare = parse_memory("## Niche\n\nBase\n")
    assert bare.title is None and bare.sections == (MemorySection("Niche", "Base"),)


# -- crystal pointers ------------------------------------------------------------------

_WORD = st.from_regex(r"[A-Za-z0-9$._/-]{1,12}", fullmatch=True)


@given(st.text(st.characters(exclude_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1,
               max_size=60).map(str.strip).filter(bool),
       st.lists(_WORD, min_size=1, max_size=12),
       st.lists(st.from_regex(r"[A-Za-z0-9_.:-]{1,20}", fullmatch=True), max_size=4))
def test_crystal_pointer_round_trips(label: str, kws: list[str], ids: list[str]) -> None:
    try:
        pointer = CrystalPointer(label, tuple(kws), tuple(ids))
    except InvalidMemory:
        return  # labels with backticks or "→ search:" are refused, checked below
    assert CrystalPointer.parse(pointer.render()) == pointer
    assert pointer.query == " ".join(kws)


@pytest.mark.parametrize("label", ["", " padded", "has `tick`", "a → search: x", "two\nlines",
                                   "x" * 161])
def test_crystal_pointer_rejects_bad_labels(label: str) -> None:
    with pytest.raises(InvalidMemory):
        CrystalPointer(label, ("kw",))


@pytest.mark.parametrize("line", [
    "- Past: no search directive",
    "- Past: label → search: ``",
    "- Past: label → search: `kw` (crystals: bad id!)",
    "- Past: → search: `kw`",
    "- Past: label search `kw`",
])
def test_malformed_pointer_lines_are_problems(line: str) -> None:
    assert CrystalPointer.parse(line) is None
    result = validate_rewrite(None, memory_text({"crystal_pointers": f"{pointers(2)}\n{line}"}))
    assert not result.ok
    assert result.problems == (
        f"malformed crystal pointer (expected '- Past: label → search: `keywords`'): {line!r}",)


# -- validation and collapse guards ----------------------------------------------------

def test_eviction_runaway_guard_allows_20_pointers_and_refuses_21() -> None:
    assert validate_rewrite(None, memory_text({"crystal_pointers": pointers(20)})).ok
    result = validate_rewrite(None, memory_text({"crystal_pointers": pointers(21)}))
    assert not result.ok
    assert result.problems == ("eviction runaway: 21 crystal pointers (max 20); "
                               "active topics are being evicted",)


def test_mass_drop_guard_applies_only_to_a_mature_state() -> None:
    mature = parse_memory(padded(4000))
    before = len(render_memory(mature).strip())
    assert before > 2000
    half = padded(before // 2 + 60)
    assert len(half.strip()) >= before / 2
    assert validate_rewrite(mature, half).ok
    small = memory_text()
    result = validate_rewrite(mature, small)
    assert not result.ok and len(result.problems) == 1
    assert result.problems[0].startswith(f"mass drop: new state is {len(small.strip())} chars")
    young = parse_memory(padded(1500))
    assert len(render_memory(young).strip()) <= 2000
    assert validate_rewrite(young, small).ok  # an immature state may shrink freely
    assert validate_rewrite(None, small).ok


def test_mass_drop_threshold_is_exactly_half() -> None:
    old = parse_memory(padded(3000))
    before = len(render_memory(old).strip())
    base = memory_text({"active_context": "A"})
    for target, ok in ((before // 2 + before % 2, True), (before // 2 + before % 2 - 1, False)):
        text = memory_text({"active_context": "A" * (1 + target - len(base.strip()))})
        assert len(text.strip()) == target
        assert validate_rewrite(old, text).ok is ok


def test_empty_synthesis_guard() -> None:
    hollow = memory_text({k: "_none yet_" for k, _ in SECTIONS})
    result = validate_rewrite(None, hollow)
    assert result.problems == ("empty synthesis: 0 chars of substance under the section "
                               "headers (min 50)",)
    terse = memory_text({k: "-" for k, _ in SECTIONS} | {"niche": "x" * 49})
    assert validate_rewrite(None, terse).problems[0].startswith("empty synthesis: 49 chars")
    enough = memory_text({k: "-" for k, _ in SECTIONS} | {"niche": "x" * 50})
    assert validate_rewrite(None, enough).ok


def test_missing_duplicate_and_oversized_sections_are_problems() -> None:
    text = memory_text().replace("## Curiosity Gaps", "## Wonderings")
    result = validate_rewrite(None, text)
    assert result.problems == ("missing required section '## Curiosity Gaps'",)
    assert result.warnings == ("unknown section '## Wonderings' kept",)
    twice = memory_text(extra="\n\n## Niche\n\nAgain.")
    assert validate_rewrite(None, twice).problems == ("section '## Niche' appears 2 times",)
    big = padded(9000)
    assert validate_rewrite(None, big).problems == (
        f"MEMORY.md is {len(big)} chars; the cap is 8000 (about 2000 tokens)",)
    assert validate_rewrite(None, big, max_chars=10_000).ok
    assert validate_rewrite(None, "  \n").problems == ("MEMORY.md rewrite is empty",)


def test_out_of_order_sections_are_a_warning_only() -> None:
    wm = parse_memory(memory_text())
    swapped = WorkingMemory(wm.sections[::-1], wm.title, wm.last_dream, wm.mood)
    result = validate_rewrite(None, render_memory(swapped))
    assert result.ok and result.warnings == ("required sections are out of the usual order",)


# -- bootstrap sizing ---------------------------------------------------------------------

@pytest.mark.parametrize(("window", "memory", "scratch"), [
    (1_000_000, 2000, 1000), (200_000, 2000, 1000), (199_999, 1500, 750), (128_000, 1500, 750),
    (100_000, 1000, 500), (64_000, 1000, 500), (32_000, 800, 400), (31_999, 500, 250),
    (8_192, 500, 250), (2_000, 250, 125), (1_000, 125, 62),
])
def test_bootstrap_budget_table(window: int, memory: int, scratch: int) -> None:
    budget = bootstrap_budget(window)
    assert (budget.memory_tokens, budget.scratch_tokens) == (memory, scratch)
    assert budget.memory_chars == 4 * memory and budget.scratch_chars == 4 * scratch


@given(st.integers(1000, 10**7), st.integers(1000, 10**7))
def test_bootstrap_budget_never_shrinks_with_a_larger_window(a: int, b: int) -> None:
    small, large = bootstrap_budget(min(a, b)), bootstrap_budget(max(a, b))
    assert small.memory_tokens <= large.memory_tokens
    assert small.scratch_tokens <= large.scratch_tokens
    assert small.memory_tokens + small.scratch_tokens <= min(a, b) * 3 // 16


@pytest.mark.parametrize("window", [0, 999, -5, 1.5e5, True])
def test_bootstrap_budget_rejects_bad_windows(window: int) -> None:
    with pytest.raises(InvalidMemory):
        bootstrap_budget(window)


def test_bootstrap_text_injects_both_and_fits_a_largest_valid_memory() -> None:
    text = padded(7900)
    notes = [make_note("owner wants weekly reports", 0.8, T0, "theta")]
    out = bootstrap_text(text, notes, bootstrap_budget(200_000))
    assert out.startswith(MEMORY_LABEL + "\n\n" + text.strip())
    assert TRUNCATED_NOTE not in out
    assert out.endswith(f"{SCRATCH_LABEL}\n\n- [2026-03-12T14:30:00.000Z] (importance 0.80, "
                        "theta) owner wants weekly reports\n")


def test_bootstrap_truncates_memory_at_a_line_with_a_pointer_to_search() -> None:
    text = padded(7900)
    budget = bootstrap_budget(32_000)
    out = bootstrap_text(text, [], budget)
    memory_part = out.split(f"\n\n{SCRATCH_LABEL}")[0].removeprefix(MEMORY_LABEL + "\n\n")
    assert len(memory_part) <= budget.memory_chars
    assert memory_part.endswith("\n" + TRUNCATED_NOTE)
    kept = memory_part.removesuffix("\n" + TRUNCATED_NOTE)
    assert text.startswith(kept) and text[len(kept)] == "\n"
    assert out.endswith(f"{SCRATCH_LABEL}\n\n(none)\n")
    assert "(none yet" in bootstrap_text(None, [], budget)


def test_bootstrap_drops_lowest_importance_then_oldest_notes() -> None:
    notes = [make_note(f"note {i} " + "x" * 60, imp, T0 + i, "theta")
             for i, imp in enumerate([0.9, 0.2, 0.5, 0.2, 0.9, 0.5])]
    line = len(notes[0].prompt_line()) + 1
    budget = bootstrap_budget(32_000)  # 1600 chars of scratch
    assert 1600 // line >= 6
    full = bootstrap_text("m", notes, budget)
    assert all(n.prompt_line() in full for n in notes) and "not shown" not in full
    tight = type(budget)(32_000, 800, (4 * line + 80) // 4)
    out = bootstrap_text("m", notes, tight).split(SCRATCH_LABEL)[1]
    shown = [n for n in notes if n.prompt_line() in out]
    assert [n.text[:6] for n in shown] == ["note 0", "note 2", "note 4", "note 5"]
    assert "[2 older or less important notes not shown; memory_search finds them]" in out
    assert out.index("note 0") < out.index("note 2") < out.index("note 4")  # chronological


@given(st.lists(st.tuples(st.integers(1, 300), st.integers(0, 100), st.integers(0, 10**6)),
                max_size=40),
       st.integers(1000, 300_000))
def test_bootstrap_scratch_always_fits_its_budget(spec: list[tuple[int, int, int]],
                                                  window: int) -> None:
    notes = [make_note("n" * size, imp / 100, T0 + at, "auto") for size, imp, at in spec]
    budget = bootstrap_budget(window)
    out = bootstrap_text("m", notes, budget)
    scratch_part = out.split(f"{SCRATCH_LABEL}\n\n")[1].removesuffix("\n")
    assert len(scratch_part) <= max(budget.scratch_chars, len("(none)"))
    shown = [n for n in notes if n.prompt_line() in scratch_part.split("\n")]
    hidden = [n for n in notes if n not in shown]
    fitting = [n for n in hidden if len(n.prompt_line()) < budget.scratch_chars]
    for h in fitting:  # nothing shown ranks below a note that fitted but was dropped
        assert all((s.importance, s.at) >= (h.importance, h.at) for s in shown)


# -- MEMORY.md on disk ------------------------------------------------------------------

def test_load_missing_memory_returns_none_and_writes_nothing(tmp_path: Path) -> None:
    assert load_memory(tmp_path / "MEMORY.md") is None
    assert list(tmp_path.iterdir()) == []


def test_first_write_then_rewrite_keeps_prev(tmp_path: Path) -> None:
    path = tmp_path / "mem" / "MEMORY.md"
    starter = render_memory(starter_memory("Ada", MANDATE))
    wm = write_memory(path, starter, None)
    assert path.read_text() == starter and not prev_path(path).exists()
    assert load_memory(path) == wm
    new = memory_text().rstrip("\n")
    wm2 = write_memory(path, new, load_memory(path))
    assert path.read_text() == new + "\n" and prev_path(path).read_text() == starter
    assert load_memory(path) == wm2 == parse_memory(new)
    assert sorted(p.name for p in path.parent.iterdir()) == [
        ".MEMORY.md.lock", "MEMORY.md", "MEMORY.md.prev"]


def test_rejected_rewrite_leaves_files_untouched(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    mature = padded(4000)
    write_memory(path, memory_text(), None)
    write_memory(path, mature, load_memory(path))
    prev = prev_path(path).read_bytes()
    with pytest.raises(RewriteRejected) as err:
        write_memory(path, memory_text(), load_memory(path))
    assert err.value.problems[0].startswith("mass drop:")
    assert "mass drop" in str(err.value)
    with pytest.raises(RewriteRejected):
        write_memory(path, memory_text({"crystal_pointers": pointers(25)}), load_memory(path))
    assert path.read_text() == mature and prev_path(path).read_bytes() == prev


def test_write_refuses_a_stale_or_missing_old_state(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_memory(path, padded(4000), None)
    with pytest.raises(RewriteRejected, match="exists; load it again"):
        write_memory(path, memory_text(), None)  # would dodge the mass-drop guard
    stale = load_memory(path)
    write_memory(path, padded(4100), stale)
    with pytest.raises(RewriteRejected, match="changed since it was read"):
        write_memory(path, padded(4200), stale)
    assert path.read_text() == padded(4100)


def test_write_removes_temp_files_of_a_killed_writer(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    (tmp_path / ".MEMORY.md.tmp-999-deadbeef").write_text("half a mem")
    write_memory(path, memory_text(), None)
    assert not list(tmp_path.glob(".*.tmp-*"))


def test_second_writer_is_refused_not_blocked(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    write_memory(path, memory_text(), None)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys; f = open(sys.argv[1], 'a');"
         "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
         str(tmp_path / ".MEMORY.md.lock")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(WriterBusy, match="single writer"):
            write_memory(path, memory_text({"niche": "Base and Arbitrum pools."}),
                         load_memory(path))
    finally:
        holder.communicate("", timeout=10)
    write_memory(path, memory_text({"niche": "Base and Arbitrum pools."}), load_memory(path))


def test_unreadable_memory_is_store_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(b"# Working Memory State\n\xff\xfe broken\n")
    with pytest.raises(StoreCorrupt, match="not UTF-8"):
        load_memory(path)


def test_headings_constant_matches_sections() -> None:
    assert list(HEADINGS.values()) == [h for _, h in SECTIONS]

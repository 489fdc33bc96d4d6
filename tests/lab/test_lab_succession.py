"""The succession control: a shuffled testament keeps its entries and destroys which
situation leads where; it still passes the strict testament parser."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from golem.consolidation.outcomes import outcome_text
from golem.lab.succession import SUCCESSOR_SEED_OFFSET, market_seed, shuffled
from golem.mortality import testament as tm
from golem.mortality.categories import REFLECTION_CATEGORIES
from golem.mortality.testament_model import PROVENANCE, EntryKind

from ..conftest import REPO, run_golem

MODEL = str(REPO / "models" / "all-minilm-l6-v2-int8")

FEED = "0x" + "ab" * 20


def outcome(regime: str, bucket: str, mean: float, n: int) -> tm.TestamentEntry:
    fact = {"key": f"outcome|{FEED}|{regime}|{bucket}|300", "feed": FEED, "regime": regime,
            "bucket": bucket, "horizon_s": 300.0, "lookback_s": 300.0, "n": n,
            "mean": mean, "stddev": 0.01, "p_up": 0.8 if mean > 0 else 0.2}
    return tm.TestamentEntry(EntryKind.FACT, outcome_text(fact), 0.7, 0.6, entry_type="insight",
                          fact_kind="conditional_outcome", category="strategic_patterns",
                          fact=fact)


def a_testament() -> tm.Testament:
    entries = (
        outcome("calm", "fall_large", +0.02, 12), outcome("volatile", "fall_large", -0.03, 9),
        outcome("calm", "rise_large", -0.01, 7), outcome("trending", "flat", 0.001, 30),
        tm.TestamentEntry(EntryKind.ANTI_KNOWLEDGE, "Selling TOKX reverts: it is a honeypot.",
                       0.9, 0.9),
        tm.TestamentEntry(EntryKind.ANTI_KNOWLEDGE, "The WETH/USDC pool drained at night.",
                       0.6, 0.5),
        tm.TestamentEntry(EntryKind.BLOODSTAIN, "Bloodstain: swap lost money.", 0.8, 0.9,
                       bloodstain=True),
    )
    return tm.Testament(1, "t-0123456789abcdef01234567", "parent", "parent", "g-parent", 0, None,
                     1_767_225_600.0, "lab: end of life", PROVENANCE,
                     {c: [] for c in REFLECTION_CATEGORIES}, "", "offline",
                     entries, 2048, "", "", {})


def test_the_shuffle_keeps_entries_and_moves_outcomes_between_situations(
        tmp_path: Path) -> None:
    parent = a_testament()
    control = shuffled(parent, 3)
    assert control == shuffled(parent, 3)  # seeded
    assert control != shuffled(parent, 4) or len(parent.entries) < 3
    assert len(control.entries) == len(parent.entries)
    same = ("kind", "fact_kind", "confidence", "importance", "generation", "bloodstain")
    for old, new in zip(parent.entries, control.entries, strict=True):
        assert all(getattr(old, k) == getattr(new, k) for k in same)
    old_outcomes = parent.entries[:4]
    new_outcomes = control.entries[:4]
    for old, new in zip(old_outcomes, new_outcomes, strict=True):
        for key in ("key", "feed", "regime", "bucket"):  # what the entry is about stays
            assert new.fact[key] == old.fact[key]
        assert new.text == outcome_text(new.fact)  # text and numbers agree
    means = lambda es: [e.fact["mean"] for e in es]  # noqa: E731
    assert sorted(means(new_outcomes)) == sorted(means(old_outcomes))  # the same numbers
    assert means(new_outcomes) != means(old_outcomes)  # on other situations
    texts = lambda es: [e.text for e in es]  # noqa: E731
    assert sorted(texts(control.entries[4:6])) == sorted(texts(parent.entries[4:6]))
    assert texts(control.entries[4:6]) != texts(parent.entries[4:6])
    assert control.entries[6] == parent.entries[6]  # alone in its kind: nothing to swap
    written = tm.write_testament(tmp_path / "inherit.json", control)
    assert tm.load_testament(written) == control


def test_successors_live_on_the_next_market() -> None:
    assert market_seed("full", 7) == market_seed("no-memory", 7) == 7
    for arm in ("fresh", "testament", "shuffled-testament"):
        assert market_seed(arm, 7) == 7 + SUCCESSOR_SEED_OFFSET


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_succession_arms_end_to_end(tmp_path: Path) -> None:
    """The parent (full, seed 1) is measured, dies and leaves a testament; fresh inherits
    nothing, testament inherits it as written, shuffled-testament the shuffled copy; all
    three live on the successor market; the report carries the transfer measures."""
    lab = tmp_path / "lab"
    done = run_golem("lab", "run", "--arms", "full,fresh,testament,shuffled-testament",
                     "--seeds", "1", "--life", "10m", "--out", str(lab), "--model-dir", MODEL,
                     timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    parent = json.loads((lab / "runs/full/seed-1/data/DEAD.json").read_text())
    inherited = {}
    for arm in ("fresh", "testament", "shuffled-testament"):
        run = lab / "runs" / arm / "seed-1"
        config = tomllib.loads((run / "bardo.toml").read_text())
        assert config["golem"]["seed"] == 1 + SUCCESSOR_SEED_OFFSET
        lineage = json.loads((run / "data/mortality/lineage.json").read_text())
        inherited[arm] = (lineage["parent_testament_id"], lineage["inherited_entries"])
    assert inherited["fresh"] == (None, 0)
    assert inherited["testament"][0] == parent["testament_id"]
    assert inherited["testament"][1] > 0
    assert inherited["shuffled-testament"] == inherited["testament"]
    assert (lab / "runs/shuffled-testament/seed-1/inherit.json").exists()
    assert not (lab / "runs/testament/seed-1/inherit.json").exists()
    summary = json.loads((lab / "report/summary.json").read_text())
    assert summary["effects"]["testament"]["reference"] == "fresh"
    assert {"head_start_brier", "final_brier", "time_to_parent_s"} <= \
        set(summary["arms"]["testament"]["per_seed"]["1"])

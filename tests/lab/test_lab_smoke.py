"""`golem lab run --preset smoke` end to end: real golem processes on the simulated chain,
then the report's structure and numbers checked against the runs' own journals (read here
with sqlite3, not through the lab's reader) and ground truth (the oracle bound recomputed
here from the raw files), resumption, and a refused mixed design."""

from __future__ import annotations

import json
import re
import sqlite3
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from golem.lab.design import PRESETS
from golem.lab.runner import END_SLACK_S

from ..conftest import REPO, run_golem

MODEL = str(REPO / "models" / "all-minilm-l6-v2-int8")
# four golem lives in child processes: minutes on a loaded 2-core machine
pytestmark = pytest.mark.timeout(600)


def journal_briers(data_dir: Path) -> list[float]:
    """Each scored prediction's three-way Brier score, from the journal's raw rows: the
    offline tier's outlook (down, flat, up) against the feed's move (flat within 0.2%)."""
    with sqlite3.connect(data_dir / "cognition" / "decisions.db") as conn:
        rows = conn.execute("SELECT p.baseline, p.actual, d.record FROM predictions p JOIN "
                            "decisions d ON d.tick = p.tick WHERE p.quality IS NOT NULL "
                            "ORDER BY p.tick, p.id").fetchall()
    out = []
    for baseline, actual, record in rows:
        outlook = json.loads(record)["knowledge"]["outlook"]
        move = actual / baseline - 1
        happened = [move <= -0.002, abs(move) < 0.002, move >= 0.002]
        out.append(sum((p - h) ** 2 for p, h in zip(outlook, happened, strict=True)))
    return out


def _brier(outlook: list[float], move: float) -> float:
    happened = [move <= -0.002, abs(move) < 0.002, move >= 0.002]
    return sum((p - h) ** 2 for p, h in zip(outlook, happened, strict=True))


def journal_references(run: Path) -> tuple[list[float], list[float], int]:
    """Each scored prediction's Brier under the regime-aware oracle bound, recomputed from
    the raw files (ground_truth.jsonl, the journal's rows, the run's bardo.toml): per
    (true regime at the decision, move bucket the decision recorded, side of the planted
    swap), the outcome frequencies over the life with one pseudo-count per class; the
    no-change prior's Brier (the reference outlook each decision recorded); and how many
    decisions recorded a bucket."""
    config = tomllib.loads((run / "bardo.toml").read_text())
    swap_at = config["clock"]["start"].timestamp() + config["chain"]["planted"]["swap_after_s"]
    truth = [json.loads(line) for line in
             (run / "data/chain/ground_truth.jsonl").read_text().splitlines()]
    with sqlite3.connect(run / "data/cognition/decisions.db") as conn:
        rows = conn.execute("SELECT d.golem_time, p.baseline, p.actual, d.record FROM "
                            "predictions p JOIN decisions d ON d.tick = p.tick WHERE "
                            "p.quality IS NOT NULL ORDER BY p.tick, p.id").fetchall()
    cells, prior = [], []
    for at, baseline, actual, record in rows:
        regime = [t["regime"] for t in truth if t["golem_time"] <= at][-1]
        data = json.loads(record)
        move = actual / baseline - 1
        cells.append(((regime, data["situation"]["bucket"], at >= swap_at), move))
        prior.append(_brier(data["knowledge"]["reference"]["outlook"], move))
    outcomes: dict[object, Counter[int]] = {}
    for cell, move in cells:
        outcomes.setdefault(cell, Counter())[(move > -0.002) + (move >= 0.002)] += 1
    oracle = []
    for cell, move in cells:
        seen, total = outcomes[cell], sum(outcomes[cell].values()) + 3
        oracle.append(_brier([(seen[k] + 1) / total for k in range(3)], move))
    return oracle, prior, sum(cell[1] is not None for cell, _ in cells)


@pytest.fixture(scope="module")
def smoke_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    lab = tmp_path_factory.mktemp("lab") / "smoke"
    done = run_golem("lab", "run", "--preset", "smoke", "--out", str(lab), "--jobs", "2",
                     "--model-dir", MODEL, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    return lab, done.stdout


def test_smoke_runs_every_arm_on_every_seed_and_reports_their_own_numbers(
        smoke_lab: tuple[Path, str]) -> None:
    lab, stdout = smoke_lab
    preset = PRESETS["smoke"]
    summary = json.loads((lab / "report" / "summary.json").read_text())
    assert summary["complete"] and summary["runs_done"] == 4
    assert summary["design"]["arms"] == list(preset.arms)
    per_arm: dict[str, dict[int, float]] = {}
    bounds: dict[str, dict[int, float]] = {}
    priors: dict[str, dict[int, float]] = {}
    for arm in preset.arms:
        for seed in preset.seeds:
            run = lab / "runs" / arm / f"seed-{seed}"
            briers = journal_briers(run / "data")
            assert briers, f"{arm}/{seed} scored no prediction"
            record = json.loads((run / "result.json").read_text())
            # the finished life's data dir was compacted: one store version left
            optimized = [json.loads(line) for line in
                         (run / "run.log").read_text().splitlines()
                         if '"episode store optimized"' in line]
            assert optimized and optimized[-1]["after"]["versions"] == 1
            assert record["brier"] == pytest.approx(sum(briers) / len(briers))
            assert record["predictions"] == len(briers)
            # it lived its whole life (or died), by its own state store's clock
            assert record["died"] is not None or \
                record["lived_s"] >= preset.life_s - END_SLACK_S
            switches = (run / "data/chain/ground_truth.jsonl").read_text().splitlines()
            assert record["regime_switches"] == len(switches) - 1
            assert summary["arms"][arm]["per_seed"][str(seed)]["brier"] == record["brier"]
            per_arm.setdefault(arm, {})[seed] = record["brier"]
            oracle, prior, bucketed = journal_references(run)
            assert bucketed >= len(briers) - 1  # only a first tick may lack a tape
            assert record["oracle_brier"] == pytest.approx(sum(oracle) / len(oracle))
            assert record["prior_brier"] == pytest.approx(sum(prior) / len(prior))
            assert len(record["oracle_brier_curve"]) == len(record["brier_curve"])
            bounds.setdefault(arm, {})[seed] = record["oracle_brier"]
            priors.setdefault(arm, {})[seed] = record["prior_brier"]
            assert f"{arm}/seed-{seed} done" in stdout
        mean = sum(per_arm[arm].values()) / len(preset.seeds)
        assert summary["arms"][arm]["means"]["brier"] == pytest.approx(mean)
        bound = sum(bounds[arm].values()) / len(preset.seeds)
        assert summary["arms"][arm]["means"]["oracle_brier"] == pytest.approx(bound)
        gap = summary["arms"][arm]["oracle"]["gap"]
        assert gap["n"] == 2 and gap["mean_diff"] == pytest.approx(mean - bound)
        assert gap["ci_low"] <= gap["mean_diff"] <= gap["ci_high"]
        prior = sum(priors[arm].values()) / len(preset.seeds)
        closed = summary["arms"][arm]["oracle"]["closed"]
        assert closed == (pytest.approx((prior - mean) / (prior - bound))
                          if prior > bound else None)
    effect = summary["effects"]["no-memory"]["brier"]
    diffs = [per_arm["no-memory"][s] - per_arm["full"][s] for s in preset.seeds]
    assert effect["n"] == 2
    assert effect["mean_diff"] == pytest.approx(sum(diffs) / 2)
    assert effect["ci_low"] <= effect["mean_diff"] <= effect["ci_high"]
    # without memory Theta's workspace is smaller: the arms really differ
    tokens = summary["arms"]
    assert tokens["no-memory"]["means"]["context_tokens"] < \
        tokens["full"]["means"]["context_tokens"]

    page = (lab / "report" / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing to fetch
    markdown = (lab / "report" / "report.md").read_text()
    for arm in preset.arms:
        means, gap = summary["arms"][arm]["means"], summary["arms"][arm]["oracle"]["gap"]
        assert (f"| {arm} | 2 | {means['brier']:.4g} | {means['prior_brier']:.4g} | "
                f"{means['oracle_brier']:.4g} | {gap['mean_diff']:+.4g} [" in markdown)
    if summary["arms"]["full"]["oracle"]["closed"] is not None:
        assert "- full closes" in markdown and "regime-aware oracle bound" in markdown
    else:  # the prior was not above the bound on these short lives
        assert "- oracle bound: n/a for full" in markdown
    assert "## Verdict" in markdown and "no-memory" in markdown
    for png in ("brier_curve.png", "effects.png"):
        assert (lab / "report" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rerun_resumes_and_a_different_design_is_refused(
        smoke_lab: tuple[Path, str]) -> None:
    lab, _ = smoke_lab
    results = sorted(lab.glob("runs/*/*/result.json"))
    before = {p: p.stat().st_mtime_ns for p in results}
    again = run_golem("lab", "run", "--preset", "smoke", "--out", str(lab),
                      "--model-dir", MODEL, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "4 runs (4 done), 0 to run" in again.stdout
    assert {p: p.stat().st_mtime_ns for p in results} == before
    other = run_golem("lab", "run", "--preset", "smoke", "--seeds", "3", "--out", str(lab),
                      "--model-dir", MODEL, timeout=120)
    assert other.returncode == 64
    assert "another design" in other.stderr

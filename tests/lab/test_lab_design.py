"""The lab's pure parts: seeds, designs, overlays and paired effects."""

from __future__ import annotations

import subprocess
import sys

import pytest

from golem.config import parse_config
from golem.errors import UsageError
from golem.lab.arms import arm_names, load_arm, load_base, merged, run_config
from golem.lab.design import Run, check_fits, design, kept_disk_mb, life_disk_mb, parse_seeds
from golem.lab.effects import paired_effect
from golem.lab.measures import adaptation, stale_uses
from golem.lab.succession import market_seed

from ..conftest import child_env, run_golem


@pytest.mark.parametrize(("text", "seeds"), [
    ("1-10", tuple(range(1, 11))), ("1000-1009", tuple(range(1000, 1010))),
    ("3", (3,)), ("1,4,7-9", (1, 4, 7, 8, 9)), (" 2 , 5 ", (2, 5))])
def test_seed_forms(text: str, seeds: tuple[int, ...]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text", ["", "a", "5-3", "1-", "-2", "1,1", "0-5000", "1.5"])
def test_bad_seeds_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_seeds(text)


def test_designs_pair_every_arm_with_every_seed_and_need_the_reference() -> None:
    d = design("smoke", seeds=(7, 8), life_s=60.0)
    assert d.runs == [Run("full", 7), Run("no-memory", 7), Run("full", 8),
                      Run("no-memory", 8)]
    assert d.life_s == 60.0
    assert d.changed() == ("seeds", "life")
    assert design("full").changed() == ()
    assert design("full", arms=("full", "no-memory")).changed() == ("arms",)
    for bad in ({"arms": ("no-memory",)}, {"arms": ("full", "full")}, {"life_s": 0.0}):
        with pytest.raises(UsageError):
            design("smoke", **bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown preset"):
        design("nope")


def test_overlays_merge_key_by_key_and_every_shipped_arm_makes_a_valid_config(
        tmp_path) -> None:
    assert merged({"a": {"x": 1, "y": 2}, "b": 1}, {"a": {"y": 3}, "c": [1]}) == \
        {"a": {"x": 1, "y": 3}, "b": 1, "c": [1]}
    assert {"full", "no-memory"} <= set(arm_names())
    base = load_base(None, None)
    for arm in arm_names():
        description, _ = load_arm(arm)
        assert description
        config = parse_config(run_config(base, Run(arm, 5), tmp_path / arm, 3600.0))
        assert config.chain.planted.enabled and config.chain.planted.swap_after_s == 1800.0
        assert config.mortality.hazard_per_day == 0.0
        assert config.golem.seed == market_seed(arm, 5)
        assert config.data_dir == (tmp_path / arm / "data").resolve()
        assert config.theta_context.memory is (arm != "no-memory")
        assert config.consolidation.forgetting is (arm != "no-forgetting")
    with pytest.raises(UsageError, match="unknown arm"):
        load_arm("telepathy")


def test_paired_effects() -> None:
    same = paired_effect({1: 0.3, 2: 0.4}, {1: 0.3, 2: 0.4})
    assert (same.mean_diff, same.p_value, same.excludes_zero) == (0.0, 1.0, False)
    worse = {s: 0.30 + 0.01 * (s % 3) for s in range(10)}
    better = {s: v - 0.05 - 0.002 * s for s, v in worse.items()}
    effect = paired_effect(worse, better)
    assert effect.n == 10
    assert effect.mean_diff == pytest.approx(0.059)
    assert effect.ci_low is not None and effect.ci_high is not None
    assert 0 < effect.ci_low <= effect.mean_diff <= effect.ci_high
    assert effect.excludes_zero
    assert effect.p_value is not None and effect.p_value < 0.01
    mixed = paired_effect({s: (0.1 if s % 2 else -0.1) for s in range(10)},
                          dict.fromkeys(range(10), 0.0))
    assert not mixed.excludes_zero and mixed.p_value is not None and mixed.p_value > 0.5
    partial = paired_effect({1: 0.2, 2: None, 3: 0.5}, {1: 0.1, 2: 0.3})
    assert (partial.n, partial.unpaired, partial.ci_low) == (1, 2, None)
    assert paired_effect({}, {}).mean_diff is None


def test_a_lab_on_the_anthropic_tier_prints_its_cost_and_waits_for_yes(tmp_path) -> None:
    base = tmp_path / "base.toml"
    base.write_text('[cognition]\nprovider = "anthropic"\nbase_url = "http://127.0.0.1:9"\n')
    done = run_golem("lab", "run", "--base", str(base), "--out", str(tmp_path / "lab"),
                     "--seeds", "1-3", "--life", "1h", timeout=60)
    assert done.returncode == 64, done.stderr
    # 2 arms x 3 seeds x 60 Theta ticks, 8000 tokens in at $1/M and 1024 out at $5/M
    per_call = (8000 * 1.0 + 1024 * 5.0) / 1e6
    assert f"estimate ${6 * 60 * per_call:,.2f}" in done.stdout
    assert "6 lives x 60 Theta ticks" in done.stdout
    assert "run again with --yes" in done.stdout
    assert not (tmp_path / "lab").exists()  # nothing was started or written


def test_adaptation_counts_predictions_from_a_switch_to_the_first_good_one() -> None:
    # median Brier of the life is 0.4; switches at t=10 and t=20
    scores = [(1, 0.1), (2, 0.3), (10, 0.6), (11, 0.5), (12, 0.2), (20, 0.3), (25, 0.9),
              (30, 0.9)]
    assert adaptation(scores, [10.0, 20.0]) == pytest.approx((3 + 1) / 2)
    # no good prediction before the end: censored, counting what was made (2)
    assert adaptation([(1, 0.1), (2, 0.1), (5, 0.9), (6, 0.9)], [5.0]) == 2.0
    assert adaptation(scores, []) is None and adaptation([], [1.0]) is None
    assert adaptation([(1, 0.2)], [5.0]) is None  # nothing made after the switch


def test_building_the_cli_does_not_load_the_lab_report_stack() -> None:
    """Every `golem` command builds the whole parser; the lab's plotting, statistics and
    runner load only when a lab verb runs."""
    code = ("import sys; from golem.cli import _parser; _parser(); "
            "print(sorted(m for m in ('matplotlib', 'scipy', 'tqdm', 'golem.lab.runner', "
            "'golem.lab.report') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(), timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_stale_uses_count_knowledge_last_seen_before_the_latest_change() -> None:
    ages = [(5.0, [1.0]),  # before any change: not judged
            (12.0, [9.0]),  # after the change at 10, leaning on a fact last seen at 9
            (13.0, [11.0, None]),  # seen since: fresh (None: no time, not judged)
            (25.0, [15.0]),  # after the change at 20: stale again
            (26.0, [None])]
    assert stale_uses(ages, [20.0, 10.0]) == (2, 4)
    assert stale_uses(ages, []) == (0, 0)
    assert stale_uses([], [10.0]) == (0, 0)


def test_a_design_that_does_not_fit_the_cores_or_the_disk_is_refused() -> None:
    full = design("full")
    check_fits(full, jobs=2, cores=2, lives_left=70, free_mb=30_000, where="lab")
    with pytest.raises(UsageError, match="--jobs 3: this machine has 2 core"):
        check_fits(full, jobs=3, cores=2, lives_left=70, free_mb=30_000, where="lab")
    # 70 six-hour lives kept compacted at 10 MB a golem hour, two of them at a time at
    # 50 while they run: 4,200 + 2 x 240 MB, about 4.6 GB
    assert 70 * kept_disk_mb(full.life_s) == pytest.approx(4_200)
    with pytest.raises(UsageError, match=r"70 lives left need about 4\.6 GB.*lab has "
                                         r"3\.9 GB free"):
        check_fits(full, jobs=2, cores=2, lives_left=70, free_mb=4_000, where="lab")
    check_fits(full, jobs=2, cores=2, lives_left=20, free_mb=4_000, where="lab")  # resumed
    with pytest.raises(UsageError, match=r"1 lives left need about 0\.3 GB"):
        check_fits(full, jobs=2, cores=2, lives_left=1, free_mb=200, where="lab")
    month = design("full", life_s=30 * 86_400.0)  # retention bounds a long life's data dir
    assert life_disk_mb(month.life_s) == 8_000 > life_disk_mb(3 * 86_400.0) == 3_600


def test_the_command_refuses_more_jobs_than_cores_before_anything_runs(tmp_path) -> None:
    done = run_golem("lab", "run", "--out", str(tmp_path / "lab"), "--jobs", "4096",
                     timeout=60)
    assert done.returncode == 64, done.stderr
    assert "--jobs 4096: this machine has" in done.stderr
    assert not (tmp_path / "lab").exists()

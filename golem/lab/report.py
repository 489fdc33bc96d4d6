"""``golem lab report``: the lab's results as one self-contained HTML file, a markdown
summary, the plots as PNG files and the numbers as JSON.

Everything is computed from the runs' ``result.json`` records (never from a cache), so
the report can be rebuilt at any time and checked against them: ``summary.json`` holds
every number the two documents print. Plots are matplotlib (Agg backend: no display),
embedded in the HTML as data URIs, so the page opens from disk with no network.
A design whose runs are not all done is reported as far as it goes, and says so.

Beside the arms, each life's references (golem.lab.oracle): the regime-aware oracle
bound, a hindsight forecaster that reads the true regime (a Brier no golem should
reach), and the no-change prior on the same predictions. Per arm the report gives the
gap to the bound (arm minus oracle, paired by seed) and the share of the prior-to-bound
gap the arm closes. Records written before the bound existed show "n/a".
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from golem import __version__
from golem.lab.design import Design
from golem.lab.effects import Effect, paired_effect
from golem.lab.runner import read_result
from golem.lab.succession import PARENT_ARM, SUCCESSORS, market_seed

REFERENCE = "full"
# transfer measures of a successor, from its Brier curve (lower is better for all three)
TRANSFER: tuple[tuple[str, str, str, bool], ...] = (
    ("head_start_brier", "Brier in the first quarter of life", "", True),
    ("time_to_parent_s", "golem time to the parent's final level", "s", True),
    ("final_brier", "Brier in the last quarter of life", "", True),
)
# (key in a run's record, label, unit, lower is better)
MEASURES: tuple[tuple[str, str, str, bool], ...] = (
    ("brier", "mean Brier score (primary)", "", True),
    ("hit_rate", "direction hit rate", "", False),
    ("realised_pnl_usd", "realised P&L", "USD", False),
    ("context_tokens", "context tokens per decision", "tokens", True),
    ("memory_bytes", "memory on disk", "bytes", True),
    ("wall_s", "wall time per life", "s", True),
    ("adapt_predictions", "predictions to adapt after a regime switch", "", True),
    ("stale_fact_use_share", "share of knowledge-led decisions using stale facts", "", True),
)
# each life's references on its own predictions (golem.lab.oracle): the regime-aware
# hindsight oracle bound and the no-change prior
BOUNDS = ("oracle_brier", "prior_brier")
NA = "n/a"  # a reference the runs' records do not hold (written before it existed)


def reference_of(arm: str, arms: tuple[str, ...]) -> str | None:
    """The arm ``arm`` is compared with: successors with ``fresh`` (they share a market),
    the others with ``full``; None for the references themselves."""
    if arm in SUCCESSORS:
        return "fresh" if arm != "fresh" and "fresh" in arms else None
    return REFERENCE if arm != REFERENCE else None


def summarise(lab: Path, design: Design) -> dict[str, Any]:
    """Every number the report prints, from the runs' records."""
    records = {run: read_result(lab, run) for run in design.runs}
    done = {run: rec for run, rec in records.items() if rec is not None}
    parents = {run.seed: rec for run, rec in done.items() if run.arm == PARENT_ARM}
    arms: dict[str, Any] = {}
    for arm in design.arms:
        mine = {run.seed: rec for run, rec in done.items() if run.arm == arm}
        measures = MEASURES + (TRANSFER if arm in SUCCESSORS else ())
        per_seed = {}
        for seed, rec in sorted(mine.items()):
            values = {key: rec.get(key) for key in (*(k for k, *_ in MEASURES), *BOUNDS)}
            if arm in SUCCESSORS:
                values |= transfer(rec, parents.get(seed))
            per_seed[str(seed)] = values
        arms[arm] = {
            "runs": len(mine),
            "market_seeds": sorted(market_seed(arm, s) for s in mine),
            "per_seed": per_seed,
            "means": {key: _mean([v.get(key) for v in per_seed.values()])
                      for key in (*(k for k, *_ in measures), *BOUNDS)},
            "curve": _curve([rec.get("brier_curve") or [] for rec in mine.values()]),
            "oracle": oracle_gap(per_seed, [rec.get("oracle_brier_curve") or []
                                            for rec in mine.values()]),
        }
    effects: dict[str, Any] = {}
    for arm in design.arms:
        reference = reference_of(arm, design.arms)
        if reference is None:
            continue
        measures = MEASURES + (TRANSFER if arm in SUCCESSORS else ())
        effects[arm] = {"reference": reference} | {key: _effect_json(paired_effect(
            {int(s): v.get(key) for s, v in arms[arm]["per_seed"].items()},
            {int(s): v.get(key) for s, v in arms[reference]["per_seed"].items()}))
            for key, *_ in measures}
    return {"version": __version__, "design": design.to_json(),
            "complete": len(done) == len(records), "runs_done": len(done),
            "runs_total": len(records), "arms": arms, "effects": effects,
            "verdicts": _verdicts(effects) + _oracle_verdicts(arms)}


def oracle_gap(per_seed: dict[str, dict[str, Any]],
               curves: list[list[float | None]]) -> dict[str, Any]:
    """An arm against its lives' oracle bound: the paired gap (arm minus oracle Brier,
    seed by seed, with the effects' bootstrap interval), the share of the gap between
    the no-change prior and the bound that the arm closes ((prior - arm) / (prior -
    oracle), on the means over the seeds that have all three; None without such seeds
    or when the prior is not above the bound), and the bound's curve."""
    gap = paired_effect({int(s): v.get("brier") for s, v in per_seed.items()},
                        {int(s): v.get("oracle_brier") for s, v in per_seed.items()})
    full = [v for v in per_seed.values()
            if all(isinstance(v.get(k), int | float) for k in ("brier", *BOUNDS))]
    arm, bound, prior = (_mean([v[k] for v in full]) for k in ("brier", *BOUNDS))
    closed = None
    if arm is not None and bound is not None and prior is not None and prior > bound:
        closed = (prior - arm) / (prior - bound)
    return {"gap": _effect_json(gap), "closed": closed, "closed_seeds": len(full),
            "curve": _curve(curves)}


def transfer(record: dict[str, Any], parent: dict[str, Any] | None) -> dict[str, Any]:
    """A successor's head start (mean Brier over the first quarter of its scored slices
    of life), final level (the last quarter of them) and the golem time until a slice
    first scores at or below its parent's final level (its whole life when it never
    does: censored at the life's length, which favours no arm)."""
    curve = record.get("brier_curve") or []
    head, final = _quarters(curve)
    out: dict[str, Any] = {"head_start_brier": head, "final_brier": final,
                           "time_to_parent_s": None}
    target = _quarters(parent.get("brier_curve") or [])[1] if parent else None
    if target is not None and curve:
        life = float(record.get("golem_time_s") or 0.0)
        hit = next((i for i, b in enumerate(curve) if b is not None and b <= target), None)
        out["time_to_parent_s"] = life if hit is None else (hit + 1) * life / len(curve)
    return out


def write_report(lab: Path, design: Design) -> dict[str, Path]:
    """Write report.html, report.md, summary.json and the PNGs under ``lab/report``."""
    summary = summarise(lab, design)
    folder = lab / "report"
    folder.mkdir(parents=True, exist_ok=True)
    pngs = {"brier_curve": _curve_png(summary), "effects": _effects_png(summary)}
    paths = {name: folder / f"{name}.png" for name in pngs}
    for name, data in pngs.items():
        paths[name].write_bytes(data)
    (folder / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n",
                                         encoding="utf-8")
    (folder / "report.md").write_text(_markdown(summary), encoding="utf-8")
    (folder / "report.html").write_text(_html(summary, pngs), encoding="utf-8")
    return {"html": folder / "report.html", "markdown": folder / "report.md",
            "summary": folder / "summary.json", **paths}


# --- numbers ------------------------------------------------------------------------


def _quarters(curve: list[float | None]) -> tuple[float | None, float | None]:
    """Mean of the first and of the last quarter of a curve's scored slices."""
    scored = [b for b in curve if b is not None]
    quarter = max(1, len(scored) // 4)
    return _mean(scored[:quarter]), _mean(scored[-quarter:])


def _mean(values: list[Any]) -> float | None:
    nums = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return math.fsum(nums) / len(nums) if nums else None


def _curve(curves: list[list[float | None]]) -> list[dict[str, float | int | None]]:
    """Per bin: the mean across seeds and a 95% band (mean +- 1.96 standard errors)."""
    bins = max((len(c) for c in curves), default=0)
    out: list[dict[str, float | int | None]] = []
    for i in range(bins):
        vals = [c[i] for c in curves if i < len(c) and c[i] is not None]
        nums = [float(v) for v in vals if v is not None]
        if not nums:
            out.append({"mean": None, "low": None, "high": None, "n": 0})
            continue
        mean = math.fsum(nums) / len(nums)
        se = (math.sqrt(math.fsum((v - mean) ** 2 for v in nums) / (len(nums) - 1))
              / math.sqrt(len(nums))) if len(nums) > 1 else 0.0
        out.append({"mean": mean, "low": mean - 1.96 * se, "high": mean + 1.96 * se,
                    "n": len(nums)})
    return out


def _effect_json(effect: Effect) -> dict[str, Any]:
    return {"n": effect.n, "mean_diff": effect.mean_diff, "ci_low": effect.ci_low,
            "ci_high": effect.ci_high, "p_value": effect.p_value,
            "excludes_zero": effect.excludes_zero, "unpaired": effect.unpaired}


def _verdicts(effects: dict[str, Any]) -> list[str]:
    """Plain sentences on the primary measure (Brier: lower is better, so a positive
    ``arm - full`` difference means full predicted better)."""
    lines = []
    for arm, by in effects.items():
        ref = by["reference"]
        keys = ["brier"] + (["time_to_parent_s"] if "time_to_parent_s" in by else [])
        for key in keys:
            e = by[key]
            what = "Brier" if key == "brier" else "time to the parent's final level (s)"
            if e["mean_diff"] is None:
                lines.append(f"{ref} vs {arm}: no paired {what} yet.")
                continue
            interval = ("no interval (fewer than 2 seeds)" if e["ci_low"] is None else
                        f"95% CI [{e['ci_low']:+.4g}, {e['ci_high']:+.4g}]")
            if not e["excludes_zero"]:
                word = f"no difference shown between {ref} and {arm} in"
            elif e["mean_diff"] < 0:
                word = f"{arm} is better than {ref} in"
            else:
                word = f"{arm} is WORSE than {ref} in"
            p = "-" if e["p_value"] is None else f"{e['p_value']:.3g}"
            lines.append(f"{word} {what}: {arm} - {ref} = {e['mean_diff']:+.4g} over "
                         f"{e['n']} seeds, {interval}, Wilcoxon p = {p}.")
    return lines


def _oracle_verdicts(arms: dict[str, Any]) -> list[str]:
    """One sentence on how much of the gap between the no-change prior and the oracle
    bound the reference arm closes, with the no-memory arm's share beside it."""
    data = arms.get(REFERENCE)
    if data is None:
        return []
    oracle, means, gap = data["oracle"], data["means"], data["oracle"]["gap"]
    if oracle["closed"] is None:
        why = ("the runs' records predate it" if means["oracle_brier"] is None
               else "no no-change prior recorded" if means["prior_brier"] is None
               else "the no-change prior is not above the bound")
        return [f"oracle bound: {NA} for {REFERENCE} ({why})."]
    interval = f", 95% CI {_interval(gap)}" if gap["ci_low"] is not None else ""
    line = (f"{REFERENCE} closes {oracle['closed']:.0%} of the gap between the no-change "
            f"prior ({means['prior_brier']:.4g}) and the regime-aware oracle bound "
            f"({means['oracle_brier']:.4g}, fitted in hindsight) on its own predictions "
            f"(Brier {means['brier']:.4g}, {oracle['closed_seeds']} seeds); {REFERENCE} - "
            f"oracle = {gap['mean_diff']:+.4g}{interval}")
    other = arms.get("no-memory")
    if other is not None and other["oracle"]["closed"] is not None:
        line += f"; no-memory closes {other['oracle']['closed']:.0%} of its own"
    return [line + "."]


# --- plots ----------------------------------------------------------------------------


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _curve_png(summary: dict[str, Any]) -> bytes:
    life_h = summary["design"]["life_s"] / 3600
    fig, ax = plt.subplots(figsize=(7.5, 4))
    for arm, data in summary["arms"].items():
        pts = [(i, p) for i, p in enumerate(data["curve"]) if p["mean"] is not None]
        if not pts:
            continue
        bins = len(data["curve"])
        xs = [(i + 0.5) * life_h / bins for i, _ in pts]
        ax.plot(xs, [p["mean"] for _, p in pts], marker="o", label=f"{arm} ({data['runs']})")
        ax.fill_between(xs, [p["low"] for _, p in pts], [p["high"] for _, p in pts],
                        alpha=0.2)
    for arm, style in ((REFERENCE, "k--"), ("fresh", "k:")):  # the bound of each market
        curve = summary["arms"].get(arm, {}).get("oracle", {}).get("curve") or []
        pts = [(i, p) for i, p in enumerate(curve) if p["mean"] is not None]
        if pts:
            ax.plot([(i + 0.5) * life_h / len(curve) for i, _ in pts],
                    [p["mean"] for _, p in pts], style,
                    label=f"oracle bound, {arm}'s lives (hindsight)")
    ax.set_xlabel("golem time (hours since birth)")
    ax.set_ylabel("mean Brier score (lower is better)")
    ax.set_title("Prediction quality over a life: mean across seeds, 95% band;\n"
                 "black: the regime-aware oracle bound")
    ax.grid(alpha=0.3)
    ax.legend()
    return _png(fig)


def _effects_png(summary: dict[str, Any]) -> bytes:
    arms = list(summary["effects"])
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.6 * max(1, len(arms))))
    for i, arm in enumerate(arms):
        e = summary["effects"][arm]["brier"]
        if e["mean_diff"] is None:
            continue
        low = e["ci_low"] if e["ci_low"] is not None else e["mean_diff"]
        high = e["ci_high"] if e["ci_high"] is not None else e["mean_diff"]
        ax.plot([low, high], [i, i], color="tab:blue", linewidth=3)
        ax.plot([e["mean_diff"]], [i], "o", color="black")
    ax.axvline(0, color="grey", linestyle="--")
    ax.set_yticks(range(len(arms)),
                  [f"{a} - {summary['effects'][a]['reference']}" for a in arms])
    ax.set_xlabel("paired difference in mean Brier (positive: the reference predicts better)")
    ax.set_title("Effects on the primary measure, 95% bootstrap intervals")
    ax.grid(alpha=0.3, axis="x")
    return _png(fig)


# --- documents --------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    primary, *rest = MEASURES
    head = ["arm", "runs", primary[1], "no-change prior", "oracle bound (hindsight)",
            "arm - oracle [95% CI]", "prior-to-oracle gap closed",
            *[label for _, label, _, _ in rest]]
    rows = [[arm, str(data["runs"]), _fmt(data["means"][primary[0]]),
             *_bound_cells(data), *[_fmt(data["means"][key]) for key, *_ in rest]]
            for arm, data in summary["arms"].items()]
    return head, rows


def _bound_cells(data: dict[str, Any]) -> list[str]:
    """The references' cells of an arm's row, n/a where its records hold none."""
    means, oracle = data["means"], data["oracle"]
    gap = oracle["gap"]
    cells = [NA if means[key] is None else _fmt(means[key]) for key in ("prior_brier",
                                                                       "oracle_brier")]
    if gap["mean_diff"] is None:
        cells.append(NA)
    else:
        ci = f" {_interval(gap)}" if gap["ci_low"] is not None else ""
        cells.append(f"{gap['mean_diff']:+.4g}{ci}")
    cells.append(NA if oracle["closed"] is None else f"{oracle['closed']:.0%}")
    return cells


def _interval(effect: dict[str, Any]) -> str:
    return f"[{effect['ci_low']:+.4g}, {effect['ci_high']:+.4g}]"


def _effect_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["comparison", "measure", "pairs", "mean difference", "95% CI", "Wilcoxon p"]
    rows = []
    for arm, by in summary["effects"].items():
        for key, label, _, _ in MEASURES + TRANSFER:
            if key not in by:
                continue
            e = by[key]
            ci = "-" if e["ci_low"] is None else f"[{e['ci_low']:.4g}, {e['ci_high']:.4g}]"
            rows.append([f"{arm} - {by['reference']}", label, str(e["n"]),
                         _fmt(e["mean_diff"]), ci, _fmt(e["p_value"])])
    return head, rows


def _md_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _intro(summary: dict[str, Any]) -> str:
    d = summary["design"]
    state = "complete" if summary["complete"] else (
        f"INCOMPLETE: {summary['runs_done']} of {summary['runs_total']} runs done")
    changed = Design.from_json(d).changed()
    preset = f"Preset {d['preset']}" + (
        f" with its {', '.join(changed)} changed on the command line" if changed else "")
    return (f"{preset}: arms {', '.join(d['arms'])}; market seeds "
            f"{_seed_text(d['seeds'])}; a life of {d['life_s'] / 3600:g} golem hours; "
            f"{state}. golem {summary['version']}.")


def _seed_text(seeds: list[int]) -> str:
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}-{seeds[-1]}" if len(seeds) > 1 else str(seeds[0])
    return ", ".join(map(str, seeds))


def _markdown(summary: dict[str, Any]) -> str:
    parts = ["# Golem lab report", "", _intro(summary), "", "## Verdict", "",
             *[f"- {v}" for v in summary["verdicts"]], "", "## Arms (means across seeds)", "",
             _md_table(*_rows(summary)), "", "## Paired effects (each arm minus its reference)", "",
             _md_table(*_effect_rows(summary)), "",
             "Plots: brier_curve.png (prediction quality over a life), effects.png.", ""]
    return "\n".join(parts)


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    trs = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                  for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"


def _html(summary: dict[str, Any], pngs: dict[str, bytes]) -> str:
    img = {name: "data:image/png;base64," + base64.b64encode(data).decode()
           for name, data in pngs.items()}
    verdicts = "".join(f"<li>{html.escape(v)}</li>" for v in summary["verdicts"])
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Golem lab report</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; }}
table {{ border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
img {{ max-width: 100%; }}
</style></head><body>
<h1>Golem lab report</h1>
<p>{html.escape(_intro(summary))}</p>
<h2>Verdict</h2><ul>{verdicts}</ul>
<h2>Prediction quality over a life</h2>
<img alt="mean Brier score over golem time per arm" src="{img['brier_curve']}">
<h2>Effects on the primary measure</h2>
<img alt="paired differences in Brier with 95% intervals" src="{img['effects']}">
<h2>Arms (means across seeds)</h2>
{_html_table(*_rows(summary))}
<h2>Paired effects (each arm minus its reference)</h2>
{_html_table(*_effect_rows(summary))}
</body></html>
"""

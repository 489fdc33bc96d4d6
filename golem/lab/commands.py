"""``golem lab run | report | arms``: the command line of the lab (docs/lab/README.md)."""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from golem.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError
from golem.lab.design import PRESETS, Design, check_fits, design, parse_seeds

if TYPE_CHECKING:
    from golem.config import Config

DEFAULT_OUT = Path("lab")


def add_lab_parser(sub: Any) -> None:
    lab = sub.add_parser(
        "lab", help="seeded ablation experiments: run arms of golems, report the effects",
        description="Run golems in arms (configuration overlays: full, no-memory, ...) on "
                    "the same market seeds, each life a `golem run` process of its own, then "
                    "report paired effects with bootstrap intervals. See docs/lab/README.md.")
    verbs = lab.add_subparsers(dest="lab_command", required=True, metavar="VERB")
    run = verbs.add_parser(
        "run", help="run (or resume) a design's lives",
        description="Run every arm on every seed. Resumable: finished runs are kept and "
                    "skipped; a killed run continues from its data dir. Each run's data dir "
                    "is kept under OUT/runs/ARM/seed-N/ for inspection. Exits 1 when a run "
                    "failed (its log is named).")
    run.add_argument("--preset", default="smoke", choices=sorted(PRESETS),
                     help="the design to run (default: %(default)s): " + "; ".join(
                         f"{p.name}: {p.about}" for p in PRESETS.values()))
    run.add_argument("--seeds", type=parse_seeds, metavar="SEEDS",
                     help="market seeds instead of the preset's: 1-10, 1000-1009, 1,4,7")
    run.add_argument("--arms", metavar="A,B",
                     help="arms instead of the preset's (comma-separated; must include full)")
    run.add_argument("--life", metavar="DURATION",
                     help="golem time each life runs, e.g. 20m, 6h, 2d (default: the preset's)")
    run.add_argument("--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                     help="lives run at once (default: the core count, %(default)s)")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                     help="the lab directory (default: %(default)s)")
    run.add_argument("--base", type=Path, metavar="CONFIG",
                     help="base configuration the arms overlay (default: the starter "
                          "bardo.toml: simulated chain, offline cognition)")
    run.add_argument("--model-dir", type=Path, metavar="DIR",
                     help="the embedding model dir for every run (default: the base's)")
    run.add_argument("--yes", action="store_true",
                     help="with a base whose cognition is the Anthropic tier: accept the "
                          "printed cost estimate and start (without it the lab stops there)")
    report = verbs.add_parser(
        "report", help="write the report of a lab directory",
        description="Write OUT/report/report.html (self-contained: plots inline, no "
                    "network), report.md, summary.json and the PNG plots, from the runs' "
                    "own records. Works on an unfinished lab and says so.")
    report.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                        help="the lab directory (default: %(default)s)")
    verbs.add_parser("arms", help="list the arms and what each changes")


def cost_estimate(config: Config, chosen: Design) -> str:
    """What a design may spend on the model: an upper bound from the spend ledger's
    lifetime cap per golem, and an estimate of one cheap-tier call per Theta tick with a
    full workspace in and the tier's whole token allowance out."""
    c = config.cognition
    runs = len(chosen.runs)
    ticks = chosen.life_s / config.theta.interval_s
    per_call = (config.theta_context.total_budget * c.prices_t1[0]
                + c.max_tokens_t1 * c.prices_t1[1]) / 1e6
    estimate = runs * ticks * per_call
    cap = runs * min(c.lifetime_cap_usd, c.daily_cap_usd * max(1.0, chosen.life_s / 86400))
    return (f"lab: the Anthropic tier decides: {runs} lives x {ticks:.0f} Theta ticks; "
            f"estimate ${estimate:,.2f} at one {c.model_t1} call a tick "
            f"(${per_call:.4f} each); at most ${cap:,.2f} (each golem's spend ledger caps "
            f"it at ${c.daily_cap_usd:g} a day and ${c.lifetime_cap_usd:g} a life)")


def run_lab_command(args: argparse.Namespace, out: TextIO) -> int:
    """Run a lab verb. Its modules load here, not with the parser: every `golem` command
    builds the parser, and the report's plotting and statistics take seconds to import."""
    import tomli_w  # noqa: PLC0415

    from golem.config import parse_config  # noqa: PLC0415
    from golem.lab.arms import arm_names, load_arm, load_base  # noqa: PLC0415
    from golem.lab.report import write_report  # noqa: PLC0415
    from golem.lab.runner import (  # noqa: PLC0415
        LabRunner,
        fix_design,
        load_design,
        read_result,
    )
    from golem.runtime.duration import parse_duration  # noqa: PLC0415

    if args.lab_command == "arms":
        for name in arm_names():
            out.write(f"{name:20} {load_arm(name)[0]}\n")
        return EXIT_OK
    if args.lab_command == "report":
        paths = write_report(args.out, load_design(args.out))
        out.write(f"wrote {paths['html']} and {paths['markdown']}\n")
        return EXIT_OK
    arms = tuple(a.strip() for a in args.arms.split(",")) if args.arms else None
    for arm in arms or ():
        load_arm(arm)  # UsageError naming the arm
    try:
        life = parse_duration(args.life) if args.life else None
    except ValueError as exc:
        raise UsageError(f"--life: {exc}") from None
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    chosen = design(args.preset, arms=arms, seeds=args.seeds, life_s=life)
    check_fits(chosen, jobs=args.jobs, cores=os.cpu_count() or 1,
               lives_left=sum(1 for r in chosen.runs if read_result(args.out, r) is None),
               free_mb=shutil.disk_usage(_existing(args.out)).free / 2**20,
               where=str(args.out))
    base = load_base(args.base, args.model_dir)
    config = parse_config(tomli_w.dumps(base))
    if config.cognition.provider == "anthropic":
        out.write(cost_estimate(config, chosen) + "\n")
        if not args.yes:
            out.write("lab: not started; run again with --yes to accept the cost\n")
            return EXIT_USAGE
    fix_design(args.out, chosen, base)
    runner = LabRunner(args.out, chosen, base, args.jobs, out)
    try:
        failed = runner.run()
    except KeyboardInterrupt:
        out.write("lab: interrupted; every running golem was stopped cleanly. Run the same "
                  "command again to resume.\n")
        return 130
    paths = write_report(args.out, chosen)
    out.write(f"lab: report in {paths['html']}\n")
    if failed:
        out.write(f"lab: {len(failed)} run(s) failed: {', '.join(r.key for r in failed)}; "
                  "run the same command again to retry them\n")
        return EXIT_FAILURE
    return EXIT_OK


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (where its disk space is measured)."""
    path = path.absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path

"""The integrity commands' arguments and output: `golem check`, `golem backup`,
`golem restore`. Results go to ``out``; progress and problems to stderr."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from golem.config import Config
from golem.errors import EXIT_OK, EXIT_SOFTWARE, NoInput

if TYPE_CHECKING:  # the checks open LanceDB: loaded only to run a command
    from golem.integrity.check import Finding

COMMANDS = ("check", "backup", "restore")


def add_integrity_parsers(sub: Any,
                          config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    check = sub.add_parser(
        "check", help="check every store in the data dir for damage",
        description="Check every SQLite file (quick_check; --deep: integrity_check) and the "
                    "episode store's latest version (every file it names opens). Read-only, "
                    "safe beside a running golem. Exits 0 when all is intact, 70 otherwise, "
                    "naming each damaged store and what to do.")
    config_arg(check)
    check.add_argument("--deep", action="store_true",
                       help="full integrity_check (reads every index; slower)")
    check.add_argument("--json", action="store_true", help="print JSON")

    back = sub.add_parser(
        "backup", help="copy the data dir consistently, even while the golem runs",
        description="Copy every store of the data dir to DIR (SQLite's online backup, the "
                    "episode store's latest version), then check the copy with "
                    "`check --deep`. DIR must not exist or be empty. The copy holds the "
                    "wallet key (kept 0600): store it as carefully as the data dir.")
    config_arg(back)
    back.add_argument("--to", type=Path, required=True, metavar="DIR",
                      help="where to write the copy")

    rest = sub.add_parser(
        "restore", help="put a backup in place as the data dir",
        description="Copy a backup made by `golem backup` into the configured data dir. A "
                    "data dir that is not empty is refused unless --force, which moves it "
                    "aside (never deletes it). The golem must not be running.")
    config_arg(rest)
    rest.add_argument("--from", dest="source", type=Path, required=True, metavar="DIR",
                      help="a directory written by golem backup")
    rest.add_argument("--force", action="store_true",
                      help="move a non-empty data dir aside and restore in its place")


def run_integrity_command(args: argparse.Namespace, config: Config, out: TextIO) -> int:
    from golem.integrity.backup import backup, restore  # noqa: PLC0415
    from golem.integrity.check import check_data_dir  # noqa: PLC0415

    data_dir = config.data_dir
    if args.command == "check":
        if not data_dir.is_dir():
            raise NoInput(f"no data dir at {data_dir}: the golem has not run yet")
        findings = check_data_dir(data_dir, deep=args.deep)
        _write_findings(findings, data_dir, args.json, out)
        return EXIT_OK if all(f.ok for f in findings) else EXIT_SOFTWARE
    if args.command == "backup":
        report = backup(data_dir, args.to, made_at=time.time(), progress=_progress)
        for finding in report.problems:
            _progress(f"the copy has a problem: {finding.path}: {finding.problem}")
        out.write(f"backup of {data_dir} written to {report.dest}: {report.files} files, "
                  f"{report.episodes if report.episodes is not None else 'no'} episodes\n")
        return EXIT_OK if not report.problems else EXIT_SOFTWARE
    if args.command == "restore":
        aside = restore(args.source, data_dir, force=args.force, stamp=int(time.time()))
        if aside is not None:
            out.write(f"moved the previous data dir to {aside}\n")
        out.write(f"restored {args.source} into {data_dir}; check it with: golem check "
                  f"--deep --config {args.config}\n")
        return EXIT_OK
    raise AssertionError(f"not an integrity command: {args.command}")


def _write_findings(findings: list[Finding], data_dir: Path, as_json: bool,
                    out: TextIO) -> None:
    if as_json:
        out.write(json.dumps([{"path": str(f.path), "what": f.what, "ok": f.ok,
                               "problem": f.problem, "remedy": f.remedy,
                               "episodes": f.episodes} for f in findings], indent=2) + "\n")
        return
    for f in findings:
        rel = f.path.relative_to(data_dir)
        extra = f" ({f.episodes} episodes)" if f.episodes is not None else ""
        out.write(f"{'ok ' if f.ok else 'BAD'}  {rel}  {f.what}{extra}\n")
        if not f.ok:
            out.write(f"     {f.problem}\n")
            if f.remedy:
                out.write(f"     what to do: {f.remedy}\n")
    bad = sum(not f.ok for f in findings)
    out.write(f"{len(findings)} stores checked, {bad} damaged\n")


def _progress(message: str) -> None:
    sys.stderr.write(f"golem: {message}\n")

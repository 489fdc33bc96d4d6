"""The ``golem`` command."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TextIO

# Before numpy loads: OpenBLAS's worker threads spin after each matrix product, taking CPU
# from the daemon's other loops, and the Grimoire's products are small (at most a few
# thousand 384-d rows), so one thread loses no recall latency. An operator's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import anyio
import structlog

from golem import __version__
from golem.config import LOOP_NAMES, Config, load_config, parse_config, speed_label
from golem.errors import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    GolemError,
    UsageError,
)
from golem.logging import configure_logging
from golem.mortality.death import refuse_if_dead
from golem.runtime.daemon import Daemon
from golem.runtime.duration import format_duration, parse_duration
from golem.runtime.handlers import HandlerRegistry
from golem.runtime.heap import tune_heap
from golem.runtime.loop import iso
from golem.runtime.notify import SystemdNotifier
from golem.status import collect_status, render_status
from golem.wiring import build_registry
from golem.wiring import setup as wiring_setup

DEFAULT_CONFIG = Path("bardo.toml")

_DESCRIPTION = """\
Run a golem: a mortal autonomous DeFi agent. One process runs three tick loops:
Gamma captures chain events into episodic memory, Theta assembles a context and
decides, Delta consolidates, forgets, dreams and keeps the golem's mortality.

Exit status: 0 ok (also a stop by signal); 1 a crash; 2 bad arguments; 64 bad
usage (init refused to overwrite, a --stop-at that is no time); 65 bad memory input;
66 missing input; 69 this golem is dead;
70 a damaged store (see golem check); 73 the data dir cannot be written (read-only,
or below runtime.min_free_mb); 75 data dir in use, or the chain node unreachable;
77 no read grant for a namespace; 78 bad configuration."""


def main(argv: list[str] | None = None) -> None:
    sys.exit(run_cli(argv))


def run_cli(argv: list[str] | None = None,  # noqa: PLR0911, PLR0912 - one per command
            registry: HandlerRegistry | None = None) -> int:
    """Parse arguments and run a command. ``registry`` overrides the built-in handlers
    (used by golem.testing to run the real daemon with scripted handlers)."""
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args.config, args.stop_after, registry, args.inherit,
                            stop_at=args.stop_at)
        if args.command == "check-config":
            return _cmd_check_config(args.config, sys.stdout)
        if args.command == "status":
            return _cmd_status(args.config, args.json, sys.stdout)
        if args.command == "init":
            return _cmd_init(args.path, args.data_dir, args.model_dir, args.force, sys.stdout)
        if args.command == "die":
            from golem.mortality.die import run_die_command  # noqa: PLC0415 - heavy imports

            return run_die_command(load_config(args.config), args.reason, sys.stdout)
        if args.command in ("testament", "vault"):
            from golem.mortality.cli_testament import run_testament_command  # noqa: PLC0415

            return run_testament_command(args, sys.stdout)
        if args.command in ("check", "backup", "restore"):
            from golem.integrity.commands import run_integrity_command  # noqa: PLC0415

            return run_integrity_command(args, load_config(args.config), sys.stdout)
        if args.command == "report":
            from golem.api.report import run_report_command  # noqa: PLC0415

            return run_report_command(args, load_config(args.config), sys.stdout)
        if args.command == "lab":
            from golem.lab.commands import run_lab_command  # noqa: PLC0415

            return run_lab_command(args, sys.stdout)
        if args.command == "memory":
            from golem.memory_cli import run_memory_command  # noqa: PLC0415 - loads numpy etc.

            return run_memory_command(args, load_config(args.config), sys.stdout)
    except GolemError as exc:
        _fail(str(exc), exc.exit_code)
        return exc.exit_code
    except OSError as exc:
        _fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), EXIT_FAILURE)
        return EXIT_FAILURE
    except Exception as exc:  # a bug: the traceback goes to the log, one line to stderr
        structlog.get_logger("golem.cli").exception("command crashed", command=args.command)
        _fail(f"crashed: {type(exc).__name__}: {exc} (the log has the traceback; please "
              "report it)", EXIT_FAILURE)
        return EXIT_FAILURE
    raise AssertionError(f"unhandled command {args.command}")


def _cmd_run(config_path: Path, stop_after: float | None,
             registry: HandlerRegistry | None, inherit: Path | None = None, *,
             stop_at: str | None = None) -> int:
    config = load_config(config_path)
    until = stop_time(stop_at, config) if stop_at is not None else None
    if inherit is not None:  # the same as succession.inherit in the config
        from golem.mortality.succession import with_inherit  # noqa: PLC0415

        config = with_inherit(config, inherit)
    configure_logging(config.logging.level, config.logging.format)
    log = structlog.get_logger("golem.cli")
    from golem.integrity.preflight import preflight  # noqa: PLC0415 - loads the model's deps

    try:
        preflight(config, os.environ)  # before the data dir or any file in it is created
    except GolemError as exc:
        log.error("golem cannot run", error=str(exc), exit_code=exc.exit_code)
        _fail(str(exc), exc.exit_code)
        return exc.exit_code
    heap = tune_heap(os.environ)  # before the model and the stores allocate
    if heap:
        log.info("memory tuned for a small VM", **{k.lower(): v for k, v in heap.items()})
    notifier = SystemdNotifier.from_environ()
    if registry is None:  # production: this build's components and handlers
        daemon = Daemon(config, build_registry(config), stop_after=stop_after,
                        stop_at=until, notifier=notifier, setup=wiring_setup,
                        admit=refuse_if_dead)
    else:  # golem.testing's harness: scripted handlers, no components
        daemon = Daemon(config, registry, stop_after=stop_after, stop_at=until,
                        notifier=notifier, admit=refuse_if_dead)
    try:
        code: int = anyio.run(daemon.run, backend_options={"use_uvloop": True})
        if code != EXIT_OK:
            _fail(daemon.exit_reason, code)
        return code
    except GolemError as exc:
        log.error("golem cannot run", error=str(exc), exit_code=exc.exit_code)
        _fail(str(exc), exc.exit_code)
        return exc.exit_code
    except Exception as exc:
        log.exception("golem crashed")
        _fail(f"crashed: {type(exc).__name__}: {exc}"
              " (the log above has the traceback; please report it)", EXIT_FAILURE)
        return EXIT_FAILURE


def _cmd_check_config(config_path: Path, out: TextIO) -> int:
    config = load_config(config_path)
    from golem.integrity.preflight import preflight  # noqa: PLC0415 - loads the model's deps

    checks = preflight(config, os.environ)
    out.write(f"config ok: {config_path}\n{describe_config(config)}\n")
    out.write("".join(f"  {line}\n" for line in checks))
    return EXIT_OK


def describe_config(config: Config) -> str:
    if config.clock.mode == "real":
        clock = "real (wall clock)"
    else:
        clock = f"simulated, {speed_label(config)}, from {iso(config.clock.start.timestamp())}"
    lines = [f"  name      {config.golem.name}",
             f"  data dir  {config.data_dir}",
             f"  clock     {clock}"]
    api = config.api
    lines.append("  api       " + (f"on, http://{api.host}:{api.port}/ (every route but /healthz "
                                   "needs the token)" if api.enabled else "off"))
    for name in LOOP_NAMES:
        loop = config.loop(name)
        lines.append(f"  {name:<9} every {format_duration(loop.interval_s)}, deadline "
                     f"{format_duration(loop.deadline_s)}, backoff up to "
                     f"{format_duration(loop.backoff_max_s) if loop.backoff_max_s else 'off'}")
    return "\n".join(lines)


def _cmd_status(config_path: Path, as_json: bool, out: TextIO) -> int:
    report = collect_status(load_config(config_path))
    out.write((json.dumps(report, indent=2, default=str) if as_json
               else render_status(report)) + "\n")
    return EXIT_OK


def _cmd_init(path: Path, data_dir: str | None, model_dir: str | None, force: bool,
              out: TextIO) -> int:
    if path.exists() and not force:
        _fail(f"{path} already exists; pass --force to overwrite it", EXIT_USAGE)
        return EXIT_USAGE
    text = starter_config(data_dir, model_dir)
    parse_config(text, source=path)  # the template must always be valid
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    out.write(f"wrote {path}; check it with: golem check-config --config {path}\n")
    return EXIT_OK


def starter_config(data_dir: str | None = None, model_dir: str | None = None) -> str:
    text = resources.files("golem").joinpath("templates/bardo.toml").read_text("utf-8")
    for key, value in (("data_dir", data_dir), ("model_dir", model_dir)):
        if value is None:
            continue
        line = f"{key} = {json.dumps(value)}"
        text, count = re.subn(rf'(?m)^{key} = ".*"$', line.replace("\\", "\\\\"), text)
        assert count == 1, f"template lost its {key} line"
    return text


def stop_time(text: str, config: Config) -> float:
    """``--stop-at``: an ISO 8601 golem time (UTC when it names no zone), or a duration
    counted from ``clock.start`` (the golem's birth on a simulated clock), so a run that
    was stopped and started again ends where an uninterrupted one does. UsageError
    otherwise."""
    try:
        return config.clock.start.timestamp() + parse_duration(text) \
            if config.clock.mode != "real" else _iso_time(text)
    except ValueError:
        pass
    try:
        return _iso_time(text)
    except ValueError:
        raise UsageError(f"--stop-at: {text!r} is neither a golem time such as "
                         "2026-01-31T00:00Z nor a duration from clock.start such as 30d "
                         "(durations need a simulated clock)") from None


def _iso_time(text: str) -> float:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def _fail(message: str, code: int) -> None:
    kind = "config error" if code == EXIT_CONFIG else "error"
    sys.stderr.write(f"golem: {kind}: {message}\n")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="golem", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"golem {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def config_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", type=Path, default=DEFAULT_CONFIG, metavar="PATH",
                       help="configuration file (default: %(default)s)")

    run = sub.add_parser(
        "run", help="run the golem daemon",
        description="Run the golem until SIGTERM/SIGINT (graceful; a second signal cancels "
                    "ticks in flight) or until --stop-after has passed in golem time.")
    config_arg(run)
    until = run.add_mutually_exclusive_group()
    until.add_argument("--stop-after", type=_duration, metavar="DURATION",
                       help="stop cleanly after this much golem-clock time from this start, "
                            "e.g. 90s, 2h, 30d; with a simulated clock at max speed this "
                            "runs as fast as it can")
    until.add_argument("--stop-at", metavar="TIME",
                       help="stop cleanly once golem time reaches TIME: an ISO time "
                            "(2026-01-31T00:00Z) or, on a simulated clock, a duration from "
                            "clock.start (30d: the end of day 30, whatever restarts came "
                            "before)")
    run.add_argument("--inherit", type=Path, metavar="TESTAMENT",
                     help="boot a successor from a predecessor's testament (once; a restart "
                          "does not re-import); same as succession.inherit")

    check = sub.add_parser(
        "check-config", help="validate a configuration file without starting",
        description="Validate the configuration and print what it means, then check what "
                    "`golem run` needs before it writes: the embedding model (files and hash), "
                    "key files (present, mode 0600) and the data dir (writable, enough free "
                    "space). Exits 78 with one line naming the key on a configuration "
                    "problem, 73 when the data dir cannot be written. Writes nothing.")
    config_arg(check)

    status = sub.add_parser(
        "status", help="show ticks, errors and data sizes from the state store",
        description="Report what the state store holds: ticks per loop, skips and failures, "
                    "the last error, registered handlers and data sizes. Read-only; safe "
                    "while the golem runs.")
    config_arg(status)
    status.add_argument("--json", action="store_true", help="print JSON instead of text")

    init = sub.add_parser(
        "init", help="write a starter configuration file",
        description="Write the default configuration (simulated chain, offline, no key "
                    "needed) to PATH.")
    init.add_argument("path", type=Path, metavar="PATH", help="where to write the file")
    init.add_argument("--data-dir", metavar="DIR",
                      help="set golem.data_dir (default: data, next to the file)")
    init.add_argument("--model-dir", metavar="DIR",
                      help="set grimoire.model_dir (default: the repo's models/ folder)")
    init.add_argument("--force", action="store_true", help="overwrite an existing file")

    die = sub.add_parser(
        "die", help="end this golem: run the Thanatopsis death protocol",
        description="Settle positions, write the death reflection and the testament, notify "
                    "the webhook and mark the data dir dead. With a golem running on the data "
                    "dir the request is left for its next Delta tick; otherwise the protocol "
                    "runs here. Resumes an interrupted death. Irreversible.")
    config_arg(die)
    die.add_argument("--reason", required=True, metavar="TEXT",
                     help="the cause of death recorded in the testament")

    from golem.integrity.commands import add_integrity_parsers  # noqa: PLC0415

    add_integrity_parsers(sub, config_arg)
    from golem.memory_cli import add_memory_parser  # noqa: PLC0415

    add_memory_parser(sub, config_arg)
    from golem.api.report import add_report_parser  # noqa: PLC0415

    add_report_parser(sub, config_arg)
    from golem.mortality.cli_testament import add_testament_parsers  # noqa: PLC0415

    add_testament_parsers(sub, config_arg)
    from golem.lab.commands import add_lab_parser  # noqa: PLC0415

    add_lab_parser(sub)
    return parser

"""Run the real ``golem`` CLI with scripted handlers (for subprocess tests).

    python -m golem.testing.harness --wall-sleep gamma=2 --markers DIR -- run --config X

Everything after ``--`` goes to the real CLI unchanged; only the handler
registry differs from a production run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from golem.cli import run_cli
from golem.config import LOOP_NAMES, LoopName
from golem.runtime.handlers import HandlerRegistry
from golem.testing.handlers import FailingHandler, ThreadBlockHandler, WallSleepHandler


def _loop_value(text: str) -> tuple[LoopName, str]:
    loop, _, value = text.partition("=")
    if loop not in LOOP_NAMES or not value:
        raise argparse.ArgumentTypeError(f"expected LOOP=VALUE with LOOP in {LOOP_NAMES}")
    return loop, value


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    parser = argparse.ArgumentParser(prog="golem.testing.harness")
    parser.add_argument("--wall-sleep", type=_loop_value, action="append", default=[],
                        help="LOOP=SECONDS: each tick of LOOP takes that much wall time")
    parser.add_argument("--fail", type=_loop_value, action="append", default=[],
                        help="LOOP=1,2,3: those ticks of LOOP raise")
    parser.add_argument("--thread-block", type=_loop_value, action="append", default=[],
                        help="LOOP=SECONDS: each tick of LOOP blocks a thread that long")
    parser.add_argument("--markers", type=Path, help="folder for wall-sleep marker files")
    opts = parser.parse_args(args[:split])
    registry = HandlerRegistry()
    for loop, seconds in opts.wall_sleep:
        if opts.markers is None:
            parser.error("--wall-sleep needs --markers")
        registry.register(loop, WallSleepHandler(float(seconds), opts.markers))
    for loop, seconds in opts.thread_block:
        registry.register(loop, ThreadBlockHandler(float(seconds)))
    for loop, ticks in opts.fail:
        registry.register(loop, FailingHandler(frozenset(int(t) for t in ticks.split(","))))
    return run_cli(args[split + 1:], registry=registry)


if __name__ == "__main__":
    sys.exit(main())

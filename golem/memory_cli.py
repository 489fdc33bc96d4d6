"""``golem memory ...``: search, add, show, stats, forget and reembed from the shell.

These commands open the Grimoire directly on the data dir. Reads and small
writes are safe next to a running golem (SQLite WAL, LanceDB versions);
``reembed`` re-renders episodes (golem.gamma.rendering) and rewrites vectors, and
so takes the data-dir lock.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import anyio

from golem.config import Config
from golem.errors import EXIT_OK, GolemError
from golem.grimoire.errors import StoreCorrupt
from golem.grimoire.records import DecayClass, InsightCategory, MemoryType
from golem.grimoire.requests import AddRequest, SearchRequest, to_jsonable
from golem.logging import configure_logging
from golem.runtime.lock import DataDirLock
from golem.runtime.state import cli_golem_now

if TYPE_CHECKING:  # the store and model modules are heavy; load them only to run a command
    from golem.grimoire.grimoire import Grimoire

T = TypeVar("T")
PROGRESS_EVERY_S = 2.0


def add_memory_parser(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    memory = sub.add_parser(
        "memory", help="search and edit the golem's memory (the Grimoire)",
        description="Work with the Grimoire: the golem's local memory.")
    msub = memory.add_subparsers(dest="memory_command", required=True, metavar="ACTION")

    search = msub.add_parser("search", help="recall memories relevant to a query",
                             description="Run the same recall path the golem uses. Prints the "
                                         "hits with their score breakdown, or the refusal when "
                                         "memory holds nothing close enough.")
    config_arg(search)
    search.add_argument("query", help="what to recall")
    search.add_argument("--k", type=int, default=10, help="how many hits (default: 10)")
    search.add_argument("--json", action="store_true", help="print JSON")

    add = msub.add_parser("add", help="remember a text memory",
                          description="Store a text memory in the golem's own namespace. "
                                      "A claim contradicting an anchored or high-confidence "
                                      "entry is stored quarantined.")
    config_arg(add)
    add.add_argument("text", help="the memory")
    # Values are checked before any store opens, as bad memory input (exit 65), not by
    # argparse (exit 2): the help lists them.
    add.add_argument("--type", default="fact",
                     help="one of " + ", ".join(m.value for m in MemoryType) + " (default: fact)")
    add.add_argument("--importance", type=float, default=0.5, help="0..1 (default: 0.5)")
    add.add_argument("--category",
                     help="one of " + ", ".join(c.value for c in InsightCategory))
    add.add_argument("--decay-class", default="strategic",
                     help="one of " + ", ".join(d.value for d in DecayClass)
                     + " (default: strategic)")
    add.add_argument("--anchored", action="store_true", help="exempt from decay and pruning")
    add.add_argument("--json", action="store_true", help="print JSON")

    show = msub.add_parser("show", help="show one memory or episode by id")
    config_arg(show)
    show.add_argument("id")

    stats = msub.add_parser("stats", help="counts, sizes and the embedding model signature")
    config_arg(stats)
    stats.add_argument("--json", action="store_true", help="print JSON")

    forget = msub.add_parser("forget", help="forget a memory (logged with the reason)")
    config_arg(forget)
    forget.add_argument("id")
    forget.add_argument("--reason", required=True, help="why (kept in the forget log)")
    forget.add_argument("--hard", action="store_true", help="delete instead of marking pruned")

    reembed = msub.add_parser(
        "reembed", help="re-render episodes and re-embed what changed or was embedded with "
                        "another model",
        description="One migration, run with the golem stopped (it takes the data-dir lock). "
                    "Every episode the golem captured from the chain is rendered again from "
                    "its stored payload with today's renderings (names such as 'the WETH/USDC "
                    "pool' instead of hex addresses, which stay in the payload and the "
                    "full-text index), using the names the golem last captured with "
                    "(data_dir/chain/names.json; for a simulated chain without it, the seed's "
                    "market); episodes whose text changed, and every "
                    "vector made by another model, are embedded again with the configured "
                    "model. The copy is swapped in at once: interrupting it (Ctrl-C, a crash) "
                    "leaves the store as it was, and running it again starts over safely. "
                    "Progress goes to stderr; a JSON report to stdout.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    config_arg(reembed)

    compact = msub.add_parser(
        "compact", help="give back the disk old versions of the episode store hold",
        description="Compact the episode store (merge its fragments, fold new rows into "
                    "its indexes) and delete its old versions. A running "
                    "golem keeps versions for `version_retention_s` of wall time for readers "
                    "in other processes, and at simulated max speed they can hold several "
                    "GB until the next scheduled compaction. Run it with the golem stopped "
                    "(this takes the data-dir lock), e.g. on a lab life or a golem that has "
                    "died. Prints the store's rows, fragments and versions before and after "
                    "as JSON.")
    config_arg(compact)

    rebuild = msub.add_parser(
        "rebuild-episodes", help="set a damaged episode store aside and capture it again",
        description="Move the episode store to episodes.damaged-<time> (kept for inspection) "
                    "and restart capture from the first block: the next `golem run` captures "
                    "the chain again into the same episode ids. Replay counts, verification "
                    "marks and importance changes of the old rows are lost. The golem must "
                    "not be running (this takes the data-dir lock).")
    config_arg(rebuild)


def run_memory_command(args: argparse.Namespace, config: Config, out: TextIO) -> int:
    # Results go to stdout; the Grimoire's own log lines go to stderr.
    configure_logging(config.logging.level, config.logging.format, sys.stderr)
    command = args.memory_command
    if command in ("search", "show", "stats", "forget") and not config.data_dir.exists():
        raise StoreCorrupt(f"no memory at {config.data_dir} (the golem has never run and "
                           "nothing was added); add one with: golem memory add TEXT")
    if command == "add":
        _add_request(args).check(config.grimoire.max_text_chars)
    if command == "reembed":
        return _reembed(config, out)
    if command == "compact":
        return _compact(config, out)
    if command == "rebuild-episodes":
        from golem.integrity.rebuild import rebuild_episodes  # noqa: PLC0415

        out.write(rebuild_episodes(config.data_dir, now=time.time()).describe() + "\n")
        return EXIT_OK
    handler = _HANDLERS[command]
    return anyio.run(_with_grimoire, config, lambda g: handler(g, args, out),
                     backend_options={"use_uvloop": True})


async def _with_grimoire(config: Config, body: Callable[[Grimoire], Awaitable[T]]) -> T:
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415

    # Not the owner: a golem may be running on the data dir (reembed, which takes the
    # lock, opens its stores itself).
    grimoire = await Grimoire.open(config, now=cli_golem_now(config), owner=False)
    try:
        return await body(grimoire)
    finally:
        await grimoire.close()


async def _search(g: Grimoire, args: argparse.Namespace, out: TextIO) -> int:
    result = await SearchRequest(args.query, k=args.k).run(g)
    if args.json:
        out.write(json.dumps(to_jsonable(result), indent=2) + "\n")
        return EXIT_OK
    if result.refused:
        out.write(f"refused: {result.reason}\n")
    else:
        for n, hit in enumerate(result.hits, 1):
            s = hit.score
            out.write(f"{n:>2}. {hit.score.final:.3f}  {hit.uri}\n    {_excerpt(hit.text)}\n"
                      f"    relevance {s.relevance:.2f} (cosine {s.semantic:.2f}, words "
                      f"{s.lexical:.2f}) temporal {s.temporal:.2f} importance "
                      f"{s.importance:.2f} emotional {s.emotional:.2f} x provenance "
                      f"{s.provenance_weight:.2f} ({hit.provenance.source.value})\n")
    for hit in result.anti_knowledge:
        out.write(f"  ! anti-knowledge {hit.uri}: {_excerpt(hit.text)}\n")
    return EXIT_OK


def _add_request(args: argparse.Namespace) -> AddRequest:
    """The request the HTTP API builds too; checked (InvalidMemory, exit 65) before any
    store is opened or created."""
    return AddRequest(args.text, type=args.type, importance=args.importance,
                      category=args.category, decay_class=args.decay_class,
                      anchored=args.anchored)


async def _add(g: Grimoire, args: argparse.Namespace, out: TextIO) -> int:
    entry = await _add_request(args).run(g)
    if args.json:
        out.write(json.dumps(to_jsonable(entry), indent=2) + "\n")
    else:
        out.write(f"remembered {entry.id} ({entry.memory_type.value}, {entry.status.value})\n")
    return EXIT_OK


async def _show(g: Grimoire, args: argparse.Namespace, out: TextIO) -> int:
    found = await g.get(args.id)
    if found is None:
        raise GolemError(f"no memory with id {args.id} in namespace {g.namespace}")
    out.write(json.dumps(to_jsonable(found), indent=2) + "\n")
    return EXIT_OK


async def _stats(g: Grimoire, args: argparse.Namespace, out: TextIO) -> int:
    stats = await g.stats()
    out.write(json.dumps(to_jsonable(stats), indent=2 if args.json else None) + "\n")
    return EXIT_OK


async def _forget(g: Grimoire, args: argparse.Namespace, out: TextIO) -> int:
    if not await g.forget(args.id, args.reason, hard=args.hard):
        raise GolemError(f"no memory with id {args.id} in namespace {g.namespace}")
    out.write(f"forgot {args.id}\n")
    return EXIT_OK


_HANDLERS: dict[str, Callable[[Grimoire, argparse.Namespace, TextIO], Awaitable[int]]] = {
    "search": _search, "add": _add, "show": _show, "stats": _stats, "forget": _forget,
}


def _reembed(config: Config, out: TextIO, err: TextIO = sys.stderr) -> int:
    from golem.gamma.rendering import capture_names, rerender  # noqa: PLC0415 - heavy, rare
    from golem.grimoire.migration import reembed_all  # noqa: PLC0415

    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    lock = DataDirLock(config.data_dir)
    lock.acquire()
    names = capture_names(config)
    started = last = time.monotonic()

    def progress(done: int, total: int) -> None:  # at most one line every 2 s, and the last
        nonlocal last
        now = time.monotonic()
        if done < total and now - last < PROGRESS_EVERY_S:
            return
        last = now
        err.write(f"reembed: {done:,} of {total:,} episodes ({done / max(total, 1):.0%}), "
                  f"{done / max(now - started, 1e-9):,.0f}/s\n")
        err.flush()

    try:
        report = anyio.run(functools.partial(reembed_all, config, lambda e: rerender(e, names),
                                             progress),
                           backend_options={"use_uvloop": True})
    finally:
        lock.release()
    out.write(json.dumps(to_jsonable(report)) + "\n")
    return EXIT_OK


def _compact(config: Config, out: TextIO) -> int:
    if not config.data_dir.exists():
        raise StoreCorrupt(f"no memory at {config.data_dir}: nothing to compact")
    lock = DataDirLock(config.data_dir)
    lock.acquire()  # LockHeldError (exit 75) while a golem runs on it
    try:
        async def optimize(g: Grimoire) -> dict[str, Any]:
            return await g.optimize(0.0)
        report = anyio.run(_with_grimoire, config, optimize,
                           backend_options={"use_uvloop": True})
    finally:
        lock.release()
    out.write(json.dumps(to_jsonable(report)) + "\n")
    return EXIT_OK


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = ["add_memory_parser", "run_memory_command"]

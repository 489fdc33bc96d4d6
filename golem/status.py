"""``golem status``: what the state store says, without disturbing a running golem.

Reads only: no data dir is created, the lock is not touched, SQLite is
opened read-only.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from golem.chain.cursor import read_cursors
from golem.cognition.journal import latest as journal_latest
from golem.config import LOOP_NAMES, Config, speed_label
from golem.consolidation.status import delta_status
from golem.errors import StateError
from golem.mortality.death_journal import describe_death
from golem.mortality.lineage import Lineage
from golem.mortality.vitality_store import vitality_status
from golem.redact import redact_url
from golem.runtime.duration import format_duration
from golem.runtime.heap import process_memory
from golem.runtime.lock import lock_holder
from golem.runtime.loop import iso
from golem.runtime.state import StateStore

NOT_BUILT = "not built yet"
# What each loop does (shown beside a loop with no handler registered).
PLANNED: dict[str, str] = {
    "gamma": "chain capture and triage",
    "theta": "context governor and cognition",
    "delta": "consolidation, store maintenance and the vitality check ([mortality])",
}


def collect_status(config: Config) -> dict[str, Any]:
    data_dir = config.data_dir
    pid = lock_holder(data_dir) if data_dir.exists() else None
    clock = "real" if config.clock.mode == "real" else f"simulated ({speed_label(config)})"
    report: dict[str, Any] = {
        "name": config.golem.name,
        "config": str(config.source) if config.source else None,
        "data_dir": str(data_dir),
        "running": pid is not None,
        "pid": pid if pid and pid > 0 else None,
        # the running daemon's memory (Linux); None when not running or not readable
        "memory": process_memory(pid) if pid and pid > 0 else None,
        "clock": clock,
        "initialised": False,
        "phase": None,
        "vitality": None,
        "mortality": "enabled" if config.mortality.enabled else "disabled",
        "chain": _chain(config),
        "actions": actions_mode(config),
        "theta": journal_latest(data_dir) if data_dir.exists() else None,
        "policy": None,
        "delta": delta_status(data_dir) if data_dir.exists() else None,
        "death": describe_death(data_dir),
        "lineage": _lineage(data_dir),
        "wallet": _wallet(data_dir),
        "disk": _disk(data_dir, config.runtime.min_free_mb),
    }
    if config.mortality.enabled and data_dir.exists():
        report["vitality"] = vitality_status(data_dir, config.mortality)
        latest = (report["vitality"] or {}).get("latest")
        report["phase"] = latest["phase"] if latest else None
    store = StateStore.open_readonly(data_dir) if data_dir.exists() else None
    if store is None:
        report["loops"] = {name: _loop_entry(config, name, None, []) for name in LOOP_NAMES}
        report["data"] = _data_sizes(data_dir)
        report["last_error"] = None
        return report
    try:
        meta = store.all_meta()
        loops = store.load_loops()
        errors = store.recent_errors(1)
        report["policy"] = _policy(store)
    finally:
        store.close()
    handlers = meta.get("handlers", {})
    report.update(
        initialised=True,
        runs=meta.get("runs", 0),
        golem_time=iso(meta["golem_time"]) if "golem_time" in meta else None,
        clean_shutdown=meta.get("clean_shutdown"),
        last_run=meta.get("last_run"),
        last_stop=meta.get("last_stop"),
        loops={name: _loop_entry(config, name, loops.get(name), handlers.get(name, []))
               for name in LOOP_NAMES},
        last_error=vars(errors[0]) | {"golem_time": iso(errors[0].golem_time)} if errors else None,
        data=_data_sizes(data_dir),
    )
    return report


def _policy(store: StateStore) -> dict[str, Any] | None:
    try:
        row = store.latest_policy_revision()
    except StateError:  # a store from before the policy tables: nothing learnt yet
        return None
    if row is None:
        return {"revision": 0, "learnt_at": None}
    return {"revision": row[0], "learnt_at": iso(row[1])}


def actions_mode(config: Config) -> str:
    """Whether accepted decisions act, as configured (the start-up log says if a key or the
    node stopped an RPC executor from opening)."""
    if not config.actions.enabled:
        return "off: decisions are recorded, nothing is signed (actions.enabled = false)"
    if config.chain.mode == "off":
        return "none: no chain (chain.mode = \"off\")"
    if config.chain.mode == "rpc" and not config.actions.market_file:
        return "recorded only: no actions.market_file names the venues"
    if config.dry_run:
        return "dry run: each accepted action is planned and recorded, nothing is signed or sent"
    where = "the simulated chain" if config.chain.mode == "simulated" else \
        redact_url(config.chain.rpc.url)
    return f"executed: signed and sent to {where}, the policy cage checked before signing"


def _chain(config: Config) -> dict[str, Any]:
    chain = config.chain
    entry: dict[str, Any] = {"mode": chain.mode, "confirmations": chain.confirmations}
    if chain.mode == "rpc":
        entry["url"] = redact_url(chain.rpc.url)
        entry["watching"] = len(chain.rpc.addresses)
    entry["cursors"] = [c | {"updated_at": iso(c["updated_at"])}
                        for c in read_cursors(config.data_dir / "chain")]
    return entry


def _loop_entry(config: Config, name: str, row: Any, handlers: list[str]) -> dict[str, Any]:
    section = config.loop(name)  # type: ignore[arg-type]
    entry: dict[str, Any] = {
        "interval_s": section.interval_s,
        "deadline_s": section.deadline_s,
        "handlers": handlers,
        "planned": PLANNED[name] + (' (chain.mode = "off")' if name == "gamma"
                                    and config.chain.mode == "off" else ""),
    }
    if row is not None:
        entry.update({k: v for k, v in vars(row).items() if k != "name"})
        for key in ("last_tick_at", "next_due"):
            if entry.get(key) is not None:
                entry[key] = iso(entry[key])
    return entry


def _data_sizes(data_dir: Path) -> dict[str, Any]:
    if not data_dir.exists():
        return {"total_bytes": 0, "entries": {}}
    entries: dict[str, int] = {}
    for entry in sorted(data_dir.iterdir()):
        entries[entry.name] = _size(entry)
    return {"total_bytes": sum(entries.values()), "entries": entries}


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(root) / name).stat().st_size
            except OSError:
                continue
    return total


def _disk(data_dir: Path, floor_mb: int) -> dict[str, Any] | None:
    """Free space on the data dir's filesystem against runtime.min_free_mb."""
    where = data_dir if data_dir.exists() else data_dir.parent
    try:
        free_mb = shutil.disk_usage(where).free >> 20
    except OSError:
        return None
    return {"free_mb": free_mb, "floor_mb": floor_mb, "low": bool(floor_mb) and
            free_mb < floor_mb}


def _memory_line(memory: dict[str, float] | None) -> str | None:
    """The running daemon's memory as one line of the report, or None without a reading."""
    if not memory or "rss_mb" not in memory:
        return None
    parts = [f"{memory[key]:.0f} {label}" for key, label in (("anon_mb", "anonymous"),
                                                            ("peak_mb", "peak"))
             if key in memory]
    return (f"  memory     {memory['rss_mb']:.0f} MB resident"
            + (f" ({', '.join(parts)})" if parts else ""))


def render_status(report: dict[str, Any]) -> str:
    lines = [f"golem {report['name']}: "
             + (f"running (pid {report['pid']})" if report["running"] else "not running")]
    lines.append(f"  data dir   {report['data_dir']}")
    memory = _memory_line(report.get("memory"))
    if memory:
        lines.append(memory)
    lines.append(f"  clock      {report['clock']}")
    if not report["initialised"]:
        lines.append("  state      none yet (this golem has never run)")
    else:
        lines.append(f"  golem time {report.get('golem_time')}   runs {report.get('runs')}"
                     f"   last shutdown clean: {_yes(report.get('clean_shutdown'))}")
        stop = report.get("last_stop")
        if stop and not report["running"]:
            lines.append(f"  last stop  {stop.get('reason')}")
    disk = report.get("disk")
    if disk:
        low = ("  BELOW the floor: golem run stops with exit 73 until space is freed"
               if disk["low"] else "")
        lines.append(f"  disk       {disk['free_mb']} MB free (runtime.min_free_mb = "
                     f"{disk['floor_mb']}){low}")
    lines.extend(_vitality_lines(report))
    lines.append(f"  actions    {report['actions']}")
    lines.extend(_lineage_lines(report.get("lineage"), report.get("wallet")))
    lines.extend(_death_lines(report.get("death")))
    chain = report["chain"]
    where = f" {chain['url']}, {chain['watching']} contracts" if "url" in chain else ""
    lines.append(f"  chain      {chain['mode']}{where}; "
                 f"{chain['confirmations']} confirmations")
    theta = report.get("theta")
    if theta:
        lines.append(f"  decision   tick {theta['tick']} ({theta['provider']}, {theta['status']}):"
                     f" {theta['summary']}")
        quality = theta["mean_quality"]
        lines.append(f"  predictions {theta['predictions']} made, {theta['scored']} scored, "
                     f"{theta['hits']} hit" + (f", mean quality {quality:.2f}"
                                               if quality is not None else ""))
        lines.extend(_knowledge_lines(theta.get("knowledge") or []))
    policy = report.get("policy")
    if policy:
        lines.append(f"  governor   policy revision {policy['revision']}"
                     + (f" (learnt {policy['learnt_at']})" if policy.get("learnt_at") else
                        " (seed defaults)"))
    delta = report.get("delta")
    if delta:
        last = delta["last_consolidation_at"]
        dream = delta["last_dream_tick"]
        lines.append(f"  delta      {delta['consolidation_runs']} consolidation runs"
                     + (f" (last {iso(last)})" if last is not None else "")
                     + (f"; last dream at Delta tick {dream}" if dream is not None
                        else "; no dream yet"))
        lines.append("  knowledge  " + _counts(delta["entries"], "entries") + "; facts "
                     + _counts(delta["facts"], "") + "; Loop 3 mutations "
                     + _counts(delta["mutations"], ""))
    for c in chain["cursors"]:
        lines.append(f"    chain {c['chain_id']}: captured blocks {c['first_block']}.."
                     f"{c['cursor']} (committed {c['updated_at']})")
    lines.append("  loops")
    for name, loop in report["loops"].items():
        ticks = loop.get("ticks", 0)
        handlers = ", ".join(loop["handlers"]) or f"none registered; {loop['planned']}"
        lines.append(
            f"    {name:<5} every {format_duration(loop['interval_s']):<6} ticks {ticks:<8}"
            f" ok {loop.get('ok', 0):<8} failed {loop.get('failed', 0) + loop.get('timed_out', 0)}"
            f"  skipped {loop.get('skipped_overrun', 0) + loop.get('skipped_backoff', 0)}"
        )
        lines.append(f"          handlers: {handlers}")
    err = report.get("last_error")
    lines.append("  last error " + (
        f"{err['loop']} tick {err['tick']} at {err['golem_time']}: {err['kind']}: {err['message']}"
        if err else "none"))
    data = report["data"]
    lines.append(f"  data       {_bytes(data['total_bytes'])} total")
    for name, size in data["entries"].items():
        lines.append(f"    {name:<20} {_bytes(size)}")
    return "\n".join(lines)


def _vitality_lines(report: dict[str, Any]) -> list[str]:
    if report["mortality"] == "disabled":
        return ["  phase      stable (mortality disabled: this golem is immortal)"]
    vit = report.get("vitality")
    if not vit or vit.get("latest") is None:
        return ["  phase      no vitality reading yet (computed every Delta tick)"]
    last = vit["latest"]
    ttl = vit["ttl_s"]
    lines = [
        f"  phase      {last['phase']}   vitality {last['composite']:.3f} = economic "
        f"{last['economic']:.3f} x epistemic {last['epistemic']:.3f}"
        + (" (unproven)" if last["unproven"] else "")
        + f" x stochastic {last['stochastic']:.3f}",
        f"  mortality  born {iso(vit['birth'])}, age {format_duration(vit['age_s'])}; "
        f"weakest: {last['cause']}; "
        + (vit["projection"]["text"] if vit.get("projection") else
           "not declining" if ttl is None else "terminal now" if ttl <= 0 else
           f"terminal in ~{format_duration(ttl)} at the recent trend")]
    if vit["terminal"]:
        lines.append(f"  terminal   since Delta tick {vit['terminal']['tick']}: "
                     f"{vit['terminal']['cause']}")
    return lines


def _wallet(data_dir: Path) -> dict[str, Any] | None:
    if not (data_dir / "chain").exists():
        return None
    from golem.actions.positions import read_book  # noqa: PLC0415 - loads the EVM stack

    return read_book(data_dir / "chain")


def _lineage(data_dir: Path) -> dict[str, Any] | None:
    lineage = Lineage.load(data_dir) if data_dir.exists() else None
    return asdict(lineage) if lineage is not None else None


def _lineage_lines(lineage: dict[str, Any] | None, wallet: dict[str, Any] | None) -> list[str]:
    lines = []
    if lineage is not None:
        parent = (f"successor of {lineage['parent_namespace']} (testament "
                  f"{lineage['parent_testament_id']}, {lineage['inherited_entries']} entries "
                  "inherited)") if lineage["parent_testament_id"] else "a first golem"
        lines.append(f"  lineage    generation {lineage['generation']}, {parent}")
    if wallet is not None:
        t = wallet["totals"]
        lines.append(f"  wallet     funded ${t.get('funded_usd', 0.0):,.2f}, peak equity "
                     f"${t.get('peak_equity_usd', 0.0):,.2f}, realised P&L "
                     f"${t.get('realised_usd', 0.0):+,.2f}; executions: "
                     f"{_counts(wallet['executions'], '')}")
    return lines


def _death_lines(death: dict[str, Any] | None) -> list[str]:
    if not death:
        return []
    if death["state"] == "dying":
        return [f"  DYING      since {iso(death['since'])}: {death['cause']} "
                f"({death['trigger']}); steps done: {', '.join(death['steps_done']) or 'none'}"]
    return [f"  DEAD       died {iso(death['died_at'])}: {death['cause']} ({death['trigger']}),"
            f" generation {death['generation']}",
            f"  testament  {death['testament_id']} at {death['testament_path']} (reflection "
            f"{death['reflection_source']}; positions settled: {_yes(death['settled'])})"]


def _knowledge_lines(recent: list[dict[str, Any]]) -> list[str]:
    """The knowledge behind the newest decisions: each decision's prediction and outlook,
    then the entries that moved it (share of the predicted mean, short text); without
    any, the offline tier's prior, or a model decision that cited no learned entry."""
    if not recent:
        return []
    lines = ["  knowledge  behind the newest decisions:"]
    for item in recent:
        p = item.get("prediction")
        said = f"{p['direction']} ({p['confidence']:.2f})" if p else "no prediction"
        outlook = item.get("outlook")
        if outlook:
            said += (f", outlook down {outlook[0]:.0%} / flat {outlook[1]:.0%} / up "
                     f"{outlook[2]:.0%}")
        entries = item.get("attribution") or []
        if entries:
            source = f"{len(entries)} learned entr{'y' if len(entries) == 1 else 'ies'}"
        elif not item.get("recorded", True):
            source = "no knowledge record (journalled before one was kept)"
        elif outlook:
            source = "the prior (nothing learned matched)"
        else:
            source = "no learned entry cited"
        skipped = f"; {item['skipped']} malformed fact(s) skipped" if item.get("skipped") \
            else ""
        lines.append(f"    tick {item['tick']}: {said}; from {source}{skipped}")
        for a in entries[:3]:
            lines.append(f"      {a['share']:+.3%} {a['uri']}: {a['text']}")
    return lines


def _counts(counts: dict[str, int], noun: str) -> str:
    if not counts:
        return "none"
    parts = ", ".join(f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    total = sum(counts.values())
    return f"{total} {noun} ({parts})" if noun else parts


def _yes(value: Any) -> str:
    return "yes" if value else ("no" if value is not None else "unknown")


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"

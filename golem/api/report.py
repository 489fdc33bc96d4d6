"""``golem report --config PATH [--out FILE]``: the dashboard's charts for a data dir,
alive or dead, as one self-contained HTML file.

Read-only: the data dir is not locked and nothing in it is written, so it runs beside a
running golem or on a dead one's remains. The page is the dashboard's own template with
its stylesheet and scripts (``static/charts.js``, ``static/dashboard.js``) inlined and
the data embedded as JSON, so it opens from disk with no server and no network. Series:
vitality and phase from every vitality sample; P&L, model spend, episodes and entries
from ``api/history.db`` where the API recorded them (absent otherwise, and the chart
says so); the loops from the state store; the last decisions from the journal.
"""

from __future__ import annotations

import argparse
import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from golem import __version__
from golem.api.dashboard import template
from golem.api.decisions import decision_view
from golem.api.history import HISTORY_DB, HISTORY_DIR
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, JournalReader
from golem.config import Config
from golem.errors import EXIT_OK, GolemError
from golem.mortality.vitality_store import vitality_samples, vitality_status
from golem.runtime.state import read_only_rows
from golem.status import collect_status

DECISIONS = 20


def add_report_parser(sub: Any, config_arg: Callable[[argparse.ArgumentParser], None]) -> None:
    report = sub.add_parser(
        "report", help="write the dashboard's charts for a data dir as one HTML file",
        description="Vitality and phase over time, P&L and model spend, episodes and "
                    "entries, loop health and the last decisions, as one self-contained "
                    "HTML file (no server, works offline). Read-only: safe beside a running "
                    "golem, and works on a dead one.")
    config_arg(report)
    report.add_argument("--out", type=Path, metavar="FILE",
                        default=Path("report.html"),
                        help="where to write it (default: %(default)s)")


def run_report_command(args: argparse.Namespace, config: Config, out: TextIO) -> int:
    if not config.data_dir.exists():
        raise GolemError(f"no data at {config.data_dir}: this golem has never run")
    page = render_report(report_data(config), config)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page, encoding="utf-8")
    out.write(f"wrote {args.out} ({len(page.encode()) // 1024} KiB)\n")
    return EXIT_OK


def report_data(config: Config) -> dict[str, Any]:
    """Everything the page draws, as the API's JSON routes would give it."""
    data_dir = config.data_dir
    points: dict[float, dict[str, Any]] = {}
    for s in vitality_samples(data_dir):
        points[s.t] = {"t": s.t, "economic": s.economic, "epistemic": s.epistemic,
                       "stochastic": s.stochastic, "composite": s.composite,
                       "phase": s.phase.value, "pnl_usd": None, "spent_usd": None,
                       "episodes": None, "entries": None}
    rows = read_only_rows(data_dir / HISTORY_DIR / HISTORY_DB, "the dashboard history",
                          "SELECT point FROM points ORDER BY t") or []
    for (raw,) in rows:
        p = json.loads(raw)
        base = points.get(p["t"], {})
        points[p["t"]] = base | {k: v for k, v in p.items() if v is not None or k not in base}
    status = collect_status(config)
    vit = vitality_status(data_dir, config.mortality) if config.mortality.enabled else None
    journal = JournalReader(data_dir / JOURNAL_DIR / JOURNAL_DB)
    return {
        "series": {"golem_time": status.get("golem_time") or "never ran",
                   "points": [points[t] for t in sorted(points)],
                   "projection": (vit or {}).get("projection")},
        "loops": [{"loop": name, "state": "running" if status["running"] else "stopped",
                   "ticks": loop.get("ticks", 0), "last_tick_at": loop.get("last_tick_at"),
                   "last_tick_age_s": None, "last_outcome": loop.get("last_outcome"),
                   "last_duration_ms": loop.get("last_duration_ms"),
                   "stalled": False} for name, loop in status["loops"].items()],
        "decisions": [decision_view(r) for r in journal.recent(DECISIONS)],
        "death": status.get("death"),
    }


def render_report(data: dict[str, Any], config: Config) -> str:
    """The dashboard page with its assets inlined and ``data`` embedded."""
    fields = {"name": config.golem.name, "version": __version__,
              "clock": "real" if config.clock.mode == "real" else "simulated",
              "chain": config.chain.mode, "namespace": config.grimoire.namespace,
              "mortality": "on" if config.mortality.enabled else "off"}
    page = template("dashboard.html")
    for key, value in fields.items():
        page = page.replace("{{" + key + "}}", html.escape(str(value)))
    # JSON inside <script>: "<" escaped, so no string can close the element
    embedded = json.dumps(data, default=str).replace("<", "\\u003c")
    inline = {
        '<link rel="stylesheet" href="/static/dashboard.css">':
            f"<style>\n{template('dashboard.css')}</style>",
        '<script src="/static/charts.js" defer></script>':
            f'<script type="application/json" id="golem-data">{embedded}</script>\n'
            f"<script>\n{_script('charts.js')}</script>",
        '<script src="/static/dashboard.js" defer></script>':
            f"<script>\n{_script('dashboard.js')}</script>",
    }
    for tag, replacement in inline.items():
        assert tag in page, f"dashboard.html lost {tag}"
        page = page.replace(tag, replacement)
    return page.replace("<title>golem ", "<title>golem report: ", 1)


def _script(name: str) -> str:
    return template(name).replace("</script", "<\\/script")

"""The phase feeds Theta through the real wiring: each decision is assembled under the
phase Delta's vitality check last recorded, with the token budget of that phase."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR
from golem.config import load_config
from golem.governor.budget import phase_budget
from golem.governor.categories import Phase
from golem.logging import configure_logging
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.wiring import setup

from ..conftest import REPO, config_text

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
ORDER = ["stable", "thriving", "stable", "conservation", "declining", "terminal"]


def test_theta_decides_under_the_vitality_phase_and_its_budget(tmp_path: Path) -> None:
    path = tmp_path / "golem.toml"
    path.write_text(config_text({
        "golem": {"data_dir": "data", "seed": 3},
        "grimoire": {"model_dir": str(MODEL)},
        "consolidation": {"enabled": False},
        "chain": {"mode": "off"},
        "theta": {"interval_s": 60, "deadline_s": 60},
        "delta": {"interval_s": 120, "deadline_s": 120, "backoff_max_s": 0},
        "mortality": {"lifespan_days": 0.01, "hazard_per_day": 0.0},  # 864 s
        "logging": {"format": "json", "level": "warning"}}))
    config = load_config(path)
    registry = HandlerRegistry()
    configure_logging("warning", "json", io.StringIO())
    daemon = Daemon(config, registry, stop_after=960, setup=setup)
    assert anyio.run(daemon.run, backend_options={"use_uvloop": True}) == 0
    # mortality first, so a failing consolidation stage never stops the golem ageing
    assert [h.name for h in registry.for_loop("delta")][:2] == ["thanatopsis", "vitality"]
    conn = sqlite3.connect(config.data_dir / JOURNAL_DIR / JOURNAL_DB)
    try:
        records = [json.loads(r) for (r,) in conn.execute(
            "SELECT record FROM decisions ORDER BY tick")]
    finally:
        conn.close()
    phases = [r["phase"] for r in records]
    # a newborn thrives (also before Delta's first reading); the phase only moves down the
    # order as the golem ages, until it dies of its Hayflick limit and stops
    assert phases[0] == "thriving"
    seen = [p for i, p in enumerate(phases) if i == 0 or p != phases[i - 1]]
    assert seen == ORDER[1:len(seen) + 1] and len(seen) >= 4
    assert daemon.stop_reason is not None and "Hayflick" in daemon.stop_reason
    total = config.theta_context.total_budget
    assert all(r["workspace"]["budget"] == phase_budget(total, Phase(r["phase"]))
               for r in records)
    assert {r["workspace"]["budget"] for r in records} >= {total, round(total * 0.6)}
    # the model sees the reading: vitality, phase and the clock that is running out
    def mortality(record: dict[str, Any]) -> str:
        return str(next(i["text"] for i in record["live"] if i["key"] == "mortality"))
    assert mortality(records[0]).startswith("Vitality 1.00, phase thriving")
    assert f"phase {records[-1]['phase']}" in mortality(records[-1])
    assert "Hayflick" in mortality(records[-1])

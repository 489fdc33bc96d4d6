"""`golem report`: the dashboard's charts for a data dir as one self-contained file."""

from __future__ import annotations

import json
import re
from pathlib import Path

from golem.testing.api_golem import ApiGolem
from tests.conftest import REPO

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"


def test_report_of_a_stopped_golem_is_one_offline_file(tmp_path: Path) -> None:
    g = ApiGolem(tmp_path, MODEL, chain={"mode": "off"}, api={"enabled": False})
    assert g.run("run", "--stop-after", "40m").returncode == 0
    out = tmp_path / "out" / "report.html"
    done = g.run("report", "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    # self-contained: no fetch, no asset from a server or a CDN
    assert not re.search(r'(src|href)="(?!#|data:)', page)
    assert "/static/" not in page and "http" not in page.split("golem-data")[0]
    data = json.loads(re.search(r'<script type="application/json" id="golem-data">(.*?)'
                                r"</script>", page, re.S).group(1))
    points = data["series"]["points"]
    assert len(points) >= 4  # a vitality sample per Delta tick (every 10 minutes)
    assert all(0.0 <= p["composite"] <= 1.0 and p["phase"] for p in points)
    assert data["series"]["projection"]["text"].startswith("terminal in ~")
    assert {lp["loop"] for lp in data["loops"]} == {"gamma", "theta", "delta"}
    assert data["decisions"] and data["decisions"][0]["summary"]
    assert not (g.root / "data" / "api").exists()  # read-only: nothing written


def test_report_refuses_a_golem_that_never_ran(tmp_path: Path) -> None:
    g = ApiGolem(tmp_path, MODEL, api={"enabled": False})
    done = g.run("report", "--out", str(tmp_path / "r.html"))
    assert done.returncode == 1 and "never run" in done.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "data").exists()

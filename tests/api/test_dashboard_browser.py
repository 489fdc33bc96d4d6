"""The dashboard in a real browser: Debian's chromium (scripts/setup --dev installs it),
driven headless by playwright, at a golem that ran one simulated hour of the default
configuration and was restarted with the API on. The page must draw its charts with data
points and log no console error; a screenshot is kept in the test's temp dir and, when
GOLEM_TEST_ARTIFACTS is set, copied there."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from golem.testing.api_golem import ApiGolem
from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def chromium() -> Path:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (scripts/setup --dev installs it)")
        pytest.skip("chromium is not installed (scripts/setup --dev installs it)")
    return CHROMIUM


@pytest.mark.slow
@pytest.mark.timeout(1800)  # an hour at full speed, then a restart that replays the market
def test_dashboard_draws_an_hour_of_charts(tmp_path: Path, chromium: Path) -> None:
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 - dev dependency

    g = ApiGolem(tmp_path, REPO / "models" / "all-minilm-l6-v2-int8")
    lived = g.run("run", "--stop-after", "1h", timeout=1200)
    assert lived.returncode == 0, lived.stderr[-2000:]
    # Wall-speed from here: golem time moves no faster while the browser looks.
    g.config_path.write_text(g.config_path.read_text().replace(
        "[golem]", '[clock]\nspeed = 1.0\n\n[golem]'))
    with g, sync_playwright() as p:
        g.start()
        browser = p.chromium.launch(executable_path=str(chromium), args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(g.base_url + "/")
        assert page.url.endswith("/signin")  # sent to the sign-in form
        assert errors == []
        page.fill("#token", "not-the-token-at-all")
        page.click("#signin")
        assert "not this golem's API token" in page.content()
        assert len(errors) == 1 and "401" in errors[0]  # the browser logs the refusal
        errors.clear()
        page.fill("#token", g.token)
        page.click("#signin")
        page.wait_for_selector("#chart-vitality .gc-point", timeout=30_000)
        for chart in ("vitality", "money", "memory", "phase"):
            points = page.locator(f"#chart-{chart} .gc-point").count()
            assert points >= 6, (chart, points)  # a Delta tick every 10 minutes
        assert page.locator("#loops tbody tr").count() == 3
        assert page.locator("#decisions li").count() >= 1
        assert page.inner_text("#projection").startswith("terminal in ~")
        # untrusted text (as an on-chain string could be) shows as text, never as markup
        hostile = 'Token name <img src=x id=pwned onerror="document.title=1"> pool drained'
        made = httpx.post(g.base_url + "/v1/memory", headers=g.headers, timeout=60,
                          json={"text": hostile, "importance": 0.9})
        assert made.status_code == 201
        page.fill("#recall-query", "token name pool drained")
        page.click("#recall-form button")
        page.wait_for_selector("#recall-result .hit", timeout=30_000)
        assert hostile in page.inner_text("#recall-result")
        assert page.locator("#pwned").count() == 0 and page.title() != "1"
        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert errors == []
        page.click(".signout button")  # the session ends: back to the sign-in form
        page.wait_for_selector("#token")
        assert page.context.cookies() == []
        assert errors == []
        browser.close()
    assert shot.stat().st_size > 10_000
    if os.environ.get("GOLEM_TEST_ARTIFACTS"):
        out = Path(os.environ["GOLEM_TEST_ARTIFACTS"])
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, out / "dashboard.png")

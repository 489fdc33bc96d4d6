"""The operator API on a real golem: `golem run` in a child process with [api] on a
loopback port, called with a real HTTP client (httpx)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from golem.testing.api_golem import ApiGolem
from tests.conftest import REPO, child_env

MODEL = REPO / "models" / "all-minilm-l6-v2-int8"
ROUTES = [("GET", "/readyz"), ("GET", "/static/dashboard.js"), ("GET", "/metrics"),
          ("GET", "/v1/status"),
          ("GET", "/v1/decisions"), ("GET", "/v1/series"), ("GET", "/openapi.json"),
          ("GET", "/v1/memory/abc"), ("DELETE", "/v1/memory/abc"), ("POST", "/v1/memory"),
          ("POST", "/v1/memory/search"), ("GET", "/static/charts.js"), ("GET", "/")]


@pytest.fixture(scope="module")
def golem(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiGolem]:
    """A golem without a chain (memory, Theta and Delta run), its clock at wall speed, so
    golem time barely moves between two calls; the peer namespace is a read grant."""
    g = ApiGolem(tmp_path_factory.mktemp("api"), MODEL, chain={"mode": "off"},
                 clock={"speed": 1.0}, grimoire={"read_grants": ["peer"]},
                 api={"max_body_bytes": 4096, "max_query_bytes": 256})
    g.start()
    yield g
    assert g.stop() == 0, g.log()[-2000:]
    assert g.token not in g.log()  # never logged


@pytest.fixture
def client(golem: ApiGolem) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=golem.base_url, headers=golem.headers, timeout=30) as c:
        yield c


def test_healthz_is_open_and_every_other_route_needs_the_token(golem: ApiGolem) -> None:
    with httpx.Client(base_url=golem.base_url, timeout=30) as anon:
        health = anon.get("/healthz")
        assert health.status_code == 200
        assert {lp["loop"] for lp in health.json()["loops"]} == {"gamma", "theta", "delta"}
        for method, path in ROUTES:
            for headers in ({}, {"Authorization": "Bearer " + "x" * 48},
                            {"Authorization": golem.token}):  # no "Bearer ": refused too
                r = anon.request(method, path, headers=headers, json={"query": "eth"})
                assert golem.token not in r.text
                if path == "/":  # the page: to the sign-in form, nothing of the golem
                    assert r.status_code == 303, headers
                    continue
                assert r.status_code == 401, (method, path, headers)
                assert r.json()["error"]["status"] == 401
                assert r.headers["www-authenticate"].startswith("Bearer")
        assert anon.get("/static/dashboard.css").status_code == 200  # the form's style
        to_form = anon.get("/")  # a browser is sent to the sign-in form
        assert to_form.status_code == 303 and to_form.headers["location"] == "/signin"
        form = anon.get("/signin")
        assert form.status_code == 200 and "API token" in form.text
        assert "script" not in form.text  # no golem data, no code: a form


def test_every_route_answers_with_the_token(client: httpx.Client) -> None:
    assert client.get("/readyz").json()["ready"] is True
    assert client.get("/static/charts.js").text.startswith("// golem charts")
    page = client.get("/")
    assert page.status_code == 200 and "chart-vitality" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/v1/series").json()["points"] is not None
    assert "decisions" in client.get("/v1/decisions?limit=5").json()
    paths = client.get("/openapi.json").json()["paths"]
    for _, path in ROUTES:
        if not path.startswith(("/static", "/v1/memory/abc")) and path != "/":
            assert path in paths
    assert "/v1/memory/{id}" in paths


@pytest.mark.parametrize(("method", "path", "body", "status", "field"), [
    ("POST", "/v1/memory", {}, 422, "text"),
    ("POST", "/v1/memory", {"text": "  "}, 422, "text"),
    ("POST", "/v1/memory", {"text": 5}, 422, "text"),
    ("POST", "/v1/memory", {"text": "ok", "type": "rumour"}, 422, "type"),
    ("POST", "/v1/memory", {"text": "ok", "importance": 1.5}, 422, "importance"),
    ("POST", "/v1/memory", {"text": "ok", "importance": "high"}, 422, "importance"),
    ("POST", "/v1/memory", {"text": "ok", "metadata": {"colour": "red"}}, 422, "metadata"),
    ("POST", "/v1/memory", {"text": "ok", "flavour": 1}, 422, "flavour"),
    ("POST", "/v1/memory", {"text": "ok", "namespace": "peer"}, 403, "namespace"),
    ("POST", "/v1/memory/search", {"query": "eth", "k": 0}, 422, "k"),
    ("POST", "/v1/memory/search", {"query": "eth", "k": "3"}, 422, "k"),
    ("POST", "/v1/memory/search", {"query": ""}, 422, "query"),
    ("POST", "/v1/memory/search", {"query": "eth", "filters": {"kinds": ["x"]}}, 422,
     "filters.kinds"),
    ("POST", "/v1/memory/search", {"query": "eth", "filters": {"colour": 1}}, 422,
     "filters.colour"),
    ("POST", "/v1/memory/search", {"query": "eth", "namespaces": ["stranger"]}, 403,
     "namespace"),
    ("DELETE", "/v1/memory/abc", {}, 422, "reason"),
    ("DELETE", "/v1/memory/abc", {"reason": "stale"}, 404, "id"),
    ("GET", "/v1/decisions?limit=0", None, 422, "limit"),
    ("GET", "/v1/memory/abc", None, 404, "id"),
])
def test_bad_input_is_a_4xx_naming_the_field(client: httpx.Client, method: str, path: str,
                                              body: object, status: int, field: str) -> None:
    before = client.post("/v1/memory/search", json={"query": "ok", "k": 50}).json()
    r = client.request(method, path, json=body) if body is not None else \
        client.request(method, path)
    assert r.status_code == status, r.text
    assert r.json()["error"]["field"] == field
    after = client.post("/v1/memory/search", json={"query": "ok", "k": 50}).json()
    assert after.get("hits") == before.get("hits")  # nothing half-written


def test_malformed_and_oversized_requests(client: httpx.Client) -> None:
    r = client.post("/v1/memory", content=b"{not json",
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["field"] is None
    assert client.post("/v1/memory", json=["text"]).status_code == 400
    big = client.post("/v1/memory", json={"text": "x" * 5000})
    assert big.status_code == 413
    assert "api.max_body_bytes" in big.json()["error"]["message"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams
        yield b'{"text": "'
        for _ in range(10):
            yield b"y" * 1000
        yield b'"}'

    assert client.post("/v1/memory", content=chunks()).status_code == 413
    assert client.get("/v1/decisions?" + "a=1&" * 100).status_code == 414


def test_add_get_forget_and_grants(client: httpx.Client, golem: ApiGolem) -> None:
    made = client.post("/v1/memory", json={
        "text": "Never provide liquidity in pools under $100k TVL <script>x</script>",
        "type": "constraint", "importance": 0.9, "metadata": {"protocols": ["uniswap"]}})
    assert made.status_code == 201, made.text
    entry = made.json()
    assert entry["namespace"] == "golem" and entry["memory_type"] == "constraint"
    assert client.get(f"/v1/memory/{entry['id']}").json()["text"] == entry["text"]
    # a granted namespace may be read (nothing there), a stranger's may not
    assert client.get(f"/v1/memory/{entry['id']}?namespace=peer").status_code == 404
    assert client.get(f"/v1/memory/{entry['id']}?namespace=other").status_code == 403
    gone = client.request("DELETE", f"/v1/memory/{entry['id']}", json={"reason": "test"})
    assert gone.json() == {"forgotten": entry["id"], "hard": False}
    assert client.get(f"/v1/memory/{entry['id']}").json()["status"] == "pruned"


def test_search_equals_golem_memory_search(client: httpx.Client, golem: ApiGolem) -> None:
    for text in ("ETH/USDC pool depth fell below $100k after the whale exit",
                 "Gas spikes above 80 gwei make small rebalances unprofitable",
                 "WETH price moved 4% within one block during the liquidation cascade"):
        assert client.post("/v1/memory", json={"text": text}).status_code == 201
    query = "thin liquidity in the ETH pool"
    api = client.post("/v1/memory/search", json={"query": query, "k": 5}).json()
    cli = subprocess.run([sys.executable, "-m", "golem", "memory", "search", query, "--k", "5",
                          "--json", "--config", str(golem.config_path)], capture_output=True,
                         text=True, timeout=120, env=child_env(HF_HUB_OFFLINE="1"), check=True)
    shell = json.loads(cli.stdout)
    assert api["refused"] is False
    assert [h["id"] for h in api["hits"]] == [h["id"] for h in shell["hits"]]
    # The same recall path. Two factors are state, not the query: recall strengthens what it
    # returns (importance and last access move with each search, so the second search sees
    # the first one's traces) and "now" differs (the CLI reads the golem time last flushed to
    # state.db, the API the live clock). Everything the query decides is identical.
    for a, c in zip(api["hits"], shell["hits"], strict=True):
        for factor in ("relevance", "semantic", "lexical", "emotional", "provenance_weight"):
            assert a["score"][factor] == pytest.approx(c["score"][factor], abs=1e-9), factor
        assert a["score"]["final"] == pytest.approx(c["score"]["final"], abs=0.05)
        assert a["provenance"] == c["provenance"] and a["text"] == c["text"]
    refused = client.post("/v1/memory/search", json={"query": "the of and"}).json()
    assert refused["refused"] is True and refused["reason"]


def test_metrics_parse_and_counters_move(client: httpx.Client) -> None:
    def scrape() -> dict[str, float]:
        r = client.get("/metrics")
        assert r.headers["content-type"].startswith("text/plain")
        values: dict[str, float] = {}
        for family in text_string_to_metric_families(r.text):
            for sample in family.samples:
                key = sample.name + json.dumps(sample.labels, sort_keys=True)
                values[key] = sample.value
        return values

    first = scrape()
    names = {k.split("{")[0] for k in first}
    for name in ("golem_ticks_total", "golem_tick_duration_seconds_bucket",
                 "golem_episodes_total", "golem_memory_entries",
                 "golem_recall_duration_seconds_count", "golem_llm_tokens_total",
                 "golem_llm_cost_usd_total", "golem_budget_remaining_usd", "golem_pnl_usd",
                 "golem_curator_actions_total", "golem_knowledge_skipped_total",
                 "golem_build_info"):
        assert name in names, name
    # the process's memory, as an operator watches it over weeks (Linux, glibc here)
    assert first["process_resident_memory_bytes{}"] > 50e6
    assert first["process_cpu_seconds_total{}"] > 0
    assert first['golem_heap_bytes{"part": "in_use"}'] > 1e6
    assert 'golem_heap_bytes{"part": "free"}' in first
    assert first["golem_python_allocated_blocks{}"] > 10_000

    def ticks(values: dict[str, float]) -> float:
        return sum(v for k, v in values.items() if k.startswith("golem_ticks_total{"))

    deadline = time.monotonic() + 60
    while ticks(scrape()) <= ticks(first):
        assert time.monotonic() < deadline, "no tick counted in 60 s"
        time.sleep(1)
    client.post("/v1/memory/search", json={"query": "gas price spikes"})
    recalls = scrape()["golem_recall_duration_seconds_count{}"]
    assert recalls >= first["golem_recall_duration_seconds_count{}"] + 1


def test_status_is_what_golem_status_prints(client: httpx.Client, golem: ApiGolem) -> None:
    api = client.get("/v1/status").json()
    cli = subprocess.run([sys.executable, "-m", "golem", "status", "--json", "--config",
                          str(golem.config_path)], capture_output=True, text=True,
                         timeout=120, env=child_env(), check=True)
    shell = json.loads(cli.stdout)
    assert set(api) == set(shell)
    assert api["name"] == shell["name"] and api["running"] is True
    assert "api_history" in api["loops"]["delta"]["handlers"]


def test_a_token_file_others_can_read_is_refused(tmp_path: Path) -> None:
    g = ApiGolem(tmp_path, MODEL, chain={"mode": "off"})
    g.token_path.chmod(0o644)
    for command in (("check-config",), ("run", "--stop-after", "1m")):
        done = g.run(*command)
        assert done.returncode == 78, done.stderr
        assert "api.token_file" in done.stderr and "chmod 600" in done.stderr
        assert g.token not in done.stderr + done.stdout
    assert not (tmp_path / "data").exists()  # refused before anything was written
    g.token_path.chmod(0o600)
    assert "api token present" in g.run("check-config").stdout


def test_dashboard_session_cookie(golem: ApiGolem) -> None:
    with httpx.Client(base_url=golem.base_url, timeout=30) as browser:
        wrong = browser.post("/signin", data={"token": "x" * 48})
        assert wrong.status_code == 401 and "not this golem" in wrong.text
        assert "golem_session" not in browser.cookies
        signed = browser.post("/signin", data={"token": golem.token})
        assert signed.status_code == 303
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert golem.token not in cookie  # a session id, never the token
        assert browser.get("/v1/status").status_code == 200
        assert browser.get("/").status_code == 200
        # a POST with the cookie alone is refused (another site could send that one)...
        assert browser.post("/v1/memory/search", json={"query": "gas"}).status_code == 401
        # ...the dashboard's own header makes it the dashboard's request
        ok = browser.post("/v1/memory/search", json={"query": "gas"},
                          headers={"X-Golem-Dashboard": "1"})
        assert ok.status_code == 200
        sid = browser.cookies["golem_session"]
        assert browser.post("/signout").status_code == 303
        assert browser.get("/v1/status", headers={"cookie": f"golem_session={sid}"}) \
            .status_code == 401


def test_a_port_in_use_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    g = ApiGolem(tmp_path, MODEL, chain={"mode": "off"})
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", g.port))
        taken.listen()
        for command in (("check-config",), ("run", "--stop-after", "1m")):
            done = g.run(*command)
            assert done.returncode == 78, done.stderr
            assert f"api.port: cannot listen on 127.0.0.1:{g.port}" in done.stderr
    assert not (tmp_path / "data").exists()
    assert "free now" in g.run("check-config").stdout

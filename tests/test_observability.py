"""Logs, redaction, the event bus and its log, and `golem status`."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import structlog

from golem.config import parse_config
from golem.events import EventBus, EventLog, RuntimeStopping, TickCompleted, TickFailed
from golem.logging import configure_logging
from golem.redact import REDACTED, redact, redact_url
from golem.runtime.handlers import HandlerRegistry
from golem.status import actions_mode
from golem.testing.handlers import FailingHandler

from .conftest import REPO, run_daemon, run_golem


def test_redaction_masks_secret_names_at_any_depth_but_keeps_counts() -> None:
    record = {
        "api_key": "abc", "password": "p", "auth": "x", "wallet": {"private_key": "0xdead"},
        "items": [{"token": "t"}], "max_tokens": 4096, "total_tokens": 12, "token_budget": 5,
        "note": "key is sk-ant-api03-abcdefghijklmnopqrstuvwxyz here",
    }
    cleaned = redact(record)
    assert cleaned["api_key"] == cleaned["password"] == cleaned["auth"] == REDACTED
    assert cleaned["wallet"]["private_key"] == REDACTED
    assert cleaned["items"][0]["token"] == REDACTED
    counts = (cleaned["max_tokens"], cleaned["total_tokens"], cleaned["token_budget"])
    assert counts == (4096, 12, 5)
    assert cleaned["note"] == f"key is {REDACTED} here"


def test_node_urls_lose_credentials_and_key_like_path_parts() -> None:
    key = "0123456789abcdef0123456789abcdef"
    assert redact_url(f"https://u:pw@mainnet.infura.io/v3/{key}?apikey=x") == \
        f"https://mainnet.infura.io/v3/{REDACTED}"
    assert redact_url("ws://127.0.0.1:8545") == "ws://127.0.0.1:8545"
    assert redact_url("http://h:99999") == REDACTED


def test_json_logs_are_one_object_per_line_and_redacted() -> None:
    out = io.StringIO()
    assert configure_logging("info", "auto", out) is True  # StringIO is not a TTY
    log = structlog.get_logger("t")
    log.info("hello", api_key="sk-should-not-appear-0123456789", count=3)
    log.debug("hidden at info level")
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    record = json.loads(lines[0])
    assert record["event"] == "hello" and record["count"] == 3
    assert record["api_key"] == REDACTED
    assert record["level"] == "info" and record["timestamp"].endswith("Z")


def test_console_format_is_readable_and_redacted() -> None:
    out = io.StringIO()
    assert configure_logging("debug", "console", out) is False
    structlog.get_logger("t").warning("careful", secret="hunter2")
    text = out.getvalue()
    assert "careful" in text and "hunter2" not in text and REDACTED in text
    assert not text.lstrip().startswith("{")


def test_stdlib_library_logs_share_the_format() -> None:
    out = io.StringIO()
    configure_logging("info", "json", out)
    logging.getLogger("some.library").warning("library says %s", "hi")
    record = json.loads(out.getvalue().splitlines()[-1])
    assert record["event"] == "library says hi"
    assert record["logger"] == "some.library"


def test_event_bus_delivers_in_order_and_persists_only_persistent_events(tmp_path: Path) -> None:
    sink = EventLog(tmp_path / "events.jsonl", max_bytes=1 << 20, keep=2)
    bus = EventBus(lambda: 1000.0, sink)
    seen: list[str] = []
    bus.subscribe(lambda event, record: seen.append(record["kind"]))

    def broken(event, record):  # type: ignore[no-untyped-def]
        raise ValueError("subscriber bug")

    bus.subscribe(broken)
    bus.emit(TickCompleted("gamma", 1, 0.5, "ok"))
    bus.emit(TickFailed("gamma", 2, "failed", "RuntimeError", "boom", 1))
    bus.emit(RuntimeStopping("SIGTERM"))
    assert seen == ["tick:completed", "tick:failed", "runtime:stopping"]
    assert sink.flush() == 2
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in records] == ["tick:failed", "runtime:stopping"]
    assert records[0]["golem_time"] == 1000.0 and records[0]["tick"] == 2


def test_event_log_rotates_by_size_and_keeps_n(tmp_path: Path) -> None:
    sink = EventLog(tmp_path / "events.jsonl", max_bytes=4096, keep=2)
    bus = EventBus(lambda: 0.0, sink)
    for i in range(200):
        bus.emit(RuntimeStopping("x" * 100 + str(i)))
        sink.flush()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["events.1.jsonl", "events.2.jsonl", "events.jsonl"]
    assert all(p.stat().st_size <= 4096 for p in tmp_path.iterdir())
    last = (tmp_path / "events.jsonl").read_text().splitlines()[-1]
    assert json.loads(last)["reason"].endswith("199")


def test_status_before_any_run_creates_nothing(make_config, tmp_path: Path) -> None:
    path, cfg = make_config()
    result = run_golem("status", "--config", str(path))
    assert result.returncode == 0, result.stderr
    assert "never run" in result.stdout
    assert not cfg.data_dir.exists()


def test_status_reports_ticks_handlers_errors_and_sizes(make_config) -> None:
    path, cfg = make_config()
    registry = HandlerRegistry()
    registry.register("gamma", FailingHandler(frozenset({3})))
    run_daemon(cfg, registry, stop_after=3600)
    result = run_golem("status", "--config", str(path), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["running"] is False and report["initialised"] is True
    assert report["memory"] is None  # nothing running to measure
    gamma = report["loops"]["gamma"]
    assert (gamma["ticks"], gamma["ok"], gamma["failed"]) == (360, 359, 1)
    assert gamma["handlers"] == ["failing"]
    assert report["loops"]["theta"]["handlers"] == []
    assert report["last_error"]["loop"] == "gamma" and report["last_error"]["tick"] == 3
    assert report["data"]["entries"]["state.db"] > 0
    assert report["mortality"] == "enabled"
    text = run_golem("status", "--config", str(path)).stdout
    assert "ticks 360" in text and "gamma tick 3" in text
    assert "none registered" in text  # theta and delta have no handlers in this build


def test_every_command_has_help() -> None:
    top = run_golem("--help")
    assert top.returncode == 0
    for command in ("run", "check-config", "status", "init"):
        assert command in top.stdout
        sub = run_golem(command, "--help")
        assert sub.returncode == 0, sub.stderr
        assert "usage: golem " + command in sub.stdout
    assert "--stop-after" in run_golem("run", "--help").stdout


def test_bad_stop_after_is_a_usage_error(make_config) -> None:
    path, cfg = make_config()
    result = run_golem("run", "--config", str(path), "--stop-after", "soon")
    assert result.returncode == 2
    assert "bad duration" in result.stderr
    assert not cfg.data_dir.exists()


def test_uncreatable_data_dir_is_one_clear_line(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    path = tmp_path / "g.toml"
    path.write_text(f'[golem]\ndata_dir = "afile/data"\n[logging]\nformat = "json"\n'
                    f'[grimoire]\nmodel_dir = "{REPO}/models/all-minilm-l6-v2-int8"\n')
    result = run_golem("run", "--config", str(path), "--stop-after", "1m")
    assert result.returncode == 73
    assert result.stderr.strip().splitlines() == [
        f"golem: error: golem.data_dir: {tmp_path}/afile is not a directory"]


def test_status_says_whether_actions_act() -> None:
    rpc = ('[chain]\nmode = "rpc"\n[chain.rpc]\nurl = "https://node.example/v3/9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c"\n'
           'addresses = ["0x00000000000000000000000000000000000000aa"]\n')
    modes = {
        "": "executed: signed and sent to the simulated chain",
        "[actions]\nenabled = false\n": "off:",
        "[actions]\ndry_run = true\n": "dry run:",
        '[chain]\nmode = "off"\n': "none:",
        rpc: "recorded only: no actions.market_file",
        rpc + '[actions]\nmarket_file = "m.json"\n': "dry run:",
        rpc + '[actions]\nmarket_file = "m.json"\ndry_run = false\n': "executed: signed and "
                                                                         "sent to https://",
    }
    for text, expected in modes.items():
        said = actions_mode(parse_config(text))
        assert said.startswith(expected), (text, said)
        assert "9f2c4e6a" not in said  # the node URL is redacted like everywhere else


def test_status_names_chain_mode_off_only_when_it_is(make_config) -> None:
    from golem.status import collect_status  # noqa: PLC0415

    for mode, expect_off in (("simulated", False), ("off", True)):
        _, cfg = make_config(chain={"mode": mode})
        cfg.data_dir.mkdir(exist_ok=True)
        planned = collect_status(cfg)["loops"]["gamma"]["planned"]
        assert planned.startswith("chain capture and triage")
        assert ('chain.mode = "off"' in planned) == expect_off, (mode, planned)

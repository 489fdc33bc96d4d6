"""Config: defaults, range checks, unknown keys, and the operator-facing errors."""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from pathlib import Path

import pytest

from golem.cli import starter_config
from golem.config import Config, load_config, parse_config
from golem.errors import ConfigError

from .conftest import REPO, run_golem


def error_for(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    return str(info.value)


def test_default_file_is_valid_and_means_simulated_offline() -> None:
    cfg = load_config(REPO / "bardo.toml")
    assert cfg.clock.mode == "simulated"
    assert cfg.clock.speed == "max"
    assert cfg.data_dir == REPO / "data"
    assert (cfg.gamma.interval_s, cfg.theta.interval_s, cfg.delta.interval_s) == (10, 60, 600)


def test_init_template_is_the_shipped_bardo_toml() -> None:
    assert starter_config() == (REPO / "bardo.toml").read_text()


def test_annotated_example_sets_every_option() -> None:
    """config/example.toml must mention every key the loader accepts."""
    example = tomllib.loads((REPO / "config" / "example.toml").read_text())

    def check(cls: type, table: dict[str, object], where: str) -> None:
        hints = typing.get_type_hints(cls)
        keys = {f.name for f in dataclasses.fields(cls) if not f.metadata.get("internal")}
        assert set(table) == keys, where or "top level"
        for name in keys:
            hint = hints[name]
            if isinstance(hint, type) and dataclasses.is_dataclass(hint):
                sub = table[name]
                assert isinstance(sub, dict)
                check(hint, sub, f"{where}{name}.")

    check(Config, example, "")
    load_config(REPO / "config" / "example.toml")


def test_empty_file_gives_defaults() -> None:
    cfg = parse_config("")
    assert cfg.gamma.interval_s == 10.0
    assert cfg.runtime.shutdown_grace_s == 20.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[theta]\ninterval_s = -5", "theta.interval_s: must be > 0, got -5"),
        ('[chain]\nmode = "rpc"', "chain.rpc.url: required when"),
        ('[chain]\nmode = "rpc"\n[chain.rpc]\nurl = "http://127.0.0.1:8545"',
         "chain.rpc.addresses: required when"),
        ('[chain.rpc]\nurl = "ftp://node"', "chain.rpc.url: 'ftp://node': the scheme must be"),
        ('[chain.rpc]\nurl = "http://:8545"', "chain.rpc.url: 'http://:8545' has no host"),
        ('[chain.rpc]\naddresses = ["0x' + "ab" * 20 + '", "0x12"]',
         "chain.rpc.addresses[1]: '0x12' is not a 0x address"),
        ('[chain.rpc]\nevents = ["Swap(address"]', "chain.rpc.events[0]: 'Swap(address' is"),
        ("[chain]\nconfirmations = -1", "chain.confirmations: must be >= 0, got -1"),
        ("[chain.rpc]\nbackoff_base_s = 10\nbackoff_max_s = 5",
         "chain.rpc.backoff_max_s: must be >= chain.rpc.backoff_base_s"),
        ("[gamma]\ndeadline_s = 0", "gamma.deadline_s: must be > 0, got 0"),
        ("[theta]\ninterval_s = \"ten\"", 'theta.interval_s: must be a number, got "ten"'),
        ("[theta]\ninterval_s = true", "theta.interval_s: must be a number, got true"),
        ("[theta]\nintervall_s = 5", "theta.intervall_s: unknown key (expected one of: "
                                     "interval_s, deadline_s, backoff_max_s)"),
        ("[thetta]\ninterval_s = 5", "thetta: unknown key"),
        ("theta = 5", "theta: must be a table [theta], got 5"),
        ("[clock]\nmode = \"fast\"", 'clock.mode: must be one of "simulated", "real", got "fast"'),
        ("[clock]\nspeed = -2", "clock.speed: must be > 0, got -2"),
        ("[clock]\nspeed = \"fast\"", 'clock.speed: must be a number or one of "max", got "fast"'),
        ("[clock]\nstart = 2026-01-01T00:00:00", "clock.start: must carry a UTC offset"),
        ("[golem]\nseed = -1", "golem.seed: must be >= 0, got -1"),
        ("[golem]\nname = \"\"", "golem.name: must be at least 1 characters"),
        ("[events]\nkeep = 1.5", "events.keep: must be an integer, got 1.5"),
        ("[gamma]\ninterval_s = 60\nbackoff_max_s = 30",
         "gamma.backoff_max_s: must be 0 (no backoff) or >= gamma.interval_s (60), got 30"),
        ("[gamma]\ninterval_s = nan", "gamma.interval_s: must be a finite number, got nan"),
        ("[consolidation]\nforgetting = false\nforget_at_random = true",
         "consolidation.forget_at_random: needs consolidation.forgetting on"),
    ],
)
def test_bad_values_name_the_key_and_expectation(text: str, message: str) -> None:
    assert error_for(text).startswith(message)


def test_broken_toml_reports_position() -> None:
    message = error_for("[theta\ninterval_s = 5")
    assert "invalid TOML" in message and "line 1" in message


def test_relative_data_dir_resolves_against_config_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "g.toml"
    path.write_text('[golem]\ndata_dir = "state"\n')
    assert load_config(path).data_dir == tmp_path / "sub" / "state"


def test_config_is_frozen() -> None:
    cfg = parse_config("")
    with pytest.raises(AttributeError):
        cfg.gamma.interval_s = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("[theta\ninterval_s = 5\n", "invalid TOML"),
        ("[golem]\ndata_dir = \"data\"\n[theta]\nfrobnicate = 1\n",
         "theta.frobnicate: unknown key"),
        ("[golem]\ndata_dir = \"data\"\n[theta]\ninterval_s = -5\n",
         "theta.interval_s: must be > 0, got -5"),
    ],
)
def test_check_config_exits_78_with_one_line_and_writes_nothing(
        tmp_path: Path, body: str, expected: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    for command in ("check-config", "run", "status"):
        result = run_golem(command, "--config", str(path))
        assert result.returncode == 78, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert expected in lines[0]
        assert lines[0].startswith("golem: config error: ")
        assert result.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_check_config_missing_file(tmp_path: Path) -> None:
    result = run_golem("check-config", "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 78
    assert "no such file" in result.stderr


def test_check_config_ok_describes_the_config(tmp_path: Path) -> None:
    result = run_golem("check-config", "--config", str(REPO / "bardo.toml"))
    assert result.returncode == 0, result.stderr
    assert "config ok" in result.stdout
    assert "simulated, max speed" in result.stdout
    assert not (tmp_path / "data").exists()


def test_init_writes_a_valid_config_and_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "etc" / "bardo.toml"
    result = run_golem("init", str(target), "--data-dir", "/var/lib/golem")
    assert result.returncode == 0, result.stderr
    assert load_config(target).data_dir == Path("/var/lib/golem")
    again = run_golem("init", str(target))
    assert again.returncode == 64
    assert "already exists" in again.stderr
    forced = run_golem("init", str(target), "--force")
    assert forced.returncode == 0
    assert load_config(target).data_dir == target.parent / "data"

"""Shared helpers: configs in temp dirs and an in-process daemon run."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import settings

from golem.config import Config, load_config
from golem.logging import configure_logging
from golem.mortality.death import refuse_if_dead
from golem.runtime.daemon import Daemon
from golem.runtime.handlers import HandlerRegistry
from golem.testing.anvil import ANVIL_ENV, REPO_ANVIL, AnvilNode, find_anvil

REPO = Path(__file__).resolve().parents[1]

# CI (CI=true) runs property tests derandomized: the same examples every run, so a
# red run is reproducible and never a roll of the dice; no per-example deadline on
# a shared 2-core machine. Local runs keep exploring new examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
# onnxruntime's telemetry off in tests that import it themselves (test_model_compact), as
# golem.grimoire.embedder keeps it off in the golem
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")


@pytest.fixture(autouse=True)
def _logging_outlives_captured_streams() -> Iterator[None]:
    """A test that runs the CLI in-process configures logging onto pytest's captured
    stdout, which is closed after the test; later tests would log into a closed file."""
    yield
    configure_logging("warning", "json", io.StringIO())


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def config_text(sections: Mapping[str, Mapping[str, Any]], prefix: str = "") -> str:
    """TOML for {section: {key: value}}; a dict value is a sub-table ([chain.rpc])."""
    lines = []
    for section, values in sections.items():
        lines.append(f"[{prefix}{section}]")
        lines.extend(f"{key} = {toml_value(v)}" for key, v in values.items()
                     if not isinstance(v, Mapping))
        lines.append("")
        tables = {k: v for k, v in values.items() if isinstance(v, Mapping)}
        if tables:
            lines.append(config_text(tables, f"{prefix}{section}."))
    return "\n".join(lines)


@pytest.fixture
def make_config(tmp_path: Path):
    """Write a config whose data dir is inside tmp_path; returns (path, Config)."""

    def make(**sections: Mapping[str, Any]) -> tuple[Path, Config]:
        merged: dict[str, dict[str, Any]] = {
            "golem": {"data_dir": "data"}, "logging": {"format": "json"},
            # the repo's model: `golem run` checks it before writing anything
            "grimoire": {"model_dir": str(REPO / "models" / "all-minilm-l6-v2-int8")}}
        for name, values in sections.items():
            merged.setdefault(name, {}).update(values)
        path = tmp_path / "golem.toml"
        path.write_text(config_text(merged))
        return path, load_config(path)

    return make


def run_daemon(config: Config, registry: HandlerRegistry | None = None,
               stop_after: float | None = None) -> tuple[int, Daemon, str]:
    """Run the real daemon in this process; returns (exit status, daemon, log output)."""
    stream = io.StringIO()
    configure_logging(config.logging.level, "json", stream)
    daemon = Daemon(config, registry or HandlerRegistry(), stop_after=stop_after,
                    admit=refuse_if_dead)  # as the CLI builds it
    code = anyio.run(daemon.run, backend_options={"use_uvloop": True})
    return code, daemon, stream.getvalue()


def golem_cmd(*args: str, harness: list[str] | None = None) -> list[str]:
    """argv for the real CLI in a subprocess (through the test harness when given)."""
    if harness is not None:
        return [sys.executable, "-m", "golem.testing.harness", *harness, "--", *args]
    return [sys.executable, "-m", "golem", *args]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_golem(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(golem_cmd(*args), capture_output=True, text=True, timeout=timeout,
                          env=child_env(), check=False, **kw)


ANVIL_GENESIS = 1_700_000_000


@pytest.fixture
def anvil(tmp_path: Path) -> Iterator[AnvilNode]:
    """A fresh anvil (chain id 31337, 40 funded accounts, genesis at ANVIL_GENESIS).

    Skips when the binary is not installed, except under CI, where that is a failure:
    scripts/test installs it.
    """
    if find_anvil() is None:
        where = os.environ.get(ANVIL_ENV) or str(REPO_ANVIL)
        reason = f"anvil is not installed ({where}); scripts/test installs it"
        if os.environ.get("CI"):  # as in tests/conftest.py: any non-empty CI
            pytest.fail(f"{reason} (CI is set: a missing anvil is a failure)", pytrace=False)
        pytest.skip(reason)
    with AnvilNode(tmp_path / "anvil", timestamp=ANVIL_GENESIS) as node:
        yield node


def stored_episode_ids(config: Config) -> list[str]:
    """Every episode id in the golem's store (duplicates kept, to be counted)."""
    from golem.grimoire.grimoire import Grimoire  # noqa: PLC0415 - heavy; only chain tests

    async def read() -> list[str]:
        g = await Grimoire.open(config, now=lambda: 0.0)
        try:
            return await g.scan_episodes(
                lambda batches: [e.id for batch in batches for e in batch])
        finally:
            await g.close()

    return anyio.run(read)

"""A real ``golem run`` with the operator API on, in a child process, for tests and the
API benchmark: write a config and a 0600 token, start it, wait for ``/healthz``, stop it
with SIGTERM (by its own pid) and collect its log."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import golem

# The checkout this package comes from: children import the same code.
SOURCE_ROOT = Path(golem.__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def toml_text(sections: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
        lines.append("")
    return "\n".join(lines)


class ApiGolem:
    """``golem run --config <dir>/golem.toml`` with ``[api]`` on a free loopback port."""

    def __init__(self, root: Path, model_dir: Path, **sections: dict[str, Any]) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.token = secrets.token_hex(24)
        self.token_path = root / "api-token"
        self.token_path.write_text(self.token + "\n")
        self.token_path.chmod(0o600)
        self.port = free_port()
        merged: dict[str, dict[str, Any]] = {
            "golem": {"data_dir": "data"}, "logging": {"format": "json"},
            "grimoire": {"model_dir": str(model_dir)},
            "api": {"enabled": True, "port": self.port, "token_file": "api-token"}}
        for name, values in sections.items():
            merged.setdefault(name, {}).update(values)
        self.config_path = root / "golem.toml"
        self.config_path.write_text(toml_text(merged))
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / "golem.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def run(self, *args: str, timeout: float = 600.0) -> subprocess.CompletedProcess[str]:
        """Run a golem command to its end (e.g. ``run --stop-after 1h``)."""
        return subprocess.run([sys.executable, "-m", "golem", *args, "--config",
                               str(self.config_path)], capture_output=True, text=True,
                              timeout=timeout, env=self.env(), check=False)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")}
        env["HF_HUB_OFFLINE"] = "1"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(SOURCE_ROOT), env.get("PYTHONPATH", "")) if p)
        return env

    def start(self, *args: str, timeout: float = 600.0) -> None:
        """Start ``golem run`` and wait until /healthz answers 200 (a restart replays the
        simulated market first: minutes after a simulated hour on a busy 2-core VM)."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "golem", "run", "--config", str(self.config_path),
                 *args], stdout=log, stderr=subprocess.STDOUT, env=self.env())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"golem exited {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.base_url + "/healthz", timeout=2) as r:  # noqa: S310
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"golem API not healthy in {timeout}s:\n{self.log()[-3000:]}")

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM the child we started and wait; its exit status."""
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def __enter__(self) -> ApiGolem:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

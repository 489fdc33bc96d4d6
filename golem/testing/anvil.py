"""A real anvil node (Foundry's local EVM) in a child process, for RPC-mode tests.

    with AnvilNode(tmp_path, timestamp=1_700_000_000) as node:
        evm = RpcEvm(node.http_url)

The binary is the one scripts/test installs from npm
(``@foundry-rs/anvil-linux-amd64``, pinned in scripts/_test-env.sh): $GOLEM_ANVIL,
else ``node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil`` in the checkout.
We run it directly (never through npx) and stop it by PID: SIGTERM, a bounded
wait, then SIGKILL.

The port is a free loopback port picked just before start; if another process
takes it first anvil exits with "Address already in use" and we retry on a new
port. Output goes to ``anvil-<port>.log`` in the given directory (quiet: anvil
then writes only errors), and its tail is in every start-up error.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from golem.errors import GolemError

ANVIL_ENV = "GOLEM_ANVIL"
ANVIL_PACKAGE = "@foundry-rs/anvil-linux-amd64"
REPO_ROOT = Path(__file__).resolve().parents[2]
REPO_ANVIL = REPO_ROOT / "node_modules" / ANVIL_PACKAGE / "bin" / "anvil"
CHAIN_ID = 31337
ACCOUNTS = 40  # the simulated market alone needs 21 funded accounts
START_ATTEMPTS = 3


class AnvilError(GolemError):
    """anvil is missing, would not start, or would not stop."""


def find_anvil() -> Path | None:
    """The anvil binary to run ($GOLEM_ANVIL, else the checkout's node_modules), or None."""
    configured = os.environ.get(ANVIL_ENV, "")
    path = Path(configured) if configured else REPO_ANVIL
    return path if path.is_file() and os.access(path, os.X_OK) else None


def require_anvil() -> Path:
    path = find_anvil()
    if path is None:
        where = os.environ.get(ANVIL_ENV) or str(REPO_ANVIL)
        raise AnvilError(f"anvil is not installed (looked for an executable at {where}); "
                         f"scripts/test installs {ANVIL_PACKAGE} into node_modules/")
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


class AnvilNode:
    """One anvil process on 127.0.0.1; `start()` (or `with`) runs it, `stop()` ends it."""

    def __init__(
        self,
        log_dir: Path,
        *,
        timestamp: int | None = None,
        accounts: int = ACCOUNTS,
        chain_id: int = CHAIN_ID,
        binary: Path | None = None,
        startup_timeout: float = 20.0,
    ) -> None:
        self.log_dir = Path(log_dir)
        self.timestamp = timestamp
        self.accounts = accounts
        self.chain_id = chain_id
        self.binary = binary
        self.startup_timeout = startup_timeout
        self.port = 0
        self.log_path = self.log_dir / "anvil.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise AnvilError("anvil is not running")
        return self._proc.pid

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def argv(self, binary: Path, port: int) -> list[str]:
        argv = [str(binary), "--host", "127.0.0.1", "--port", str(port),
                "--chain-id", str(self.chain_id), "--accounts", str(self.accounts), "--quiet"]
        if self.timestamp is not None:
            argv += ["--timestamp", str(int(self.timestamp))]
        return argv

    # --- start ------------------------------------------------------------------

    def start(self) -> AnvilNode:
        if self._proc is not None:
            raise AnvilError(f"anvil already running (pid {self._proc.pid})")
        binary = self.binary or require_anvil()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, START_ATTEMPTS + 1):
            self.port = _free_port()
            self.log_path = self.log_dir / f"anvil-{self.port}.log"
            with self.log_path.open("wb") as log:
                self._proc = subprocess.Popen(self.argv(binary, self.port),
                                              stdin=subprocess.DEVNULL, stdout=log,
                                              stderr=subprocess.STDOUT)
            try:
                if self._wait_ready():
                    return self
            except BaseException:
                self.stop()
                raise
            self._proc = None  # exited: the port was taken between our probe and its bind
            if "Address already in use" not in _tail(self.log_path) or attempt == START_ATTEMPTS:
                break
        raise AnvilError(f"anvil exited during start-up; log {self.log_path}:\n"
                         f"{_tail(self.log_path)}")

    def _wait_ready(self) -> bool:
        """True once eth_chainId answers; False if anvil exited; AnvilError on timeout."""
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        delay = 0.02
        while True:
            if self._proc.poll() is not None:
                return False
            chain_id = self._chain_id(timeout=1.0)
            if chain_id is not None:
                if chain_id != self.chain_id:
                    raise AnvilError(f"anvil at {self.http_url} reports chain id {chain_id}, "
                                     f"expected {self.chain_id}")
                return True
            if time.monotonic() > deadline:
                raise AnvilError(f"anvil (pid {self._proc.pid}) did not answer eth_chainId at "
                                 f"{self.http_url} within {self.startup_timeout:.0f} s; "
                                 f"log {self.log_path}:\n{_tail(self.log_path)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    def _chain_id(self, timeout: float) -> int | None:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId",
                           "params": []}).encode()
        request = urllib.request.Request(self.http_url, data=body,  # noqa: S310 - our URL
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                answer = json.loads(response.read())
            return int(answer["result"], 16)
        except (OSError, ValueError, KeyError, TypeError):
            return None  # not listening yet (connection refused, reset, half-started)

    # --- stop -------------------------------------------------------------------

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the process, wait up to `timeout` s, then SIGKILL; idempotent."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise AnvilError(f"anvil (pid {proc.pid}) survived SIGKILL") from exc

    def __enter__(self) -> AnvilNode:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

"""Everything that can be known before the first write: `golem check-config` runs it, and
`golem run` runs it before the data dir or any file in it is created.

Checked: the embedding model directory (present, its manifest readable, the model file's
hash matching it), the API key file when the Anthropic tier is on, the operator API's
token when ``[api]`` is on, and the wallet key file when one is set (present, ours, mode
0600: read and dropped at once), that the API's port can be bound, and the data
dir (writable, on a filesystem that is not read-only, with ``runtime.min_free_mb`` free).
Each problem is raised as the error the daemon would stop with: ConfigError (exit 78)
for the configuration, CannotWrite (exit 73) for the disk.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from pathlib import Path

from golem.actions.wallet import CREDENTIAL as WALLET_CREDENTIAL
from golem.actions.wallet import WalletError, read_key
from golem.api.token import load_token
from golem.cognition.keys import load_api_key
from golem.config import Config
from golem.errors import CannotWrite, ConfigError
from golem.grimoire.embedder import read_signature
from golem.grimoire.model_choice import choose_compute


def preflight(config: Config, environ: Mapping[str, str]) -> list[str]:
    """Run every check; returns one line per check passed, raises on the first failure."""
    lines = []
    choice = choose_compute(config)
    signature = read_signature(config.grimoire.model_dir, choice.compute)
    lines.append(f"model     {config.grimoire.model_dir} ({signature.label}; "
                 f"{choice.compute} products: {choice.reason})")
    if config.cognition.provider == "anthropic":
        load_api_key(config)
        lines.append("api key   present, mode 0600")
    if config.api.enabled:
        load_token(config, environ)
        _port_free(config.api.host, config.api.port)
        lines.append(f"api token present, mode 0600 (serving {config.api.host}:"
                     f"{config.api.port}, free now)")
    wallet = _wallet_key(config, environ)
    if wallet is not None:
        try:
            read_key(wallet)
        except WalletError as exc:
            raise ConfigError(f"actions.key_file: {exc}") from None
        lines.append(f"wallet    {wallet} (mode 0600)")
    lines.append(f"data dir  {_writable(config.data_dir, config.runtime.min_free_mb)}")
    return lines


def _wallet_key(config: Config, environ: Mapping[str, str]) -> Path | None:
    if not config.actions.enabled:
        return None
    if config.actions.key_file:
        return Path(config.actions.key_file).expanduser()
    creds = environ.get("CREDENTIALS_DIRECTORY", "")
    if creds and (Path(creds) / WALLET_CREDENTIAL).exists():
        return Path(creds) / WALLET_CREDENTIAL
    return None


def _writable(data_dir: Path, min_free_mb: int) -> str:
    """Describe the data dir, or raise CannotWrite: the directory (or, before the first
    run, its nearest existing parent) must be a writable directory on a read-write
    filesystem with at least ``min_free_mb`` free."""
    existing = data_dir
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise CannotWrite(f"golem.data_dir: {existing} is not a directory")
    try:
        flags = os.statvfs(existing).f_flag
        free = shutil.disk_usage(existing).free
    except OSError as exc:
        raise CannotWrite(f"golem.data_dir: {existing}: {exc.strerror}") from None
    if flags & os.ST_RDONLY:
        raise CannotWrite(f"golem.data_dir: {existing} is on a read-only filesystem; "
                          "point golem.data_dir at a writable disk")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CannotWrite(f"golem.data_dir: {existing} is not writable by this user "
                          f"(uid {os.getuid()})")
    if min_free_mb and free < min_free_mb << 20:
        raise CannotWrite(f"golem.data_dir: {free >> 20} MB free on {existing}'s disk, below "
                          f"runtime.min_free_mb = {min_free_mb}; free space first")
    state = "exists" if existing == data_dir else f"will be created under {existing}"
    return f"{data_dir} ({state}; writable, {free >> 20} MB free)"


def _port_free(host: str, port: int) -> None:
    """ConfigError when the API's address cannot be bound now (in use, or not ours).
    Port 0 (any free port) always passes."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise ConfigError(f"api.port: cannot listen on {host}:{port} ({exc.strerror or exc}); "
                          "stop what uses it or choose another port") from None

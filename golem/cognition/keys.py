"""Where an API key may come from: a file only its owner can read, or a systemd credential.

Never from the TOML, the environment or a log line. A key file readable by group
or others is refused (the operator is told to chmod 600), as is an empty one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from golem.config import Config
from golem.errors import ConfigError

CREDENTIAL = "anthropic_api_key"


def key_path(config: Config) -> Path | None:
    """The configured key file, else the systemd credential, else None."""
    raw = config.cognition.api_key_file
    if raw:
        path = Path(raw).expanduser()
        if not path.is_absolute() and config.source is not None:
            path = config.source.resolve().parent / path
        return path
    creds = os.environ.get("CREDENTIALS_DIRECTORY")
    if creds and (Path(creds) / CREDENTIAL).exists():
        return Path(creds) / CREDENTIAL
    return None


def load_api_key(config: Config) -> str:
    """The key, read from a 0600 file; ConfigError (exit 78) naming the problem otherwise."""
    path = key_path(config)
    if path is None:
        raise ConfigError('cognition.api_key_file: required when cognition.provider = '
                          '"anthropic" (a file with mode 0600, or the systemd credential '
                          f'"{CREDENTIAL}")')
    try:
        info = path.stat()
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"cognition.api_key_file: {path} is readable by others "
                              f"(mode {stat.S_IMODE(info.st_mode):o}); run chmod 600 {path}")
        key = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ConfigError(f"cognition.api_key_file: {path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"cognition.api_key_file: {path}: {exc.strerror}") from None
    if not key:
        raise ConfigError(f"cognition.api_key_file: {path} is empty")
    return key

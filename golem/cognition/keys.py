"""Where an API key may come from: a file only its owner can read, or a systemd credential.

Never from the TOML, the environment or a log line. A key file readable by group
or others is refused (the operator is told to chmod 600), as is an empty one.
"""

from __future__ import annotations

import os
from pathlib import Path

from golem.config import Config
from golem.errors import ConfigError
from golem.secret_file import read_secret_file

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
    return read_secret_file(path, "cognition.api_key_file")

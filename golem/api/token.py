"""The API's bearer token: from ``api.token_file`` (mode 0600) or the systemd credential
``golem_api_token``; never from the TOML, the environment or a log line.

Refusals are ConfigError (exit 78) naming ``api.token_file``; the token never appears in
a message.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from golem.config import Config
from golem.errors import ConfigError
from golem.secret_file import read_secret_file

CREDENTIAL = "golem_api_token"
MIN_TOKEN_CHARS = 16


def token_path(config: Config, environ: Mapping[str, str] = os.environ) -> Path | None:
    """The configured file (relative to the config file), else the systemd credential."""
    raw = config.api.token_file
    if raw:
        path = Path(raw).expanduser()
        if not path.is_absolute() and config.source is not None:
            path = config.source.resolve().parent / path
        return path
    creds = environ.get("CREDENTIALS_DIRECTORY")
    if creds and (Path(creds) / CREDENTIAL).exists():
        return Path(creds) / CREDENTIAL
    return None


def load_token(config: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The token; ConfigError when there is none, the file is not 0600, or it is short."""
    path = token_path(config, environ)
    if path is None:
        raise ConfigError("api.token_file: required when api.enabled = true (a file with "
                          f'mode 0600, or the systemd credential "{CREDENTIAL}")')
    token = read_secret_file(path, "api.token_file")
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ConfigError(f"api.token_file: {path}: the token must be one word of at least "
                          f"{MIN_TOKEN_CHARS} characters (e.g. openssl rand -hex 32)")
    return token

"""Reading a secret (an API key, a bearer token) from a file only its owner can read.

A file readable or writable by group or others is refused with the ``chmod 600`` fix, as
is a missing or empty one; every refusal is a ConfigError (exit 78) naming the config key.
The secret itself never appears in an error message.
"""

from __future__ import annotations

import stat
from pathlib import Path

from golem.errors import ConfigError


def read_secret_file(path: Path, key: str) -> str:
    """The file's text, stripped; ConfigError naming ``key`` and ``path`` otherwise."""
    try:
        info = path.stat()
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise ConfigError(f"{key}: {path} is readable by others "
                              f"(mode {stat.S_IMODE(info.st_mode):o}); run chmod 600 {path}")
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise ConfigError(f"{key}: {path}: no such file") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{key}: {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"{key}: {path}: {exc.strerror}") from None
    if not secret:
        raise ConfigError(f"{key}: {path} is empty")
    return secret

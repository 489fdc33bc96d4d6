"""Our exception types and the process exit codes they map to.

Exit codes follow sysexits(3) so systemd can tell a bad config (do not restart)
from a transient failure (restart).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 64
EXIT_DATAERR = 65
EXIT_NOINPUT = 66
EXIT_SOFTWARE = 70
EXIT_CANTCREAT = 73
EXIT_TEMPFAIL = 75
EXIT_CONFIG = 78


class GolemError(Exception):
    """Base class for errors the runtime reports to the operator."""

    exit_code: int = EXIT_FAILURE


class ConfigError(GolemError):
    """The configuration file is missing, unparsable or has a bad value."""

    exit_code = EXIT_CONFIG


class LockHeldError(GolemError):
    """Another golem process holds the data directory."""

    exit_code = EXIT_TEMPFAIL


class StateError(GolemError):
    """The state store is unreadable or from an incompatible version."""

    exit_code = EXIT_SOFTWARE


class CannotWrite(GolemError):
    """The data dir cannot take writes: read-only, not ours, or out of space."""

    exit_code = EXIT_CANTCREAT


class NoInput(GolemError):
    """A file or directory the command reads does not exist or is not what it should be."""

    exit_code = EXIT_NOINPUT


class DataError(GolemError):
    """Data the golem keeps cannot be what it wrote (e.g. a market journal that no longer
    replays to the chain it recorded)."""

    exit_code = EXIT_DATAERR


class UsageError(GolemError):
    """A command-line value argparse cannot judge (it needs the config) is wrong."""

    exit_code = EXIT_USAGE

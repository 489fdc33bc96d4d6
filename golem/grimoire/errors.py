"""Grimoire errors: each names the problem and, where there is one, the fix."""

from __future__ import annotations

from golem.errors import EXIT_CONFIG, EXIT_SOFTWARE, GolemError


class GrimoireError(GolemError):
    """Base for memory errors."""


class InvalidMemory(GrimoireError, ValueError):
    """Bad input: empty or oversized text, NaN or out-of-range scores, unknown types."""

    exit_code = 65  # EX_DATAERR


class EmbedderUnavailable(GrimoireError):
    """The local embedding model is missing or unloadable (nothing is ever downloaded)."""

    exit_code = EXIT_CONFIG


class SignatureMismatch(GrimoireError):
    """A store was built with a different embedding model; vector spaces must not mix."""

    exit_code = EXIT_CONFIG


class StoreCorrupt(GrimoireError):
    """A store is unreadable or inconsistent."""

    exit_code = EXIT_SOFTWARE


class NamespaceRefused(GrimoireError):
    """A read or write tried to cross into a namespace it has no grant for."""

    exit_code = 77  # EX_NOPERM

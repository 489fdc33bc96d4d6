"""Cognition errors: what Theta needs to decide between retrying later, giving up, or stopping."""

from __future__ import annotations

from golem.errors import EXIT_CONFIG, EXIT_SOFTWARE, EXIT_TEMPFAIL, GolemError


class CognitionError(GolemError):
    """Base for model-call and spend errors."""


class LlmUnavailable(CognitionError):
    """The model could not be reached in time (timeout, 429, 5xx, circuit open): try a later tick.

    `kind` says why; `retry_after` is the server's own hint in seconds, when it gave one.
    """

    exit_code = EXIT_TEMPFAIL

    def __init__(self, message: str, *, kind: str, retry_after: float | None = None,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.attempts = attempts


class CircuitOpen(LlmUnavailable):
    """Too many consecutive failures: no call is sent until the breaker's cool-down passes."""


class LlmRefused(CognitionError):
    """The API refused the request itself (bad request, auth, not found): retrying cannot help."""

    exit_code = EXIT_CONFIG

    def __init__(self, message: str, *, kind: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status


class BudgetExceeded(CognitionError):
    """A reservation would take spend past the daily or lifetime cap; `cap` names which."""

    exit_code = EXIT_TEMPFAIL

    def __init__(self, message: str, *, cap: str) -> None:
        super().__init__(message)
        self.cap = cap


class LedgerError(CognitionError):
    """Misuse or corruption of the spend ledger (unknown model, unknown or settled id)."""

    exit_code = EXIT_SOFTWARE

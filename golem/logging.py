"""Structured logs: JSON lines for machines, readable lines for people.

JSON when the stream is not a terminal (systemd, Docker, CI), console output
when it is, unless the config says otherwise. Tracebacks never include local
variables (a key in a local would otherwise be logged), and every record goes
through the secret redactor. Library logs from the standard ``logging``
module are rendered the same way.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog
from structlog.tracebacks import ExceptionDictTransformer

from golem.redact import redact

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}


def _redact_processor(
    _logger: Any, _method: str, event_dict: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    cleaned: MutableMapping[str, Any] = redact(event_dict)
    return cleaned


def configure_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> bool:
    """Set up structlog and the stdlib bridge; returns True when rendering JSON."""
    out = stream if stream is not None else sys.stdout
    as_json = fmt == "json" or (fmt == "auto" and not _isatty(out))
    level_no = _LEVELS[level]
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: list[Any]
    if as_json:
        renderer = [
            structlog.processors.ExceptionRenderer(ExceptionDictTransformer(show_locals=False)),
            _redact_processor,
            structlog.processors.JSONRenderer(default=str),
        ]
    else:
        renderer = [
            structlog.processors.format_exc_info,
            _redact_processor,
            structlog.dev.ConsoleRenderer(colors=_isatty(out),
                                          exception_formatter=structlog.dev.plain_traceback),
        ]
    structlog.configure(
        processors=[*shared, *renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level_no),
        logger_factory=structlog.WriteLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *renderer],
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(level_no, logging.WARNING))
    return as_json


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

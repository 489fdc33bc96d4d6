"""The Starlette application: routes, error mapping and the guard around them.

Errors are JSON naming the field: InvalidMemory 422, NamespaceRefused 403, a malformed
body 400, an oversized one 413, an unknown route 404, a wrong method 405. Anything else
is a 500 with a generic message (the details go to the log, never to the client).
"""

from __future__ import annotations

from pathlib import Path

import structlog
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from golem.api.bodies import BadRequest
from golem.api.dashboard import dashboard_routes
from golem.api.errors import error_response, field_of
from golem.api.guard import BodyTooLarge, Guard, Sessions
from golem.api.history import HistorySampler
from golem.api.memory_routes import memory_routes
from golem.api.metrics import GolemMetrics
from golem.api.openapi import document
from golem.api.sources import Sources
from golem.api.views import read_routes
from golem.grimoire.errors import InvalidMemory, NamespaceRefused

log = structlog.get_logger("golem.api")
STATIC = Path(__file__).parent / "static"


def build_app(sources: Sources, metrics: GolemMetrics, history: HistorySampler,
              token: str) -> Guard:
    """The ASGI app uvicorn serves: the Guard wrapping the Starlette routes."""
    sessions = Sessions()
    guard = Guard(_NotYet(), token=token, sessions=sessions,
                  max_body=sources.config.api.max_body_bytes,
                  max_query=sources.config.api.max_query_bytes)

    async def openapi(request: Request) -> Response:
        return JSONResponse(document())

    routes = [*read_routes(sources, metrics, history), *memory_routes(sources),
              *dashboard_routes(sources, guard), Route("/openapi.json", openapi),
              Mount("/static", StaticFiles(directory=STATIC), name="static")]
    app = Starlette(routes=routes, exception_handlers={
        InvalidMemory: _invalid, NamespaceRefused: _refused, BadRequest: _bad,
        BodyTooLarge: _too_large, HTTPException: _http, Exception: _crash})
    guard.app = app
    return guard


class _NotYet:
    async def __call__(self, scope: object, receive: object, send: object) -> None:
        raise RuntimeError("the guard's app is set by build_app")


async def _invalid(request: Request, exc: Exception) -> Response:
    return error_response(422, str(exc), field_of(str(exc)))


async def _refused(request: Request, exc: Exception) -> Response:
    return error_response(403, str(exc), "namespace")


async def _bad(request: Request, exc: Exception) -> Response:
    return error_response(400, str(exc))


async def _too_large(request: Request, exc: Exception) -> Response:
    return error_response(413, str(exc))


async def _http(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, str(exc.detail), headers=exc.headers)


async def _crash(request: Request, exc: Exception) -> Response:
    log.error("api request failed", path=request.url.path, method=request.method,
              error_type=type(exc).__name__)
    return error_response(500, "internal error (see the golem's log)")

"""Read-only routes: health, readiness, metrics, status, decisions and the chart series."""

from __future__ import annotations

import json
from functools import partial

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from golem.api.decisions import decision_view
from golem.api.errors import error_response
from golem.api.health import health, loop_report, readiness
from golem.api.history import MAX_POINTS, HistorySampler
from golem.api.metrics import CONTENT_TYPE, GolemMetrics
from golem.api.sources import Sources
from golem.cognition.journal import JOURNAL_DB, JOURNAL_DIR, JournalReader
from golem.runtime.loop import iso
from golem.status import collect_status

MAX_DECISIONS = 200


def read_routes(sources: Sources, metrics: GolemMetrics, history: HistorySampler) -> list[Route]:
    journal = JournalReader(sources.config.data_dir / JOURNAL_DIR / JOURNAL_DB)

    async def healthz(request: Request) -> Response:
        status, body = health(sources.loops(), sources.now())
        return JSONResponse(body, status_code=status)

    async def readyz(request: Request) -> Response:
        status, body = readiness(sources.loops())
        return JSONResponse(body, status_code=status)

    async def prometheus(request: Request) -> Response:
        await metrics.refresh()
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    async def status(request: Request) -> Response:
        report = await anyio.to_thread.run_sync(partial(collect_status, sources.config))
        # as `golem status --json` prints it (values JSON has no type for become strings)
        return Response(json.dumps(report, default=str), media_type="application/json")

    async def decisions(request: Request) -> Response:
        limit = _limit(request, 20, MAX_DECISIONS)
        if isinstance(limit, Response):
            return limit
        rows = await anyio.to_thread.run_sync(journal.recent, limit)
        return JSONResponse({"decisions": [decision_view(r) for r in rows]})

    async def series(request: Request) -> Response:
        limit = _limit(request, 500, MAX_POINTS)
        if isinstance(limit, Response):
            return limit
        now = sources.now()
        points = await anyio.to_thread.run_sync(history.series, limit)
        return JSONResponse({"golem_time": iso(now), "points": points,
                             "loops": [loop_report(lp, now) for lp in sources.loops()],
                             "projection": await anyio.to_thread.run_sync(_projection,
                                                                          sources)})

    return [Route("/healthz", healthz), Route("/readyz", readyz),
            Route("/metrics", prometheus), Route("/v1/status", status),
            Route("/v1/decisions", decisions), Route("/v1/series", series)]


def _limit(request: Request, default: int, top: int) -> int | Response:
    raw = request.query_params.get("limit", str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= top:
        return error_response(422, f"limit: an integer from 1 to {top}, got {raw!r}", "limit")
    return int(raw)


def _projection(sources: Sources) -> dict[str, object] | None:
    """The terminal projection ``golem status`` shows (None when mortality is off)."""
    from golem.mortality.vitality_store import vitality_status  # noqa: PLC0415

    if not sources.config.mortality.enabled:
        return None
    status = vitality_status(sources.config.data_dir, sources.config.mortality)
    projection: dict[str, object] | None = None if status is None else status["projection"]
    return projection

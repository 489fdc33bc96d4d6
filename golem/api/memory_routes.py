"""The memory API (seed 003), over the same requests ``golem memory`` builds.

``POST /v1/memory`` remembers, ``POST /v1/memory/search`` recalls (hits with their score
breakdown and provenance, or the refusal: the JSON ``golem memory search --json``
prints), ``GET /v1/memory/{id}`` reads one record, ``DELETE /v1/memory/{id}`` forgets it
with a reason. Every request is checked in full before the Grimoire is called, so a
refused request writes nothing; namespaces and read grants are the Grimoire's rules.

At most ``api.memory_concurrency`` API calls reach the Grimoire at once; the rest wait
here, in the API. The Grimoire runs every store call one at a time, so without this bound
a burst of searches queued ahead of Gamma's episode write and Theta's recall, and the
golem's own ticks waited behind the operator's (benchmarks/README.md, api_search.py).
"""

from __future__ import annotations

from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from golem.api.bodies import json_object
from golem.api.errors import error_response
from golem.api.sources import Sources
from golem.grimoire.errors import InvalidMemory
from golem.grimoire.requests import AddRequest, SearchRequest, filters_from, to_jsonable

_ADD_FIELDS = ("text", "type", "importance", "metadata", "namespace", "category",
               "decay_class", "anchored")


def memory_routes(sources: Sources) -> list[Route]:
    g = sources.grimoire
    max_chars = sources.config.grimoire.max_text_chars
    gate = anyio.CapacityLimiter(sources.config.api.memory_concurrency)

    async def add(request: Request) -> Response:
        data = await json_object(request, _ADD_FIELDS, required=("text",))
        req = AddRequest(**{k: v for k, v in data.items() if v is not None or k == "text"})
        req.check(max_chars)
        async with gate:
            entry = await req.run(g)
        return JSONResponse(to_jsonable(entry), status_code=201)

    async def search(request: Request) -> Response:
        data = await json_object(request, ("query", "k", "filters", "namespaces"),
                                 required=("query",))
        filters = data.get("filters") or {}
        if not isinstance(filters, dict):
            raise InvalidMemory("filters: must be an object")
        req = SearchRequest(data["query"], k=data.get("k", 10),
                            namespaces=_namespaces(data.get("namespaces")),
                            filters=filters_from(filters))
        req.check(max_chars)
        async with gate:
            result = await req.run(g)
        return JSONResponse(to_jsonable(result))

    async def get(request: Request) -> Response:
        async with gate:
            found = await g.get(request.path_params["id"],
                                request.query_params.get("namespace"))
        if found is None:
            return _missing(request.path_params["id"], g.namespace)
        return JSONResponse(to_jsonable(found))

    async def forget(request: Request) -> Response:
        if request.headers.get("content-length", "0") != "0":
            data = await json_object(request, ("reason", "hard"))
        else:
            data = dict(request.query_params)
            data["hard"] = data.get("hard", "false") == "true"
        reason, hard = data.get("reason"), data.get("hard", False)
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidMemory("reason: forgetting needs a reason (it is logged)")
        if not isinstance(hard, bool):
            raise InvalidMemory("hard: must be true or false")
        memory_id = request.path_params["id"]
        async with gate:
            dropped = await g.forget(memory_id, reason, hard=hard)
        if not dropped:
            return _missing(memory_id, g.namespace)
        return JSONResponse({"forgotten": memory_id, "hard": hard})

    return [Route("/v1/memory", add, methods=["POST"]),
            Route("/v1/memory/search", search, methods=["POST"]),
            Route("/v1/memory/{id}", get, methods=["GET"]),
            Route("/v1/memory/{id}", forget, methods=["DELETE"])]


def _namespaces(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InvalidMemory("namespaces: a namespace or a non-empty list of namespaces")


def _missing(memory_id: str, namespace: str) -> Response:
    return error_response(404, f"no memory with id {memory_id} in namespace {namespace}",
                          "id")

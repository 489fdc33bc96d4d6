"""The OpenAPI 3.1 document served at ``/openapi.json`` (written by hand, kept beside the
routes it describes; a test checks every route is in it)."""

from __future__ import annotations

from typing import Any

from golem import __version__

_ERROR = {"description": "error", "content": {"application/json": {"schema": {
    "$ref": "#/components/schemas/Error"}}}}
_JSON = {"description": "ok", "content": {"application/json": {}}}


def _op(summary: str, *, body: str | None = None, ok: str = "200",
        params: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {
        ok: _JSON, "401": _ERROR, "413": _ERROR, "422": _ERROR}}
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": f"#/components/schemas/{body}"}}}}
    if params:
        op["parameters"] = params
    return op


_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
_LIMIT = {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1}}


def document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Golem operator API", "version": __version__},
        "security": [{"bearer": []}],
        "paths": {
            "/healthz": {"get": {**_op("Liveness: 503 names the stalled loops"),
                                 "security": []}},
            "/readyz": {"get": _op("Readiness: every loop running")},
            "/metrics": {"get": _op("Prometheus text exposition")},
            "/v1/status": {"get": _op("What golem status --json prints")},
            "/v1/decisions": {"get": _op("Recent decisions with their reasons and outcomes",
                                         params=[_LIMIT])},
            "/v1/series": {"get": _op("The dashboard's time series", params=[_LIMIT])},
            "/v1/memory": {"post": _op("Remember a text memory", body="MemoryAdd",
                                       ok="201")},
            "/v1/memory/search": {"post": _op("Recall: hits with their score breakdown, or "
                                              "the refusal", body="MemorySearch")},
            "/v1/memory/{id}": {
                "get": _op("One memory or episode", params=[_ID]),
                "delete": _op("Forget a memory, with a reason", body="MemoryForget",
                              params=[_ID])},
            "/openapi.json": {"get": _op("This document")},
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "properties": {"error": {
                    "type": "object", "properties": {
                        "status": {"type": "integer"},
                        "field": {"type": ["string", "null"]},
                        "message": {"type": "string"}}}}},
                "MemoryAdd": {"type": "object", "required": ["text"],
                              "additionalProperties": False, "properties": {
                                  "text": {"type": "string"},
                                  "type": {"type": "string", "default": "fact"},
                                  "importance": {"type": "number", "minimum": 0,
                                                 "maximum": 1, "default": 0.5},
                                  "metadata": {"type": "object"},
                                  "namespace": {"type": "string"},
                                  "category": {"type": "string"},
                                  "decay_class": {"type": "string", "default": "strategic"},
                                  "anchored": {"type": "boolean", "default": False}}},
                "MemorySearch": {"type": "object", "required": ["query"],
                                 "additionalProperties": False, "properties": {
                                     "query": {"type": "string"},
                                     "k": {"type": "integer", "minimum": 1, "maximum": 1000,
                                           "default": 10},
                                     "namespaces": {"type": "array",
                                                    "items": {"type": "string"}},
                                     "filters": {"type": "object", "properties": {
                                         "since": {"type": "number"},
                                         "until": {"type": "number"},
                                         "protocol": {"type": "string"},
                                         "category": {"type": "string"},
                                         "kinds": {"type": "array", "items": {
                                             "enum": ["episode", "entry"]}},
                                         "min_importance": {"type": "number"}}}}},
                "MemoryForget": {"type": "object", "required": ["reason"],
                                 "additionalProperties": False, "properties": {
                                     "reason": {"type": "string"},
                                     "hard": {"type": "boolean", "default": False}}},
            },
        },
    }

"""Seeded synthetic OpenAPI 3.1 documents for tests and ``bench/import.py``.

Every operation uses the features a real specification does (and the importer must not lose):
``allOf`` chains, ``oneOf``/``anyOf`` unions (one with a ``type`` beside it), arrays and maps of
objects, a recursive schema, read-only and write-only fields, nullable types, path, query, header and
cookie parameters, parameters written with ``content``, JSON, form-urlencoded and multipart bodies,
array responses, second success responses and error responses. ``description_words`` pads the
descriptions so a document can be made as large as wanted.
"""
from __future__ import annotations

import random
from typing import Any

_WORDS = ("order item price shop customer account invoice delivery address status total note tag "
          "currency amount label region plan seat room guest card token batch").split()


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "."


def _object(rng: random.Random, k: int, words: int, fields: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for j in range(fields):
        kind = rng.randrange(6)
        name = f"{rng.choice(_WORDS)}_{k}_{j}"
        if kind == 0:
            props[name] = {"type": "string", "description": _text(rng, words)}
        elif kind == 1:
            props[name] = {"type": ["integer", "null"], "minimum": 0, "description": _text(rng, words)}
        elif kind == 2:
            props[name] = {"type": "string", "enum": ["a", "b", "c"], "readOnly": j % 2 == 0}
        elif kind == 3:
            props[name] = {"type": "array", "items": {"type": "object", "properties": {
                f"sub_{k}_{j}": {"type": "number"}, f"flag_{k}_{j}": {"type": "boolean", "writeOnly": True}}}}
        elif kind == 4:
            props[name] = {"type": "object", "additionalProperties": {"type": "object", "properties": {
                f"count_{k}_{j}": {"type": "integer"}}}}
        else:
            props[name] = {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]}
    return {"type": "object", "description": _text(rng, words), "required": list(props)[:1], "properties": props}


def openapi_document(operations: int, seed: int = 0, *, description_words: int = 6,
                     fields: int = 6) -> dict[str, Any]:
    """An OpenAPI 3.1 document with ``operations`` operations (four per path)."""
    rng = random.Random(seed)
    schemas: dict[str, Any] = {
        "Node": {"type": "object", "properties": {"label": {"type": "string"}, "next": _ref("Node"),
                                                  "children": {"type": "array", "items": _ref("Node")}}},
        "Problem": {"type": "object", "properties": {"title": {"type": "string"}, "detail": {"type": "string"}}},
    }
    paths: dict[str, Any] = {}
    groups = (operations + 3) // 4
    made = 0
    for k in range(groups):
        base, extra, left, right = f"Base{k}", f"Extra{k}", f"Left{k}", f"Right{k}"
        schemas[base] = _object(rng, k, description_words, fields)
        schemas[extra] = {"allOf": [_ref(base), _object(rng, k + 10_000, description_words, max(1, fields // 2)),
                                    {"properties": {f"tree_{k}": _ref("Node")}}]}
        schemas[left] = _object(rng, k + 20_000, description_words, max(1, fields // 2))
        schemas[right] = _object(rng, k + 30_000, description_words, max(1, fields // 2))
        union = {"oneOf": [_ref(left), _ref(right), {"type": "string"}], "description": _text(rng, description_words)}
        params = [
            {"name": f"id_{k}", "in": "path", "required": True, "schema": {"type": "integer"}},
            {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
            {"name": f"q_{k}", "in": "query", "schema": {"type": "string", "anyOf": [{"minLength": 2},
                                                                                     {"format": "uuid"}]}},
            {"name": f"filter_{k}", "in": "query", "content": {"application/json": {"schema": _ref(left)}}},
            {"name": "session", "in": "cookie", "schema": {"type": "string"}},
        ]
        ok = {"description": "ok", "content": {"application/json": {"schema": _ref(extra)}}}
        fail = {"description": "failed", "content": {"application/json": {"schema": _ref("Problem")}}}
        item: dict[str, Any] = {"parameters": params[:1]}
        ops = {
            "get": {"parameters": params[1:], "responses": {
                "200": {"description": "list", "content": {"application/json": {"schema": {
                    "type": "array", "items": _ref(extra)}}}}, "404": fail}},
            "post": {"requestBody": {"required": True, "content": {
                "application/json": {"schema": {"allOf": [_ref(extra), {"properties": {"choice": union}}]}},
                "application/x-www-form-urlencoded": {"schema": _ref(extra)}}},
                "responses": {"201": ok, "202": {"description": "queued", "content": {"application/json": {
                    "schema": {"type": "object", "properties": {f"queue_{k}": {"type": "integer"}}}}}},
                    "422": fail}},
            "put": {"requestBody": {"content": {"multipart/form-data": {"schema": {
                "type": "object", "properties": {"file": {"type": "string", "format": "binary"},
                                                 "meta": _ref(right)}}}}},
                "responses": {"200": ok, "default": fail}},
            "patch": {"requestBody": {"content": {"application/json": {"schema": union}}},
                      "responses": {"200": {"description": "ok", "content": {"application/json": {
                          "schema": {"anyOf": [_ref(left), {"type": "null"}]}}}}}},
        }
        for method, op in ops.items():
            if made == operations:
                break
            op["operationId"] = f"{method}Thing{k}"
            op["summary"] = _text(rng, description_words)
            item[method] = op
            made += 1
        paths[f"/things{k}/{{id_{k}}}"] = item
    return {"openapi": "3.1.0", "info": {"title": "Synthetic", "version": "1"}, "paths": paths,
            "webhooks": {"thingChanged": {"post": {"responses": {"200": {"description": "ok"}}}}},
            "components": {"schemas": schemas}}

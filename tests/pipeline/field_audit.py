"""A second, plain reading of an OpenAPI document: every field each operation declares.

Written from the specification, independently of ``generation.pipeline.toolspecs.openapi``: parameters (any
location, path-level ones included, ``schema`` or ``content``), every media type of the request body,
every 2xx response, and inside schemas ``properties``, ``items``, ``additionalProperties`` (a map),
``allOf``/``anyOf``/``oneOf`` members, ``$ref`` (a schema that contains itself is not entered again).
:func:`silent_drops` compares it with what an import kept and reported.
"""
from __future__ import annotations

import re
from typing import Any

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _get(doc: dict, ref: str) -> Any:
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _schema_paths(doc: dict, schema: Any, prefix: str, trail: frozenset, out: set[str]) -> None:
    while isinstance(schema, dict) and "$ref" in schema:
        if schema["$ref"] in trail:
            return
        trail = trail | {schema["$ref"]}
        schema = _get(doc, schema["$ref"])
    if not isinstance(schema, dict):
        return
    for key in ("allOf", "anyOf", "oneOf"):
        for member in schema.get(key) or []:
            _schema_paths(doc, member, prefix, trail, out)
    props = schema.get("properties") or {}
    for name, sub in props.items():
        out.add(prefix + name)
        _schema_paths(doc, sub, f"{prefix}{name}.", trail, out)
    if isinstance(schema.get("items"), dict):
        _schema_paths(doc, schema["items"], prefix, trail, out)
    if isinstance(schema.get("additionalProperties"), dict) and not props:
        _schema_paths(doc, schema["additionalProperties"], prefix, trail, out)


def _deref(doc: dict, obj: Any) -> Any:
    while isinstance(obj, dict) and "$ref" in obj:
        obj = _get(doc, obj["$ref"])
    return obj


def declared(doc: dict) -> dict[str, dict[str, set[str]]]:
    """{operation name: {"inputs": field paths, "outputs": field paths, "nameless": pointers}}."""
    out: dict[str, dict[str, set[str]]] = {}
    for path, item in doc.get("paths", {}).items():
        item = _deref(doc, item)
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            name = op.get("operationId") or f"{method}_{re.sub(r'[^A-Za-z0-9]+', '_', path).strip('_')}"
            found = out[name] = {"inputs": set(), "outputs": set(), "nameless": set()}
            for base, plist in ((f"/paths/{_esc(path)}", item.get("parameters")),
                                (f"/paths/{_esc(path)}/{method}", op.get("parameters"))):
                for j, p in enumerate(plist or []):
                    p = _deref(doc, p)
                    if not p.get("name"):
                        found["nameless"].add(f"#{base}/parameters/{j}")
                        continue
                    found["inputs"].add(p["name"])
                    schema = p.get("schema") or next(iter((p.get("content") or {}).values()), {}).get("schema")
                    _schema_paths(doc, schema, p["name"] + ".", frozenset(), found["inputs"])
            body = _deref(doc, op.get("requestBody") or {})
            for media in (body.get("content") or {}).values():
                _schema_paths(doc, media.get("schema"), "", frozenset(), found["inputs"])
            for code, response in (op.get("responses") or {}).items():
                if str(code).startswith("2"):
                    for media in (_deref(doc, response).get("content") or {}).values():
                        _schema_paths(doc, media.get("schema"), "", frozenset(), found["outputs"])
    return out


def kept_paths(fields: list) -> set[str]:
    out: set[str] = set()
    stack = [("", f) for f in fields]
    while stack:
        prefix, f = stack.pop()
        out.add(prefix + f.name)
        stack += [(f"{prefix}{f.name}.", g) for g in f.properties]
    return out


def silent_drops(doc: dict, apis: list, report: list[str]) -> list[str]:
    """Every declared field that is neither kept nor named in a report line of its operation."""
    by_name = {a.name: a for a in apis}
    missing = []
    for name, found in declared(doc).items():
        api = by_name.get(name)
        if api is None:
            missing.append(f"{name}: the operation itself")
            continue
        lines = [line for line in report if line.startswith(f"{name}: ")]
        kept_in, kept_out = kept_paths(api.params), kept_paths(api.outputs)
        for kind, paths, kept in (("input", found["inputs"], kept_in), ("output", found["outputs"], kept_out)):
            for path in sorted(paths):
                # A body that is not an object is one parameter "body"; a body field named like a
                # parameter is kept as "body_<name>".
                if path in kept or (kind == "input" and (f"body_{path}" in kept or f"body.{path}" in kept)):
                    continue
                token = re.compile(r"(?<![\w])" + re.escape(path) + r"(?![\w])")
                if not any(token.search(line) for line in lines):
                    missing.append(f"{name}: {kind} {path}")
        for pointer in found["nameless"]:
            if not any(pointer in line for line in lines):
                missing.append(f"{name}: nameless parameter {pointer}")
    return missing

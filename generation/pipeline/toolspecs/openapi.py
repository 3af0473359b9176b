"""OpenAPI 3.0 / 3.1 documents -> one API per operation, and a report of everything not kept.

An operation's parameters are its path and query parameters (path-level ones included, a
parameter's ``content`` schema read like its ``schema``) and the fields of its request body, read
the same way whatever the media type: JSON first, then ``application/x-www-form-urlencoded``, then
``multipart/form-data``, then any other media type with a schema. A body that is not an object is one
parameter ``body``. The output is the first 2xx response with a schema; an array keeps its items'
fields. Schemas are read by :class:`.fields.Fields` (``allOf`` merged, unions kept, ``$ref``
followed lazily).

Refused, with a one-line message naming the operation and the JSON pointer: two operations with the
same ``operationId``, a ``$ref`` that leads nowhere, a document without a single operation (no
``paths``, only webhooks, empty ``paths``). Reported, one line each: header and cookie parameters
(the client sets them), a parameter without a name, a body field only one media type has, fields
of another 2xx response, callbacks and webhooks (requests the API sends), error responses, and all
that :class:`.fields.Fields` reports.
"""
from __future__ import annotations

import re
from typing import Any

from ..apis import ApiFormatError, ApiSpec
from ..schema import ParamSpec
from .fields import Fields, pointer_escape

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def is_openapi(data: Any) -> bool:
    return isinstance(data, dict) and str(data.get("openapi", "")).startswith("3")


def _media_rank(media_type: str) -> int:
    mt = media_type.split(";")[0].strip().lower()
    if mt in ("application/json", "*/*") or mt.endswith("+json"):
        return 0
    if mt == "application/x-www-form-urlencoded":
        return 1
    if mt == "multipart/form-data":
        return 2
    if mt.startswith("multipart/"):
        return 3
    return 4


def _schemas(content: Any, pointer: str) -> list[tuple[str, dict, str]]:
    """(media type, schema, pointer) of every media type with a schema, the preferred first."""
    if not isinstance(content, dict):
        return []
    found = [(mt, media["schema"], f"{pointer}/content/{pointer_escape(mt)}/schema") for mt, media in content.items()
             if isinstance(media, dict) and isinstance(media.get("schema"), dict)]
    return sorted(found, key=lambda x: _media_rank(x[0]))


def field_paths(fields: list[ParamSpec], prefix: str = "") -> list[str]:
    """Dotted paths of a field tree: ``a``, ``a.b`` (an array's or a map's fields continue the path)."""
    out = []
    for f in fields:
        out.append(prefix + f.name)
        out += field_paths(f.properties, f"{prefix}{f.name}.")
    return out


def _missing(have: set[str], other: list[ParamSpec]) -> str:
    """The field paths of ``other`` that are not in ``have``, for a report line."""
    missing = [p for p in field_paths(other) if p not in have]
    return ", ".join(missing[:12]) + (f" and {len(missing) - 12} more" if len(missing) > 12 else "")


def _has_schema(reader: Fields, response: Any) -> bool:
    got = reader.deref(response, "", (), "response") if isinstance(response, dict) else None
    return bool(got and _schemas(got[0].get("content"), ""))


def _operation_name(method: str, path: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method}_{slug}" if slug else method


def openapi_apis(doc: dict[str, Any], report: list[str] | None = None) -> list[ApiSpec]:
    """One API per operation; ``report`` receives a line for everything that is not kept."""
    report = report if report is not None else []
    paths = doc.get("paths")
    hooks = doc.get("webhooks") if isinstance(doc.get("webhooks"), dict) else {}
    if not isinstance(paths, dict) or not paths:
        if paths is not None and not isinstance(paths, dict):
            raise ApiFormatError("key 'paths' must be an object")
        where = "no 'paths'" if paths is None else "an empty 'paths'"
        if hooks:
            raise ApiFormatError(f"the OpenAPI document declares no operation: it has {where} and only "
                                 f"{len(hooks)} webhook(s), which are requests the API sends, not operations")
        raise ApiFormatError(f"the OpenAPI document declares no operation: it has {where}")
    reader = Fields(doc, report)
    reader.operation = "paths"
    names: dict[str, str] = {}
    apis: list[ApiSpec] = []
    failures = 0
    for path, item in paths.items():
        pointer = f"/paths/{pointer_escape(path)}"
        got = reader.deref(item, pointer, (), f"paths[{path!r}]")
        if got is None or not isinstance(item, dict):
            raise ApiFormatError(f"paths[{path!r}] must be an object")
        item, pointer = got[0], got[1]
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            label = f"{method.upper()} {path}"
            if not isinstance(op, dict):
                raise ApiFormatError(f"{label} (#{pointer}/{method}) must be an object")
            oid = op.get("operationId")
            name = str(oid).strip() if isinstance(oid, (str, int)) and str(oid).strip() else ""
            if name and name in names:
                raise ApiFormatError(f"operationId {name!r} is used twice: by {names[name]} and by {label} "
                                     f"(#{pointer}/{method}/operationId)")
            if not name:
                name = _operation_name(method, path)
                if name in names:
                    k = 2
                    while f"{name}_{k}" in names:
                        k += 1
                    report.append(f"{label}: has no operationId and its generated name {name} is taken; "
                                  f"named {name}_{k}")
                    name = f"{name}_{k}"
            names[name] = label
            reader.api, reader.operation = name, label
            api, output_code = _operation(reader, item, op, f"{pointer}/{method}", label, pointer)
            apis.append(api)
            failures += sum(1 for code in (op.get("responses") or {}) if not str(code).startswith("2")
                            and code != output_code)
            if isinstance(op.get("callbacks"), dict) and op["callbacks"]:
                report.append(f"{name}: {len(op['callbacks'])} callback(s) not read: they are requests the API sends")
    if hooks:
        report.append(f"{len(hooks)} webhook(s) not read: they are requests the API sends, not operations")
    if failures:
        report.append(f"{failures} other response(s) (3xx, 4xx, 5xx, default) describe redirects and failures; "
                      "they are not read as outputs")
    return apis


def _parameters(reader: Fields, item: dict, op: dict, op_pointer: str, path_pointer: str,
                label: str) -> list[ParamSpec]:
    chosen: dict[tuple[str, str], tuple[dict, str]] = {}
    for plist, base in ((item.get("parameters"), path_pointer), (op.get("parameters"), op_pointer)):
        if plist is None:
            continue
        if not isinstance(plist, list):
            raise ApiFormatError(f"{label}: key 'parameters' must be a list (#{base}/parameters)")
        for j, raw in enumerate(plist):
            at = f"{base}/parameters/{j}"
            got = reader.deref(raw, at, (), f"parameters[{j}]")
            p = got[0] if got else {}
            name, loc = p.get("name"), p.get("in")
            if not isinstance(name, str) or not name.strip():
                reader.note(f"parameter {j + 1} (#{at})", "has no name; left out")
                continue
            if loc in ("header", "cookie"):
                reader.note(f"{loc} parameter {name}", f"left out: the client sets {loc}s, the caller of the "
                                                       "tool does not")
                continue
            if loc not in ("path", "query"):
                reader.note(f"parameter {name}", f"left out: 'in' is {loc!r} (path, query, header or cookie)")
                continue
            chosen[(loc, name)] = (p, at)
    out = []
    for (loc, name), (p, at) in chosen.items():
        schema, spointer = p.get("schema"), f"{at}/schema"
        if not isinstance(schema, dict) and _schemas(p.get("content"), at):
            _, schema, spointer = _schemas(p.get("content"), at)[0]
        schema = dict(schema) if isinstance(schema, dict) else {}
        if "example" in p and "example" not in schema:
            schema["example"] = p["example"]
        spec = reader.param(name, schema, bool(p.get("required")) or loc == "path", spointer, name)
        if p.get("description") and not spec.description:
            spec.description = str(p["description"])
        out.append(spec)
    return out


def _body(reader: Fields, op: dict, op_pointer: str, taken: set[str]) -> list[ParamSpec]:
    body = op.get("requestBody")
    if body is None:
        return []
    got = reader.deref(body, f"{op_pointer}/requestBody", (), "requestBody")
    body = got[0] if got else {}
    media = _schemas(body.get("content"), got[1] if got else f"{op_pointer}/requestBody")
    if not media:
        return []
    mt, schema, pointer = media[0]
    btype, fields = reader.fields(schema, pointer, "")
    as_read = set(field_paths(fields))
    if btype == "dict" and fields:
        out = []
        for f in fields:
            if f.name in taken:
                reader.note(f"body field {f.name}", f"has the name of a parameter; kept as body_{f.name}")
                f.name = f"body_{f.name}"
            out.append(f)
    else:
        out = [reader.param("body", schema, bool(body.get("required")), pointer, "body")]
    for other, oschema, opointer in media[1:]:
        _, ofields = reader.fields(oschema, opointer, "")
        missing = _missing(as_read, ofields)
        if missing:
            reader.note(f"request body {other}", f"fields {missing} are only in this media type; the body is "
                                                 f"read from {mt}")
    return out


def _operation(reader: Fields, item: dict, op: dict, op_pointer: str, label: str,
               path_pointer: str) -> tuple[ApiSpec, Any]:
    """The operation's API and the response code its output follows (None: no output)."""
    reader.mode = "request"
    params = _parameters(reader, item, op, op_pointer, path_pointer, label)
    params += _body(reader, op, op_pointer, {p.name for p in params})
    responses = op.get("responses") or {}
    if not isinstance(responses, dict):
        raise ApiFormatError(f"{label}: key 'responses' must be an object (#{op_pointer}/responses)")
    reader.mode = "response"
    otype, outputs, chosen = "dict", [], None
    success = sorted((c for c in responses if str(c).upper().startswith("2")), key=str)
    if not any(_has_schema(reader, responses[c]) for c in success) and _has_schema(reader, responses.get("default")):
        success = ["default"]  # the only response that describes a body
        reader.note("output", "read from the 'default' response (no 2xx response describes a body)")
    for code in success:
        got = reader.deref(responses[code], f"{op_pointer}/responses/{code}", (), f"response {code}")
        media = _schemas(got[0].get("content"), got[1]) if got else []
        if media:
            if chosen is None:
                otype, outputs = reader.fields(media[0][1], media[0][2], "output")
                chosen = code
                continue
            _, more = reader.fields(media[0][1], media[0][2], "output")
            missing = _missing(set(field_paths(outputs)), more)
            if missing:
                reader.note(f"response {code}", f"output fields {missing} are not kept: the output follows "
                                                f"response {chosen}")
    desc = str(op.get("summary") or op.get("description") or "")
    return ApiSpec(reader.api, desc, params, "result", otype, outputs), chosen

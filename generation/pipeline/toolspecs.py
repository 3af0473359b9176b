"""Tool documents as published: OpenAPI 3.0/3.1 (JSON or YAML), MCP ``tools/list`` results and
FlowBench release records, read into the API-list shapes :func:`.apis.parse_api_list` knows.

``$ref`` pointers are resolved with the ``referencing`` library (the one ``jsonschema`` uses);
YAML is read with PyYAML's safe loader. Errors name the 1-based line and column.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .apis import ApiFormatError, ApiSpec
from .schema import param_from_schema, params_from_schema, schema_type

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MAX_REF_DEPTH = 30


def load_structured(text: str, source: str = "") -> Any:
    """JSON, JSON Lines (a list of the lines' values) or YAML; errors name line and column."""
    where = f"{source}: " if source else ""
    stripped = text.lstrip("\ufeff").strip()
    if not stripped:
        raise ApiFormatError(f"{where}the file is empty")
    if stripped[0] in "{[":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            first = stripped.split("\n", 1)[0]
            if exc.msg != "Extra data" and "\n" in stripped and not _parses(first):
                raise ApiFormatError(f"{where}line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}") from None
        return load_json_lines(text, source)
    import yaml

    try:
        return yaml.safe_load(stripped)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ApiFormatError(f"{where}{at}invalid YAML: {getattr(exc, 'problem', None) or exc}") from None


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def load_json_lines(text: str, source: str = "") -> list[Any]:
    """One JSON value per non-blank line; an error names the line (1-based) and the record."""
    where = f"{source}: " if source else ""
    out = []
    for lineno, line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ApiFormatError(f"{where}line {lineno} (record {len(out) + 1}), column {exc.colno}: "
                                 f"invalid JSON: {exc.msg}") from None
    return out


# ----------------------------------------------------------------------------- FlowBench records

def is_flowbench_record(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("workflow"), dict) and "apis" in d


def select_record(data: Any, record: int | None, source: str = "") -> Any:
    """One FlowBench record of a release file: ``record`` is 1-based; a one-record file needs none."""
    if isinstance(data, list) and data and all(is_flowbench_record(d) for d in data):
        if record is None:
            if len(data) == 1:
                return data[0]
            raise ApiFormatError(f"{source or 'the file'} holds {len(data)} FlowBench workflows; "
                                 "choose one with --record N (1-based)")
        if not 1 <= record <= len(data):
            raise ApiFormatError(f"--record {record}: {source or 'the file'} holds records 1 to {len(data)}")
        return data[record - 1]
    if record not in (None, 1):
        raise ApiFormatError(f"--record {record}: {source or 'the file'} is not a FlowBench release")
    return data


def dedupe_apis(items: Any) -> tuple[Any, list[str]]:
    """A workflow's tool list with repeated names kept once (the first), and a note per repeat."""
    if not isinstance(items, list):
        return items, []
    seen: dict[str, Any] = {}
    out, notes = [], []
    for i, item in enumerate(items, 1):
        name = item.get("api_name", item.get("name")) if isinstance(item, dict) else None
        if isinstance(name, str) and name.strip() in seen:
            same = seen[name.strip()] == item
            notes.append(f"API {i} repeats {name.strip()!r}{'' if same else ' with a different description'}; "
                         "the first is kept")
            continue
        if isinstance(name, str):
            seen[name.strip()] = item
        out.append(item)
    return out, notes


def unwrap_tool_document(data: Any) -> Any:
    """Strip the envelopes around a tool list: a JSON-RPC response, a FlowBench record, MCP $refs."""
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "tools" in data["result"]:
        data = data["result"]  # JSON-RPC response to tools/list
    if isinstance(data, list) and len(data) == 1 and is_flowbench_record(data[0]):
        data = data[0]
    if isinstance(data, list) and len(data) > 1 and all(is_flowbench_record(d) for d in data):
        raise ApiFormatError(f"the file holds {len(data)} FlowBench workflows; choose one with --record N")
    if is_flowbench_record(data):
        return {"apis": dedupe_apis(data["apis"])[0]}
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        tools = [_resolve_mcp(t) for t in data["tools"]]
        return {**data, "tools": tools}
    return data


def _resolve_mcp(tool: Any) -> Any:
    if not isinstance(tool, dict):
        return tool
    out = dict(tool)
    for key in ("inputSchema", "outputSchema"):
        if isinstance(tool.get(key), dict):
            out[key] = resolve_refs(tool[key], tool[key])
    return out


# ----------------------------------------------------------------------------- $ref resolution

def _resource(doc: dict[str, Any]):
    from referencing import Resource
    from referencing.jsonschema import DRAFT4, DRAFT202012

    version = str(doc.get("openapi", ""))
    spec = DRAFT4 if version.startswith("3.0") else DRAFT202012
    return Resource(contents=doc, specification=spec)


def resolve_refs(node: Any, root: dict[str, Any]) -> Any:
    """A copy of ``node`` with every local ``$ref`` replaced by its target (cycles cut to {})."""
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    uri = "urn:almita:document"
    registry = Registry().with_resource(uri, _resource(root))
    resolver = registry.resolver(base_uri=uri)

    def walk(value: Any, resolver: Any, trail: tuple[str, ...]) -> Any:
        if isinstance(value, list):
            return [walk(v, resolver, trail) for v in value]
        if not isinstance(value, dict):
            return value
        ref = value.get("$ref")
        if isinstance(ref, str):
            if ref in trail or len(trail) > _MAX_REF_DEPTH:
                return {"type": "object", "description": f"(recursive reference {ref})"}
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable as exc:
                raise ApiFormatError(f"$ref {ref!r} cannot be resolved: {exc}") from None
            target = walk(resolved.contents, resolved.resolver, trail + (ref,))
            siblings = {k: walk(v, resolver, trail) for k, v in value.items() if k != "$ref"}
            return {**target, **siblings} if isinstance(target, dict) else target
        return {k: walk(v, resolver, trail) for k, v in value.items()}

    return walk(node, resolver, ())


# ----------------------------------------------------------------------------- OpenAPI 3.x

def is_openapi(data: Any) -> bool:
    return isinstance(data, dict) and str(data.get("openapi", "")).startswith("3") and "paths" in data


def _json_schema(content: Any) -> dict[str, Any] | None:
    if not isinstance(content, dict):
        return None
    for mime, body in content.items():
        if (mime == "application/json" or mime.endswith("+json") or mime == "*/*") and isinstance(body, dict):
            schema = body.get("schema")
            return schema if isinstance(schema, dict) else None
    return None


def _operation_name(method: str, path: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method}_{slug}" if slug else method


def openapi_apis(doc: dict[str, Any]) -> list[ApiSpec]:
    """One API per operation: path and query parameters and the JSON request body become
    parameters, the first 2xx JSON response schema the output."""
    if not isinstance(doc.get("paths"), dict):
        raise ApiFormatError("key 'paths' must be an object")
    doc = resolve_refs(doc, doc)
    apis: list[ApiSpec] = []
    for path, item in doc["paths"].items():
        if not isinstance(item, dict):
            raise ApiFormatError(f"paths[{path!r}] must be an object")
        shared = item.get("parameters") or []
        for method in _METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            name = str(op.get("operationId") or _operation_name(method, path))
            where = f"paths[{path!r}].{method} ({name})"
            params = []
            by_key = {(p.get("in"), p.get("name")): p for p in [*shared, *(op.get("parameters") or [])]
                      if isinstance(p, dict)}
            for (loc, pname), p in by_key.items():
                if loc not in ("path", "query") or not isinstance(pname, str):
                    continue
                schema = dict(p.get("schema") or {})
                if p.get("description") and not schema.get("description"):
                    schema["description"] = p["description"]
                params.append(param_from_schema(pname, schema, bool(p.get("required")) or loc == "path"))
            body = op.get("requestBody")
            if isinstance(body, dict):
                schema = _json_schema(body.get("content"))
                if schema is not None:
                    if schema.get("properties"):
                        params += params_from_schema(schema)
                    else:
                        params.append(param_from_schema("body", schema, bool(body.get("required"))))
            otype, outputs = "dict", []
            responses = op.get("responses") or {}
            if not isinstance(responses, dict):
                raise ApiFormatError(f"{where}: key 'responses' must be an object")
            for code in sorted(responses, key=str):
                if str(code).startswith("2") and isinstance(responses[code], dict):
                    schema = _json_schema(responses[code].get("content"))
                    if schema is not None:
                        otype, outputs = schema_type(schema), params_from_schema(schema)
                        break
            desc = str(op.get("summary") or op.get("description") or "")
            apis.append(ApiSpec(name, desc, params, "result", otype, outputs))
    if not apis:
        raise ApiFormatError("the OpenAPI document declares no operation")
    return apis

"""API (tool) specifications and the parsers for the shapes they arrive in.

Accepted inputs of :func:`parse_api_list`:

* the paper's A.3 shape ``{"apis": [{"name", "desc", "params", "output"}]}`` where ``params`` is
  ``[{"name": "order_id"}]`` or ``[{"order_id": "int"}]`` and ``output`` is ``{"name", "type"}`` or a
  bare type string;
* OpenAI function-calling tools ``[{"type": "function", "function": {...json schema...}}]``
  (tau-bench's tools.json) and the unwrapped ``{"name", "description", "parameters"}`` form
  (tau2-bench, optionally with ``returns``);
* FlowBench-style tool lists ``[{"name", "description", "input_parameters": {p: {"type",
  "description", "required"}}, "output_parameters": {...}}]`` (also under the keys
  ``"Input parameters"`` / ``"Output parameters"``) and the plain-text listing of its appendix
  (``API: name`` / ``Input parameters: {...}``) via :func:`parse_api_text`;
* a STAR api file ``{"function", "input": [{"Name", "Type"}], "output": [...], "required": [...]}``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .schema import ParamSpec, params_from_schema, schema_type  # noqa: F401 (ParamSpec is re-exported)


class ApiFormatError(ValueError):
    """An API list could not be understood; the message names the item index and field.

    Messages are one line of at most :data:`MESSAGE_LIMIT` characters: a refusal must be readable
    even when the input is megabytes long."""

    def __init__(self, message: str) -> None:
        text = " ".join(str(message).split())
        if len(text) > MESSAGE_LIMIT:
            text = text[:MESSAGE_LIMIT - 1] + "…"
        super().__init__(text)


MESSAGE_LIMIT = 400


class ApiList(list):
    """The APIs of a document, and ``report``: one line for everything the document declares that
    was not kept (a header parameter, a read-only field of a request, a second media type ...)."""

    report: list[str]

    def __init__(self, items=(), report: list[str] | None = None) -> None:
        super().__init__(items)
        self.report = list(report or [])


@dataclass
class ApiSpec:
    name: str
    description: str = ""
    params: list[ParamSpec] = field(default_factory=list)
    output_name: str = "result"
    output_type: str = "dict"
    # Declared output fields (FlowBench output_parameters, a JSON-schema response): when present
    # an API output is the JSON object of these fields.
    outputs: list[ParamSpec] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ApiSpec":
        """Build from the paper's dict shape (the inverse of :func:`api_to_dict`)."""
        return _parse_item(data, 0)

    def param(self, name: str) -> ParamSpec | None:
        for p in self.params:
            if p.name == name:
                return p
        return None


def api_to_dict(api: ApiSpec) -> dict[str, Any]:
    """The paper's A.3 shape, extended with type/required/description per parameter."""
    d = {
        "name": api.name,
        "desc": api.description,
        "params": [p.to_dict() for p in api.params],
        "output": {"name": api.output_name, "type": api.output_type},
    }
    if api.outputs:
        d["outputs"] = [p.to_dict() for p in api.outputs]
    return d


# JSON-schema / STAR / FlowBench type words mapped onto the Python typing names used by the paper.
_TYPE_WORDS = {
    "string": "str", "str": "str", "shortstring": "str", "longstring": "str",
    "categorical": "str", "text": "str", "date": "str", "datetime": "str", "time": "str",
    "integer": "int", "int": "int", "number": "float", "float": "float", "double": "float",
    "boolean": "bool", "bool": "bool", "array": "list", "list": "list", "object": "dict",
    "dict": "dict", "null": "None", "any": "Any",
    # spellings met in hand-written tool lists (FlowBench and others)
    "enum": "str", "enumeration": "str", "char": "str", "varchar": "str", "timestamp": "str", "uuid": "str",
    "email": "str", "url": "str", "long": "int", "short": "int", "int32": "int", "int64": "int",
    "decimal": "float", "money": "float", "bigdecimal": "float", "json": "dict", "map": "dict",
    "jsonobject": "dict", "jsonarray": "list", "boolean string": "str",
}


def normalise_type(raw: Any) -> str:
    """Map a type word from any supported source onto a Python typing expression."""
    if raw is None:
        return "Any"
    if isinstance(raw, list):  # JSON schema allows ["string", "null"]
        parts = [normalise_type(r) for r in raw]
        return " | ".join(parts)
    text = str(raw).strip()
    if not text:
        return "Any"
    return _TYPE_WORDS.get(text.lower(), text)


def _where(index: int) -> str:
    return f"API {index + 1}"


def _params_from_schema(schema: Any, index: int, field_name: str, report: list[str] | None = None,
                        api: str = "", mode: str = "request") -> list[ParamSpec]:
    """The fields of a tool's JSON Schema (its own ``$defs`` resolved); what is not kept goes to ``report``."""
    from .toolspecs.fields import Fields

    if schema in (None, {}):
        return []
    if not isinstance(schema, dict):
        raise ApiFormatError(f"{_where(index)}: key '{field_name}' must be a JSON-schema object")
    if "properties" in schema and not isinstance(schema["properties"], dict):
        raise ApiFormatError(f"{_where(index)}: key '{field_name}.properties' must be an object")
    reader = Fields(schema, report)
    reader.api, reader.mode = api, mode
    try:
        return reader.fields(schema, "", field_name)[1]
    except ApiFormatError as exc:
        raise ApiFormatError(f"{_where(index)}: key '{field_name}': {exc}") from None


def _flowbench_param(pname: str, spec: Any, required_default: bool) -> ParamSpec:
    spec = spec if isinstance(spec, dict) else {"type": spec}
    p = ParamSpec.from_dict({**spec, "name": pname, "required": spec.get("required", required_default)})
    props = spec.get("properties")
    if isinstance(props, dict) and props:
        if "properties" in props and isinstance(props["properties"], dict):  # a JSON schema
            p.properties = params_from_schema(props)
        else:
            p.properties = [_flowbench_param(str(k), v, False) for k, v in props.items()]
    elif isinstance(spec.get("items"), dict):
        p.properties = params_from_schema(spec["items"])
        if p.type == "list" and spec["items"].get("type"):
            p.type = f"list[{schema_type(spec['items'])}]"
    return p


def _params_from_flowbench(mapping: Any, index: int, field_name: str, required_default: bool = True) -> list[ParamSpec]:
    """FlowBench lists parameters as ``{name: {"type", "description", "required", "properties"?}}``."""
    if mapping in (None, {}, []):
        return []
    if isinstance(mapping, list):  # [{"name": ..., "type": ...}]
        return [ParamSpec.from_dict(p) for p in mapping if isinstance(p, dict) and p.get("name")]
    if not isinstance(mapping, dict):
        raise ApiFormatError(f"{_where(index)}: key '{field_name}' must be an object of parameters")
    if "properties" in mapping and isinstance(mapping["properties"], dict):  # a JSON schema slipped in
        return _params_from_schema(mapping, index, field_name)
    return [_flowbench_param(str(k), v, required_default) for k, v in mapping.items()]


def _params_from_paper(params: Any, index: int) -> list[ParamSpec]:
    if params is None:
        return []
    if isinstance(params, dict):  # {"order_id": "int", ...} written as one object
        params = [{k: v} for k, v in params.items()]
    if not isinstance(params, list):
        raise ApiFormatError(f"{_where(index)}: key 'params' must be a list")
    out: list[ParamSpec] = []
    for j, p in enumerate(params):
        where = f"{_where(index)}: key 'params[{j}]'"
        if isinstance(p, str):
            out.append(ParamSpec(name=p))
        elif isinstance(p, dict) and "name" in p:
            if not isinstance(p["name"], str) or not p["name"].strip():
                raise ApiFormatError(f"{where}.name must be a non-empty string")
            out.append(ParamSpec.from_dict(p))
        elif isinstance(p, dict) and len(p) == 1:  # the A.6 shape {"order_id": "int"}
            (pname, ptype), = p.items()
            out.append(ParamSpec(name=str(pname), type=normalise_type(ptype)))
        else:
            raise ApiFormatError(f"{where} must be {{'name': ...}} or {{param: type}}")
    return out


def _parse_output(output: Any, index: int) -> tuple[str, str]:
    if output is None:
        return "result", "dict"
    if isinstance(output, str):
        return "result", normalise_type(output)
    if isinstance(output, dict):
        if "type" in output or "name" in output:
            return str(output.get("name") or "result"), normalise_type(output.get("type", "dict"))
        if len(output) == 1:  # {"sent_status": "list[str]"}
            (oname, otype), = output.items()
            return str(oname), normalise_type(otype if isinstance(otype, str) else "dict")
        return "result", "dict"
    if isinstance(output, list):  # STAR / FlowBench style list of output fields -> a dict
        return "result", "dict"
    raise ApiFormatError(f"{_where(index)}: key 'output' must be an object or a type string")


_NAME_KEYS = ("name", "api_name", "tool_name", "operationId")
_DESC_KEYS = ("desc", "description", "api_description", "api_desc")


def _parse_item(item: Any, index: int, report: list[str] | None = None) -> ApiSpec:
    if not isinstance(item, dict):
        raise ApiFormatError(f"{_where(index)}: expected an object, got {type(item).__name__}")
    if item.get("type") == "function" and "function" in item:  # OpenAI tool wrapper
        inner = item["function"]
        if not isinstance(inner, dict):
            raise ApiFormatError(f"{_where(index)}: key 'function' must be an object")
        return _parse_item(inner, index, report)
    if "function" in item and "input" in item:  # STAR api description
        return _parse_star(item, index)
    name_key = next((k for k in _NAME_KEYS if k in item), "name")
    name = item.get(name_key)
    if not isinstance(name, str) or not name.strip():
        raise ApiFormatError(f"{_where(index)}: key '{name_key}' is missing or not a non-empty string")
    name = name.strip()
    description = str(next((item[k] for k in _DESC_KEYS if item.get(k)), "") or "")
    if isinstance(item.get("inputSchema"), dict):  # an MCP tool
        outputs = _params_from_schema(item.get("outputSchema"), index, "outputSchema", report, name, "response")
        return ApiSpec(name, description, _params_from_schema(item["inputSchema"], index, "inputSchema", report, name),
                       "result", "dict", outputs)
    if "parameters" in item and isinstance(item["parameters"], dict) and (
        "properties" in item["parameters"] or item["parameters"].get("type") == "object"
        or any(k in item["parameters"] for k in ("allOf", "anyOf", "oneOf", "$ref"))
    ):
        params = _params_from_schema(item["parameters"], index, "parameters", report, name)
        returns = item.get("returns")
        otype = "dict"
        if isinstance(returns, dict):
            otype = normalise_type(returns.get("python_type") or returns.get("type") or "dict")
        return ApiSpec(name, description, params, "result", otype)
    for key in ("input_parameters", "Input parameters", "inputs"):
        if key in item:
            params = _params_from_flowbench(item[key], index, key)
            out_key = next((k for k in ("output_parameters", "Output parameters", "outputs") if k in item), "")
            outputs = _params_from_flowbench(item.get(out_key), index, out_key, False) if out_key else []
            return ApiSpec(name, description, params, "result", "dict", outputs)
    params = _params_from_paper(item.get("params", item.get("parameters")), index)
    oname, otype = _parse_output(item.get("output"), index)
    outputs = [ParamSpec.from_dict(p) for p in item.get("outputs") or [] if isinstance(p, dict) and p.get("name")]
    return ApiSpec(name, description, params, oname, otype, outputs)


_STAR_TYPES = {"integer": "int", "boolean": "bool", "float": "float"}


def _parse_star(item: dict[str, Any], index: int) -> ApiSpec:
    inputs = item.get("input")
    if not isinstance(inputs, list):
        raise ApiFormatError(f"{_where(index)}: key 'input' must be a list")
    required = set(item.get("required") or [])
    params = []
    for j, p in enumerate(inputs):
        if not isinstance(p, dict) or not isinstance(p.get("Name"), str):
            raise ApiFormatError(f"{_where(index)}: key 'input[{j}].Name' is missing")
        params.append(ParamSpec(
            name=p["Name"],
            type=_STAR_TYPES.get(str(p.get("Type", "")).lower(), "str"),
            # STAR lists mandatory inputs in "required"; an empty list means every input is optional.
            required=p["Name"] in required,
            description=str(p.get("ReadableName", "")),
            enum=[c for c in p.get("Categories") or [] if isinstance(c, (str, int, float))],
            minimum=p.get("Min") if isinstance(p.get("Min"), (int, float)) else None,
            maximum=p.get("Max") if isinstance(p.get("Max"), (int, float)) else None,
        ))
    return ApiSpec(str(item["function"]), str(item.get("description", "")), params, "result", "dict")


def parse_api_list(data: Any) -> ApiList:
    """Parse any supported API-list shape (see module docstring) into :class:`ApiSpec` objects; the
    result's ``report`` lists everything the document declares that was not kept."""
    if isinstance(data, (str, bytes)):
        return parse_api_text(data.decode() if isinstance(data, bytes) else data)
    from .toolspecs.openapi import is_openapi, openapi_apis
    from .toolspecs import unwrap_tool_document

    data = unwrap_tool_document(data)
    report: list[str] = []
    if is_openapi(data):
        return ApiList(openapi_apis(data, report), report)
    if isinstance(data, dict):
        if "apis" in data:
            items = data["apis"]
            if not isinstance(items, list):
                raise ApiFormatError("key 'apis' must be a list")
        elif "tools" in data and isinstance(data["tools"], list):
            items = data["tools"]
        elif "function" in data and "input" in data:
            items = [data]
        elif not data:
            items = []  # A.3 allows an empty JSON when a procedure has no actions
        elif not any(k in data for k in (*_NAME_KEYS, "function")):
            raise ApiFormatError(f"not a tool list: expected 'apis', 'tools', an OpenAPI document or a tool with a "
                                 f"'name' (the keys are {', '.join(list(map(str, data))[:8])})")
        else:
            items = [data]
    elif isinstance(data, list):
        items = data
    else:
        raise ApiFormatError(f"expected a list or an object, got {type(data).__name__}")
    apis = [_parse_item(item, i, report) for i, item in enumerate(items)]
    seen: dict[str, int] = {}
    for i, api in enumerate(apis):
        if api.name in seen:
            raise ApiFormatError(f"{_where(i)}: key 'name' repeats '{api.name}' ({_where(seen[api.name])})")
        seen[api.name] = i
    return ApiList(apis, report)


_TEXT_BLOCK = re.compile(r"^\s*API:\s*(?P<name>\S+)\s*$", re.MULTILINE)


def parse_api_text(text: str) -> ApiList:
    """Parse JSON text, or FlowBench's plain-text tool listing (``API: name`` blocks)."""
    from .toolspecs.documents import load_structured

    starts = [] if text.lstrip("\ufeff").lstrip()[:1] in ("{", "[") else list(_TEXT_BLOCK.finditer(text))
    if not starts:
        return parse_api_list(load_structured(text))  # JSON, JSON Lines or YAML
    apis = []
    for i, m in enumerate(starts):
        block = text[m.end(): starts[i + 1].start() if i + 1 < len(starts) else len(text)]
        desc = re.search(r"API\s+Desc\w*:\s*(.*)", block)
        found = {}
        for key in ("Input parameters", "Output parameters"):
            hit = re.search(key + r":\s*(\{.*\})", block)
            try:
                found[key] = json.loads(hit.group(1)) if hit else {}
            except json.JSONDecodeError as exc:
                raise ApiFormatError(f"{_where(i)}: key '{key}' is not JSON: {exc.msg}") from exc
        apis.append(ApiSpec(
            name=m.group("name"),
            description=desc.group(1).strip() if desc else "",
            params=_params_from_flowbench(found["Input parameters"], i, "Input parameters"),
            outputs=_params_from_flowbench(found["Output parameters"], i, "Output parameters", False),
        ))
    return ApiList(apis)

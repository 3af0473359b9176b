"""Tool documents as published: OpenAPI 3.0/3.1 (JSON or YAML), MCP ``tools/list`` results, OpenAI
tools and FlowBench release records, read into the API-list shapes :func:`..apis.parse_api_list` knows.

Documents are loaded by :mod:`.documents` (JSON, JSON Lines or bounded YAML, told apart by
parsing), OpenAPI operations are read by :mod:`.openapi` and JSON Schemas by :mod:`.fields`.
This module unwraps the envelopes: a JSON-RPC response (and refuses a JSON-RPC *error*, which lists
no tool), a FlowBench record or release.
"""
from __future__ import annotations

from typing import Any

from ..apis import ApiFormatError
from .openapi import is_openapi, openapi_apis  # noqa: F401 (re-exported)
from .documents import load_json_lines, load_structured  # noqa: F401 (re-exported)


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
    """Strip the envelopes around a tool list: a JSON-RPC response, a FlowBench record."""
    if isinstance(data, dict) and "jsonrpc" in data and isinstance(data.get("error"), dict):
        err = data["error"]
        raise ApiFormatError(f"the document is a JSON-RPC error response (code {err.get('code')}: "
                             f"{str(err.get('message', ''))[:120]}), not a tools/list result: it lists no tool")
    if isinstance(data, dict) and isinstance(data.get("result"), dict) and "tools" in data["result"]:
        data = data["result"]  # JSON-RPC response to tools/list
    if isinstance(data, dict) and str(data.get("swagger", "")).startswith("2"):
        raise ApiFormatError("a Swagger 2.0 document: only OpenAPI 3.0 and 3.1 are read (convert it to OpenAPI 3 "
                             "first)")
    if isinstance(data, list) and len(data) == 1 and is_flowbench_record(data[0]):
        data = data[0]
    if isinstance(data, list) and len(data) > 1 and all(is_flowbench_record(d) for d in data):
        raise ApiFormatError(f"the file holds {len(data)} FlowBench workflows; choose one with --record N")
    if is_flowbench_record(data):
        return {"apis": dedupe_apis(data["apis"])[0]}
    if isinstance(data, dict) and isinstance(data.get("tools"), list) and not data["tools"] and (
            "nextCursor" in data or set(data) <= {"tools", "nextCursor", "_meta"}):
        raise ApiFormatError("the tools/list result lists no tool")
    return data

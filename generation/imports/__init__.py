"""Import existing material: pipeline artifacts in the Almita JSON format, API lists, tools, workflows.

One module per format (``almita``, ``tools`` for API lists / OpenAI tools / OpenAPI / MCP,
``flowbench``, ``abcd``); ``common`` holds the checks they share and ``write`` the transaction.

The work is split in two so an import is atomic:

1. *plan*: the file is parsed and every record is checked (types, lengths, references, graph
   and API shapes) without touching the database. The first problem raises
   :class:`ImportFormatError` naming the file, the record (from 1) and the key as written.
2. *write*: inside one transaction, each planned row is created under its import identity.

Import identity: every row gets ``key = "imp:" + sha256(kind, parent identity, content)``. The
file's own ids only link records together, so importing the same file twice (or the export of
an import) finds the existing rows and creates nothing new. The format is documented in
``docs/import-format.md``.
"""
from __future__ import annotations

from typing import Any

from .abcd import plan_abcd
from .almita import plan_almita
from .common import (
    FORMAT_NAME, FORMAT_VERSION, FORMATS, KINDS, MAX_BYTES, MAX_DEPTH, MAX_RECORDS, ImportFormatError,
    ImportResult, PlannedRow, load_document,
)
from .flowbench import looks_flowbench, plan_flowbench
from .tools import plan_tools
from .write import (
    LABELS, api_row_to_dict, conversation_graph_record, conversation_record, flowgraph_record, intent_record,
    path_record, procedure_record, record_id, test_row_to_dict, write_rows,
)

__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "FORMATS", "KINDS", "LABELS", "MAX_BYTES", "MAX_DEPTH", "MAX_RECORDS",
    "ImportFormatError", "ImportResult", "PlannedRow", "api_row_to_dict", "conversation_graph_record",
    "conversation_record", "detect_format", "flowgraph_record", "intent_record", "items_import", "load_document",
    "path_record", "plan_document", "procedure_record", "record_id", "test_row_to_dict",
]


def _is_mcp(data: Any) -> bool:
    if isinstance(data, dict) and isinstance(data.get("result"), dict):
        data = data["result"]
    tools = data.get("tools") if isinstance(data, dict) else None
    return isinstance(tools, list) and bool(tools) and all(isinstance(t, dict) and "inputSchema" in t for t in tools)


def detect_format(data: Any) -> str:
    if isinstance(data, dict):
        if data.get("format") == FORMAT_NAME or "records" in data:
            return "almita"
        if "openapi" in data or "swagger" in data:
            return "openapi"  # with or without operations: the tool reader says which it lacks
        if _is_mcp(data) or ("jsonrpc" in data and ("error" in data or "result" in data)):
            return "mcp"
        if looks_flowbench(data):
            return "flowbench"
        if "apis" in data:
            return "apis"
        if data and all(isinstance(v, dict) and "subflows" in v for v in data.values()):
            return "abcd"
        if "tools" in data:
            return "openai_tools"
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, dict):
            if first.get("kind") in KINDS:
                return "almita"
            if looks_flowbench(first):
                return "flowbench"
            if first.get("type") == "function" or ("name" in first and "parameters" in first):
                return "openai_tools"
            if "inputSchema" in first:
                return "mcp"
            if "name" in first or "api_name" in first:
                return "apis"
    raise ImportFormatError("document", "", "cannot tell the format; choose one explicitly")


def plan_document(raw: bytes | str, *, fmt: str = "auto", name: str = "imported", procedure_text: str = "",
                  lenient: bool = False) -> tuple[str, list[PlannedRow], list[str]]:
    if fmt not in FORMATS:
        raise ImportFormatError("document", "format", f"unknown format '{fmt}'")
    data = load_document(raw)
    if fmt == "auto":
        fmt = detect_format(data)
    notes: list[str] = []
    if fmt == "almita":
        rows = plan_almita(data, notes)
    elif fmt in ("apis", "openai_tools", "openapi", "mcp"):
        rows = plan_tools(data, name=name, procedure_text=procedure_text, notes=notes)
    elif fmt == "flowbench":
        rows, notes = plan_flowbench(data, lenient=lenient)
    else:
        rows = plan_abcd(data, notes)
    if not rows:
        raise ImportFormatError("document", "records", "the file holds no record")
    return fmt, rows, notes


def items_import(*, raw: bytes | str, fmt: str = "auto", name: str = "imported", procedure_text: str = "",
                 lenient: bool = False, source: str = "") -> ImportResult:
    """Import one file atomically; raise ImportFormatError (nothing written) when it is refused.

    ``source`` (the file name) is put in front of every error's location."""
    try:
        fmt, rows, notes = plan_document(raw, fmt=fmt, name=name, procedure_text=procedure_text, lenient=lenient)
    except ImportFormatError as exc:
        if source:
            raise ImportFormatError(f"{source}, {exc.record}", exc.field, exc.message) from None
        raise
    return write_rows(fmt, rows, notes)

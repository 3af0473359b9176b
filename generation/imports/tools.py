"""API lists (the paper's shape, OpenAI tools, OpenAPI 3.x documents, MCP tools/list results)."""
from __future__ import annotations

from typing import Any

from .common import ImportFormatError, PlannedRow, _apis, _intent_row, _procedure_row


def plan_tools(data: Any, *, name: str, procedure_text: str = "",
               notes: list[str] | None = None) -> list[PlannedRow]:
    """An API list (paper shape, OpenAI tools, OpenAPI, MCP): one intent and one procedure holding the
    APIs. Everything the document declares that is not kept is appended to ``notes``."""
    where = "document"
    apis = _apis(data, where, notes)
    if not apis:
        raise ImportFormatError(where, "apis", "the list holds no API")
    text = procedure_text.strip() or (
        f"Tools imported from {name}. Help the customer using these actions: "
        + ", ".join(a["name"] for a in apis) + "."
    )
    intent = _intent_row("intent", name, f"Requests handled with the {name} tools", name, where)
    return [intent, _procedure_row("procedure", intent, name, text, apis, where)]



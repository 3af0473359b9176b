"""API lists (the paper's shape, OpenAI tools, OpenAPI 3.x documents, MCP tools/list results)."""
from __future__ import annotations

from typing import Any

from .common import ImportFormatError, PlannedRow, _apis, _intent_row, _procedure_row


def plan_tools(data: Any, *, name: str, procedure_text: str = "") -> list[PlannedRow]:
    """An API list (paper shape or OpenAI tools): one intent and one procedure holding the APIs."""
    where = "document"
    apis = _apis(data, where)
    if not apis:
        raise ImportFormatError(where, "apis", "the list holds no API")
    text = procedure_text.strip() or (
        f"Tools imported from {name}. Help the customer using these actions: "
        + ", ".join(a["name"] for a in apis) + "."
    )
    intent = _intent_row("intent", name, f"Requests handled with the {name} tools", name, where)
    return [intent, _procedure_row("procedure", intent, name, text, apis, where)]



"""ABCD-style guidelines: flows of subflows with actions and instructions."""
from __future__ import annotations

import re
from typing import Any

from .common import ImportFormatError, PlannedRow, _apis, _dedupe, _intent_row, _procedure_row

_BUTTON = re.compile(r"[^a-z0-9]+")


def plan_abcd(data: Any, notes: list[str] | None = None) -> list[PlannedRow]:
    """ABCD-style guidelines: each flow is an intent, each subflow a procedure whose actions are APIs."""
    if not isinstance(data, dict) or not data:
        raise ImportFormatError("document", "", "must be an object of flows")
    rows: list[PlannedRow] = []
    for fi, (flow, body) in enumerate(data.items()):
        where = f"flow '{flow[:60]}'"
        if not isinstance(body, dict) or not isinstance(body.get("subflows"), dict):
            raise ImportFormatError(where, "subflows", "must be an object of subflows")
        intent = _intent_row(f"i{fi}", "ABCD", str(body.get("description") or flow), flow, where)
        rows.append(intent)
        for si, (sub, sbody) in enumerate(body["subflows"].items()):
            swhere = f"{where} subflow '{sub[:60]}'"
            if not isinstance(sbody, dict):
                raise ImportFormatError(swhere, "", "must be an object")
            actions = sbody.get("actions", [])
            instructions = sbody.get("instructions", [])
            if not isinstance(actions, list) or not isinstance(instructions, list):
                raise ImportFormatError(swhere, "actions", "actions and instructions must be lists")
            lines: list[str] = []
            apis: dict[str, dict] = {}
            if instructions:
                lines.append(str(instructions[0]))
            for ai, act in enumerate(actions):
                if not isinstance(act, dict) or not isinstance(act.get("text", ""), str):
                    raise ImportFormatError(swhere, f"actions[{ai}]", "must be an object with 'text'")
                sub_lines = act.get("subtext", []) or []
                if not isinstance(sub_lines, list):
                    raise ImportFormatError(swhere, f"actions[{ai}].subtext", "must be a list")
                lines.append(f"{len(lines) + (0 if instructions else 1)}. {act.get('text', '').strip()}")
                lines += [f"   - {str(s).strip()}" for s in sub_lines]
                button = act.get("button")
                if isinstance(button, str) and button.strip():
                    api_name = _BUTTON.sub("_", button.lower()).strip("_")
                    if api_name and api_name not in apis:
                        apis[api_name] = {"name": api_name, "desc": f"{act.get('type', 'action')}: {button}",
                                          "params": [], "output": {"name": "result", "type": "dict"}}
            lines += [str(x) for x in instructions[1:]]
            text = "\n".join(lines).strip() or sub
            rows.append(_procedure_row(f"p{fi}.{si}", intent, f"{flow}: {sub}", text,
                                       _apis(list(apis.values()), swhere, notes), swhere))
    return _dedupe(rows)



"""The release page's preview: its first tests as table rows (plain values; the template escapes)."""
from __future__ import annotations

import json
from typing import Any

from curation.models import Release
from curation.releases.rows import release_test_rows

PREVIEW_ROWS = 10


def _short(text: Any, limit: int = 160) -> str:
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def release_preview(release: Release, rows: int = PREVIEW_ROWS) -> list[dict[str, Any]]:
    out = []
    first = list(release.entries.order_by("conversation_id", "position", "id").values_list("pk", flat=True)[:rows])
    for _pk, _conv, _pos, data in release_test_rows(release, entry_ids=first):
        data = data if isinstance(data, dict) else {}
        context = data.get("context") or []
        last = context[-1] if context and isinstance(context[-1], dict) else {}
        expected = data.get("expected") or {}
        if expected.get("type") == "api_call":
            shown = f"{expected.get('name', '')}({_short(expected.get('parameters') or {}, 100)})"
        else:
            shown = expected.get("content", "")
        out.append({
            "test_id": data.get("test_id"), "conversation_id": _conv, "position": _pos,
            "intent": _short((data.get("intent") or {}).get("name", ""), 60),
            "last": f"{last.get('role', '')}: {_short(last.get('content', ''))}" if last else "",
            "expected_type": expected.get("type", ""), "expected": _short(shown),
        })
    return out

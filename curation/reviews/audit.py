"""The audit log page (admins): filters, keyset pages and before/after as differences.

Pages run newest first on the primary key (``?before=<id>`` for older events, ``?after=<id>`` for
newer ones): a page costs the same at the first or the ten-thousandth event, with no COUNT(*).
Each event's change is shown as the fields that differ (nested dicts flattened to dotted keys),
with the unchanged fields counted, instead of two raw dicts.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.db.models import Q, QuerySet
from django.utils import timezone

from curation.models import AuditEvent, ReviewStage

PAGE = 50
_MISSING = object()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """{dotted key: leaf} of a JSON value; an empty dict or a non-dict is one leaf."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value} if prefix else ({} if value == {} or value is None else {"": value})


def show(value: Any) -> str:
    if value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


@dataclass(frozen=True)
class Change:
    key: str
    before: str
    after: str
    kind: str  # "changed", "added" or "removed"


def audit_diff(before: Any, after: Any) -> tuple[list[Change], int]:
    """(the fields that differ, in key order; how many fields are equal on both sides)."""
    b, a = flatten(before or {}), flatten(after or {})
    changes, same = [], 0
    for key in sorted(set(b) | set(a)):
        old, new = b.get(key, _MISSING), a.get(key, _MISSING)
        if old is not _MISSING and type(old) is type(new) and old == new:
            same += 1
            continue
        kind = "added" if old is _MISSING else "removed" if new is _MISSING else "changed"
        changes.append(Change(key or "(value)", show(old), show(new), kind))
    return changes, same


@dataclass
class Filters:
    action: str = ""
    actor: str = ""
    stage: str = ""
    item: int | None = None
    since: dt.date | None = None
    until: dt.date | None = None
    errors: tuple[str, ...] = ()

    def query(self) -> dict[str, str]:
        out = {"action": self.action, "actor": self.actor, "stage": self.stage,
               "item": "" if self.item is None else str(self.item),
               "since": self.since.isoformat() if self.since else "", "until": self.until.isoformat() if self.until else ""}
        return {k: v for k, v in out.items() if v}


def _date(text: str, label: str, errors: list[str]) -> dt.date | None:
    if not text:
        return None
    try:
        return dt.date.fromisoformat(text[:10])
    except ValueError:
        errors.append(f"{label} must be a date like 2026-01-31.")
        return None


def parse_filters(params) -> Filters:
    """The page's filters from its query string; a bad value is dropped with a short message."""
    errors: list[str] = []
    action = (params.get("action") or "").strip()
    if action and action not in AuditEvent.Action.values:
        errors.append("Unknown action.")
        action = ""
    stage = (params.get("stage") or "").strip()
    if stage and stage not in ReviewStage.values:
        errors.append("Unknown stage.")
        stage = ""
    item = None
    raw = (params.get("item") or "").strip()
    if raw:
        if raw.isdigit() and len(raw) <= 18:
            item = int(raw)
        else:
            errors.append("The item must be a review item number.")
    actor = (params.get("actor") or "").strip()[:150]
    since = _date((params.get("since") or "").strip(), "From", errors)
    until = _date((params.get("until") or "").strip(), "To", errors)
    return Filters(action, actor, stage, item, since, until, tuple(errors))


def _cursor(params, name: str) -> int | None:
    raw = (params.get(name) or "").strip()
    return int(raw) if raw.isdigit() and len(raw) <= 18 else None


def filtered(f: Filters) -> QuerySet[AuditEvent]:
    qs = AuditEvent.objects.all()
    if f.action:
        qs = qs.filter(action=f.action)
    if f.actor == "-":
        qs = qs.filter(actor__isnull=True)
    elif f.actor:
        qs = qs.filter(actor__username=f.actor)
    if f.stage:
        qs = qs.filter(item__stage=f.stage)
    if f.item is not None:
        qs = qs.filter(item_id=f.item)
    tz = timezone.get_current_timezone()
    if f.since:
        qs = qs.filter(at__gte=dt.datetime.combine(f.since, dt.time.min, tzinfo=tz))
    if f.until:
        qs = qs.filter(at__lt=dt.datetime.combine(f.until + dt.timedelta(days=1), dt.time.min, tzinfo=tz))
    return qs


def audit_page(params) -> dict[str, Any]:
    """The page's context: filters, one page of events with their differences, and cursors."""
    f = parse_filters(params)
    qs = filtered(f).select_related("actor", "item")
    before, after = _cursor(params, "before"), _cursor(params, "after")
    if after is not None:
        rows = list(qs.filter(pk__gt=after).order_by("id")[:PAGE + 1])
        newer_exists = len(rows) > PAGE
        rows = rows[:PAGE][::-1]
        older_exists = bool(rows) and filtered(f).filter(pk__lt=rows[-1].pk).exists()
    else:
        if before is not None:
            qs = qs.filter(pk__lt=before)
        rows = list(qs.order_by("-id")[:PAGE + 1])
        older_exists = len(rows) > PAGE
        rows = rows[:PAGE]
        newer_exists = before is not None and bool(rows) and filtered(f).filter(pk__gt=rows[0].pk).exists()
    events = []
    for e in rows:
        changes, same = audit_diff(e.before, e.after)
        events.append({"event": e, "changes": changes, "same": same})
    query = f.query()
    return {
        "filters": f, "events": events, "query": query,
        "older": urlencode({**query, "before": rows[-1].pk}) if older_exists and rows else "",
        "newer": urlencode({**query, "after": rows[0].pk}) if newer_exists and rows else "",
        "actions": AuditEvent.Action.choices, "stages": ReviewStage.choices,
        "actors": list(get_user_model().objects.filter(Q(groups__isnull=False) | Q(is_superuser=True))
                       .order_by("username").values_list("username", flat=True).distinct()[:500]),
    }

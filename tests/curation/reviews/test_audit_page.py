"""Issue #31 item 6: the audit log paginated, filterable, with before/after as differences."""
from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.models import AuditEvent, ReviewItem, ReviewStage
from curation.reviews import services
from curation.reviews.audit import PAGE, audit_diff, flatten, show
from tests.curation.factories import build_lineage

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=4))
values = st.recursive(scalars, lambda inner: st.dictionaries(st.text("abc", min_size=1, max_size=2), inner,
                                                              max_size=3), max_leaves=8)
records = st.dictionaries(st.text("xyz", min_size=1, max_size=2), values, max_size=4)


@settings(deadline=None)  # a loaded machine is no reason to fail
@given(records, records)
def test_the_differences_turn_before_into_after(before, after):
    """Applied to the before side (as shown), the listed differences give the after side."""
    changes, same = audit_diff(before, after)
    got = {k: show(v) for k, v in flatten(before).items()}
    for c in changes:
        if c.kind == "removed":
            del got[c.key]
        else:
            got[c.key] = c.after
    assert got == {k: show(v) for k, v in flatten(after).items()}
    assert same + sum(c.kind != "added" for c in changes) == len(flatten(before))


def test_diff_examples():
    changes, same = audit_diff({"state": "open", "review_count": 1, "x": {"a": 1, "b": 2}},
                               {"state": "decided", "review_count": 1, "x": {"a": 1}, "decision": "accept"})
    assert [(c.key, c.before, c.after, c.kind) for c in changes] == [
        ("decision", "", "accept", "added"), ("state", "open", "decided", "changed"), ("x.b", "2", "", "removed")]
    assert same == 2
    assert audit_diff({"n": 1}, {"n": True})[0][0].kind == "changed"  # 1 and true are not the same value
    assert audit_diff({}, {}) == ([], 0)


@pytest.fixture
def events(db, admin_user, annotator_a):
    build_lineage(conversations=2)
    services.items_sync()
    items = list(ReviewItem.objects.order_by("id"))
    now = timezone.now()
    rows = []
    for i in range(2 * PAGE + 7):
        item = items[i % len(items)]
        rows.append(AuditEvent(actor=annotator_a if i % 3 else None, action="claim" if i % 2 else "verdict",
                               item=item, before={"state": "open", "n": i},
                               after={"state": "open" if i % 4 else "decided", "n": i + 1},
                               at=now - dt.timedelta(days=(2 * PAGE + 7 - i) // 40)))
    AuditEvent.objects.bulk_create(rows)
    return AuditEvent.objects.order_by("-id")


def _ids(html: str) -> list[int]:
    return [int(x) for x in re.findall(r'<tr data-event="(\d+)">', html)]


def test_pages_walk_every_event_once_both_ways(client, admin_user, events):
    client.force_login(admin_user)
    url = reverse("curation:audit")
    seen, pages, query = [], [], ""
    while True:
        html = client.get(url + query).content.decode()
        ids = _ids(html)
        assert 0 < len(ids) <= PAGE and ids == sorted(ids, reverse=True)
        seen += ids
        pages.append(ids)
        m = re.search(r'id="page-older" href="\?([^"]+)"', html)
        if not m:
            break
        query = "?" + m.group(1).replace("&amp;", "&")
    assert seen == list(events.values_list("id", flat=True))
    # Back from the last page with "Newer": the same pages in reverse.
    back = [pages[-1]]
    while True:
        m = re.search(r'id="page-newer" href="\?([^"]+)"', html)
        if not m:
            break
        html = client.get(url + "?" + m.group(1).replace("&amp;", "&")).content.decode()
        back.append(_ids(html))
    assert back[::-1] == pages


@pytest.mark.parametrize("params,check", [
    ({"action": "claim"}, lambda e: e.action == "claim"),
    ({"actor": "annotator_a"}, lambda e: e.actor_id is not None),
    ({"actor": "-"}, lambda e: e.actor_id is None),
    ({"stage": "flowgraph"}, lambda e: e.item.stage == ReviewStage.FLOWGRAPH),
])
def test_filters_select_what_they_name(client, admin_user, events, params, check):
    client.force_login(admin_user)
    wanted = [e.pk for e in events if check(e)]
    seen, query = [], "?" + "&".join(f"{k}={v}" for k, v in params.items())
    while True:
        html = client.get(reverse("curation:audit") + query).content.decode()
        seen += _ids(html)
        m = re.search(r'id="page-older" href="\?([^"]+)"', html)
        if not m:
            break
        query = "?" + m.group(1).replace("&amp;", "&")
        for k, v in params.items():
            assert f"{k}={v}".replace("-", "-") in query.replace("%2D", "-")  # filters ride along
    assert seen == wanted


def test_item_and_date_filters_and_bad_values(client, admin_user, events):
    client.force_login(admin_user)
    one = events.first()
    html = client.get(reverse("curation:audit"), {"item": one.item_id}).content.decode()
    assert set(_ids(html)) == set(events.filter(item_id=one.item_id).values_list("id", flat=True)[:PAGE])
    today = timezone.localdate().isoformat()
    html = client.get(reverse("curation:audit"), {"since": today, "until": today}).content.decode()
    assert _ids(html) and all(AuditEvent.objects.get(pk=i).at.date() >= timezone.localdate() - dt.timedelta(days=1)
                              for i in _ids(html))
    for bad in ({"item": "9" * 5000}, {"since": "yesterday"}, {"action": "<script>"}, {"before": "-1"},
                {"stage": "x" * 300}, {"after": "1e308"}):
        resp = client.get(reverse("curation:audit"), bad)
        assert resp.status_code == 200 and "<script>" not in resp.content.decode().split("<main>")[1]


def test_changes_are_shown_not_dicts(client, admin_user, events):
    client.force_login(admin_user)
    html = client.get(reverse("curation:audit")).content.decode()
    assert "{&#x27;state&#x27;" not in html and "{'state'" not in html
    assert "<del>open</del>" in html and "<ins>decided</ins>" in html
    assert "field unchanged" in html


def test_audit_page_queries_do_not_grow_with_the_page(client, admin_user, events):
    client.force_login(admin_user)
    client.get(reverse("curation:audit"))
    item_id = events.last().item_id
    with CaptureQueriesContext(connection) as full:
        client.get(reverse("curation:audit"))
    with CaptureQueriesContext(connection) as small:
        client.get(reverse("curation:audit"), {"item": item_id, "action": "claim"})
    assert len(full) == len(small) <= 8


def test_audit_page_is_for_admins(client, annotator_a, researcher):
    for user in (annotator_a, researcher):
        client.force_login(user)
        assert client.get(reverse("curation:audit")).status_code == 403
    client.logout()
    assert client.get(reverse("curation:audit")).status_code == 302

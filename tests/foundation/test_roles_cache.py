"""Roles are remembered in the session for at most ROLE_CACHE_SECONDS, tied to the user."""
from __future__ import annotations

import time

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from almita_web import roles
from tests.conftest import PASSWORD

QUEUE = "curation:queue"


def _group_queries(ctx: CaptureQueriesContext) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if "auth_group" in q["sql"] or "projects_membership" in q["sql"]]


def test_roles_are_not_queried_on_every_request(client, annotator_a):
    client.login(username=annotator_a.username, password=PASSWORD)
    assert client.get(reverse(QUEUE)).status_code == 200
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(reverse(QUEUE)).status_code == 200
    assert _group_queries(ctx) == []


def test_a_removed_role_takes_effect_within_the_cache_window(client, annotator_a, monkeypatch):
    client.login(username=annotator_a.username, password=PASSWORD)
    assert client.get(reverse(QUEUE)).status_code == 200
    roles.remove_roles(annotator_a, [roles.ANNOTATOR])
    later = time.time() + roles.ROLE_CACHE_SECONDS + 1
    monkeypatch.setattr(roles.time, "time", lambda: later)
    assert client.get(reverse(QUEUE)).status_code == 403


def test_a_cache_entry_of_another_user_is_ignored(client, annotator_a, admin_user):
    client.login(username=annotator_a.username, password=PASSWORD)
    assert client.get(reverse(QUEUE)).status_code == 200
    session = client.session
    entry = session[roles._SESSION_KEY]
    # Same session, entry claiming admin: honoured only while its stamp matches this user.
    session[roles._SESSION_KEY] = dict(entry, roles=[roles.ADMIN])
    session.save()
    assert client.get(reverse("curation:audit")).status_code == 200
    session[roles._SESSION_KEY] = dict(entry, roles=[roles.ADMIN], stamp=[admin_user.pk, *entry["stamp"][1:]])
    session.save()
    assert client.get(reverse("curation:audit")).status_code == 403

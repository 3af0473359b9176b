"""almita_web.auth.ModelBackend: the per-request user lookup in plain SQL keeps ModelBackend's rules."""
import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.db import connection

from almita_web.auth import ModelBackend

pytestmark = pytest.mark.django_db


def test_get_user_returns_the_user_with_every_field_and_rejects_inactive_missing_and_malformed_ids():
    user = get_user_model().objects.create_user("ana", password="pw-123456789", first_name="Ana")
    backend = ModelBackend()
    got = backend.get_user(user.pk)
    assert got == user and got.first_name == "Ana" and got.check_password("pw-123456789")
    assert got.date_joined == user.date_joined and got.is_active is True
    assert backend.get_user(str(user.pk)) == user  # the session stores the id as text
    assert backend.get_user(user.pk + 1000) is None
    assert backend.get_user("not-a-number") is None
    user.is_active = False
    user.save()
    assert backend.get_user(user.pk) is None


def test_a_logged_in_request_loads_the_user_with_one_query_and_a_deactivated_user_is_logged_out():
    user = get_user_model().objects.create_user("ben", password="pw-123456789")
    client = Client()
    assert client.login(username="ben", password="pw-123456789")
    with CaptureQueriesContext(connection) as queries:
        resp = client.get("/")
    assert resp.wsgi_request.user == user
    lookups = [q["sql"] for q in queries.captured_queries if q["sql"].startswith('SELECT * FROM auth_user')]
    assert len(lookups) == 1  # the backend's plain lookup, once
    user.is_active = False
    user.save()
    resp = client.get("/")
    assert not resp.wsgi_request.user.is_authenticated

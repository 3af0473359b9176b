"""tests/sql_guard.py: which UPDATE/DELETE shapes it fails a test for, and which it lets through."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from curation.models import Claim, Notification
from projects.context import default_project, use_project
from projects.scoping import rows_to_write
from tests.sql_guard import offending, unsafe_statements_allowed
from webhooks.models import Delivery

UNSAFE = [
    # Django's shape for a queryset scoped through its owner (a JOIN): the state test is inside.
    'UPDATE "webhooks_delivery" SET "attempts" = %s WHERE "webhooks_delivery"."id" IN (SELECT U0."id" FROM '
    '"webhooks_delivery" U0 INNER JOIN "webhooks_webhook" U1 ON (U0."webhook_id" = U1."id") WHERE '
    '(U1."project_id" = %s AND U0."id" = %s AND U0."state" IN (%s, %s)))',
    'DELETE FROM "curation_claim" WHERE "curation_claim"."id" IN (SELECT U0."id" FROM "curation_claim" U0 '
    'INNER JOIN "curation_reviewitem" U1 ON (U0."item_id" = U1."id") WHERE (U1."project_id" = %s AND '
    'U0."expires_at" > %s))',
    # Nested one level deeper, and an EXISTS on the same table.
    'UPDATE "t" SET "a" = %s WHERE "t"."id" IN (SELECT V0."id" FROM "o" V0 WHERE V0."id" IN '
    '(SELECT U0."id" FROM "t" U0 WHERE U0."state" = %s))',
    'UPDATE t SET a = 1 WHERE EXISTS (SELECT 1 FROM t AS x WHERE x.id = t.id AND x.state = \'p\')',
]
SAFE = [
    # The row's own conditions in the statement's own WHERE; the scope through the owner's row.
    'UPDATE "webhooks_delivery" SET "attempts" = %s WHERE (EXISTS(SELECT 1 AS "a" FROM "webhooks_webhook" U0 '
    'WHERE (U0."id" = ("webhooks_delivery"."webhook_id") AND U0."project_id" = %s) LIMIT 1) AND '
    '"webhooks_delivery"."id" = %s AND "webhooks_delivery"."state" IN (%s, %s))',
    # Only the primary key inside: it never changes.
    'DELETE FROM "curation_claim" WHERE "curation_claim"."id" IN (SELECT U0."id" FROM "curation_claim" U0 '
    'INNER JOIN "curation_reviewitem" U1 ON (U0."item_id" = U1."id") WHERE (U1."project_id" = %s AND U0."id" = %s))',
    # A sub-select on another table, a sub-select in SET, a correlated reference to the outer row.
    'UPDATE "a" SET "n" = (SELECT COUNT(*) FROM "a" U0 WHERE U0."state" = %s) WHERE "a"."id" = %s',
    'UPDATE "a" SET "x" = %s WHERE "a"."state" = %s AND NOT EXISTS (SELECT 1 FROM "b" U0 WHERE U0."a_id" = "a"."id")',
    'UPDATE "a" SET "note" = \'(SELECT x FROM "a" U0 WHERE U0.state = 1)\' WHERE "a"."id" = %s',
    'SELECT "a"."id" FROM "a" WHERE "a"."id" IN (SELECT U0."id" FROM "a" U0 WHERE U0."state" = %s)',
]


@pytest.mark.parametrize("sql", UNSAFE)
def test_the_unsafe_shapes_are_named(sql):
    assert offending(sql)


@pytest.mark.parametrize("sql", SAFE)
def test_the_safe_shapes_pass(sql):
    assert offending(sql) is None


@pytest.mark.django_db
def test_what_django_writes_for_the_scoped_managers_and_for_rows_to_write():
    """Django's SQL, not hand-written: the guard sees the shape a scoped manager really produces."""
    if connection.vendor != "postgresql":
        pytest.skip("the guard checks PostgreSQL's statements")
    with use_project(default_project().pk), unsafe_statements_allowed(), CaptureQueriesContext(connection) as ctx:
        Delivery.objects.filter(pk=5, state="pending").update(attempts=1)
        Notification.objects.filter(user_id=1, read_at__isnull=True).update(read_at=timezone.now())
        rows_to_write(Delivery).filter(pk=5, state="pending").update(attempts=1)
        rows_to_write(Claim).filter(item_id=1, expires_at__gt=timezone.now()).delete()
        Claim.objects.filter(pk=3).delete()
    verdicts = [bool(offending(q["sql"])) for q in ctx.captured_queries]
    assert verdicts == [True, True, False, False, False]


def test_a_statement_of_the_code_under_test_is_recorded_and_a_tests_own_is_not():
    from tests import sql_guard

    sql_guard._take()
    sql_guard._record(UNSAFE[0])  # issued here, in a test module: set-up, not the code under test
    assert sql_guard._take() == []
    app_code = compile("_record(sql)", str(sql_guard._REPO) + "curation/reviews/example.py", "exec")
    exec(app_code, {"_record": sql_guard._record, "sql": UNSAFE[0]})  # as if a service had run it
    found = sql_guard._take()
    assert len(found) == 1 and "webhooks_delivery" in found[0] and "curation/reviews/example.py" in found[0]

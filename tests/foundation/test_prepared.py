"""almita_web.prepared: the review path's fixed statements as server-side prepared statements on
Postgres, with the same results, and the statement itself everywhere else."""
import pytest
from django.contrib.auth.models import User
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from almita_web import prepared
from almita_web.rows import fetch_one

pg_only = pytest.mark.skipif("connection.vendor != 'postgresql'")


def _ours() -> dict[str, str]:
    """Our prepared statements in this session: name → statement text."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, statement FROM pg_prepared_statements WHERE name LIKE 'almita_%%'")
        return dict(cursor.fetchall())


def _user_sql() -> str:
    return f"SELECT * FROM {User._meta.db_table} WHERE id = %s"


@pytest.mark.django_db
def test_other_databases_run_the_statement_itself():
    if connection.vendor == "postgresql":
        pytest.skip("checked on SQLite")
    user = User.objects.create_user("plain-user")
    assert fetch_one(User, _user_sql(), [user.pk], prepared=True) == user
    assert "_almita_prepared" not in connection.__dict__


@pg_only
@pytest.mark.django_db
def test_a_statement_is_prepared_once_per_session_and_gives_the_same_rows():
    users = [User.objects.create_user(f"prep-{i}", email=f"p{i}@example.org") for i in range(3)]
    sql = _user_sql() + " AND 'once' = 'once'"  # a statement no earlier test prepared on this session
    before = len(_ours())
    for u in users * 2:
        got = fetch_one(User, sql, [u.pk], prepared=True)
        plain = fetch_one(User, sql, [u.pk])
        assert (got.pk, got.username, got.email, got.date_joined) == (plain.pk, plain.username, plain.email,
                                                                       plain.date_joined)
    ours = _ours()
    assert len(ours) == before + 1  # one PREPARE for six runs
    assert any("$1" in text and "'once'" in text for text in ours.values())
    assert fetch_one(User, sql, [10**9], prepared=True) is None


@pg_only
@pytest.mark.django_db
def test_writes_report_their_row_counts_and_returning_values():
    from curation.models import AuditEvent
    from curation.reviews import writes

    user = User.objects.create_user("writer")
    pk = writes.insert(AuditEvent, actor=user.pk, action="claim", item=None, before={"a": [1, "x'%s"]},
                        after={}, at=user.date_joined)
    event = AuditEvent.objects.get(pk=pk)
    assert event.before == {"a": [1, "x'%s"]} and event.actor_id == user.pk
    assert writes.update(AuditEvent, pk, action="verdict") == 1
    assert writes.update(AuditEvent, pk + 1000, action="verdict") == 0
    assert AuditEvent.objects.get(pk=pk).action == "verdict"
    assert writes.delete(AuditEvent, id=pk) == 1
    assert writes.delete(AuditEvent, id=pk) == 0
    assert any("INSERT INTO" in text and "$1" in text for text in _ours().values())


@pg_only
@pytest.mark.django_db
def test_a_statement_postgres_cannot_prepare_runs_plainly_and_leaves_the_transaction_intact():
    sql = "SELECT %s IS NULL"  # the parameter's type cannot be inferred: PREPARE fails
    with transaction.atomic():
        User.objects.create_user("inside")
        with connection.cursor() as cursor:
            prepared.execute(cursor, sql, [None])
            assert cursor.fetchone() == (True,)
            prepared.execute(cursor, sql, ["x"])  # not tried again
            assert cursor.fetchone() == (False,)
        assert User.objects.filter(username="inside").exists()  # the transaction still works
    assert connections["default"].__dict__["_almita_prepared"][1][sql] == ""


@pg_only
@pytest.mark.django_db
def test_recorded_queries_show_the_statement_not_execute():
    user = User.objects.create_user("recorded")
    with CaptureQueriesContext(connection) as ctx:
        fetch_one(User, _user_sql(), [user.pk], prepared=True)
    assert [q["sql"].startswith("SELECT * FROM") for q in ctx.captured_queries] == [True]


@pg_only
@pytest.mark.django_db
def test_the_environment_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("DB_PREPARED_STATEMENTS", "0")
    user = User.objects.create_user("switch")
    sql = _user_sql() + " AND is_active"
    assert fetch_one(User, sql, [user.pk], prepared=True) == user
    assert not any("is_active" in text for text in _ours().values())


@pg_only
@pytest.mark.django_db(transaction=True)
def test_a_new_session_prepares_afresh_and_a_failed_run_starts_over():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE almita_prep_probe (id int PRIMARY KEY, a text)")
        cursor.execute("INSERT INTO almita_prep_probe VALUES (1, 'one')")
    try:
        sql = "SELECT * FROM almita_prep_probe WHERE id = %s"
        with connection.cursor() as cursor:
            prepared.execute(cursor, sql, [1])
            assert cursor.fetchall() == [(1, "one")]
            first = connections["default"].__dict__["_almita_prepared"][1][sql]
            # The table changes under the prepared statement: Postgres refuses the old plan.
            cursor.execute("ALTER TABLE almita_prep_probe ADD COLUMN b text DEFAULT 'bee'")
            with pytest.raises(Exception, match="cached plan must not change result type"):
                prepared.execute(cursor, sql, [1])
            prepared.execute(cursor, sql, [1])  # prepared again under a new name
            assert cursor.fetchall() == [(1, "one", "bee")]
            second = connections["default"].__dict__["_almita_prepared"][1][sql]
            assert second and second != first
        connection.close()
        with connection.cursor() as cursor:
            prepared.execute(cursor, sql, [1])
            assert cursor.fetchall() == [(1, "one", "bee")]
        assert connections["default"].__dict__["_almita_prepared"][1][sql] not in (first, second)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE almita_prep_probe")

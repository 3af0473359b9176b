"""almita_web.rows.fetch builds the same instances as the ORM, on SQLite and Postgres."""
import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from almita_web.rows import fetch, fetch_one
from curation.models import Review, ReviewItem, ReviewStage
from generation.models import Api
from tests.curation.factories import ProcedureFactory

pytestmark = pytest.mark.django_db


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_fetch_equals_the_orm_for_json_datetime_boolean_and_null_columns():
    user = get_user_model().objects.create_user("rw", password="pw-123456789")
    now = timezone.now()
    item = ReviewItem.objects.create(stage=ReviewStage.FLOWGRAPH, object_id=5, has_warnings=True, excluded=False,
                                     decision="", created_at=now)
    review = Review.objects.create(item=item, annotator=user, verdict="reject", reason_codes=["X", "ü"],
                                   comment="c", created_at=now, updated_at=now)
    proc = ProcedureFactory()
    api = Api.objects.create(procedure=proc, name="get_order", parameters=[{"name": "id", "type": "string"}],
                             validation=[{"rule": "R"}])
    for model, obj in ((ReviewItem, item), (Review, review), (Api, api)):
        got = fetch_one(model, f"SELECT * FROM {model._meta.db_table} WHERE id = %s", [obj.pk])
        want = model.objects.get(pk=obj.pk)
        assert _fields(got) == _fields(want), model.__name__
        assert got._state.adding is False and got._state.db == "default"
    assert fetch_one(ReviewItem, f"SELECT * FROM {ReviewItem._meta.db_table} WHERE id = %s", [item.pk + 99]) is None
    assert fetch_one(get_user_model(), "SELECT * FROM auth_user WHERE id = %s", [user.pk]).check_password("pw-123456789")


def test_fetch_with_reordered_and_missing_columns_defers_the_missing_ones():
    proc = ProcedureFactory()
    for i in range(3):
        Api.objects.create(procedure=proc, name=f"a{i}", description=f"d{i}", parameters=[{"i": i}])
    rows = fetch(Api, f"SELECT name, id, parameters FROM {Api._meta.db_table} ORDER BY name DESC", [])
    assert [a.name for a in rows] == ["a2", "a1", "a0"]
    assert rows[0].parameters == [{"i": 2}]
    assert rows[0].get_deferred_fields() >= {"description", "procedure_id"}
    assert rows[0].description == "d2"  # a deferred column loads on first access, as with the ORM
    rows[1].name = "renamed"
    rows[1].save(update_fields=["name"])
    assert Api.objects.get(pk=rows[1].pk).name == "renamed"

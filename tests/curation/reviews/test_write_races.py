"""Curation writes that test a row's own columns, raced on PostgreSQL (READ COMMITTED).

Claims, assignments and notifications are scoped through their item's project (a JOIN), so an
UPDATE or DELETE filtered through `.objects` put its conditions in a sub-select PostgreSQL does
not re-check after waiting for a row lock. Marking notifications read had no other protection;
releasing assignments holds the items' row locks first, which must keep protecting it. See
tests/races.py for the two-transaction set-up, tests/sql_guard.py for the suite-wide check."""
from __future__ import annotations

import pytest
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ANNOTATOR
from curation.models import Assignment, AuditEvent, Notification, ReviewItem, ReviewStage
from curation.reviews import assignment, discussion
from projects.context import default_project, use_project
from projects.models import Project
from tests.conftest import make_user
from tests.races import postgres_only, race  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def an_item(project, object_id: int = 1) -> ReviewItem:
    with use_project(project.pk):
        return ReviewItem.objects.create(stage=ReviewStage.PROCEDURE, object_id=object_id)


def a_notification(user, item) -> Notification:
    return Notification._base_manager.create(user=user, item=item, kind=Notification.Kind.OVERTURNED, message="m")


@pytest.mark.usefixtures("postgres_only")
def test_two_mark_reads_never_both_take_one_notification():
    project = default_project()
    user = make_user("reader", ANNOTATOR)
    note = a_notification(user, an_item(project))
    first_read = timezone.now()

    def read_on_another_tab() -> int:
        return Notification._base_manager.filter(pk=note.pk, read_at__isnull=True).update(read_at=first_read)

    def mark_read() -> int:
        return discussion.mark_read(user)

    a, b = race(project.pk, read_on_another_tab, mark_read)
    assert a == 1
    assert b == 0, "marked read again: the read time moved and the notification was counted twice"
    assert Notification._base_manager.get(pk=note.pk).read_at == first_read


@pytest.mark.usefixtures("postgres_only")
def test_two_releases_of_one_assignment_release_it_once():
    """Protected by the items' row locks (taken before any assignment is read), not by the UPDATE."""
    project = default_project()
    adjudicator, annotator = make_user("adj", ADJUDICATOR), make_user("ann", ANNOTATOR)
    item = an_item(project)
    Assignment._base_manager.create(item=item, annotator=annotator, assigned_by=adjudicator)

    def release() -> int:
        return assignment.release(actor=adjudicator, item_ids=[item.pk])["released"]

    assert race(project.pk, release, release) == (1, 0)
    assert AuditEvent._base_manager.filter(action=AuditEvent.Action.RELEASE).count() == 1
    assert not Assignment._base_manager.get(item=item).active


def test_mark_read_and_release_keep_to_the_current_project():
    """rows_to_write scopes through the owner's row: another project's rows are never written."""
    a = default_project()
    b = Project.objects.create(slug="shipping", name="Shipping bot")
    user, adjudicator = make_user("reader", ANNOTATOR), make_user("adj", ADJUDICATOR)
    item_b = an_item(b, object_id=2)
    note_b = a_notification(user, item_b)
    Assignment._base_manager.create(item=item_b, annotator=user, assigned_by=adjudicator)
    with use_project(a.pk):
        assert discussion.mark_read(user) == 0
        with pytest.raises(assignment.AssignError):
            assignment.release(actor=adjudicator, item_ids=[item_b.pk])
    assert Notification._base_manager.get(pk=note_b.pk).read_at is None
    assert Assignment._base_manager.get(item=item_b).active
    with use_project(b.pk):
        assert discussion.mark_read(user) == 1


@pytest.mark.usefixtures("postgres_only")
def test_two_digests_side_by_side_mail_a_notification_once(settings):
    """Celery beat's digest and `manage.py send_digest` at the same time: the second one waits for
    the first one's row locks, then finds the notification e-mailed."""
    from django.core import mail

    from curation.reviews import digest

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.ALMITA_DIGEST_EMAIL = True
    mail.outbox = []
    project = default_project()
    user = make_user("reader", ANNOTATOR)
    user.email = "reader@example.org"
    user.save(update_fields=["email"])
    a_notification(user, an_item(project))

    assert race(project.pk, digest.send_digest, digest.send_digest) == ((1, 1), (0, 0))
    assert len(mail.outbox) == 1

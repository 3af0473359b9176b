"""The daily e-mail digest of unread notifications, through Django's mail backend.

Sent only when ALMITA_DIGEST_EMAIL is on (and then through whatever EMAIL_BACKEND the deployment
configured); each notification is e-mailed at most once, and users without an address are skipped.
"""
from __future__ import annotations

from collections import defaultdict

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from curation.models import Notification
from projects.scoping import rows_to_write


def digest_enabled() -> bool:
    return bool(getattr(settings, "ALMITA_DIGEST_EMAIL", False))


def send_digest() -> tuple[int, int]:
    """(e-mails sent, notifications in them). Unread, not yet e-mailed notifications, one mail per user."""
    if not digest_enabled():
        return 0, 0
    pending = (Notification.objects.filter(read_at__isnull=True, emailed_at__isnull=True)
               .exclude(user__email="").select_related("user", "item").order_by("created_at", "id"))
    by_user: dict[int, list[Notification]] = defaultdict(list)
    for n in pending:
        by_user[n.user_id].append(n)
    sent = count = 0
    for rows in by_user.values():
        user = rows[0].user
        with transaction.atomic():
            # Lock the rows, still un-mailed, before sending: a digest running beside this one (celery
            # beat and `manage.py send_digest`) waits here, then finds them e-mailed. One table
            # (rows_to_write), so PostgreSQL re-checks `emailed_at` after the wait.
            mine = set(rows_to_write(Notification).select_for_update().filter(
                pk__in=[n.pk for n in rows], emailed_at__isnull=True).values_list("pk", flat=True))
            rows = [n for n in rows if n.pk in mine]
            if not rows:
                continue
            _send(user, rows)
            Notification._base_manager.filter(pk__in=list(mine)).update(emailed_at=timezone.now())
        sent += 1
        count += len(rows)
    return sent, count


def _send(user, rows: list[Notification]) -> None:
    lines = [f"- {timezone.localtime(n.created_at):%Y-%m-%d %H:%M} {n.message}" for n in rows]
    body = (f"Hello {user.get_username()},\n\n{len(rows)} notification(s) since your last digest:\n\n"
            + "\n".join(lines) + "\n\nOpen Almita Studio's notifications page to mark them read.\n")
    send_mail(subject=f"Almita Studio: {len(rows)} notification(s)", message=body,
              from_email=None, recipient_list=[user.email])

"""Send the notification digest e-mails now (what Celery beat does daily)."""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from curation.reviews.services import digest_enabled, send_digest


class Command(BaseCommand):
    help = "E-mail each user their unread notifications not yet e-mailed (needs ALMITA_DIGEST_EMAIL=1)."

    def handle(self, *args, **options) -> None:
        if not digest_enabled():
            raise CommandError("E-mail digests are off: set ALMITA_DIGEST_EMAIL=1 and the EMAIL_* settings.")
        mails, notes = send_digest()
        self.stdout.write(f"sent {mails} digest e-mail(s) with {notes} notification(s)")

from django.core.management.base import BaseCommand

from generation.demo import DEMO_USERS, demo_load


class Command(BaseCommand):
    help = "Load demo users (one per role) and demo data. Idempotent: running it twice creates nothing new."

    def handle(self, *args, **options):
        report = demo_load()
        extra = self._derive()
        self.stdout.write(f"Demo data: {report.rows_created} rows created{extra}.")
        self.stdout.write("Demo logins (username / password):")
        for username, roles, password in DEMO_USERS:
            mark = " (new)" if username in report.users_created else ""
            self.stdout.write(f"  {username:<12} {password:<20} {', '.join(roles)}{mark}")

    def _derive(self) -> str:
        """Run the deterministic stages and fill the review queues, when those parts are present."""
        notes = []
        try:
            from generation.services import demo_build
        except ImportError:
            demo_build = None
        if demo_build is not None:
            from generation.models import Flowgraph

            # Only flowgraphs not yet derived, so a second run creates nothing new.
            todo = list(Flowgraph.objects.filter(key__startswith="demo:", conversation_graphs__isnull=True))
            if todo:
                job = demo_build(flowgraphs=todo, paths=4, noise=0.3, seed=7, name="Demo: derived offline")
                notes.append(f"; derived offline in job {job.pk} ({job.get_status_display().lower()})")
        try:
            from curation.services import items_sync
        except ImportError:
            items_sync = None
        if items_sync is not None:
            notes.append(f"; review items: {items_sync()}")
        return "".join(notes)

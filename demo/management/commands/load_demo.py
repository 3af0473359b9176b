from django.core.management.base import BaseCommand

from curation.models import Release, ReleaseKind
from curation.releases.services import ReleaseError, release_create
from curation.reviews.services import items_sync
from demo.loader import DEMO_USERS, SHIPPING_NAME, SHIPPING_SLUG, SHIPPING_USERS, demo_load
from evaluation import services as evaluation
from generation.models import Flowgraph
from generation.services import demo_build

DEMO_RELEASE = "demo-automatic"


class Command(BaseCommand):
    help = "Load demo users (one per role) and demo data. Idempotent: running it twice creates nothing new."

    def handle(self, *args, **options):
        from projects.context import default_project, use_project
        from projects.models import Project

        report = demo_load()
        with use_project(default_project()):
            extra = self._derive() + self._evaluate()
        with use_project(Project.objects.get(slug=SHIPPING_SLUG)):  # issue #30: the second project
            extra += self._derive().replace("; review items", f"; {SHIPPING_NAME} review items")
        self.stdout.write(f"Demo data: {report.rows_created} rows created{extra}.")
        self.stdout.write("Demo logins (username / password):")
        for username, roles, password in DEMO_USERS:
            mark = " (new)" if username in report.users_created else ""
            self.stdout.write(f"  {username:<12} {password:<20} {', '.join(roles)}{mark}")
        self.stdout.write(f"Project {SHIPPING_NAME} (/p/{SHIPPING_SLUG}/), besides Default (the admin sees both):")
        for username, roles, password in SHIPPING_USERS:
            self.stdout.write(f"  {username:<12} {password:<20} {', '.join(roles)}")

    def _derive(self) -> str:
        """Run the deterministic stages and fill the review queues, when those parts are present."""
        notes = []
        # Only flowgraphs not yet derived, so a second run creates nothing new.
        todo = list(Flowgraph.objects.filter(key__startswith="demo:", conversation_graphs__isnull=True))
        if todo:
            job = demo_build(flowgraphs=todo, paths=4, noise=0.3, seed=7, name="Demo: derived offline")
            notes.append(f"; derived offline in job {job.pk} ({job.get_status_display().lower()})")
        notes.append(f"; review items: {items_sync()}")
        return "".join(notes)

    def _evaluate(self) -> str:
        """An automatic release of the demo tests, evaluated by the three reference agents, so the
        evaluation pages have runs to show and compare from the first start (once)."""
        if Release.objects.filter(name=DEMO_RELEASE).exists():
            return ""
        try:
            release = release_create(name=DEMO_RELEASE, kind=ReleaseKind.AUTOMATIC)
        except ReleaseError as exc:  # no tests yet: an empty release is refused
            return f"; no release ({exc})"
        tests = release.entries.count()
        for agent in evaluation.reference_agents_ensure():
            run = evaluation.run_create(agent=agent, release=release, similarity="lexical", concurrency=1, start=False)
            evaluation.run_execute_inline(run=run, workers=1)
        return f"; release {release} with {tests} tests, evaluated by the reference agents"


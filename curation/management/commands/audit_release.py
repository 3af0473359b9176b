"""python manage.py audit_release RELEASE [--json] [--save]

The fidelity audit of a release's frozen tests: per check (outcome vs branch, argument values vs
schema and dialogue, speech artefacts) how many tests fail and the first findings. Exit status 1
when any test fails the audit, so a CI step can gate on it. ``--save`` stores the report on the
release (its page shows it)."""
from __future__ import annotations

import json

from django.core.management.base import CommandError

from curation.models import Release
from curation.releases.services import audit_card_lines, release_audit, release_find
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = "Audit a release's tests. RELEASE is an id, a name (latest version) or name@version."

    def add_arguments(self, parser) -> None:
        parser.add_argument("release")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--save", action="store_true", help="store the report on the release")

    def handle(self, *args, release: str, **opts) -> None:
        try:
            rel = release_find(release)
        except (Release.DoesNotExist, Release.MultipleObjectsReturned) as exc:
            raise CommandError(f"release {release!r} not found: {exc}") from None
        report = release_audit(rel)
        if opts["save"]:
            rel.audit = report
            rel.save(update_fields=["audit"])
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=1, ensure_ascii=False))
        else:
            self.stdout.write(f"{rel.name} v{rel.version}: {report['conversations']} conversations")
            self.stdout.write("\n".join(audit_card_lines(report)).replace("## Fidelity audit\n\n", ""))
            for f in report["findings"][:20]:
                self.stdout.write(f"  {f['conversation']} @ {f['position']} [{f['kind']}] message {f['index']}: "
                                  f"{f['text']}")
        if report["failed"]:
            raise SystemExit(1)

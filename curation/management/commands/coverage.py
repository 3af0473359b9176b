"""python manage.py coverage (--release R | --job J | --graph G) [--json]"""
from __future__ import annotations

import json

from django.core.management.base import CommandError

from curation.loop.services import ScopeError, scope_report
from generation.coverage import format_report
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = ("Per-graph node and edge coverage by accepted conversations, and the uncovered edges (for a "
            "release: by the release's own conversations).")

    def add_arguments(self, parser) -> None:
        scope = parser.add_mutually_exclusive_group(required=True)
        scope.add_argument("--release", help="a release id, name (latest version) or name@version")
        scope.add_argument("--job", help="a generation job id")
        scope.add_argument("--graph", help="a conversation graph id")
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def handle(self, *args, **opts) -> None:
        try:
            data = scope_report(release=opts["release"], job=opts["job"], graph=opts["graph"])
        except ScopeError as exc:
            raise CommandError(str(exc)) from None
        if opts["json"]:
            self.stdout.write(json.dumps(data, indent=1))
        else:
            self.stdout.write(f"coverage of {data['scope']}")
            self.stdout.write(format_report(data))

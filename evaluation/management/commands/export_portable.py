"""python manage.py export_portable RELEASE OUT

Write a release as the portable file the standalone runner reads (python -m evaluation.runner):
its tests.jsonl with a metadata header and the workflows. RELEASE is an id or "name[@version]";
OUT a file or a folder."""
from __future__ import annotations


from evaluation.management.commands.evaluate import find_release
from evaluation.portable import export_portable
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = "Export a release as one portable file for the standalone runner."

    def add_arguments(self, parser) -> None:
        parser.add_argument("release")
        parser.add_argument("out")

    def handle(self, *args, **opts) -> None:
        release = find_release(opts["release"])
        path = export_portable(release, opts["out"])
        self.stdout.write(f"{release}: {release.entries.count()} tests written to {path}")

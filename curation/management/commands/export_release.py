"""python manage.py export_release RELEASE --format csv|jsonl|hf --out PATH"""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from curation.models import Release
from curation.releases.services import FORMATS, export_release, release_find
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = "Write a release to disk. RELEASE is an id, a name (latest version) or name@version."

    def add_arguments(self, parser) -> None:
        parser.add_argument("release")
        parser.add_argument("--format", required=True, choices=FORMATS)
        parser.add_argument("--out", required=True, type=Path,
                            help="csv: a file (or a folder); jsonl and hf: a folder")

    def handle(self, *args, release: str, format: str, out: Path, **opts) -> None:
        try:
            rel = release_find(release)
        except (Release.DoesNotExist, Release.MultipleObjectsReturned) as exc:
            raise CommandError(f"release {release!r} not found: {exc}") from None
        for path in export_release(rel, format, out):
            self.stdout.write(str(path))

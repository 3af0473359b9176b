"""python manage.py import_items FILE [FILE ...] [--format auto|almita|apis|openai_tools|openapi|mcp|flowbench|abcd]
[--lenient]"""
from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError
from django.db import transaction

from generation.imports import FORMATS, ImportFormatError, items_import
from projects.commands import ProjectCommand


class Command(ProjectCommand):
    help = ("Import intents, procedures, APIs, graphs and conversations (see docs/import-format.md). "
            "All files are imported in one transaction: one refused file writes nothing.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--format", default="auto", choices=sorted(FORMATS))
        parser.add_argument("--name", default="", help="Intent/procedure name for API lists (default: file name)")
        parser.add_argument("--procedure-file", type=Path, default=None,
                            help="Procedure text for API lists (e.g. a tau-bench wiki.md)")
        parser.add_argument("--lenient", action="store_true",
                            help="Import malformed Mermaid charts as far as they can be read, with a report")

    def handle(self, *args, files: list[Path], format: str, name: str, procedure_file: Path | None,
               lenient: bool = False, **opts) -> None:
        procedure_text = ""
        if procedure_file is not None:
            try:
                procedure_text = procedure_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"{procedure_file}: {exc}") from None
        with transaction.atomic():
            for path in files:
                try:
                    raw = path.read_bytes()
                except OSError as exc:
                    raise CommandError(f"{path}: {exc}") from None
                # tau-bench keeps every domain's tools in "<domain>/tools.json": name them by domain.
                label = name or (f"{path.parent.name} {path.stem}" if path.stem in ("tools", "apis") else path.stem)
                try:
                    result = items_import(raw=raw, fmt=format, name=label, procedure_text=procedure_text,
                                          lenient=lenient, source=str(path))
                except ImportFormatError as exc:
                    raise CommandError(f"refused, nothing imported: {exc}") from None
                self.stdout.write(f"{path}: {result.summary()}")
                for note in result.notes:
                    self.stdout.write(f"  note: {note}")

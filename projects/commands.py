"""Management commands run in one project: `--project <slug>` (default: Default).

A command built on ProjectCommand runs its whole `handle()` with that project current, so every
query and every row it creates is the project's (projects.context).
"""
from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from projects import context
from projects.models import DEFAULT_SLUG, Project


class ProjectCommand(BaseCommand):
    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument("--project", default=DEFAULT_SLUG, metavar="SLUG",
                            help="the project to work in (its slug; default: %(default)s)")
        return parser

    def execute(self, *args, **options):
        slug = options.get("project") or DEFAULT_SLUG
        project = Project.objects.filter(slug=slug).first()
        if project is None and slug == DEFAULT_SLUG:
            project = context.default_project()
        if project is None:
            raise CommandError(f"No project {slug!r}; the projects are: "
                               f"{', '.join(Project.objects.values_list('slug', flat=True)) or 'none'}")
        with context.use_project(project):
            return super().execute(*args, **options)

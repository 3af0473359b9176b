"""Two projects with overlapping people: Default (A) and Shipping (B), each with its own lineage."""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

from almita_web.roles import ADMIN, ANNOTATOR, assign_roles
from projects.context import default_project, use_project
from projects.models import Project
from tests.conftest import PASSWORD


@dataclass
class World:
    a: Project
    b: Project
    a_lineage: object
    b_lineage: object
    only_a: User
    both: User
    admin_b: User
    root: User


@pytest.fixture
def world(db) -> World:
    from curation.reviews import services
    from tests.curation.factories import build_lineage

    a = default_project()
    b = Project.objects.create(slug="shipping", name="Shipping bot")
    a_lineage = build_lineage(conversations=1)
    services.items_sync()
    with use_project(b):
        b_lineage = build_lineage(conversations=1, seed=7)
        services.items_sync()
    only_a = User.objects.create_user("only_a", password=PASSWORD)
    assign_roles(only_a, [ANNOTATOR], a)
    both = User.objects.create_user("both", password=PASSWORD)
    assign_roles(both, [ANNOTATOR], a)
    assign_roles(both, [ANNOTATOR], b)
    admin_b = User.objects.create_user("admin_b", password=PASSWORD)
    assign_roles(admin_b, [ADMIN], b)
    root = User.objects.create_superuser("root", password=PASSWORD)
    return World(a, b, a_lineage, b_lineage, only_a, both, admin_b, root)

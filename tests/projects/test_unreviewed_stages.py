"""A stage a project does not review counts as accepted: curated releases, their preview and the
dataset card follow the project's "reviewed stages" setting; automatic releases ignore reviews."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from almita_web.roles import ANNOTATOR, assign_roles
from curation.models import ReleaseKind, ReleaseTest, ReviewItem, ReviewStage
from curation.releases import services as releases
from curation.reviews import services
from projects.context import use_project
from projects.models import Project
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


def _decide(user, stage, verdict):
    item = services.review_claim_next(annotator=user, stage=stage)
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=["PR-GENERAL"] if verdict == "reject" else [])


@pytest.fixture
def procedures_only(db):
    project = Project.objects.create(slug="proc-only", name="Procedures only", reviews_per_item=1,
                                     reviewed_stages=[ReviewStage.PROCEDURE])
    user = User.objects.create_user("reviewer")
    assign_roles(user, [ANNOTATOR], project)
    with use_project(project):
        first, second = build_lineage(conversations=2), build_lineage(conversations=1, seed=3)
        services.items_sync()
    return project, user, first, second


def test_unreviewed_stages_get_no_items_and_count_as_accepted_in_curated_releases(procedures_only):
    project, user, first, second = procedures_only
    with use_project(project):
        assert set(ReviewItem.objects.values_list("stage", flat=True)) == {ReviewStage.PROCEDURE}
        assert releases.release_preview(kind=ReleaseKind.CURATED, filters={})["tests"] == 0  # nothing decided yet
        _decide(user, ReviewStage.PROCEDURE, "accept")
        _decide(user, ReviewStage.PROCEDURE, "reject")
        accepted = first if first.procedure.__class__.objects.get(pk=first.procedure.pk).status == "accepted" else second
        taken = set(releases.tests_for(ReleaseKind.CURATED, {}).values_list("pk", flat=True))
        assert taken == {t.pk for t in accepted.tests} and taken
        # A filter naming an unreviewed stage asks for nothing more (accepted by policy).
        assert set(releases.tests_for(ReleaseKind.CURATED, {"stages": ["conversation", "flowgraph"]})
                   .values_list("pk", flat=True)) == taken
        # Automatic releases take everything the automatic filters kept, rejection or not.
        assert releases.release_preview(kind=ReleaseKind.AUTOMATIC, filters={})["tests"] == \
            len(first.tests) + len(second.tests)
        release = releases.release_create(name="procs", kind=ReleaseKind.CURATED)
    assert ReleaseTest.objects.filter(release=release).count() == len(taken)
    assert ("Reviewed stages: procedure; not reviewed in this project, so accepted by policy: "
            "flowgraph, conversation graph, conversation") in release.card


def test_a_project_reviewing_nothing_releases_every_test_not_withheld(db):
    project = Project.objects.create(slug="none", name="No review", reviewed_stages=[])
    with use_project(project):
        lineage = build_lineage(conversations=2)
        services.items_sync()
        assert not ReviewItem.objects.exists()
        assert releases.release_preview(kind=ReleaseKind.CURATED, filters={})["tests"] == len(lineage.tests)


def test_a_project_reviewing_conversations_still_needs_them_accepted(world):
    with use_project(world.b):  # every stage reviewed, nothing decided
        assert releases.release_preview(kind=ReleaseKind.CURATED, filters={})["tests"] == 0

"""Per-project roles, scoped queries, 404 for another project's ids, links inside the project."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.models import ReviewItem
from generation.models import Flowgraph, Procedure
from projects.context import use_project

pytestmark = pytest.mark.django_db


def test_rows_belong_to_the_project_they_were_made_in(world):
    assert world.a_lineage.procedure.project_id == world.a.pk
    assert world.b_lineage.procedure.project_id == world.b.pk
    b_item = ReviewItem._base_manager.get(stage="procedure", object_id=world.b_lineage.procedure.pk)
    assert b_item.project_id == world.b.pk  # the item takes its artifact's project
    with use_project(world.a):
        assert set(Procedure.objects.values_list("pk", flat=True)) == {world.a_lineage.procedure.pk}
        assert not ReviewItem.objects.filter(pk=b_item.pk).exists()
    with use_project(world.b):
        assert list(Flowgraph.objects.values_list("pk", flat=True)) == [world.b_lineage.flowgraph.pk]
    assert Procedure.objects.count() == 2  # no project set: site-wide code sees every row


def test_an_annotator_of_a_only_gets_404_in_b(client, world):
    client.force_login(world.only_a)
    assert client.get("/p/default/curation/queue/").status_code == 200
    assert client.get("/p/shipping/curation/queue/").status_code == 404
    assert client.get("/p/shipping/").status_code == 404
    assert client.get("/p/nowhere/curation/queue/").status_code == 404


def test_roles_are_per_project(client, world):
    client.force_login(world.admin_b)
    assert client.get("/p/shipping/generation/").status_code == 200
    assert client.get("/p/default/generation/").status_code == 404  # not a member of Default
    client.force_login(world.both)
    assert client.get("/p/shipping/curation/queue/").status_code == 200
    assert client.get("/p/shipping/generation/").status_code == 403  # a member, not an admin there


def test_links_stay_inside_the_project(client, world):
    client.force_login(world.both)
    page = client.get("/p/shipping/curation/queue/").content.decode()
    assert 'href="/p/shipping/curation/' in page
    assert reverse("curation:queue") == "/curation/queue/"  # the prefix ends with the request


def test_unprefixed_urls_use_the_last_project(client, world):
    client.force_login(world.both)
    client.get("/p/shipping/curation/queue/")
    item = ReviewItem._base_manager.get(stage="procedure", object_id=world.b_lineage.procedure.pk)
    assert client.get(f"/curation/explore/item/{item.pk}/panel/").status_code in (200, 403)
    assert client.session["almita_project"] == "shipping"
    client.get("/p/default/curation/queue/")
    assert client.session["almita_project"] == "default"


def test_an_item_of_b_answers_404_in_a(client, world):
    item_b = ReviewItem._base_manager.get(stage="procedure", object_id=world.b_lineage.procedure.pk)
    client.force_login(world.root)
    assert client.get(f"/p/shipping/curation/items/{item_b.pk}/").status_code in (200, 302)
    assert client.get(f"/p/default/curation/items/{item_b.pk}/").status_code == 404
    assert client.get(f"/p/default/api/procedures/{world.b_lineage.procedure.pk}/").status_code == 404
    assert client.get(f"/p/shipping/api/procedures/{world.b_lineage.procedure.pk}/").status_code == 200


def test_api_lists_only_the_project(client, world):
    client.force_login(world.root)
    ids = [r["id"] for r in client.get("/p/shipping/api/procedures/").json()["results"]]
    assert ids == [world.b_lineage.procedure.pk]
    ids = [r["id"] for r in client.get("/p/default/api/procedures/").json()["results"]]
    assert ids == [world.a_lineage.procedure.pk]


def test_token_caller_outside_the_project_gets_404(client, world):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=world.only_a)
    auth = {"HTTP_AUTHORIZATION": f"Token {token.key}"}
    assert client.get("/p/default/api/reviews/", **auth).status_code == 200
    assert client.get("/p/shipping/api/reviews/", **auth).status_code == 404


def test_the_switcher_lists_the_users_projects(client, world):
    client.force_login(world.both)
    page = client.get("/p/shipping/curation/queue/").content.decode()
    assert 'id="project-switch"' in page and "Project: <strong>Shipping bot</strong>" in page
    assert 'href="/p/default/"' in page and 'href="/p/shipping/" aria-current="true"' in page
    client.force_login(world.only_a)
    page = client.get("/curation/queue/").content.decode()
    assert "Project: <strong>Default</strong>" in page and "/p/shipping/" not in page


def test_site_administrators_manage_projects_and_members(client, world):
    from projects.models import Membership, Project

    client.force_login(world.admin_b)  # an admin of one project is not a site administrator
    assert client.get("/projects/").status_code == 403
    client.force_login(world.root)
    assert client.get("/projects/").status_code == 200
    response = client.post("/projects/", {"action": "create", "slug": "billing", "name": "Billing bot"})
    assert response.status_code == 302
    billing = Project.objects.get(slug="billing")
    response = client.post("/projects/", {"action": "members", "project": "billing", "username": "only_a",
                                          "roles": ["annotator", "adjudicator"]})
    assert response.status_code == 302
    assert set(Membership.objects.filter(project=billing, user=world.only_a).values_list("role", flat=True)) == {
        "annotator", "adjudicator"}
    client.post("/projects/", {"action": "members", "project": "billing", "username": "only_a"})
    assert not Membership.objects.filter(project=billing, user=world.only_a).exists()
    assert client.post("/projects/", {"action": "create", "slug": "Bad Slug!", "name": "x"}).status_code == 200


def test_the_unscoped_django_admin_is_for_those_who_see_every_project(client, world):
    client.force_login(world.admin_b)  # admin of B only
    assert client.get("/admin/generation/intent/").status_code == 403
    client.force_login(world.root)
    assert client.get("/admin/generation/intent/").status_code == 200
    assert client.get("/admin/projects/project/").status_code == 200


def test_a_row_of_b_cannot_be_named_in_a_post_to_a(client, world):
    from curation.models import Release
    from evaluation.models import Agent, EvaluationRun

    with use_project(world.b):
        agent = Agent.objects.create(name="b agent")
        release = Release.objects.create(name="b", version=1, content_hash="0" * 64, manifest={})
    client.force_login(world.root)
    response = client.post("/p/default/api/evaluation-runs/", {"agent": agent.pk, "release": release.pk},
                           content_type="application/json")
    assert response.status_code == 400 and set(response.json()) >= {"agent", "release"}
    assert not EvaluationRun._base_manager.exists()


def test_assignment_progress_and_annotators_stay_in_the_project(world):
    from curation.reviews import assignment

    with use_project(world.b):
        item = ReviewItem.objects.filter(stage="procedure").get()
        with pytest.raises(assignment.AssignError, match="not an annotator"):
            assignment._annotators(["only_a"])  # an annotator of Default only
        assert [u.username for u in assignment._annotators(["both"])] == ["both"]
        from curation.models import Assignment

        Assignment.objects.create(item=item, annotator=world.both)
        assert assignment.progress()[("both", "procedure")]["assigned"] == 1
    with use_project(world.a):
        assert assignment.progress() == {}

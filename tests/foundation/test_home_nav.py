"""Issue #31 item 6: the navigation grouped by role and each role's home page."""
from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from almita_web.nav import GROUPS, nav_groups
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER
from curation.guidance import flags as flag_services
from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from tests.conftest import make_user
from tests.curation.factories import build_lineage

ALL_LINKS = [link for _label, links in GROUPS for link in links]


def _urls(groups):
    return [x["url"] for g in groups for x in g["links"]]


@pytest.mark.parametrize("roles", [{ANNOTATOR}, {ADJUDICATOR}, {RESEARCHER}, {ADMIN}, {ANNOTATOR, RESEARCHER}, set()])
def test_each_page_listed_once_and_only_for_its_roles(roles):
    urls = _urls(nav_groups(roles))
    assert len(urls) == len(set(urls))
    expected = {reverse(link.name, args=link.args) for link in ALL_LINKS
                if ADMIN in roles or roles & set(link.roles)}
    assert set(urls) == expected


def test_admin_gets_four_menus_and_the_pages_nothing_linked_before():
    groups = nav_groups({ADMIN})
    assert [g["label"] for g in groups] == ["Review", "Adjudicate", "Research", "Admin"]
    urls = _urls(groups)
    assert reverse("curation:analytics") in urls and reverse("generation:api_graph") in urls
    researcher = _urls(nav_groups({RESEARCHER}))
    assert reverse("curation:analytics") in researcher and reverse("generation:api_graph") in researcher


def test_the_current_page_is_the_longest_matching_link():
    groups = nav_groups({ADMIN}, reverse("generation:api_graph"))
    active = [x["url"] for g in groups for x in g["links"] if x["active"]]
    assert active == [reverse("generation:api_graph")]
    groups = nav_groups({ADMIN}, reverse("curation:guidelines", args=["conversation"]))
    assert [x["label"] for g in groups for x in g["links"] if x["active"]] == ["Guidelines"]
    assert [g["label"] for g in groups if g["active"]] == ["Admin"]


@pytest.mark.parametrize("persona", ["annotator", "adjudicator", "researcher", "admin"])
def test_every_link_a_role_is_shown_opens_for_it(client, personas, persona):
    """The bar never offers a page that answers 403 (an independent check of the role table)."""
    client.force_login(personas[persona])
    html = client.get("/").content.decode()
    nav = html[html.index('<nav aria-label="Main">'):html.index("</nav>")]
    hrefs = re.findall(r'href="([^"]+)"', nav)
    assert len(hrefs) >= 3
    for href in hrefs:
        assert client.get(href).status_code in (200, 302), href  # /admin/ redirects to its index


def test_single_group_is_inline_several_are_menus(client, personas):
    client.force_login(personas["annotator"])
    html = client.get("/").content.decode()
    assert 'class="navgroup' not in html and 'class="navlink' in html
    client.force_login(personas["admin"])
    assert html.count("data-group=") == 0
    assert client.get("/").content.decode().count("data-group=") == 4


def _review(item, user, verdict):
    assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
    flag_services.review_submit_flagged(annotator=user, item_id=item.pk, verdict=verdict,
                                        reason_codes=[] if verdict == "accept" else ["OTHER"], comment="x")


def _strip(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", html)


@pytest.mark.parametrize("other", ["accept", "reject"])
def test_annotator_home_counts_own_work_and_is_blind(client, annotator_a, annotator_b, other, django_db_blocker):
    build_lineage(conversations=2)
    services.items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    _review(item, annotator_a, "accept")
    client.force_login(annotator_a)
    before = _strip(client.get("/").content.decode())
    _review(item, annotator_b, other)
    after = _strip(client.get("/").content.decode())
    # Nothing on the annotator's home moves with the other annotator's verdict.
    assert before == after
    assert 'id="my-done">1<' in after
    # "For you now" is the queue's own figure, stage by stage.
    from curation.agreement.services import annotator_available

    avail = annotator_available(annotator=annotator_a)
    for stage in ReviewStage.values:
        row = re.search(rf'<tr data-stage="{stage}"><td>[^<]+</td><td>(\d+\+?)</td><td>(\d+)</td>', after)
        assert row and row.group(1) == str(avail[stage])
    assert re.search(r'<tr data-stage="flowgraph"><td>[^<]+</td><td>\d+</td><td>1</td>', after)
    # Taking an item moves it from "open" to "you hold": what waits for the annotator is the same.
    waiting = re.search(r'id="my-open">(\d+)<', after).group(1)
    assert services.review_claim_next(annotator=annotator_a, stage=ReviewStage.CONVERSATION_GRAPH) is not None
    held = client.get("/").content.decode()
    assert re.search(r'id="my-open">(\d+)<', held).group(1) == waiting and "(1 you hold)" in held


def test_adjudicator_home_counts_what_they_may_decide(client, annotator_a, annotator_b, adjudicator):
    build_lineage(conversations=2)
    services.items_sync()
    fg = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    _review(fg, annotator_a, "accept")
    _review(fg, annotator_b, "reject")
    client.force_login(adjudicator)
    html = client.get("/").content.decode()
    assert 'id="adj-waiting">1<' in html
    assert f'{reverse("curation:adjudication")}?stage=flowgraph' in html
    # An adjudicator who reviewed the item does not get it (another adjudicator decides it).
    both = make_user("both", ANNOTATOR, ADJUDICATOR)
    cg = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH)
    _review(cg, both, "accept")
    _review(cg, annotator_b, "reject")
    client.force_login(both)
    assert 'id="adj-waiting">1<' in client.get("/").content.decode()  # the flowgraph, not its own
    client.force_login(adjudicator)
    assert 'id="adj-waiting">2<' in client.get("/").content.decode()


def test_home_queries_do_not_grow_with_rows(client, admin_user):
    from curation.models import Release
    from generation.models import GenerationJob

    def release_create(name, created_by):
        Release.objects.create(name=name, version=1, created_by=created_by, content_hash="0" * 64, manifest={})
        GenerationJob.objects.create(name=name, created_by=created_by, config={})

    def count():
        client.force_login(admin_user)
        client.get("/")  # warm the role cache
        with CaptureQueriesContext(connection) as ctx:
            assert client.get("/").status_code == 200
        return len(ctx)

    build_lineage(conversations=1)
    services.items_sync()
    release_create(name="one", created_by=admin_user)
    few = count()
    for i in range(4):
        build_lineage(conversations=1, seed=i + 1)
        services.items_sync()
        release_create(name=f"more{i}", created_by=admin_user)
    assert count() == few

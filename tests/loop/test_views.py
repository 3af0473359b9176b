"""Coverage on the graph and job pages, and the "Fill the gaps" action: roles, methods, results."""
import pytest
from django.urls import reverse

from curation.models import ReviewStage
from generation.models import Conversation, GapFill, GenerationJob
from tests.curation.factories import draw_graphs

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def gappy_graph(annotator_a, annotator_b):
    cg = build_graph_with_conversations()
    users = [annotator_a, annotator_b]
    accept_lineage_above(cg, users)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"], comment="<b>x</b>")
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    draw_graphs()  # the worker's drawing of the stored graph
    cg.refresh_from_db()
    return cg


def test_graph_page_draws_coverage_with_legend_and_fill_form(client, admin_user, gappy_graph, drawing_queue):
    client.force_login(admin_user)
    url = reverse("generation:item", args=["conversation_graph", gappy_graph.pk])
    first = client.get(url).content.decode()  # the worker has not drawn it yet: a placeholder
    assert "Drawing…" in first and "data-poll=" in first and len(drawing_queue) == 1
    assert drawing_queue.run() == 1
    r = client.get(url)
    body = r.content.decode()
    assert r.status_code == 200 and "Drawing…" not in body
    assert "Coverage by accepted conversations" in body and "not covered" in body
    assert "edge uncovered" in body and "edge covered" in body  # SVG edge classes from DOT
    assert "#d73027" in body and "#1a9850" in body
    assert "Fill the gaps" in body and "Retry limit: 3 attempts per edge" in body


def test_fill_graph_launches_a_gap_job(client, admin_user, gappy_graph):
    client.force_login(admin_user)
    url = reverse("generation:fill_graph", args=[gappy_graph.pk])
    r = client.post(url, {"conversations": "offline"})
    job = GenerationJob.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("generation:job", args=[job.pk])
    assert GapFill.objects.filter(job=job).exists() and job.config["start"] == "paths"
    page = client.get(r["Location"]).content.decode()
    assert "Coverage and economics" in page and "Edge coverage" in page
    assert "1 conversation graph (0 fully covered by accepted conversations)" in page  # the gap job's graph, before it runs


def test_fill_job_and_bad_input(client, admin_user, gappy_graph):
    client.force_login(admin_user)
    r = client.post(reverse("generation:fill_graph", args=[gappy_graph.pk]), {"conversations": "telepathy"})
    assert r.status_code == 302 and not GenerationJob.objects.exists()
    r = client.post(reverse("generation:fill_graph", args=[99999]), {"conversations": "offline"})
    assert r.status_code == 404


def test_fill_roles_and_methods(client, annotator_a, researcher, admin_user, gappy_graph):
    url = reverse("generation:fill_graph", args=[gappy_graph.pk])
    r = client.post(url, {"conversations": "offline"})
    assert r.status_code == 302 and "/login/" in r["Location"]  # anonymous
    for user in (annotator_a, researcher):
        client.force_login(user)
        assert client.post(url, {"conversations": "offline"}).status_code == 403
    client.force_login(admin_user)
    assert client.get(url).status_code == 405
    assert not GenerationJob.objects.exists()


def test_api_coverage_fill_and_roles(client, admin_user, researcher, annotator_a, gappy_graph):
    url = reverse("api:coverage")
    assert client.get(url, {"graph": gappy_graph.pk}).status_code in (401, 403)
    client.force_login(annotator_a)
    assert client.get(url, {"graph": gappy_graph.pk}).status_code == 403
    client.force_login(researcher)
    data = client.get(url, {"graph": gappy_graph.pk}).json()
    assert data["scope"] == f"graph {gappy_graph.pk}" and data["graphs"][0]["uncovered_edges"]
    assert client.get(url).status_code == 400
    assert client.get(url, {"graph": "abc"}).json()["detail"] == "graph must be a number, not 'abc'"
    fill = reverse("api:fill_gaps")
    assert client.post(fill, {"graph": gappy_graph.pk}, content_type="application/json").status_code == 403
    client.force_login(admin_user)
    r = client.post(fill, {"graph": gappy_graph.pk}, content_type="application/json")
    assert r.status_code == 201 and r.json()["retry_limit"] == 3
    assert GapFill.objects.filter(job_id=r.json()["job"]).count() == r.json()["plans"][0]["paths"]
    econ = client.get(reverse("api:economics"), {"job": r.json()["job"]}).json()
    assert econ["llm_cost_usd"] == 0 and econ["accepted_tests"] == 0
    assert client.get(reverse("api:economics"), {"job": 999}).status_code == 400

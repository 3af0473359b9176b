"""Issue #31's smaller defects: coverage roles as the design's role table says, one URL spelling,
the job page's graph count and empty stages, the card's funnel, cards rendered on the list,
intervals never shown empty."""
import pytest
from django.urls import reverse

from curation.models import ReviewStage
from curation.releases.services import release_create
from curation.reviews import services as reviews
from generation.models import Conversation, Flowgraph, SampledPath, StageProgress
from generation.services import demo_build
from tests.curation.factories import build_lineage, draw_graphs

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def accepted_graph(annotator_a, annotator_b):
    cg = build_graph_with_conversations()
    draw_graphs()  # the worker's drawings
    users = [annotator_a, annotator_b]
    accept_lineage_above(cg, users)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"])
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    return cg


def test_coverage_roles_follow_the_design(client, researcher, admin_user, accepted_graph):
    """Researchers read coverage on the release page; the drawing and "Fill the gaps" (a
    generation job) are the admin's, as the README now says."""
    release = release_create(name="cov", kind="curated", filters={}, created_by=researcher)
    client.force_login(researcher)
    page = client.get(reverse("datasets:release", args=[release.pk])).content.decode()
    assert "Edge coverage" in page and 'name="conversations"' not in page
    assert client.get(reverse("generation:item", args=["conversation_graph", accepted_graph.pk])).status_code == 403
    assert client.post(reverse("generation:fill_graph", args=[accepted_graph.pk])).status_code == 403
    client.force_login(admin_user)
    page = client.get(reverse("generation:item", args=["conversation_graph", accepted_graph.pk])).content.decode()
    assert "<svg" in page and 'name="conversations"' in page


def test_one_spelling_in_page_urls(client, admin_user, accepted_graph):
    client.force_login(admin_user)
    old = client.get(f"/generation/items/conversation-graph/{accepted_graph.pk}/")
    assert old.status_code == 301 and old["Location"] == f"/generation/items/conversation_graph/{accepted_graph.pk}/"
    page = client.get(reverse("generation:item", args=["flowgraph", accepted_graph.flowgraph_id])).content.decode()
    assert "/conversation_graph/" in page and "conversation-graph/" not in page


def test_job_page_counts_the_graphs_it_made_and_draws_no_full_bar_for_nothing(client, admin_user):
    build_lineage(conversations=1)
    job = demo_build(flowgraphs=list(Flowgraph.objects.all()), paths=1)
    SampledPath.objects.filter(job=job).delete()  # a graph, and no paths sampled on it yet
    StageProgress.objects.filter(job=job).update(total=0, done=0, state="done")
    client.force_login(admin_user)
    page = client.get(reverse("generation:job", args=[job.pk])).content.decode()
    assert "1 conversation graph, 0 with sampled paths" in page
    assert "nothing to do (0/0)" in page and 'style="width: 100%"' not in page


def test_card_funnel_intents_and_list_renders_the_card(client, researcher, annotator_a, annotator_b, accepted_graph):
    reviews.items_sync()
    release = release_create(name="card", kind="curated", filters={}, created_by=researcher)
    card = release.card
    manual = next(line for line in card.splitlines() if line.startswith("| + man. filters"))
    in_release = next(line for line in card.splitlines() if line.startswith("| card v1"))
    # One intent, its procedure accepted: both rows say 1 intent.
    assert manual.split("|")[2].strip() == in_release.split("|")[2].strip() == "1"
    client.force_login(researcher)
    page = client.get(reverse("datasets:releases")).content.decode()
    assert '<div class="markdown dataset-card">' in page and "<table>" in page and "## Funnel" not in page


def test_analytics_never_shows_an_empty_interval(client, researcher, accepted_graph, analytics_inline):
    client.force_login(researcher)
    page = client.get(reverse("curation:analytics")).content.decode()
    assert "[, ]" not in page and "Analytics by generator setting" in page

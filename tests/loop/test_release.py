"""The release card states node and edge coverage; the release page fills the gaps; coverage --release."""
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from curation.models import ReviewStage
from curation.releases.services import release_create
from generation.models import Conversation, GenerationJob

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of

pytestmark = pytest.mark.django_db


def test_card_page_command_and_fill(client, annotator_a, annotator_b, researcher, admin_user):
    cg = build_graph_with_conversations()
    users = [annotator_a, annotator_b]
    accept_lineage_above(cg, users)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"])
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    release = release_create(name="loop", filters={})
    out = StringIO()
    call_command("coverage", "--release", "loop", "--json", stdout=out)
    s = json.loads(out.getvalue())["summary"]
    assert 0 < s["edge_coverage"] < 1 and s["graphs"] == 1
    assert f"- Edge coverage: {s['covered_edges']}/{s['edges']} ({100 * s['edge_coverage']:.1f}%)" in release.card
    assert f"- Node coverage: {s['covered_nodes']}/{s['nodes']}" in release.card
    assert "## Curation economics" in release.card
    client.force_login(researcher)
    page = client.get(reverse("datasets:release", args=[release.pk])).content.decode()
    assert "Edge coverage" in page and "Fill the gaps" not in page  # researchers do not launch jobs
    assert client.post(reverse("datasets:fill", args=[release.pk]), {"conversations": "offline"}).status_code == 403
    client.force_login(admin_user)
    assert "Fill the gaps" in client.get(reverse("datasets:release", args=[release.pk])).content.decode()
    r = client.post(reverse("datasets:fill", args=[release.pk]), {"conversations": "offline"})
    job = GenerationJob.objects.get()
    assert r.status_code == 302 and r["Location"] == reverse("generation:job", args=[job.pk])
    assert list(job.config["input_ids"]["conversation_graph"]) == [cg.pk]

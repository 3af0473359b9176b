"""End to end through a real Celery worker: two annotators reject conversations, coverage drops,
`fill_gaps --wait` generates conversations for exactly the gaps, and once they are accepted the
graph is covered again (100 % of its edges)."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from curation.models import ReviewStage
from generation.coverage import report
from generation.gaps import gap_lineage
from generation.models import Conversation, GapFill, GenerationJob, SampledPath, Test

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of


@pytest.mark.django_db(transaction=True)
def test_fill_gaps_restores_full_edge_coverage(settings, celery_worker_factory, annotator_a, annotator_b):
    settings.OPENAI_BASE_URL = ""
    worker = celery_worker_factory(extra_env={"OPENAI_BASE_URL": ""})
    cg = build_graph_with_conversations()
    users = [annotator_a, annotator_b]
    accept_lineage_above(cg, users)
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    for c in convs[:2]:
        decide(item_of(ReviewStage.CONVERSATION, c), users, "reject", ["CV-OFF-PATH"])
    for c in convs[2:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    before = report([cg])["graphs"][0]
    assert before["edge_coverage"] < 1.0
    gaps_before = {tuple(e) for e in before["uncovered_edges"]}

    out = StringIO()
    try:
        call_command("fill_gaps", "--graph", str(cg.pk), "--wait", "--timeout", "120", stdout=out)
    except CommandError as exc:
        raise AssertionError(f"{exc}\n{out.getvalue()}\nworker log:\n{worker.log()[-4000:]}") from None
    text = out.getvalue()
    job = GenerationJob.objects.latest("pk")
    assert job.status == "succeeded" and "review items created:" in text
    fills = list(GapFill.objects.filter(job=job))
    new = list(Conversation.objects.filter(job=job))
    assert len(new) == len(fills) == len(SampledPath.objects.filter(job=job)) >= 1
    assert Test.objects.filter(conversation__in=new).exists()
    assert {tuple(e) for f in fills for e in f.edges} == gaps_before  # exactly the gaps
    for conv in new:  # lineage: each new conversation knows which gap it fills
        lineage = gap_lineage(conv)
        assert lineage is not None and lineage.edges and lineage.attempt == 1
    assert report([cg])["graphs"][0]["edge_coverage"] == before["edge_coverage"]  # not yet accepted
    for conv in new:
        decide(item_of(ReviewStage.CONVERSATION, conv), users)
    after = report([cg])["graphs"][0]
    assert after["edge_coverage"] == 1.0 and after["uncovered_edges"] == []

"""Coverage by accepted conversations: per graph, the coverage command, and the plan gap filling makes."""
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from curation.models import ReviewStage
from generation import gaps
from generation.coverage import report
from generation.models import Conversation, GapFill, GenerationJob
from generation.pipeline.formats import graph_from_json
from generation.pipeline.sampling import coverable_edges

from .helpers import accept_lineage_above, build_graph_with_conversations, decide, item_of

pytestmark = pytest.mark.django_db


def test_coverage_counts_only_accepted_conversations(annotator_a, annotator_b):
    cg = build_graph_with_conversations()
    edges = coverable_edges(graph_from_json(cg.data))
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    assert len(convs) >= 3
    row = report([cg])["graphs"][0]
    assert row["covered_edges"] == 0 and row["edges"] == len(edges)  # nothing accepted yet
    users = [annotator_a, annotator_b]
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"])
    row = report([cg])["graphs"][0]
    lost = {tuple(e) for e in zip(convs[0].path.node_ids, convs[0].path.node_ids[1:])}
    kept = {tuple(e) for c in convs[1:] for e in zip(c.path.node_ids, c.path.node_ids[1:])}
    assert {tuple(e) for e in row["uncovered_edges"]} == lost - kept != set()
    assert row["covered_edges"] == len(kept) and 0 < row["edge_coverage"] < 1


def test_coverage_command_table_json_and_errors(annotator_a, annotator_b):
    cg = build_graph_with_conversations()
    for c in Conversation.objects.filter(path__conversation_graph=cg):
        decide(item_of(ReviewStage.CONVERSATION, c), [annotator_a, annotator_b])
    out = StringIO()
    call_command("coverage", "--graph", str(cg.pk), stdout=out)
    assert "100.0%" in out.getvalue() and f"coverage of graph {cg.pk}" in out.getvalue()
    out = StringIO()
    call_command("coverage", "--graph", str(cg.pk), "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["summary"]["edge_coverage"] == 1.0 and data["graphs"][0]["uncovered_edges"] == []
    with pytest.raises(CommandError, match="conversation graph 999 not found"):
        call_command("coverage", "--graph", "999")
    with pytest.raises(CommandError, match="job must be a number"):
        call_command("coverage", "--job", "x")
    with pytest.raises(CommandError, match="release 'nope' not found"):
        call_command("coverage", "--release", "nope")


def test_gap_plan_targets_exactly_the_uncovered_edges_and_stops_at_the_retry_limit(
        annotator_a, annotator_b, settings):
    settings.GAP_FILL_RETRY_LIMIT = 2
    cg = build_graph_with_conversations()
    users = [annotator_a, annotator_b]
    convs = list(Conversation.objects.filter(path__conversation_graph=cg).order_by("pk"))
    with pytest.raises(gaps.NothingToFill, match="not accepted"):
        gaps.gaps_fill(graphs=[cg], enqueue=False)
    accept_lineage_above(cg, users)
    cg.refresh_from_db()
    decide(item_of(ReviewStage.CONVERSATION, convs[0]), users, "reject", ["CV-OFF-PATH"])
    for c in convs[1:]:
        decide(item_of(ReviewStage.CONVERSATION, c), users)
    uncovered = {tuple(e) for e in report([cg])["graphs"][0]["uncovered_edges"]}
    for attempt in (1, 2):
        job, plans = gaps.gaps_fill(graphs=[cg], enqueue=False)
        plan = plans[0]
        filled = {e for f in plan.fills for e in f}
        assert filled == uncovered and plan.attempts == [attempt] * len(plan.paths)
        assert job.config["gap_paths"] == {str(cg.pk): plan.paths}
        assert GapFill.objects.filter(job=job).count() == len(plan.paths)
    with pytest.raises(gaps.NothingToFill, match="every gap was tried 2 times"):
        gaps.gaps_fill(graphs=[cg], enqueue=False)
    assert GenerationJob.objects.count() == 2

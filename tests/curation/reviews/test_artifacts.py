"""curation.reviews.artifacts: each stage's artifact and the rows its review page shows, in one query,
equal to what a plain ORM read gives; a graph's data stays in the database unless it must be drawn."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curation.models import ReviewItem, ReviewStage
from curation.reviews.artifacts import artifact_for
from curation.reviews.lineage import items_sync
from curation.reviews.present import cached_svg
from generation import models as g
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


def _same(a, b, fields):
    assert type(a) is type(b) and a.pk == b.pk
    for name in fields:
        assert getattr(a, name) == getattr(b, name), name


def _read(item):
    with CaptureQueriesContext(connection) as ctx:
        artifact = artifact_for(item)
    assert len(ctx.captured_queries) == 1, [q["sql"] for q in ctx.captured_queries]
    return artifact


def _flat(row, depth=0) -> dict:
    """The loaded values of `row` and of the rows attached to it."""
    out = {"type": type(row).__name__, "pk": row.pk}
    for f in row._meta.concrete_fields:
        if f.attname in row.__dict__:
            out[f.attname] = row.__dict__[f.attname]
    for name, related in row._state.fields_cache.items():
        out[name] = _flat(related, depth + 1) if related is not None and depth < 5 else None
    return out


def _deferred(row) -> set[str]:
    return row.get_deferred_fields()


def test_every_stage_reads_its_chain_in_one_query_equal_to_the_orm():
    lineage = build_lineage(conversations=2, hostile=True)
    items_sync()
    seen = set()
    for item in ReviewItem.objects.all():
        artifact = _read(item)
        seen.add(item.stage)
        if item.stage == ReviewStage.PROCEDURE:
            want = g.Procedure.objects.get(pk=item.object_id)
            _same(artifact, want, ["title", "text", "api_chain", "status", "created_at"])
            _same(artifact.intent, want.intent, ["client", "issue", "name"])
            continue
        if item.stage == ReviewStage.FLOWGRAPH:
            want = g.Flowgraph.objects.get(pk=item.object_id)
            _same(artifact, want, ["text", "svg", "validation", "status", "key", "created_at"])
            procedure = artifact.procedure
        elif item.stage == ReviewStage.CONVERSATION_GRAPH:
            want = g.ConversationGraph.objects.get(pk=item.object_id)
            _same(artifact, want, ["svg", "status"])
            _same(artifact.flowgraph, want.flowgraph, ["text", "svg", "status"])
            procedure = artifact.flowgraph.procedure
        else:
            want = g.Conversation.objects.get(pk=item.object_id)
            _same(artifact, want, ["messages", "turn_actions", "status"])
            _same(artifact.path, want.path, ["node_ids", "seed", "index"])
            _same(artifact.path.conversation_graph, want.path.conversation_graph, ["data"])
            assert not {"data", "svg"} & _deferred(artifact.path.conversation_graph)  # its page always shows them
            _same(artifact.path.conversation_graph.flowgraph, want.path.conversation_graph.flowgraph, ["status"])
            procedure = artifact.procedure
        with CaptureQueriesContext(connection) as ctx:  # attached, not read again
            assert procedure.pk == lineage.procedure.pk and procedure.intent.pk == lineage.intent.pk
        assert ctx.captured_queries == []
    assert seen == {ReviewStage.PROCEDURE, ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH,
                    ReviewStage.CONVERSATION}


@pytest.mark.parametrize("stage", [ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH])
def test_graph_data_is_read_only_to_draw_an_undrawn_graph(stage, drawing_queue):
    build_lineage(conversations=1)
    items_sync()
    item = ReviewItem.objects.get(stage=stage)
    model = g.Flowgraph if stage == ReviewStage.FLOWGRAPH else g.ConversationGraph
    model.objects.filter(pk=item.object_id).update(svg="")  # not drawn (yet)
    artifact = _read(item)
    assert "data" in _deferred(artifact)
    want = model.objects.get(pk=artifact.pk)
    with CaptureQueriesContext(connection) as ctx:
        pending = cached_svg(artifact)  # queues it: reads the data once (the drawing's key)
    assert pending["pending"] and pending["svg"] == "" and len(drawing_queue) == 1
    assert len([q for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]) == 1
    drawing_queue.run()  # the worker draws it onto the row
    out = cached_svg(_read(item))
    assert "data-nodes=" in out["svg"]
    again = _read(item)
    assert "data" in _deferred(again) and "data-nodes=" in again.svg
    with CaptureQueriesContext(connection) as ctx:
        assert cached_svg(again)["svg"] == out["svg"]  # drawn: the data stays in the database
    assert ctx.captured_queries == []
    assert again.data == want.data  # and still loads on first access


def test_missing_rows_come_back_as_none():
    lineage = build_lineage(conversations=1)
    items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION)
    conversation = g.Conversation.objects.get(pk=item.object_id)
    g.Conversation.objects.filter(pk=conversation.pk).update(path=None)
    artifact = _read(item)
    assert artifact.pk == conversation.pk and artifact.path_id is None and artifact.procedure.pk == lineage.procedure.pk
    item.object_id = 10**9
    assert _read(item) is None


def test_drawings_from_before_the_layout_choice_are_drawn_again(drawing_queue):
    """Issue #31: a stored drawing without data-layout (always top-to-bottom) counts as undrawn, so
    the worker draws it again with the direction its shape chooses, once."""
    build_lineage(conversations=1)
    items_sync()
    item = ReviewItem.objects.get(stage=ReviewStage.FLOWGRAPH)
    artifact = _read(item)
    old = '<svg data-nodes="[]" width="10pt" height="10pt"><g/></svg>'
    type(artifact).objects.filter(pk=artifact.pk).update(svg=old)
    stale = _read(item)
    assert cached_svg(stale)["pending"]  # queued for the worker, not drawn in the request
    drawing_queue.run()
    out = cached_svg(_read(item))
    assert out["svg"].startswith('<svg data-layout="') and "data-nodes=" in out["svg"][:400]
    stored = type(artifact).objects.get(pk=artifact.pk).svg
    assert stored.startswith('<svg data-layout="') and "data" in _deferred(_read(item))

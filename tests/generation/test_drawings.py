"""generation.drawings: a stored graph is queued for the worker when its transaction commits, the
task draws it onto the row (with the node map), and pages read that drawing instead of drawing."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from curation.models import ReviewItem, ReviewStage
from curation.reviews.lineage import items_sync
from curation.reviews.present import cached_svg
from generation import drawings, tasks
from generation.imports import items_import
from generation.models import ConversationGraph, Flowgraph
from generation.pipeline.formats import graph_from_json
from tests.datasets.builders import document

pytestmark = pytest.mark.django_db


def test_an_import_queues_its_graphs_and_the_task_draws_them(monkeypatch, django_capture_on_commit_callbacks):
    queued = []
    monkeypatch.setattr(tasks.graphs_draw_task, "delay", lambda label, ids: queued.append((label, ids)))
    with django_capture_on_commit_callbacks(execute=True):
        items_import(raw=json.dumps(document()), fmt="almita")
    want = {("generation.flowgraph", tuple(sorted(Flowgraph.objects.values_list("pk", flat=True)))),
            ("generation.conversationgraph", tuple(sorted(ConversationGraph.objects.values_list("pk", flat=True))))}
    assert {(label, tuple(sorted(ids))) for label, ids in queued if ids} == want
    assert not any(drawings.is_drawn(svg) for svg in Flowgraph.objects.values_list("svg", flat=True))
    for label, ids in queued:  # what the worker runs
        assert tasks.graphs_draw_task(label, ids) == len(ids)
        assert tasks.graphs_draw_task(label, ids) == 0  # idempotent: drawn rows are left alone
    for row in [*Flowgraph.objects.all(), *ConversationGraph.objects.all()]:
        assert drawings.is_drawn(row.svg) and row.svg.lstrip().startswith("<svg")
        names = [str(n) for n in graph_from_json(row.data).nodes]
        # the node map, then one drawn node per graph node (Graphviz names node i "n<i>")
        assert f'data-nodes="{escape(json.dumps(names))}"' in row.svg[:drawings.DRAWN_WITHIN]
        assert all(f"<title>n{i}</title>" in row.svg for i in range(len(names)))


def test_the_review_page_reads_the_stored_drawing_without_drawing(monkeypatch):
    items_import(raw=json.dumps(document()), fmt="almita")
    tasks.graphs_draw_task("generation.flowgraph", list(Flowgraph.objects.values_list("pk", flat=True)))
    items_sync()
    item = ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).first()
    row = Flowgraph.objects.get(pk=item.object_id)
    monkeypatch.setattr(drawings, "to_svg_readable", lambda *a, **k: pytest.fail("drew at request time"))
    with CaptureQueriesContext(connection) as ctx:
        out = cached_svg(row)
    assert out["error"] == "" and "<svg" in out["svg"] and ctx.captured_queries == []


def test_an_undrawn_graph_is_queued_once_by_the_page_and_stored_by_the_worker(drawing_queue, monkeypatch):
    from generation import drawing_cache

    items_import(raw=json.dumps(document()), fmt="almita")
    row = Flowgraph.objects.first()
    with monkeypatch.context() as m:
        m.setattr(drawings, "to_svg_readable", lambda *a, **k: pytest.fail("drew at request time"))
        first = cached_svg(row)
        assert first["pending"] and first["svg"] == "" and first["error"] == ""
        assert cached_svg(Flowgraph.objects.get(pk=row.pk))["pending"] and len(drawing_queue) == 1  # once
    assert not drawings.is_drawn(Flowgraph.objects.get(pk=row.pk).svg)
    assert drawing_queue.run() == 1  # the worker
    assert drawings.is_drawn(Flowgraph.objects.get(pk=row.pk).svg)  # on the row, as for a graph just stored
    got = drawing_cache.stored("flowgraph", first["key"])
    assert got["error"] == "" and f'id="fl{row.pk}-' in got["svg"]  # scoped as the page scopes it
    assert cached_svg(Flowgraph.objects.get(pk=row.pk))["svg"] == got["svg"] and not drawing_queue


def test_only_graph_models_are_drawn():
    with pytest.raises(ValueError):
        drawings.graphs_draw("auth.user", [1])


@pytest.mark.worker
def test_a_real_worker_draws_imported_graphs_before_any_page_asks(celery_worker_factory):
    from tests.conftest import wait_for

    from django.db import transaction

    worker = celery_worker_factory(concurrency=2)
    rows = lambda: [*Flowgraph.objects.values_list("svg", flat=True),  # noqa: E731
                    *ConversationGraph.objects.values_list("svg", flat=True)]
    with transaction.atomic():  # queued when the import commits
        items_import(raw=json.dumps(document()), fmt="almita")
        assert rows() and not any(drawings.is_drawn(svg) for svg in rows())
    wait_for(lambda: all(drawings.is_drawn(svg) for svg in rows()), timeout=90,
             message="the worker's drawings\n" + worker.log()[-2000:])

"""Issue #29: no request runs Graphviz. A review, adjudication or explorer page (and the generation
item page) meeting a graph the worker has not drawn yet queues its drawing once and shows
"Drawing…", which polls generation:drawing_poll; a graph correction queues the worker's drawing."""
from __future__ import annotations

import copy
import html
import json
import re
import shutil

import pytest
from django.urls import reverse

from curation.models import ReviewItem, ReviewStage
from curation.reviews import services
from generation import drawing_cache, drawings
from generation.models import ConversationGraph, Flowgraph, SampledPath
from generation.pipeline import render
from tests.curation.factories import build_lineage, draw_graphs

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")]


class NoDot:
    """Stands for graphviz's runner in the web process: any call fails the test."""

    calls = 0

    def run_check(self, *args, **kwargs):
        NoDot.calls += 1
        raise AssertionError("Graphviz ran during a request")


@pytest.fixture
def no_dot(monkeypatch):
    """Graphviz patched to raise for the request; returns a function that restores it (the worker)."""
    real = render.execute
    NoDot.calls = 0
    monkeypatch.setattr(render, "execute", NoDot())
    return lambda on: monkeypatch.setattr(render, "execute", real if on else NoDot())


def poll_url(drawing: dict) -> str:
    return reverse("generation:drawing_poll", args=[drawing["kind"], drawing["key"]])


def pending_poll(page: str) -> str:
    return html.unescape(re.search(r'data-poll="([^"]+)"', page).group(1))


def test_review_page_queues_an_undrawn_graph_once_and_the_poll_hands_it_over(client, annotator_a, no_dot,
                                                                             drawing_queue):
    build_lineage(conversations=1)
    services.items_sync()
    client.force_login(annotator_a)
    url = client.post(reverse("curation:claim_next", args=[ReviewStage.FLOWGRAPH]))["Location"]
    first = client.get(url)
    page = first.content.decode()
    assert first.status_code == 200 and "Drawing…" in page and "<svg" not in page
    assert 'class="graph-canvas drawing-pending"' in page and "js/drawing_poll.js" in page
    assert client.get(url).status_code == 200 and len(drawing_queue) == 1  # queued once while pending
    poll = pending_poll(page)
    assert client.get(poll).json() == {"ready": False, "svg": "", "error": ""}
    no_dot(True)  # the worker's process
    assert drawing_queue.run() == 1
    no_dot(False)
    got = client.get(poll).json()
    fg = Flowgraph.objects.get()
    assert got["ready"] and got["svg"].startswith("<svg data-layout=") and f'id="fl{fg.pk}-' in got["svg"]
    assert drawings.is_drawn(fg.svg)  # stored on the row: later pages read it
    page = client.get(url).content.decode()
    assert "<svg" in page and "Drawing…" not in page and not drawing_queue and NoDot.calls == 0


def test_conversation_review_adjudication_and_explorer_panel_never_draw(client, annotator_a, annotator_b,
                                                                         adjudicator, no_dot, drawing_queue):
    lin = build_lineage(conversations=1)
    services.items_sync()
    client.force_login(annotator_a)
    url = client.post(reverse("curation:claim_next", args=[ReviewStage.CONVERSATION]))["Location"]
    page = client.get(url).content.decode()
    assert "Drawing…" in page and "<svg" not in page and "data-path=" in page  # highlighted once it arrives
    assert [args[0] for args in drawing_queue] == ["conversationgraph"]
    item = ReviewItem.objects.get(stage=ReviewStage.CONVERSATION_GRAPH)
    client.force_login(adjudicator)
    for page_url in (reverse("curation:adjudicate", args=[item.pk]), reverse("curation:explore_panel", args=[item.pk])):
        resp = client.get(page_url)
        assert resp.status_code == 200 and "Drawing…" in resp.content.decode(), page_url
    assert sorted(args[0] for args in drawing_queue) == ["conversationgraph", "flowgraph"]  # each graph once
    no_dot(True)
    drawing_queue.run()
    no_dot(False)
    assert all(drawings.is_drawn(svg) for svg in ConversationGraph.objects.values_list("svg", flat=True))
    page = client.get(reverse("curation:adjudicate", args=[item.pk])).content.decode()
    assert page.count("<svg") == 2 and "Drawing…" not in page and lin and NoDot.calls == 0


def test_path_item_page_shows_the_stored_graph_with_the_path_for_the_browser(client, admin_user, no_dot,
                                                                            drawing_queue):
    build_lineage(conversations=1)
    path = SampledPath.objects.first()
    client.force_login(admin_user)
    url = reverse("generation:item", args=["path", path.pk])
    page = client.get(url).content.decode()
    assert "Drawing…" in page and len(drawing_queue) == 1  # its graph not drawn yet: queued, not drawn
    no_dot(True)
    drawing_queue.run()
    no_dot(False)
    resp = client.get(url)
    page = resp.content.decode()
    assert resp.status_code == 200 and page.count("<svg") == 1 and "js/graph.js" in page
    marked = json.loads(html.unescape(re.search(r'data-path="([^"]*)"', page).group(1)))
    assert marked == [str(n) for n in path.node_ids]
    assert f'data-path-colour="{render.HIGHLIGHT_COLOUR}"' in page
    stored = ConversationGraph.objects.get(pk=path.conversation_graph_id).svg
    assert 'data-nodes="' in page and stored.split(">", 1)[1][:200].replace('id="', f'id="co{path.conversation_graph_id}-') in page
    assert NoDot.calls == 0


def test_a_graph_correction_queues_its_drawing(client, annotator_a, annotator_b, adjudicator, no_dot,
                                               drawing_queue, monkeypatch, django_capture_on_commit_callbacks):
    from generation import tasks
    from tests.curation.reviews.test_corrections import disagree, relabel

    lin = build_lineage(conversations=1)
    services.items_sync()
    no_dot(True)
    draw_graphs()  # the worker's drawings of the stored graphs
    no_dot(False)
    stored = []
    monkeypatch.setattr(tasks.graphs_draw_task, "delay", lambda *args: stored.append(args))
    item = disagree(ReviewStage.FLOWGRAPH, annotator_a, annotator_b)
    client.force_login(adjudicator)
    data = relabel(copy.deepcopy(lin.flowgraph.data), "N1", "Your order number, please?")
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(reverse("curation:correct", args=[item.pk]), {"content": json.dumps(data), "note": "x"})
    assert resp.status_code == 302 and stored == [("generation.flowgraph", [lin.flowgraph.pk])]
    assert Flowgraph.objects.get(pk=lin.flowgraph.pk).svg == ""  # the old drawing is gone, none made here
    assert client.get(resp["Location"]).status_code == 200  # the correction page, with its versions
    page = client.get(reverse("curation:adjudicate", args=[item.pk])).content.decode()
    assert "Drawing…" in page and "<svg" not in page.split('id="parent-graph"')[0]
    no_dot(True)
    tasks.graphs_draw_task(*stored[0])  # the worker
    drawing_queue.run()
    no_dot(False)
    got = client.get(pending_poll(page)).json()
    assert got["ready"] and "Your order number, please?" in got["svg"]
    assert "Your order number, please?" in client.get(reverse("curation:adjudicate", args=[item.pk])).content.decode()
    assert NoDot.calls == 0


def test_the_poll_of_a_stored_graph_checks_role_and_key(client, personas, drawing_queue):
    build_lineage(conversations=1)
    fg = Flowgraph.objects.get()
    pending = drawing_cache.graph_drawing_for(fg)
    drawing_queue.run()
    url = poll_url(pending)
    assert client.get(url).status_code == 302  # anonymous: the login page
    client.force_login(personas["outsider"])
    assert client.get(url).status_code == 403  # no role
    for role in ("annotator", "adjudicator", "researcher", "admin"):  # the roles of the pages that show graphs
        client.force_login(personas[role])
        got = client.get(url).json()
        assert got["ready"] and got["svg"].startswith("<svg"), role
    client.force_login(personas["annotator"])
    assert client.get(reverse("generation:drawing_poll", args=["flowgraph", "0" * 40])).json()["ready"] is False
    assert client.get(f"/generation/drawings/flowgraph/{fg.pk}.json").status_code == 404
    with pytest.raises(ValueError):
        drawing_cache.drawing_make("flowgraph", pending["key"], "not an id")
    assert drawing_cache.drawing_make("flowgraph", "1" * 40, str(10 ** 9))["error"] == "The graph no longer exists."

"""No request waits for Graphviz (issue #29): the API graph and coverage drawings are made by the
worker into the cache and polled for; `dot` is time-bounded and huge graphs are refused."""
from __future__ import annotations

import json
import shutil

import networkx as nx
import pytest
from django.urls import reverse

from generation import drawing_cache, drawings
from generation.models import Api, Intent, Procedure
from generation.pipeline import render
from generation.pipeline.formats import graph_to_json
from tests.loop.helpers import build_graph_with_conversations

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")]


class NoDot:
    """Stands for graphviz's runner in the web process: any call fails the test."""

    calls = 0

    def run_check(self, *args, **kwargs):
        NoDot.calls += 1
        raise AssertionError("Graphviz ran during a request")


@pytest.fixture
def apis(db):
    intent = Intent.objects.create(key="i", client="shop", issue="late", name="late order")
    proc = Procedure.objects.create(key="p", intent=intent, title="P", text="text")
    Api.objects.create(key="a1", procedure=proc, name="find_user_id", description="",
                       parameters=[{"name": "email", "type": "str"}], output_name="user_id", output_type="str")
    Api.objects.create(key="a2", procedure=proc, name="<script>alert(1)</script>", description="",
                       parameters=[{"name": "user_id", "type": "str"}], output_name="done", output_type="bool")
    return proc


def poll(client, drawing: dict):
    return client.get(reverse("generation:drawing_poll", args=[drawing["kind"], drawing["key"]]))


def test_api_graph_page_queues_its_drawing_once_and_the_poll_url_hands_it_over(client, researcher, apis,
                                                                                  drawing_queue, monkeypatch):
    client.force_login(researcher)
    url = reverse("generation:api_graph")
    real = render.execute
    monkeypatch.setattr(render, "execute", NoDot())
    first = client.get(url)
    page = first.content.decode()
    assert first.status_code == 200 and "Drawing…" in page and "<svg" not in page
    assert client.get(url).status_code == 200 and len(drawing_queue) == 1  # queued once while pending
    drawing = first.context["drawing"]
    assert poll(client, drawing).json() == {"ready": False, "svg": "", "error": ""}
    monkeypatch.setattr(render, "execute", real)  # the worker's process
    assert drawing_queue.run() == 1
    got = poll(client, drawing).json()
    assert got["ready"] and got["svg"].startswith("<svg") and got["error"] == ""
    assert "<script>alert(1)</script>" not in got["svg"] and "&lt;script&gt;" in got["svg"]
    monkeypatch.setattr(render, "execute", NoDot())
    page = client.get(url).content.decode()
    assert "<svg" in page and "Drawing…" not in page and "user_id → user_id" in page and not drawing_queue
    assert NoDot.calls == 0


def test_coverage_page_never_draws_in_the_request(client, admin_user, drawing_queue, monkeypatch):
    cg = build_graph_with_conversations()
    drawings.drawing_store(cg)
    real = render.execute
    monkeypatch.setattr(render, "execute", NoDot())
    client.force_login(admin_user)
    url = reverse("generation:item", args=["conversation_graph", cg.pk])
    resp = client.get(url)
    assert resp.status_code == 200 and "Drawing…" in resp.content.decode()
    assert [args[0] for args in drawing_queue] == ["coverage"]
    monkeypatch.setattr(render, "execute", real)  # the worker's process
    drawing_queue.run()
    monkeypatch.setattr(render, "execute", NoDot())
    assert "edge uncovered" in poll(client, resp.context["coverage_drawing"]).json()["svg"]
    assert NoDot.calls == 0


def test_the_poll_url_checks_the_role_and_the_key(client, annotator_a, researcher, admin_user, drawing_queue):
    api_key = drawing_cache.drawing_key("api_graph", "digraph { a -> b }")
    cov_key = drawing_cache.drawing_key("coverage", "digraph { a -> b }")
    drawing_cache.drawing_make("api_graph", api_key, "digraph { a -> b }")
    drawing_cache.drawing_make("coverage", cov_key, "digraph { a -> b }")
    api_url = reverse("generation:drawing_poll", args=["api_graph", api_key])
    cov_url = reverse("generation:drawing_poll", args=["coverage", cov_key])
    assert client.get(api_url).status_code == 302  # anonymous: the login page
    client.force_login(annotator_a)
    assert client.get(api_url).status_code == 403 and client.get(cov_url).status_code == 403
    client.force_login(researcher)
    assert client.get(api_url).json()["ready"] and client.get(cov_url).status_code == 403
    client.force_login(admin_user)
    assert client.get(cov_url).json()["ready"]
    for kind, key in [("pictures", api_key), ("api_graph", "x" * 40), ("api_graph", api_key[:-1]),
                      ("api_graph", "../" + api_key)]:
        assert client.get(f"/generation/drawings/{kind}/{key}.json").status_code == 404
    assert client.post(api_url).status_code == 405
    with pytest.raises(ValueError):
        drawing_cache.drawing_make("api_graph", api_key, "digraph { evil }")  # the key names its text


def big_graph(nodes: int, edges_per_node: int) -> nx.DiGraph:
    g = nx.DiGraph(kind="conversation")
    for i in range(nodes):
        g.add_node(f"N{i}", type="user" if i % 2 else "assistant", label=f"turn {i} " * 6)
    for i in range(nodes):
        for k in range(1, edges_per_node + 1):
            g.add_edge(f"N{i}", f"N{(i * 7 + k * 13) % nodes}", label=f"edge {k}")
    return g


def test_dot_is_stopped_after_the_timeout(monkeypatch, drawing_queue):
    monkeypatch.setenv("ALMITA_DRAW_TIMEOUT", "0.05")
    assert render.draw_timeout() == 0.05
    g = big_graph(1200, 3)  # within the size limits, far beyond 0.05 s of layout
    dot = render.to_dot(g)
    with pytest.raises(RuntimeError, match="longer than 0.05 s"):
        render.dot_to_svg(dot)
    key = drawing_cache.drawing_key("coverage", dot)
    result = drawing_cache.drawing_make("coverage", key, dot)  # the task: the worker is free again
    assert "longer than 0.05 s" in result["error"] and "could not be drawn" in result["svg"]
    assert drawing_cache.stored("coverage", key) == result
    monkeypatch.setenv("ALMITA_DRAW_TIMEOUT", "nonsense")
    assert render.draw_timeout() == render.DEFAULT_DRAW_TIMEOUT


def test_graphs_above_the_size_limit_are_refused_with_a_message(monkeypatch, drawing_queue):
    monkeypatch.setattr(render, "execute", NoDot())
    huge = big_graph(render.MAX_NODES + 1, 1)
    with pytest.raises(render.GraphTooLarge):
        render.to_svg(huge)
    got = drawing_cache.drawing_for("coverage", render.to_dot(huge), huge.number_of_nodes(), huge.number_of_edges())
    assert not got["pending"] and not drawing_queue and "too large to draw" in got["svg"]
    assert got["svg"].startswith("<svg") and f"{render.MAX_NODES + 1:,} nodes" in got["svg"]
    dense = big_graph(100, 41)  # 4,100 edges
    svg, error = drawings.graph_drawing(graph_to_json(dense))
    assert error == "" and "too large to draw" in svg and drawings.is_drawn(svg)  # stored, not retried
    assert "<script" not in render.message_svg("<script>x</script>") and "&lt;script&gt;" in render.message_svg("<script>")
    assert NoDot.calls == 0


def test_a_broker_outage_says_so_instead_of_drawing(monkeypatch, drawing_queue):
    from generation import tasks

    def down(*args):
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.drawing_make_task, "delay", down)
    monkeypatch.setattr(render, "execute", NoDot())
    got = drawing_cache.drawing_for("api_graph", "digraph { a -> b }", 2, 1)
    assert not got["pending"] and "could not be queued" in got["error"] and NoDot.calls == 0
    assert json.dumps(got)

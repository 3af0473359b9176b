"""Every page and API route taking an id, given an id of project B inside project A, answers 404.

The routes come from the URL resolver (as in tests/foundation/test_pages.py), so a new route
taking an id fails here until this map says which model its id names."""
from __future__ import annotations

import re

import pytest
from django.urls import get_resolver

from projects.context import use_project
from tests.foundation.test_pages import _walk

pytestmark = pytest.mark.django_db

# route prefix → what its first id names (the key of the ids made in project B below)
FIRST_ID = [
    ("generation/jobs/", "job"), ("generation/items/", "procedure"), ("generation/graphs/", "conversation_graph"),
    ("curation/items/", "item"), ("curation/adjudication/", "item"), ("curation/explore/item/", "item"),
    ("curation/feedback/", "procedure"), ("datasets/", "release"), ("evaluation/runs/", "run"),
    ("evaluation/agents/", "agent"), ("evaluation/releases/", "release"), ("evaluation/sessions/", "session"),
    ("webhooks/", "webhook"),
    ("api/^intents/", "intent"), ("api/^procedures/", "procedure"), ("api/^apis/", "api"),
    ("api/^flowgraphs/", "flowgraph"), ("api/^conversation-graphs/", "conversation_graph"), ("api/^paths/", "path"),
    ("api/^conversations/", "conversation"), ("api/^tests/", "test"), ("api/^jobs/", "job"),
    ("api/^reviews/", "review"), ("api/^releases/", "release"), ("api/^evaluation-runs/", "run"),
    ("api/^agents/", "agent"), ("api/^session-runs/", "session"),
]
FILL = {"kind": "procedure", "parent": "procedure", "stage": "procedure", "file": "tests.jsonl"}


def id_routes() -> list[tuple[str, str]]:
    routes = []
    for route, _name in _walk(get_resolver().url_patterns):
        if route.startswith("admin/") or "format" in route:
            continue
        if not re.search(r"<int:\w+>|\(\?P<pk>", route):
            continue
        key = next((k for prefix, k in FIRST_ID if route.startswith(prefix)), None)
        routes.append((route, key))
    return routes


def _url(route: str, first: int) -> str:
    done = [False]

    def one(_m):
        if done[0]:
            return "1"
        done[0] = True
        return str(first)

    url = re.sub(r"<int:\w+>|\(\?P<pk>\[\^/\.\]\+\)", one, route)
    url = re.sub(r"<str:(\w+)>", lambda m: FILL.get(m[1], "x"), url)
    url = re.sub(r"\(\?P<file>[^)]*\)", "tests.jsonl", url)
    return "/p/default/" + url.replace("^", "").replace("$", "")


def test_every_id_route_is_mapped():
    assert [r for r, key in id_routes() if key is None] == []


@pytest.fixture
def b_ids(world) -> dict[str, int]:
    from curation.models import Release, Review, ReviewItem
    from evaluation.models import Agent, EvaluationRun, SessionRun
    from generation.models import GenerationJob
    from webhooks.models import Webhook

    lin = world.b_lineage
    with use_project(world.b):
        item = ReviewItem.objects.get(stage="procedure", object_id=lin.procedure.pk)
        release = Release.objects.create(name="b", version=1, content_hash="0" * 64, manifest={})
        agent = Agent.objects.create(name="b agent")
        return {
            "job": GenerationJob.objects.create(name="b job").pk, "item": item.pk,
            "review": Review.objects.create(item=item, annotator=world.root, verdict="accept").pk,
            "release": release.pk, "agent": agent.pk,
            "run": EvaluationRun.objects.create(agent=agent, release=release).pk,
            "session": SessionRun.objects.create(agent=agent, release=release).pk,
            "webhook": Webhook.objects.create(name="b", url="http://b.test/", secret_encrypted="x",
                                              secret_hint="x").pk,
            "intent": lin.intent.pk, "procedure": lin.procedure.pk, "api": lin.apis[0].pk,
            "flowgraph": lin.flowgraph.pk, "conversation_graph": lin.conversation_graph.pk,
            "path": lin.paths[0].pk, "conversation": lin.conversations[0].pk, "test": lin.tests[0].pk,
        }


def test_ids_of_b_answer_404_in_a(client, world, b_ids):
    client.force_login(world.root)  # a site-wide administrator: every role, so only the scope can refuse
    wrong = []
    for route, key in id_routes():
        url = _url(route, b_ids[key])
        response = client.get(url)
        if response.status_code == 405:
            response = client.post(url, {})
        if response.status_code != 404:
            wrong.append(f"{url}: {response.status_code}")
    assert wrong == []

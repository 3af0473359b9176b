"""Session-level evaluation through its pages, command and API: role checks, a run driven from
the pages, the command, the API, the run constraints and the comparison of runs."""
from __future__ import annotations

import re

import pytest

from evaluation import session_services as SV
from evaluation.models import AgentMode, RunStatus, SessionResult
from evaluation.services import agent_create, reference_agents_ensure
from tests.evaluation.sessions_script import release, scripted  # noqa: F401 - release is a fixture
from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures


def session_pages(run) -> list[tuple[str, str]]:
    from django.urls import reverse

    return [("get", reverse("evaluation:sessions")), ("post", reverse("evaluation:session_create")),
            ("get", reverse("evaluation:session_compare") + f"?runs={run.pk}"),
            ("get", reverse("evaluation:session_detail", args=[run.pk])),
            ("get", reverse("evaluation:session_status", args=[run.pk])),
            ("post", reverse("evaluation:session_cancel", args=[run.pk])),
            ("post", reverse("evaluation:session_resume", args=[run.pk]))]


@pytest.mark.parametrize("persona", ["anonymous", "annotator", "adjudicator", "outsider"])
def test_session_pages_check_the_role(client, personas, release, fake_openai, openai_settings, persona):
    from tests.conftest import PASSWORD

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    if persona != "anonymous":
        assert client.login(username=personas[persona].username, password=PASSWORD)
    for method, url in session_pages(run):
        response = getattr(client, method)(url)
        if persona == "anonymous":
            assert response.status_code == 302 and "/login/" in response["Location"], url
        else:
            assert response.status_code == 403, url
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # nothing was cancelled or resumed


def test_session_run_through_the_pages(client, researcher, release, fake_openai, openai_settings,
                                       django_capture_on_commit_callbacks):
    from django.urls import reverse

    from evaluation.models import SessionRun
    from tests.conftest import PASSWORD

    judge = {"late": ["Result: yes\nTotal number of goals: 3\nNumber of accomplished goals: 3\n"
                      "Reason: <script>alert(1)</script> all done."],
             "cancel": ["Result: no\nTotal number of goals: 2\nNumber of accomplished goals: 1\nReason: wrong id."]}
    fake_openai.set_handler(scripted(judge))
    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("evaluation:sessions")).content.decode()
    assert "Start the sessions" in page and "Reference: gold" not in page  # only LLM agents can converse
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("evaluation:session_create"), {
            "agent": agent.pk, "release": release.pk, "max_turns": 15, "limit": "", "concurrency": 2})
    run = SessionRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:session_detail", args=[run.pk])
    assert run.status == RunStatus.RUNNING and run.concurrency == 2 and len(callbacks) == 1
    bad = client.post(reverse("evaluation:session_create"), {"agent": agent.pk, "release": release.pk,
                                                             "max_turns": 99}, follow=True)
    assert "could not be created" in bad.content.decode() and SessionRun.objects.count() == 1
    SV.session_run_execute_inline(run=run)
    html = client.get(reverse("evaluation:session_detail", args=[run.pk])).content.decode()
    assert "Succeeded" in html and "Success rate" in html and "<strong>50.0</strong>" in html and "1/2" in html
    assert "<strong>75.0</strong>" in html and "<strong>2.00</strong>" in html  # task progress, mean turns
    assert "&lt;script&gt;alert(1)&lt;/script&gt; all done." in html and "<script>alert(1)" not in html
    assert "get_order_details(order_id=812)" in html  # the transcript
    fragment = client.get(reverse("evaluation:session_status", args=[run.pk])).content.decode()
    assert 'data-active="0"' in fragment and "2 sessions judged" in fragment
    listing = client.get(reverse("evaluation:sessions")).content.decode()
    assert f"#{run.pk}" in listing and "1/2" in listing


def test_evaluate_sessions_command(release, fake_openai, openai_settings, capsys):
    from django.core.management import CommandError, call_command

    fake_openai.set_handler(scripted())
    agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    call_command("evaluate_sessions", "--release", "sessions", "--agent", "scripted", "--inline")
    out = capsys.readouterr().out
    assert "2 conversations, at most 15 user turns" in out and "succeeded" in out
    assert "Success rate" in out and "50.0%" in out and "1/2" in out and "Tool recall" in out and "2/3" in out
    with pytest.raises(CommandError, match="needs an LLM agent"):
        call_command("evaluate_sessions", "--release", "sessions", "--agent", "gold", "--inline")


@pytest.mark.parametrize("who", ["researcher", "admin", "annotator", "outsider", "anonymous"])
def test_session_api(personas, release, fake_openai, openai_settings, who, django_capture_on_commit_callbacks):
    from rest_framework.test import APIClient

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    c = APIClient()
    if who != "anonymous":
        c.force_authenticate(personas[who])
    allowed = who in ("researcher", "admin")
    with django_capture_on_commit_callbacks(execute=False):
        r = c.post("/api/session-runs/", {"agent": agent.pk, "release": release.pk, "limit": 1}, format="json")
    assert r.status_code == (201 if allowed else 401 if who == "anonymous" else 403), r.content
    if not allowed:
        assert c.get("/api/session-runs/").status_code in (401, 403)
        return
    body = r.json()
    assert body["status"] == "running" and body["total"] == 1 and body["max_turns"] == 15
    assert c.post(f"/api/session-runs/{body['id']}/cancel/").json()["status"] == "cancelled"
    assert c.post(f"/api/session-runs/{body['id']}/cancel/").status_code == 409
    gold = reference_agents_ensure()[0]
    r = c.post("/api/session-runs/", {"agent": gold.pk, "release": release.pk}, format="json")
    assert r.status_code == 400 and "agent" in r.json()  # reference agents cannot converse
    assert [x["id"] for x in c.get(f"/api/session-runs/?release={release.pk}").json()["results"]] == [body["id"]]


def test_session_constraints(release, fake_openai, openai_settings):
    from django.db import IntegrityError, transaction

    from evaluation.models import SessionRun

    agent = agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = SV.session_run_create(agent=agent, release=release, start=False)
    for bad in (lambda: SessionResult.objects.create(run=run, conversation_id=1),  # one session per conversation
                lambda: SessionResult.objects.create(run=run, conversation_id=7, total_goals=2, accomplished=3),
                lambda: SessionRun.objects.filter(pk=run.pk).update(max_turns=0),
                lambda: SessionRun.objects.filter(pk=run.pk).update(done=run.total + 1)):
        with pytest.raises(IntegrityError), transaction.atomic():
            bad()


def test_compare_session_runs(client, researcher, personas, release, fake_openai, openai_settings):
    from django.urls import reverse

    from tests.conftest import PASSWORD

    fake_openai.set_handler(scripted())
    agent = agent_create(name="scripted <i>", mode=AgentMode.PROMPT, model="fake-model")
    first = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, start=False))
    fake_openai.set_handler(scripted())  # fresh judge script for the second run
    second = SV.session_run_execute_inline(run=SV.session_run_create(agent=agent, release=release, limit=1,
                                                                       start=False))
    url = reverse("evaluation:session_compare")
    assert client.login(username=personas["annotator"].username, password=PASSWORD)
    assert client.get(url, {"runs": [first.pk, second.pk]}).status_code == 403
    assert client.login(username=researcher.username, password=PASSWORD)
    html = client.get(url, {"runs": [first.pk, second.pk]}).content.decode()
    assert html.count("<svg") == 1 and "scripted &lt;i&gt;" in html and "<i>" not in html.split("<main>")[1]
    values = re.findall(r'data-value="([\d.]+)"', html)
    # first run: success 50, progress 75, precision 66.7, recall 66.7, F1 66.7; second (the late order only): 100 x 5
    assert values == ["50.0", "100.0", "75.0", "100.0", "66.7", "100.0", "66.7", "100.0", "66.7", "100.0"], values
    assert "1/2" in html and "1/1" in html
    assert "Pick at least two" in client.get(url, {"runs": ["x"]}).content.decode()
    listing = client.get(reverse("evaluation:sessions")).content.decode()
    assert 'name="runs"' in listing and "Compare the selected session runs" in listing

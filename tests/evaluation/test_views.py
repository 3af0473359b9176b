"""Every evaluation page: happy path, wrong role (403), anonymous (login redirect), wrong method."""
from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evaluation import services
from evaluation.models import Agent, EvaluationRun, RunStatus
from tests.conftest import PASSWORD
from tests.evaluation.conftest import make_release

pytestmark = pytest.mark.django_db


@pytest.fixture
def finished_run(small_release) -> EvaluationRun:
    gold = services.reference_agents_ensure()[0]
    run = services.run_create(agent=gold, release=small_release, similarity="lexical", start=False)
    return services.run_execute_inline(run=run, workers=1)


def login(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def pages(run: EvaluationRun) -> list[tuple[str, str, dict]]:
    """(method, url, data) for every page, with the method it accepts."""
    return [
        ("get", reverse("evaluation:runs"), {}),
        ("post", reverse("evaluation:run_create"), {}),
        ("get", reverse("evaluation:run_detail", args=[run.pk]), {}),
        ("get", reverse("evaluation:run_status", args=[run.pk]), {}),
        ("get", reverse("evaluation:run_results_csv", args=[run.pk]), {}),
        ("post", reverse("evaluation:run_cancel", args=[run.pk]), {}),
        ("post", reverse("evaluation:run_resume", args=[run.pk]), {}),
        ("post", reverse("evaluation:run_rejudge", args=[run.pk]), {"similarity": "lexical"}),
        ("get", reverse("evaluation:agents"), {}),
        ("post", reverse("evaluation:agent_create"), {}),
        ("post", reverse("evaluation:agent_check", args=[run.agent.pk]), {}),
        ("get", reverse("evaluation:compare"), {}),
        ("get", reverse("evaluation:datasets"), {}),
    ]


def test_anonymous_is_sent_to_login(client, finished_run):
    for method, url, data in pages(finished_run):
        response = getattr(client, method)(url, data)
        assert response.status_code == 302 and reverse("login") in response["Location"], url


@pytest.mark.parametrize("persona", ["annotator", "adjudicator", "outsider"])
def test_other_roles_get_403(client, personas, finished_run, persona):
    login(client, personas[persona])
    for method, url, data in pages(finished_run):
        assert getattr(client, method)(url, data).status_code == 403, url


def test_wrong_method_is_405(client, researcher, finished_run):
    login(client, researcher)
    for method, url, _data in pages(finished_run):
        other = client.post if method == "get" else client.get
        assert other(url).status_code == 405, url


@pytest.mark.parametrize("persona", ["researcher", "admin"])
def test_run_pages_render(client, personas, finished_run, persona):
    login(client, personas[persona])
    html = client.get(reverse("evaluation:runs")).content.decode()
    assert f"#{finished_run.pk}" in html and "Reference: gold" in html
    response = client.get(reverse("evaluation:run_detail", args=[finished_run.pk]) + "?show=all")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Reply recall" in html and "Conversation correctness" in html
    assert "4/4" in html and "10/10" in html  # numerator/denominator shown
    assert "lexical token-overlap F1" in html  # the report says which similarity was used
    assert "By noise kind" in html and "out_of_procedure" in html and "By stage of the path" in html
    assert "[100.0, 100.0]" in html  # bootstrap interval


def test_create_run_and_agent_through_the_pages(client, researcher, small_release, django_capture_on_commit_callbacks):
    login(client, researcher)
    response = client.post(reverse("evaluation:agent_create"), {
        "name": "GPT <b>bold</b>", "mode": "functions", "knowledge": "code", "temperature": "0",
        "api_key_env": "MY_AGENT_API_KEY", "model": "fake-model"})
    assert response.status_code == 302
    agent = Agent.objects.get(name="GPT <b>bold</b>")
    assert agent.api_key_env == "MY_AGENT_API_KEY"
    html = client.get(reverse("evaluation:agents")).content.decode()
    assert "GPT &lt;b&gt;bold&lt;/b&gt;" in html and "<b>bold</b>" not in html
    # a key value instead of a variable name is refused
    bad = client.post(reverse("evaluation:agent_create"), {"name": "x", "mode": "prompt", "knowledge": "procedure",
                                                          "temperature": "0", "api_key_env": "sk-123 secret"})
    assert bad.status_code == 400 and not Agent.objects.filter(name="x").exists()
    gold = services.reference_agents_ensure()[0]
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("evaluation:run_create"), {"agent": gold.pk, "release": small_release.pk,
                                                                  "similarity": "lexical", "concurrency": "2"})
    run = EvaluationRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:run_detail", args=[run.pk])
    assert run.total == 10 and run.concurrency == 2 and run.created_by == researcher and len(callbacks) == 1
    # cancel, then resume through the pages
    client.post(reverse("evaluation:run_cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED
    client.post(reverse("evaluation:run_resume", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == RunStatus.RUNNING


def test_compare_pages_render_charts_with_escaped_text(client, researcher, db):
    curated, automatic = make_release(name="cur<script>"), make_release(name="auto", kind="automatic")
    runs = []
    for agent in services.reference_agents_ensure():
        for rel in (curated, automatic):
            run = services.run_create(agent=agent, release=rel, similarity="lexical", start=False)
            runs.append(services.run_execute_inline(run=run, workers=1))
    login(client, researcher)
    response = client.get(reverse("evaluation:compare"), {"runs": [r.pk for r in runs[:3]]})
    html = response.content.decode()
    assert response.status_code == 200 and html.count("<svg") == 1 and "<rect" in html
    assert "Correct API parameters" in html
    # Differences against the first run (gold): paired on the same release; refused, with the
    # reason, on another release.
    gold_cur, gold_auto, reply_cur = runs[0], runs[1], runs[2]
    response = client.get(reverse("evaluation:compare"), {"runs": [gold_cur.pk, gold_auto.pk, reply_cur.pk]})
    html = response.content.decode()
    assert f"Differences against run #{gold_cur.pk}" in html
    assert "another release" in html
    row = html.split(f'runs/{reply_cur.pk}/"')[-1].split("</tr>")[0]
    cells = re.findall(r"<td[^>]*>.*?</td>", row)
    # reply recall: both reply everywhere a reply is expected (0.0, not significant); correct reply,
    # API recall, test and conversation correctness: always reply loses everything (-100.0, an
    # interval of one point since every conversation differs the same way); correct API / params:
    # always reply never calls an API, so they are undefined (–).
    assert cells[0] == '<td class="metric">0.0<br><small>[0.0, 0.0]</small></td>'
    assert cells[5] == ('<td class="metric significant"><strong>-100.0</strong><br><small>[-100.0, -100.0]</small>'
                        '</td>')
    assert cells[3] == cells[4] == '<td class="metric">–</td>' and len(cells) == 7
    response = client.get(reverse("evaluation:datasets"), {"release_a": curated.pk, "release_b": automatic.pk,
                                                          "metric": "test_correct"})
    html = response.content.decode()
    assert response.status_code == 200 and "<circle" in html and "Pearson" in html and "Spearman" in html
    assert "<script>" not in html.split("<main>")[1] and "cur&lt;script&gt;" in html

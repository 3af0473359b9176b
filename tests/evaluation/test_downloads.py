"""The per-test results download (CSV, formula-safe) and the missed-API table of a run."""
from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from evaluation import services
from evaluation.models import AgentMode, EvaluationRun
from tests.conftest import PASSWORD
from tests.evaluation.conftest import SCRIPT, which_test
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db
FORMULA = '=HYPERLINK("http://attacker.example/","click")'


def formula_agent(body: dict, n: int) -> Reply:
    if which_test(body) == 6:
        return Reply(content=json.dumps({"type": "reply", "parameters": {"content": FORMULA}}))
    return Reply(content=SCRIPT[which_test(body)])


@pytest.fixture
def run(small_release, fake_openai, openai_settings) -> EvaluationRun:
    fake_openai.set_handler(formula_agent)
    agent = services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    return services.run_execute_inline(run=services.run_create(agent=agent, release=small_release,
                                                               similarity="lexical", start=False), workers=1)


def test_results_csv_has_every_test_in_order_and_defuses_formulas(client, researcher, run):
    assert client.login(username=researcher.username, password=PASSWORD)
    response = client.get(reverse("evaluation:run_results_csv", args=[run.pk]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f'filename="run-{run.pk}-results.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert list(rows[0]) == services.RESULT_COLUMNS
    assert [int(r["test_id"]) for r in rows] == list(range(1, 11))  # conversation, then position order
    by = {int(r["test_id"]): r for r in rows}
    assert by[2]["expected"] == 'get_order_details({"order_id": 812})'
    assert by[2]["answer"] == 'get_order_details({"order_id": 812})' and by[2]["correct"] == "1"
    assert by[1]["similarity"] == "1.0000" and by[1]["reply_correct"] == "1"
    assert by[7]["predicted_type"] == "invalid" and "not a JSON object" in by[7]["reason"]
    assert by[7]["raw_reply"] == SCRIPT[7] and by[7]["answer"] == ""
    assert by[8]["noise_kinds"] == "out_of_procedure" and by[8]["api_correct"] == "1" and by[8]["params_correct"] == "0"
    assert by[8]["reason"] == "parameters of cancel_order: order_id: expected 55 (number), got 56 (number)"
    assert by[5]["reason"] == 'parameters of refund_order: reason: expected "damaged" (string), got "  Damaged " (string)'
    assert by[9]["reason"] == "called cancel_order instead of get_order_details"
    # the agent's formula arrives as text, never as a live formula
    assert by[6]["answer"] == "'" + FORMULA and not any(v.startswith("=") for r in rows for v in r.values())
    assert sum(int(r["correct"]) for r in rows) == 3  # exact comparison: t5 " Damaged " is wrong


def test_missed_api_calls_are_counted_and_shown(client, researcher, run):
    assert services.api_confusions(run) == [
        {"expected": "get_order_details", "instead": "called cancel_order", "count": 1},  # test 9
        {"expected": "get_order_details", "instead": "replied instead", "count": 1},  # test 4
    ]  # test 8 called the right API with a wrong value: not a missed call
    assert client.login(username=researcher.username, password=PASSWORD)
    html = client.get(reverse("evaluation:run_detail", args=[run.pk])).content.decode()
    assert "Missed API calls" in html and "called cancel_order" in html and "replied instead" in html
    assert reverse("evaluation:run_results_csv", args=[run.pk]) in html


def test_the_run_page_names_the_parameters_that_differ(client, researcher, run):
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("evaluation:run_detail", args=[run.pk]) + "?show=wrong").content.decode()
    assert "parameters of cancel_order: order_id: expected 55 (number), got 56 (number)" in page
    assert "parameters of refund_order: reason: expected &quot;damaged&quot; (string), got &quot;  Damaged &quot; (string)" in page
    assert "called cancel_order instead of get_order_details" in page

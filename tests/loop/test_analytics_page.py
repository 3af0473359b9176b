"""Issue #31 item 6: analytics as one table with stage and slice selectors and a chart; each
choice checked against the CSV, which computes every stage and slice on its own path."""
import csv
import io
import re

import pytest
from django.urls import reverse

from curation.agreement.analytics import DIMENSIONS
from curation.models import ReviewStage

from .helpers import decide, item_of
from .test_analytics import five  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewed(five, annotator_a, annotator_b):  # noqa: F811
    job, c = five
    ab = [annotator_a, annotator_b]
    decide(item_of(ReviewStage.CONVERSATION, c[0]), ab)
    decide(item_of(ReviewStage.CONVERSATION, c[1]), ab, "reject", ["CV-OFF-PATH"])
    decide(item_of(ReviewStage.CONVERSATION, c[2]), [annotator_a])
    decide(item_of(ReviewStage.CONVERSATION_GRAPH, c[0].path.conversation_graph), ab)
    return c


def _table(html: str) -> list[list[str]]:
    body = html[html.index('id="analytics-table"'):]
    body = body[body.index("<tbody>"):body.index("</tbody>")]
    rows = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        rows.append([re.sub(r"<[^>]+>", "", td).strip() for td in re.findall(r"<td>(.*?)</td>", tr, re.S)])
    return rows


def _fmt(v: str) -> str:
    return "–" if v == "" else f"{float(v):.2f}"


@pytest.mark.parametrize("dim", [d for d, _ in DIMENSIONS])
def test_one_table_per_choice_agrees_with_the_csv(client, researcher, reviewed, dim):
    client.force_login(researcher)
    rows = list(csv.DictReader(io.StringIO(client.get(reverse("curation:analytics_csv")).content.decode())))
    labels = dict(ReviewStage.choices)
    html = client.get(reverse("curation:analytics"), {"stage": "all", "slice": dim}).content.decode()
    assert html.count('id="analytics-table"') == 1 and html.count('<svg class="bars"') == 1
    want = [[labels[r["stage"]], r["value"], r["items"], _fmt(r["acceptance"])]
            for r in rows if r["dimension"] == dim]
    got = [[r[0], r[1], r[2], r[3].split(" ")[0]] for r in _table(html)]
    assert got == want and got
    # One bar or "no data" line per row.
    chart = html[html.index('<svg class="bars"'):html.index("</svg>")]
    assert chart.count("<rect") + chart.count("no data") == len(want)
    # One stage: its rows only, without the stage column.
    html = client.get(reverse("curation:analytics"), {"stage": "conversation", "slice": dim}).content.decode()
    got = [[r[0], r[1], r[2].split(" ")[0]] for r in _table(html)]
    assert got == [[r[1], r[2], r[3]] for r in want if r[0] == labels["conversation"]]


def test_chart_follows_the_chosen_measure_and_bad_choices_fall_back(client, researcher, reviewed):
    client.force_login(researcher)
    html = client.get(reverse("curation:analytics"), {"metric": "kappa", "slice": "model"}).content.decode()
    assert 'aria-label="kappa by slice"' in html and "Cohen&#x27;s κ by generator model" in html
    for bad in ({"stage": "<script>"}, {"slice": "x" * 5000}, {"metric": "1e308"}):
        resp = client.get(reverse("curation:analytics"), bad)
        page = resp.content.decode()
        assert resp.status_code == 200 and "Unknown" in page and "<script>" not in page.split("<main>")[1].split("</main>")[0]
        assert page.count('id="analytics-table"') == 1
    html = client.get(reverse("curation:analytics"), {"stage": "procedure"}).content.decode()
    assert "No reviewed items in this stage yet." in html


def test_analytics_is_for_researchers_and_admins(client, annotator_a, adjudicator):
    for user in (annotator_a, adjudicator):
        client.force_login(user)
        assert client.get(reverse("curation:analytics")).status_code == 403


def test_cached_figures_follow_new_verdicts(client, researcher, reviewed, annotator_a, annotator_b):
    """The page keeps each stage's figures until the data changes: a new verdict shows at once."""
    client.force_login(researcher)
    params = {"stage": "conversation", "slice": "mode"}

    def items():
        return sum(int(r[1]) for r in _table(client.get(reverse("curation:analytics"), params).content.decode()))

    before = items()
    assert items() == before  # from the cache
    c = reviewed
    decide(item_of(ReviewStage.CONVERSATION, c[3]), [annotator_a])
    assert items() == before + 1

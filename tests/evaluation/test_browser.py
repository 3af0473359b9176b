"""The researcher's evaluation flow in a real browser: start a run from the form, watch its status
card update by polling, read the final report, re-judge it, and compare the two runs on a chart."""
from __future__ import annotations

import re

import pytest
from django.db import connections

from evaluation import services
from evaluation.models import EvaluationRun, RunStatus
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.evaluation.conftest import make_release

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]


def test_run_rejudge_and_compare_in_the_browser(browser, live_server, researcher):  # noqa: F811
    release = make_release()
    services.reference_agents_ensure()
    page = login(browser, live_server, researcher.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(f"{live_server.url}/evaluation/")
        page.select_option("#id_agent", label="Reference: gold")
        page.select_option("#id_release", value=str(release.pk))
        page.select_option("#id_similarity", value="lexical")
        page.fill("#id_concurrency", "1")
        with page.expect_navigation():
            page.click("text=Start the run")
        run = EvaluationRun.objects.get()
        assert page.url.endswith(f"/evaluation/runs/{run.pk}/")
        # No worker in this test: the run waits, and the card says so while it polls.
        assert run.status == RunStatus.RUNNING
        assert "0 evaluated" in page.inner_text("#run-status") and "of 10 tests" in page.inner_text("#run-status")

        # The tests run (as a worker would); the polled card sees the run end and the page reloads
        # with the final report and its bootstrap intervals.
        with page.expect_navigation(timeout=20000):
            services.run_execute_inline(run=run, workers=1)
        page.wait_for_selector("text=Succeeded")
        assert "10 evaluated" in page.inner_text("#run-status")
        metrics = page.inner_text("table.metrics-table")
        assert "10/10" in metrics and "[100.0, 100.0]" in metrics

        # Re-judge at another threshold from the form on the page.
        page.fill("#id_threshold", "0.9")
        with page.expect_navigation():
            page.click("form.rejudge-form button[type=submit]")
        again = EvaluationRun.objects.get(rejudged_from=run)
        assert page.url.endswith(f"/evaluation/runs/{again.pk}/")
        with page.expect_navigation(timeout=20000):
            services.run_execute_inline(run=again)
        page.wait_for_selector("text=Succeeded")
        card = page.inner_text("#run-status")
        assert f"the stored answers of run #{run.pk}" in card and "threshold 0.9" in card

        # Compare the two runs: the table and an SVG bar chart, server-rendered.
        page.goto(f"{live_server.url}/evaluation/compare/?runs={run.pk}&runs={again.pk}")
        table = page.inner_text("table.metrics-table")
        assert f"re-judge of #{run.pk}" in table and "0.9" in table
        assert page.locator("figure.chart-figure svg").count() == 1
        bars = page.locator("figure.chart-figure svg rect[data-value]")
        assert bars.count() >= 14  # 7 metrics x 2 runs
        values = {bars.nth(i).get_attribute("data-value") for i in range(bars.count())}
        assert all(re.fullmatch(r"100(\.0+)?", v) for v in values), values
        assert errors == []
    finally:
        connections.close_all()

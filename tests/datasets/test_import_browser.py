"""The import page in a real browser: a malformed FlowBench release is refused, then imported leniently."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connections

from generation.models import Api
from tests.curation.reviews.test_browser import ARGS, CHROMIUM, login  # noqa: F401  (browser fixture below)
from tests.datasets.test_flowbench_imports import MALFORMED_CHART, _release_with_chart

pytestmark = [pytest.mark.browser, pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


@pytest.fixture
def browser(live_server):
    import os

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        for context in b.contexts:
            for page in context.pages:
                page.wait_for_load_state("networkidle")
            context.close()
        b.close()


def test_refused_then_lenient_import_and_the_api_page(browser, live_server, admin_user, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    release = tmp_path / "release.jsonl"
    release.write_bytes(_release_with_chart(MALFORMED_CHART))
    page = login(browser, live_server, admin_user.username)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/imports/")
    page.set_input_files('input[name="file"]', str(release))
    page.click('button.primary')
    page.wait_for_load_state()
    alert = page.locator('[role="alert"]').inner_text()
    assert "release.jsonl, record 2" in alert and "line 3, column 2: arrow with no target" in alert
    page.screenshot(path=str(SHOTS / "i13-import-refused.png"), full_page=True)
    page.set_input_files('input[name="file"]', str(release))
    page.check('input[name="lenient"]')
    page.click('button.primary')
    page.wait_for_load_state()
    assert "Imported (flowbench)" in page.content()
    page.screenshot(path=str(SHOTS / "i13-import-lenient.png"), full_page=True)
    api_pk = Api.objects.filter(name="bookSailing").values_list("pk", flat=True).first()
    page.goto(f"{live_server.url}/generation/items/api/{api_pk}/")
    assert "ticket_number" in page.content() and "Deck" in page.content()
    page.screenshot(path=str(SHOTS / "i13-api-outputs.png"), full_page=True)
    connections.close_all()


def test_the_report_of_an_openapi_import_lists_what_was_not_kept(browser, live_server, admin_user):
    SHOTS.mkdir(parents=True, exist_ok=True)
    spec = Path(__file__).resolve().parents[1] / "pipeline" / "fixtures" / "tools" / "bakery-3.1.json"
    page = login(browser, live_server, admin_user.username)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/imports/")
    page.set_input_files('input[name="file"]', str(spec))
    page.click('button.primary')
    page.wait_for_load_state()
    report = page.locator("#import-report")
    assert "Not kept (" in report.inner_text()
    items = report.locator("ul.dropped li").all_inner_texts()
    assert "listOrders: header parameter X-Request-Id: left out: the client sets headers, the caller of the tool does not" in items
    assert any(i.startswith("createOrder: id: left out: readOnly") for i in items)
    page.screenshot(path=str(SHOTS / "i28-import-report.png"), full_page=True)
    page.goto(f"{live_server.url}/imports/")
    assert page.locator("#import-report").count() == 0  # shown once
    connections.close_all()

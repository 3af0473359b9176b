"""The release page's fidelity audit panel in a real browser, with a 1400 px screenshot under
var/screenshots/ (issue #28 item 3)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.db import connection

from curation.models import ReleaseKind
from curation.releases.services import release_create
from tests.curation.reviews.test_browser import CHROMIUM, browser, login  # noqa: F401 - fixture
from tests.datasets.conftest import accept_all
from tests.datasets.test_release_audit import _corrupt

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium missing")]
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def test_the_release_page_shows_the_audit_panel(browser, live_server, imported, researcher):  # noqa: F811
    accept_all()
    _corrupt("speech")
    release = release_create(name="audited", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    failed, tests = release.audit["failed"], release.audit["tests"]
    connection.close()
    page = login(browser, live_server, researcher.username)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{live_server.url}/datasets/{release.pk}/")
    panel = page.locator("#release-audit")
    assert panel.is_visible()
    text = panel.inner_text()
    assert f"{failed} of {tests} tests fail" in text and "Speech artefacts in assistant turns" in text
    assert "Let me subgoal" in text
    box = panel.bounding_box()
    assert box and box["width"] <= 1400  # no horizontal overflow at 1400 px
    SHOTS.mkdir(parents=True, exist_ok=True)
    panel.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "release_audit_panel.png"), full_page=True)
    page.goto(f"{live_server.url}/datasets/")
    assert f"audit: {failed} of {tests} tests fail" in page.inner_text(".release-list")
    page.screenshot(path=str(SHOTS / "release_list_audit_badge.png"))
    assert errors == []

"""Per-stage guidelines edited by admins: versioned, each review records its version."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.guidance.guidelines import GuidelineError, current_guide, guideline_save, parse_codes, reason_code_set
from curation.models import GuidelineVersion, Review, ReviewMeta, ReviewStage
from curation.reviews import services
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

CODES = "FG-MISSING-STEP: A step of the procedure is missing.\nFG-EXTRA-STEP: A step appears that the procedure lacks."


def test_parse_codes_names_the_line():
    assert parse_codes(CODES, "flowgraph")[0] == ("FG-MISSING-STEP", "A step of the procedure is missing.")
    for text, message in [("no colon here", "line 1"), ("ok-code: x", "line 1: 'ok-code'"),
                          ("A1: x\nA1: y", "line 2: A1 appears twice"), ("OTHER: x", "reserved"),
                          ("FG-NODE-ID: x", "reserved"), ("", "at least one"),
                          ("\n".join(f"C{i:02d}: x" for i in range(10)), "At most 9")]:
        with pytest.raises(GuidelineError, match=message):
            parse_codes(text, "flowgraph")


def test_saving_makes_a_new_version_that_reviews_record(client, lineage, admin_user, annotator_a):
    assert current_guide("flowgraph")[1] == 1
    row = guideline_save(actor=admin_user, stage="flowgraph", summary="**Read** the procedure first.",
                         checks="Check *every* branch.\n<script>x</script>", codes=CODES)
    assert row.version == 2 and current_guide("flowgraph")[1] == 2
    codes = reason_code_set("flowgraph")
    assert {"FG-MISSING-STEP", "OTHER", "FG-NODE-ID"} <= codes and "FG-UNFAITHFUL" not in codes
    services.items_sync()
    client.login(username=annotator_a.username, password=PASSWORD)
    url = client.post(reverse("curation:claim_next", args=["flowgraph"]))["Location"]
    page = client.get(url).content.decode()
    assert 'value="FG-MISSING-STEP" data-key="1"' in page and 'value="OTHER" data-key="3"' in page
    assert "<strong>Read</strong>" in page and "<script>x</script>" not in page and 'id="guideline-version">v2' in page
    assert "FG-UNFAITHFUL" not in page
    item_id = int(url.rstrip("/").rsplit("/", 1)[1])
    client.post(reverse("curation:submit", args=[item_id]), {"verdict": "reject", "reason_codes": ["FG-EXTRA-STEP"]})
    review = Review.objects.get(annotator=annotator_a, item__stage=ReviewStage.FLOWGRAPH)
    assert review.reason_codes == ["FG-EXTRA-STEP"]
    assert ReviewMeta.objects.get(review=review).guideline_version == 2


def test_guideline_page_roles_and_errors(client, admin_user, adjudicator):
    url = reverse("curation:guidelines", args=["conversation"])
    assert client.get(url).status_code == 302
    client.login(username=adjudicator.username, password=PASSWORD)
    assert client.get(url).status_code == 403
    client.login(username=admin_user.username, password=PASSWORD)
    assert client.get(url).status_code == 200
    assert client.get(reverse("curation:guidelines", args=["nope"])).status_code == 404
    assert client.put(url).status_code == 405
    resp = client.post(url, {"summary": "s", "checks": "", "codes": "bad line"})
    assert resp.status_code == 400 and "line 1" in resp.content.decode()
    resp = client.post(url, {"summary": "New summary", "checks": "c", "codes": "CV-RUDE: The agent is rude."})
    assert resp.status_code == 302
    assert GuidelineVersion.objects.get(stage="conversation").version == 2
    assert "CV-RUDE" in client.get(url).content.decode()


def test_login_page_says_what_the_app_is_and_the_favicon_is_served(client):
    page = client.get("/login/").content.decode()
    assert "test datasets for tool-using customer-support agents" in page and 'id="about"' in page
    assert 'rel="icon"' in page and "img/favicon.svg" in page
    resp = client.get("/favicon.ico")
    assert resp.status_code == 301 and resp["Location"].endswith("img/favicon.svg")

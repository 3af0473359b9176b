"""One formula guard for every CSV the product writes: release tests.csv (download and
export_release --format csv) and the verdict/result CSVs (csv.DictWriter via spreadsheet_safe)."""
from __future__ import annotations

import csv
import io

import pytest
from django.core.management import call_command

from curation.releases.exports import formula_safe, spreadsheet_safe
from curation.releases.services import release_create
from generation.models import Intent, Procedure, Test
from tests.datasets.conftest import accept_all

HOSTILE = ['=HYPERLINK("http://evil/","click")', "-2+3", "@cmd|' /C calc'!A0", "+1", "\t=1+1", "\r=1+1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_formula_safe_quotes_every_formula_start(text):
    assert formula_safe(text) == "'" + text
    assert spreadsheet_safe({"a": text, "n": 3}) == {"a": "'" + text, "n": 3}
    assert formula_safe("plain = text") == "plain = text"


@pytest.mark.parametrize("number", ["-0.4000", "-1", "-12.5", "-1e-05", "-.5"])
def test_a_negative_number_is_written_plainly(number):
    """analytics.csv wrote κ = -0.4 as '-0.4000 (issue #31): a number is not a formula."""
    assert formula_safe(number) == number
    assert spreadsheet_safe({"k": number}) == {"k": number}
    assert formula_safe(number + "+cmd") == "'" + number + "+cmd"


def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


@pytest.mark.django_db
def test_release_csv_download_and_export_are_guarded(imported, researcher, tmp_path, client):
    accept_all()
    Intent.objects.update(name=HOSTILE[0], client=HOSTILE[2])
    Procedure.objects.update(text=HOSTILE[1])
    t = Test.objects.filter(expected_type="reply").first() or Test.objects.first()
    Test.objects.filter(pk=t.pk).update(expected_type="reply", expected_text=HOSTILE[4])
    release = release_create(name="guarded", kind="curated", created_by=researcher)
    client.force_login(researcher)
    resp = client.get(f"/datasets/{release.pk}/download/tests.csv")
    assert resp.status_code == 200
    body = b"".join(resp.streaming_content).decode()
    call_command("export_release", str(release.pk), "--format", "csv", "--out", str(tmp_path))
    exported = "".join(p.read_text() for p in tmp_path.rglob("*.csv"))
    for text in (body, exported):
        cells = _cells(text)
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], cells[:30]
        for h in (HOSTILE[0], HOSTILE[1], HOSTILE[2]):
            assert "'" + h in cells


@pytest.mark.parametrize("text", HOSTILE)
def test_guarded_rows_and_csv_stream_quote_every_formula_start(text):
    from curation.releases.csv_render import csv_stream, guarded

    rows = [("plain", 1, None), (text, 2, "ok"), ("x", 3, text)]
    assert list(guarded(rows)) == [("plain", 1, None), ["'" + text, 2, "ok"], ["x", 3, "'" + text]]
    body = "".join(csv_stream(["a", "b", "c"], rows, batch=2))
    assert list(csv.reader(io.StringIO(body))) == [["a", "b", "c"], ["plain", "1", ""], ["'" + text, "2", "ok"],
                                                   ["x", "3", "'" + text]]

"""The Hugging Face tests.jsonl streams stored lines (curation.releases.hf): byte for byte what the
plain hf_row rendering of every decoded row gives, over hostile text, for releases frozen now and
for releases frozen before the lines were stored (filled by migration 0014), slim or whole."""
from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import pytest
from django.apps import apps

from curation.models import ReleaseKind
from curation.releases import hf
from curation.releases.exports import hf_sources, jsonl_chunks, release_rows
from curation.releases.services import release_create
from generation.models import Conversation, Intent, Procedure, Test
from tests.curation.factories import HOSTILE, build_lineage
from tests.datasets.test_release_format2 import whole_twin
from tests.datasets.test_release_freeze import expected_rows

pytestmark = pytest.mark.django_db

NASTY = HOSTILE + ' </script><!-- é ü 漢 \u2028 \u2029 "q" \\ \n\t\r =1+2 ,"job_id":1 "test_id": 🙂'
fill_hf_lines = importlib.import_module("curation.migrations.0014_h29_hf_lines").fill_hf_lines


def plain(release) -> str:
    """The reference: every decoded row through hf_row, as the export rendered it before."""
    lines = [hf.HF_ENCODE(hf.hf_row(d)) for d in release_rows(release)]
    return "".join(jsonl_chunks(lines))


def fast(release, monkeypatch) -> str:
    """The download, with hf_row forbidden: every line must come from the stored text."""
    def refuse(d):
        raise AssertionError("hf_row called on the fast path")

    with monkeypatch.context() as m:
        m.setattr(hf, "hf_row", refuse)
        return "".join(hf_sources(release)["tests.jsonl"]())


def hostile_release():
    lin = build_lineage(conversations=3, hostile=True)
    build_lineage(conversations=2, seed=3)
    Intent.objects.filter(pk=lin.intent.pk).update(name=NASTY, client=NASTY)
    Procedure.objects.filter(pk=lin.procedure.pk).update(text=NASTY + "\n" + NASTY)
    Conversation.objects.filter(pk=lin.conversations[0].pk).update(noise_kinds=["typo", "</script>\"q\",é\u2028\\n"])
    for j, test in enumerate(Test.objects.filter(conversation=lin.conversations[0]).order_by("position")):
        context = [{**m, "content": m.get("content", "") + NASTY} for m in test.context]
        if j == 1:  # not a prefix of the conversation: the context stays in the row (and the line)
            context = [{"content": NASTY, "role": "user", "extra": {"b": 1, "a": [NASTY]}}, *context]
        calls = test.expected_type == "api_call"
        Test.objects.filter(pk=test.pk).update(
            context=context, action="</script>\"é\u2028" if j % 2 else "", expected_text="" if calls else NASTY,
            expected_parameters={"zz": NASTY, "a": 1, "order_id": [NASTY], "é": {"y": 2, "xx": None}} if calls else {})
    return release_create(name="hf", kind=ReleaseKind.AUTOMATIC)


def test_stored_lines_equal_hf_row_over_hostile_text(monkeypatch):
    release = hostile_release()
    entries = release.entries.all()
    assert entries.count() > 5 and not entries.filter(hf_line="").exists()
    assert entries.filter(context_len__isnull=True).exists() and entries.filter(context_len__isnull=False).exists()
    want = plain(release)
    assert "</script><!-- é ü 漢 \\u2028" in want  # the text reaches the lines, U+2028 escaped
    assert "\u2028" not in want and want.count("\n") == entries.count()  # one line per test
    assert fast(release, monkeypatch) == want
    for line in want.splitlines():
        assert list(json.loads(line)) == hf.CSV_COLUMNS


def test_releases_frozen_before_get_their_lines_from_the_migration(monkeypatch):
    release = hostile_release()
    twin = whole_twin(release, expected_rows(Test.objects.filter(pk__in=release.entries.values("test_id"))))
    want = plain(release)
    assert plain(twin) == want
    # Frozen before: no stored lines; the download still renders them (through hf_row).
    release.entries.update(hf_line="")
    assert not twin.entries.exclude(hf_line="").exists()
    assert "".join(hf_sources(release)["tests.jsonl"]()) == want
    with pytest.raises(AssertionError, match="fast path"):
        fast(twin, monkeypatch)
    fill_hf_lines(apps, SimpleNamespace(connection=SimpleNamespace(alias="default")))
    assert not release.entries.filter(hf_line="").exists() and not twin.entries.filter(hf_line="").exists()
    assert fast(release, monkeypatch) == want
    assert fast(twin, monkeypatch) == want


def test_a_row_without_a_line_is_rendered_among_stored_ones(monkeypatch):
    build_lineage(conversations=2)
    release = release_create(name="mixed", kind=ReleaseKind.AUTOMATIC)
    want = plain(release)
    first = release.entries.order_by("conversation_id", "position").first()
    release.entries.filter(pk=first.pk).update(hf_line="")
    assert "".join(hf_sources(release)["tests.jsonl"]()) == want
    with pytest.raises(AssertionError):
        fast(release, monkeypatch)


def test_stored_line_refuses_what_a_freeze_never_writes():
    row = {"test_id": "7", "conversation_id": 1, "position": 1, "expected": {"type": "reply", "content": ""}}
    assert hf.stored_line(row, slim=True, named_context=True) == ""
    assert hf.jsonb_order({"bb": 1, "a": {"zz": 1, "y": 2}, "é": 0}) == {"a": {"y": 2, "zz": 1}, "bb": 1, "é": 0}
    assert list(hf.jsonb_order({"bb": 1, "a": 1, "é": 0})) == ["a", "bb", "é"]  # é is two bytes

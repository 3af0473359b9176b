"""Evaluation on a format 2 (slim) release: every service reads whole rows through
curation.releases.rows, so a run, its report, DST gold states, session tasks and the release page
preview are what the same release stored whole gives."""
from __future__ import annotations

import pytest

from curation.releases.preview import release_preview
from curation.releases.rows import release_test_row, release_test_rows
from curation.releases.services import release_create
from evaluation import services
from evaluation.services.dialogue import conversation_gold_states
from evaluation.session_services import _tasks_for
from generation.models import Test
from tests.curation.factories import build_lineage
from tests.datasets.test_release_format2 import whole_twin
from tests.datasets.test_release_freeze import expected_rows

pytestmark = pytest.mark.django_db


def _pair():
    build_lineage(conversations=3)
    build_lineage(conversations=2, seed=5, hostile=True)
    release = release_create(name="slim", kind="automatic")
    twin = whole_twin(release, expected_rows(Test.objects.all()))
    assert release.entries.filter(context_len__isnull=False).exists()
    return release, twin


def _by_test(release, mapping: dict[int, object]) -> dict[int, object]:
    test_of = dict(release.entries.values_list("pk", "test_id"))
    return {test_of[pk]: v for pk, v in mapping.items()}


def test_runs_and_reports_on_a_format2_release_equal_format1():
    release, twin = _pair()
    for agent in services.reference_agents_ensure():
        reports = []
        for r in (release, twin):
            run = services.run_execute_inline(run=services.run_create(
                agent=agent, release=r, similarity="lexical", start=False, dst=agent.mode == "gold"), workers=1)
            assert run.status == "succeeded", (agent, run.error)
            reports.append(services.run_report(run))
        for report in reports:
            report.pop("run", None)
        assert reports[0]["metrics"] == reports[1]["metrics"], agent.mode
        assert reports[0].get("dst") == reports[1].get("dst")
    assert _by_test(release, conversation_gold_states(release.pk)) == _by_test(twin, conversation_gold_states(twin.pk))
    assert _tasks_for(release, None) == _tasks_for(twin, None)
    preview = release_preview(release)
    assert preview == release_preview(twin) and len(preview) == 10


def test_one_row_and_some_rows_are_whole():
    release, twin = _pair()
    entry = release.entries.filter(context_len__gt=0).order_by("pk").last()
    want = next(row for pk, *_x, row in release_test_rows(twin) if row["test_id"] == entry.test_id)
    assert release_test_row(entry) == want
    convs = [entry.conversation_id]
    rows = [row for *_x, row in release_test_rows(release, conversation_ids=convs)]
    assert rows == [row for *_x, row in release_test_rows(twin, conversation_ids=convs)] and len(rows) > 1

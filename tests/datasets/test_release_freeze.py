"""Set-based release freezing: the same rows as the per-test construction, a query count that does
not grow with the tests, and exactly the accepted, non-excluded tests."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from curation.models import ReleaseKind, ReleaseTest
from curation.releases.csv_render import CsvLineMaker
from curation.releases.freeze import canonical_text
from curation.releases.services import release_create, release_verify
from generation.imports import api_row_to_dict, conversation_record, path_record
from generation.models import Conversation, CurationStatus, SampledPath, Test
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


def row_of(test, conv, proc, intent, apis: list[dict]) -> dict:
    """The self-contained row evaluation and the exports read, built per test from live objects the way
    releases were frozen before the set-based freezing: the oracle the frozen rows are compared with."""
    path = conv.path
    cg = path.conversation_graph if path else None
    return {
        "test_id": test.pk,
        "conversation_id": conv.pk,
        "position": test.position,
        "intent": {"id": intent.pk, "client": intent.client, "issue": intent.issue, "name": intent.name},
        "procedure": {"id": proc.pk, "title": proc.title, "text": proc.text},
        "apis": apis,
        "context": test.context,
        "expected": test.expected,
        "expected_action": test.action,
        "noise_kinds": list(conv.noise_kinds or []),
        "conversation_mode": conv.mode,
        "path_id": path.pk if path else None,
        "path_node_ids": list(path.node_ids) if path else [],
        "conversation_graph_id": cg.pk if cg else None,
        "flowgraph_id": cg.flowgraph_id if cg else None,
        "job_id": test.job_id or conv.job_id,
    }


def canonical_json(data):
    """The value as stored: through JSON (as the database round trip does)."""
    return json.loads(canonical_text(data))


def expected_rows(tests) -> list[dict]:
    """What the former per-test construction froze, from the live rows (the oracle)."""
    out = []
    for t in sorted(tests, key=lambda t: (t.conversation_id, t.position)):
        conv = Conversation.objects.select_related("procedure__intent", "path__conversation_graph").get(
            pk=t.conversation_id)
        apis = [api_row_to_dict(a) for a in conv.procedure.apis.order_by("pk")]
        out.append(row_of(t, conv, conv.procedure, conv.procedure.intent, apis))
    return out


def test_frozen_rows_equal_the_per_test_construction(researcher):
    from curation.releases.rows import PIECE_KEYS, csv_lines, records, release_test_rows

    build_lineage(conversations=3)
    build_lineage(conversations=2, seed=4)
    release = release_create(name="auto", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    want = expected_rows(Test.objects.all())
    assert [row for *_ids, row in release_test_rows(release)] == want
    make = CsvLineMaker()
    assert list(csv_lines(release)) == [make(d) for d in want]
    # Format 2 stores the slim row (SQLite keeps the canonical text as written) and names its procedure.
    entries = list(release.entries.order_by("conversation_id", "position"))
    # Generated tests' contexts are the first messages of their conversation: stored as a count.
    slim = [{k: v for k, v in d.items() if k not in PIECE_KEYS and k != "context"} for d in want]
    assert [e.data for e in entries] == slim
    assert [e.context_len for e in entries] == [len(d["context"]) for d in want]
    assert [e.procedure_id for e in entries] == [d["procedure"]["id"] for d in want]
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT data FROM {ReleaseTest._meta.db_table} WHERE release_id = %s "
                           "ORDER BY conversation_id, position", [release.pk])
            assert [r[0] for r in cursor.fetchall()] == [canonical_text(d) for d in slim]
    assert release_verify(release)
    convs = {d["id"]: d for d in records(release, ["conversation"])}
    for conv in Conversation.objects.all():
        assert convs[f"conversation-{conv.pk}"] == canonical_json(conversation_record(conv, [
            {"position": t.position, "context": t.context, "expected": t.expected}
            for t in conv.tests.order_by("position")]))
    paths = {d["id"]: d for d in records(release, ["path"])}
    assert paths and all(paths[f"path-{p.pk}"] == canonical_json(path_record(p)) for p in SampledPath.objects.all())
    kinds = dict(release.records.values_list("kind").annotate(n=Count("id")).order_by())
    assert kinds == {"intent": 2, "procedure": 2, "flowgraph": 2, "conversation_graph": 2, "path": 5,
                     "conversation": 5}


def _queries_for_release(name: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as ctx:
        release = release_create(name=name, kind=ReleaseKind.AUTOMATIC)
    return release.entries.count(), len(ctx)


def test_query_count_does_not_grow_with_the_number_of_tests():
    build_lineage(conversations=2)
    small, small_queries = _queries_for_release("small")
    for seed in range(1, 8):
        build_lineage(conversations=3, seed=seed)
    big, big_queries = _queries_for_release("big")
    assert small <= 15 and big >= 8 * small and big <= 160  # one multi-row INSERT each on every backend
    print(f"release queries: {small} tests -> {small_queries}, {big} tests -> {big_queries}")
    assert big_queries == small_queries, (small, small_queries, big, big_queries)


def test_curated_release_is_exactly_the_accepted_non_excluded_tests(researcher):
    lin = build_lineage(conversations=4)
    convs = lin.conversations
    statuses = [CurationStatus.ACCEPTED, CurationStatus.EXCLUDED, CurationStatus.REJECTED, CurationStatus.ACCEPTED]
    for conv, status in zip(convs, statuses):
        Conversation.objects.filter(pk=conv.pk).update(status=status)
        Test.objects.filter(conversation=conv).update(status=status)
    # One test of an accepted conversation excluded on its own (a cascade from elsewhere).
    odd = Test.objects.filter(conversation=convs[3]).order_by("position").first()
    Test.objects.filter(pk=odd.pk).update(status=CurationStatus.EXCLUDED)
    release = release_create(name="curated", kind=ReleaseKind.CURATED, created_by=researcher)
    want = set(Test.objects.filter(status=CurationStatus.ACCEPTED).values_list("pk", flat=True))
    assert want and set(release.entries.values_list("test_id", flat=True)) == want
    assert odd.pk not in want
    assert release.manifest["counts"]["tests"] == len(want)
    assert release_verify(release)

"""Slim release rows: every output is byte-for-byte what the same release stored with whole rows
gives, whole-row releases (rewritten from format 1 by migration 0012) download and verify with the
hash published with them, and tampering with a spliced piece fails release_verify.

The whole twin of a release is built from the per-test oracle of test_release_freeze
(expected_rows: the self-contained rows as the former per-test construction froze them) and
CsvLineMaker, stored whole (canonical JSON text, whole CSV records, conversation records with
their tests), as format 1 stored them."""
from __future__ import annotations

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.models import Release, ReleaseKind, ReleaseRecord, ReleaseTest
from curation.releases.csv_render import CsvLineMaker
from curation.releases.exports import BUNDLES, file_sources, hf_sources, zip_chunks
from curation.releases.freeze import canonical_text
from curation.releases.rows import release_test_row, release_test_rows
from curation.releases.services import release_create, release_verify
from generation.models import Api, Conversation, Intent, Procedure, SampledPath, Test
from tests.curation.factories import build_lineage
from tests.datasets.test_release_freeze import expected_rows

pytestmark = pytest.mark.django_db


def whole_twin(release: Release, rows: list[dict]) -> Release:
    """A release with the same content stored whole: whole rows and CSV records, the same records."""
    twin = Release.objects.create(name=release.name + " (whole)", version=release.version, kind=release.kind,
                                  filters=release.filters, content_hash="-", manifest=release.manifest,
                                  card=release.card, licence=release.licence, hash_scheme="rows")
    tests: dict[int, list[dict]] = {}
    for d in rows:  # whole releases' conversation records carry their tests
        tests.setdefault(d["conversation_id"], []).append(
            {"context": d["context"], "expected": d["expected"], "position": d["position"]})
    ReleaseRecord.objects.bulk_create([
        ReleaseRecord(release=twin, kind=r.kind, object_id=r.object_id,
                      data={**r.data, "tests": tests[r.object_id]} if r.kind == "conversation" else r.data)
        for r in release.records.order_by("id")])
    make = CsvLineMaker()
    table = connection.ops.quote_name(ReleaseTest._meta.db_table)
    with connection.cursor() as cursor:
        for d in rows:  # the canonical text as format 1 stored it (the ORM would write json.dumps's)
            cursor.execute(f"INSERT INTO {table} (release_id, test_id, conversation_id, position, data, csv_line) "
                           "VALUES (%s, %s, %s, %s, %s, %s)", [twin.pk, d["test_id"], d["conversation_id"],
                                                               d["position"], canonical_text(d), make(d)])
    twin.name = release.name  # in memory only: the file names and the README name the release
    return twin


def outputs(release: Release) -> dict[str, bytes]:
    files = {f"files/{n}": "".join(src()).encode() for n, src in file_sources(release).items()}
    files.update({f"hf/{n}": "".join(src()).encode() for n, src in hf_sources(release).items()})
    return files


def assert_same_outputs(release: Release) -> None:
    want = expected_rows(Test.objects.filter(pk__in=release.entries.values("test_id")))
    twin = whole_twin(release, want)
    assert not release.entries.filter(procedure_id__isnull=True).exists()
    assert not twin.entries.filter(procedure_id__isnull=False).exists()
    assert [row for *_ids, row in release_test_rows(release)] == want
    got, old = outputs(release), outputs(twin)
    assert got.keys() == old.keys()
    for name in got:
        assert got[name] == old[name], name
    assert release_verify(release)


# (No NUL: PostgreSQL text cannot hold it, so no artifact ever has one.)
CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00")
TEXT = st.text(alphabet=CHARS, max_size=30) | st.sampled_from(
    ["=HYPERLINK(\"http://evil/\",\"x\")", "-2+3", "@cmd", "\tx", "\rx", 'a,"b"', "line\nbreak", "\u2028", "é ü 漢",
     ',"job_id":1', '"test_id":', ""])
PARAMS = st.dictionaries(st.sampled_from(["z", "a", "order_id", "job_id", "é"]), st.integers() | TEXT, max_size=3)


@st.composite
def variations(draw):
    return {
        "lineages": draw(st.integers(1, 3)),
        "convs": draw(st.lists(st.integers(1, 3), min_size=3, max_size=3)),
        "texts": draw(st.lists(TEXT, min_size=8, max_size=8)),
        "noise": draw(st.lists(st.lists(st.sampled_from(["digression", "typo", ',"job_id":', "=x"]), max_size=2),
                               min_size=3, max_size=3)),
        "params": draw(PARAMS),
        "actions": draw(st.lists(st.sampled_from(["", "ask", "-x", "api"]), min_size=2, max_size=2)),
        "no_path": draw(st.booleans()),
        "message": draw(TEXT),
    }


def build(v) -> None:
    t = v["texts"]
    for k in range(v["lineages"]):
        lin = build_lineage(conversations=v["convs"][k], seed=k, hostile=k == 1)
        Intent.objects.filter(pk=lin.intent.pk).update(name=t[0] + str(k), client=t[1], issue=t[2])
        Procedure.objects.filter(pk=lin.procedure.pk).update(text=t[3], title=t[4])
        Api.objects.filter(pk=lin.apis[0].pk).update(description=t[5])
        for i, conv in enumerate(lin.conversations):
            Conversation.objects.filter(pk=conv.pk).update(noise_kinds=v["noise"][i % 3], mode="online" if i else
                                                           "offline")
        conv = lin.conversations[0]
        if v["no_path"] and k == 0:
            Conversation.objects.filter(pk=conv.pk).update(path=None)
        tests = list(Test.objects.filter(conversation=conv).order_by("position"))
        for j, test in enumerate(tests):
            context = list(test.context)
            if context and j % 2:
                context[-1] = {**context[-1], "content": v["message"], "extra": {"b": 1, "a": [t[6]]}}
            calls = test.expected_type == "api_call"
            Test.objects.filter(pk=test.pk).update(
                context=context, action=v["actions"][j % 2], expected_text="" if calls else t[7],
                expected_parameters=v["params"] if calls else {})


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(v=variations())
def test_slim_outputs_equal_whole_on_random_lineages(v):
    with transaction.atomic():
        build(v)
        release = release_create(name="random", kind=ReleaseKind.AUTOMATIC)
        assert_same_outputs(release)
        transaction.set_rollback(True)


def test_hostile_lineage_outputs_equal_whole(researcher):
    lin = build_lineage(conversations=3, hostile=True)
    build_lineage(conversations=2, seed=3)
    # A context that is not the start of its conversation's messages stays in the row.
    odd = lin.tests[1]
    Test.objects.filter(pk=odd.pk).update(context=[{"role": "user", "content": '=1+2,"x"'}, *odd.context])
    release = release_create(name="hostile", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    assert release.entries.filter(procedure_id__isnull=True).count() == 0  # every row slim
    inline = release.entries.filter(context_len__isnull=True)
    assert list(inline.values_list("test_id", flat=True)) == [odd.pk]
    assert "context" in inline.get().data and "context" not in release.entries.exclude(pk=inline.get().pk)[0].data
    assert_same_outputs(release)
    entry = release.entries.order_by("pk").first()
    assert release_test_row(entry) == next(row for pk, *_x, row in release_test_rows(release) if pk == entry.pk)


def test_key_like_text_after_the_cut_keeps_outputs_equal():
    """Slim text is cut at its last top-level ,"job_id": key: noise kinds and path node ids that
    hold that very text (as strings, the only kind the CSV record accepts) do not move the cut."""
    lin = build_lineage(conversations=2)
    Conversation.objects.filter(pk=lin.conversations[0].pk).update(noise_kinds=[',"job_id":1', '"test_id":2'])
    SampledPath.objects.filter(pk=lin.paths[0].pk).update(node_ids=['N0,"job_id":3', '"test_id":'])
    release = release_create(name="odd", kind=ReleaseKind.AUTOMATIC)
    assert not release.entries.filter(procedure_id__isnull=True).exists()
    assert_same_outputs(release)


def test_whole_row_releases_download_the_same_and_verify_with_the_rows_hash():
    """A release stored whole (as migration 0012 left format 1 releases) streams the same files and
    verifies with the hash published with it."""
    build_lineage(conversations=3)
    release = release_create(name="new", kind=ReleaseKind.AUTOMATIC)
    twin = whole_twin(release, expected_rows(Test.objects.all()))
    import hashlib

    from curation.releases.services import canonical

    # The rows hash: whole rows' canonical JSON, then the records, batch by batch (one batch here).
    digest = hashlib.sha256()
    for d in expected_rows(Test.objects.all()):
        digest.update(canonical(d) + b"\n")
    for kind, data in twin.records.order_by("id").values_list("kind", "data"):
        digest.update(canonical([kind, data]) + b"\n")
    Release.objects.filter(pk=twin.pk).update(content_hash=digest.hexdigest())
    twin.refresh_from_db()
    assert release_verify(twin)
    twin.name = release.name
    assert b"".join(zip_chunks(BUNDLES["jsonl.zip"](twin)))
    assert outputs(twin) == outputs(release)


@pytest.mark.parametrize("what", ["procedure text", "intent name", "apis", "row's procedure", "slim row", "csv line",
                                  "context length", "conversation messages", "extra record"])
def test_verify_detects_tampering_with_any_stored_piece(what):
    build_lineage(conversations=2)
    build_lineage(conversations=1, seed=2)
    release = release_create(name="tamper", kind=ReleaseKind.AUTOMATIC)
    assert release_verify(release)
    proc = release.records.get(kind="procedure", object_id=Procedure.objects.order_by("pk").first().pk)
    entry = release.entries.order_by("pk").first()
    if what == "procedure text":
        proc.data = {**proc.data, "text": proc.data["text"] + "!"}
        proc.save()
    elif what == "intent name":
        intent = release.records.filter(kind="intent").first()
        intent.data = {**intent.data, "name": "x"}
        intent.save()
    elif what == "apis":
        proc.data = {**proc.data, "apis": proc.data["apis"][:1]}
        proc.save()
    elif what == "row's procedure":
        other = release.records.filter(kind="procedure").exclude(object_id=entry.procedure_id).first()
        ReleaseTest.objects.filter(pk=entry.pk).update(procedure_id=other.object_id)
    elif what == "slim row":
        ReleaseTest.objects.filter(pk=entry.pk).update(data={**entry.data, "expected_action": "tampered"})
    elif what == "csv line":
        ReleaseTest.objects.filter(pk=entry.pk).update(csv_line=entry.csv_line.replace(",", ";", 4))
    elif what == "context length":
        ReleaseTest.objects.filter(pk=entry.pk).update(context_len=entry.context_len + 1)
    elif what == "conversation messages":
        conv = release.records.get(kind="conversation", object_id=entry.conversation_id)
        conv.data = {**conv.data, "messages": [{"role": "user", "content": "tampered"}] + conv.data["messages"][1:]}
        conv.save()
    else:
        ReleaseRecord.objects.create(release=release, kind="intent", object_id=999999, data={"name": "x"})
    assert not release_verify(release)


def test_slim_rows_are_much_smaller_than_whole_rows():
    build_lineage(conversations=4)
    release = release_create(name="small", kind=ReleaseKind.AUTOMATIC)
    twin = whole_twin(release, expected_rows(Test.objects.all()))

    def size(r):
        return sum(len(canonical_text(d)) + len(c) for d, c in r.entries.values_list("data", "csv_line"))
    assert size(release) * 2 < size(twin), (size(release), size(twin))


def _download_queries(release: Release) -> dict[str, int]:
    from django.test.utils import CaptureQueriesContext

    out = {}
    for name, source in {**{f"files/{n}": s for n, s in file_sources(release).items()},
                         "hf/tests.jsonl": hf_sources(release)["tests.jsonl"],
                         "rows": lambda: release_test_rows(release)}.items():
        with CaptureQueriesContext(connection) as ctx:
            for _ in source():
                pass
        out[name] = len(ctx)
    with CaptureQueriesContext(connection) as ctx:
        assert release_verify(release)
    out["verify"] = len(ctx)
    return out


def test_query_counts_do_not_depend_on_the_size():
    """Release creation, every download and release_verify run a fixed number of queries."""
    from django.test.utils import CaptureQueriesContext

    build_lineage(conversations=1)
    with CaptureQueriesContext(connection) as small_create:
        small = release_create(name="small", kind=ReleaseKind.AUTOMATIC)
    for seed in range(1, 6):
        build_lineage(conversations=3, seed=seed)
    with CaptureQueriesContext(connection) as big_create:
        big = release_create(name="big", kind=ReleaseKind.AUTOMATIC)
    assert big.entries.count() >= 10 * small.entries.count()
    assert len(small_create) == len(big_create)
    counts = _download_queries(small)
    assert counts == _download_queries(big)
    # Pinned: the test rows, the records they need (procedures and intents once; conversations in
    # a stream beside the rows), and nothing per row.
    assert counts == {"files/tests.csv": 3, "files/tests.jsonl": 3,
                      "files/README.md": 0, "files/manifest.json": 0, "files/conversations.jsonl": 2,
                      "files/graphs.jsonl": 1, "files/procedures.jsonl": 1, "hf/tests.jsonl": 3, "rows": 3,
                      "verify": 2}, counts


def test_a_failed_background_write_fails_the_release_and_leaves_nothing(monkeypatch):
    from curation.releases import writer as release_writer

    build_lineage(conversations=2)

    def broken(self, cursor, rows):
        raise RuntimeError("disk full")

    monkeypatch.setattr(release_writer.Table, "write", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        release_create(name="broken", kind=ReleaseKind.AUTOMATIC)
    assert not Release.objects.filter(name="broken").exists() and not ReleaseTest.objects.exists()

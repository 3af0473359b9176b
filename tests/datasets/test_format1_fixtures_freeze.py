"""One-off: freeze format 1 releases with the code that still reads format 1, and save their stored
rows and every download as fixtures (tests/datasets/fixtures/format1/<vendor>/). Run once per
database with FREEZE_FORMAT1=1; test_format1_migration replays the rows through migration 0008
and compares every download with these files. Removed with format 1 (it needs its readers)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from io import BytesIO
from pathlib import Path

import pytest
from django.db import connection

from curation.models import Release, ReleaseKind, ReleaseRecord, ReleaseTest
from curation.releases.exports import BUNDLES, file_sources, hf_sources, zip_chunks
from curation.releases.freeze import CHUNK, canonical_text
from curation.releases.services import canonical, release_create, release_verify
from generation.models import Test
from tests.curation.factories import build_lineage
from tests.datasets.test_format1_csv import frozen_rows
from tests.datasets.test_release_format2 import format1_twin
from tests.datasets.test_release_freeze import expected_rows

pytestmark = [pytest.mark.django_db,
              pytest.mark.skipif(not os.environ.get("FREEZE_FORMAT1"), reason="writes fixtures; run once by hand")]

OUT = Path(__file__).parent / "fixtures" / "format1"


def format1_hash(release: Release) -> str:
    """The format 1 content hash (release_verify's format 1 branch): per batch of CHUNK
    conversations, every whole row's canonical JSON, then the records written up to the batch's
    last conversation."""
    digest = hashlib.sha256()
    convs = sorted(set(release.entries.values_list("conversation_id", flat=True)))
    records = iter(release.records.order_by("id").values_list("kind", "object_id", "data"))
    for i in range(0, len(convs), CHUNK):
        batch = convs[i:i + CHUNK]
        for data in release.entries.filter(conversation_id__in=batch).order_by(
                "conversation_id", "position").values_list("data", flat=True):
            digest.update(canonical(data) + b"\n")
        for kind, oid, data in records:
            digest.update(canonical([kind, data]) + b"\n")
            if kind == "conversation" and oid == batch[-1]:
                break
    return digest.hexdigest()


def publish(release: Release, manifest: dict | None = None) -> Release:
    h = format1_hash(release)
    manifest = dict(release.manifest if manifest is None else manifest)
    if manifest:
        manifest["content_hash"] = {**manifest.get("content_hash", {}), "value": h}
    Release.objects.filter(pk=release.pk).update(content_hash=h, manifest=manifest,
                                                 card=(release.card or "# card\n") + f"\nhash {h}\n")
    name = release.name
    release.refresh_from_db()
    release.name = name
    assert release.format == 1 and release_verify(release)
    return release


def text_sql() -> str:
    return "CAST(data AS TEXT)" if connection.vendor == "sqlite" else "data::text"


def dump(release: Release, slug: str) -> None:
    """The stored rows (as the database gives their text) and every download of the release."""
    base = OUT / connection.vendor / slug
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    r = Release.objects.get(pk=release.pk)
    with connection.cursor() as c:
        c.execute(f"SELECT id, test_id, conversation_id, position, {text_sql()}, csv_line FROM "
                  f"{ReleaseTest._meta.db_table} WHERE release_id = %s ORDER BY id", [r.pk])
        tests = [list(row) for row in c.fetchall()]
        c.execute(f"SELECT id, kind, object_id, {text_sql()} FROM {ReleaseRecord._meta.db_table} "
                  "WHERE release_id = %s ORDER BY id", [r.pk])
        records = [list(row) for row in c.fetchall()]
    stored = {"release": {"id": r.pk, "name": r.name, "version": r.version, "kind": r.kind, "filters": r.filters,
                          "created_at": r.created_at.isoformat(), "content_hash": r.content_hash,
                          "manifest": r.manifest, "card": r.card, "licence": r.licence, "format": r.format},
              "tests": tests, "records": records}
    (base / "stored.json").write_text(json.dumps(stored, ensure_ascii=False, indent=1))
    for group, sources in (("files", file_sources(release)), ("hf", hf_sources(release))):
        (base / group).mkdir()
        for name, source in sources.items():
            try:
                (base / group / name).write_bytes("".join(source()).encode())
            except Exception as exc:  # noqa: BLE001 - a download that fails must still fail the same way
                (base / group / f"{name}.error").write_text(type(exc).__name__)
    for bundle, members in BUNDLES.items():
        # (a zip's bytes carry the time it was made: its members are the fixture)
        try:
            data = b"".join(zip_chunks(members(release)))
        except Exception as exc:  # noqa: BLE001
            (base / f"{bundle}.error").write_text(type(exc).__name__)
            continue
        with zipfile.ZipFile(BytesIO(data)) as zf:  # (the members' bytes, by their sha256)
            members = {i.filename: hashlib.sha256(zf.read(i)).hexdigest() for i in zf.infolist()}
        (base / f"{bundle}.json").write_text(json.dumps(members, indent=1))


def hand_built(rows: list[dict], name: str, version: int, text, manifest: dict) -> Release:
    """Rows stored whole by hand (format 1's other source): csv_line empty, CSV rendered at download."""
    release = Release.objects.create(name=name, version=version, content_hash="-", manifest=manifest, format=1,
                                     kind=ReleaseKind.AUTOMATIC)
    procs = {d["procedure"]["id"]: d for d in rows}
    ReleaseRecord.objects.bulk_create([
        ReleaseRecord(release=release, kind="procedure", object_id=pid, data={
            "kind": "procedure", "id": f"procedure-{pid}", "text": d["procedure"]["text"], "apis": d["apis"]})
        for pid, d in procs.items()])
    convs: dict[int, list] = {}
    for d in rows:
        convs.setdefault(d["conversation_id"], []).append(
            {"context": d["context"], "expected": d["expected"], "position": d["position"]})
    ReleaseRecord.objects.bulk_create([
        ReleaseRecord(release=release, kind="conversation", object_id=cid,
                      data={"kind": "conversation", "id": f"conversation-{cid}", "tests": tests})
        for cid, tests in sorted(convs.items())])
    table = connection.ops.quote_name(ReleaseTest._meta.db_table)
    with connection.cursor() as cursor:
        for d in rows:
            cursor.execute(f"INSERT INTO {table} (release_id, test_id, conversation_id, position, data, csv_line) "
                           "VALUES (%s, %s, %s, %s, %s, '')",
                           [release.pk, d["test_id"], d["conversation_id"], d["position"], text(d)])
    return release


def test_freeze_format1_fixtures(researcher):
    # 1. release_create's format 1: a hostile lineage (and a plain one), every row whole, stored CSV records.
    lin = build_lineage(conversations=3, hostile=True)
    build_lineage(conversations=2, seed=3)
    odd = lin.tests[1]
    Test.objects.filter(pk=odd.pk).update(context=[{"role": "user", "content": '=1+2,"x"'}, *odd.context])
    made = release_create(name="hostile", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    twin = format1_twin(made, expected_rows(Test.objects.all()))
    dump(publish(twin), "release_create")

    # 2. Hand-built rows, canonical text and json.dumps's text, CSV rendered at download (no stored
    #    records, or records of the old 18 columns), odd shapes included.
    rows = [frozen_rows().example() for _ in range(3)]
    for k, (text, manifest) in enumerate([(canonical_text, {}), (json.dumps, {"csv_lines": True, "csv_columns": 18}),
                                          (canonical_text, {"note": "no csv"})]):
        got = []
        for d in rows[k]:
            d = dict(d, conversation_id=d["conversation_id"] + 10 * k, test_id=d["test_id"] + 100 * k)
            got.append(d)
        dump(publish(hand_built(got, f"hand {k}", 1, text, manifest)), f"hand_{k}")

    # 3. More conversations than one hash batch (CHUNK), one test each.
    many = []
    for cid in range(CHUNK + 7):
        many.append({"test_id": 5000 + cid, "conversation_id": 5000 + cid, "position": 1,
                     "intent": {"id": 1, "client": "c", "issue": "i", "name": "n"},
                     "procedure": {"id": 7 + cid % 2, "title": "t", "text": f"procedure {cid % 2}"},
                     "apis": [{"name": "a", "params": []}],
                     "context": [{"role": "user", "content": f"hello {cid}"}],
                     "expected": {"type": "reply", "content": "hi"}, "noise_kinds": [], "path_node_ids": [],
                     "flowgraph_id": None, "conversation_graph_id": None, "conversation_mode": "offline",
                     "job_id": None, "path_id": None})
    dump(publish(hand_built(many, "batches", 1, canonical_text, {})), "batches")

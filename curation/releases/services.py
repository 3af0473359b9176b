"""Immutable dataset releases: freeze accepted (or automatically filtered) tests with their lineage.

A release copies everything it needs into ReleaseTest rows (one per test) and ReleaseRecord rows
(the intents, procedures with APIs, graphs, paths and conversations the tests come from, in the
import format's record shape); curation.releases.rows reads whole test rows back whatever the
row's storage (whole or slim). Nothing is ever updated after :func:`release_create` returns, so
reviewing items later cannot change a release; :func:`release_verify` recomputes the content hash
to prove it, as the release's hash scheme defines it.

The releases package's one door: other curation packages and other apps import from here (the
row readers and downloads are re-exported), never from the modules behind it.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

import webhooks
from almita_web.bounds import json_ids
from curation.guidance.services import gold_tests_q
from curation.models import Release, ReleaseKind, ReleaseRecord, ReleaseTest, ReviewStage
from curation.releases.audit import card_lines as audit_card_lines
from curation.releases.audit import LineageAudit, release_audit
from curation.releases.card import release_card, release_manifest
from curation.releases.csv_render import csv_stream, guarded
from curation.releases.exports import (  # the downloads other apps stream
    FORMATS,
    export_release,
    jsonl_chunks,
    release_rows_raw,
    spreadsheet_safe,
    write_chunks,
)
from curation.releases.freeze import CHUNK, NO_NOISE, canonical_text, freeze, test_hash_line
from curation.releases.rows import plain_rows, raw_rows, records, release_test_row, release_test_rows
from generation.models import CurationStatus, Test

LICENCES = ("CC-BY-4.0", "CC-BY-SA-4.0", "CC0-1.0", "CC-BY-NC-4.0", "proprietary")
FILTER_KEYS = ("jobs", "stages", "intents", "noise_kinds")

# Which artifact must be accepted for each review stage named in filters["stages"].
STAGE_LOOKUPS = {
    ReviewStage.PROCEDURE: "conversation__procedure__status",
    ReviewStage.FLOWGRAPH: "conversation__path__conversation_graph__flowgraph__status",
    ReviewStage.CONVERSATION_GRAPH: "conversation__path__conversation_graph__status",
    ReviewStage.CONVERSATION: "conversation__status",
}


class ReleaseError(ValueError):
    pass


def clean_filters(filters: dict[str, Any] | None) -> dict[str, list]:
    """Normalise filters to sorted lists; raise ReleaseError naming a bad one."""
    filters = dict(filters or {})
    unknown = set(filters) - set(FILTER_KEYS)
    if unknown:
        raise ReleaseError(f"unknown filter(s): {', '.join(sorted(unknown))}")
    out: dict[str, list] = {}
    for key in ("jobs", "intents"):
        values = filters.get(key) or []
        try:
            ids = sorted(set(json_ids(values, f"filter '{key}'")))
        except ValueError as exc:
            raise ReleaseError(f"filter '{key}' must be a list of ids: {exc}") from None
        if ids:
            out[key] = ids
    for key in ("stages", "noise_kinds"):
        value = filters.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ReleaseError(f"filter '{key}' must be a list of names, not {json.dumps(value)[:40]}")
    stages = sorted({str(s) for s in filters.get("stages") or []})
    bad = [s for s in stages if s not in STAGE_LOOKUPS]
    if bad:
        raise ReleaseError(f"filter 'stages': unknown stage(s) {', '.join(bad)}")
    if stages:
        out["stages"] = stages
    kinds = sorted({str(k) for k in filters.get("noise_kinds") or []})
    if kinds:
        out["noise_kinds"] = kinds
    return out


def reviewed_stages() -> list[str]:
    """The stages the current project reviews (its settings page), top down."""
    from projects.context import project_or_default

    project = project_or_default()
    return [s for s in STAGE_LOOKUPS if project.reviews_stage(s)]


def curated_tests():
    """The tests a curated release takes: those of accepted conversations. A stage the project does
    not review has no items and counts as accepted by policy: without conversation review, a test
    is taken when the nearest reviewed stage above it accepted its artifact (every test, when the
    project reviews nothing), unless a rejection or a withholding above excluded it."""
    reviewed = reviewed_stages()
    if ReviewStage.CONVERSATION in reviewed:
        # The lineage cascade marks tests below a rejection as excluded.
        return Test.objects.filter(status=CurationStatus.ACCEPTED)
    qs = Test.objects.exclude(status__in=(CurationStatus.REJECTED, CurationStatus.EXCLUDED))
    if reviewed:
        qs = qs.filter(**{STAGE_LOOKUPS[reviewed[-1]]: CurationStatus.ACCEPTED})
    return qs


def tests_for(kind: str, filters: dict[str, list]):
    """The live tests a release of `kind` with `filters` would freeze."""
    if kind == ReleaseKind.CURATED:
        qs = curated_tests()
        reviewed = reviewed_stages()
        for stage in filters.get("stages", []):
            if stage in reviewed:  # a stage the project does not review counts as accepted
                qs = qs.filter(**{STAGE_LOOKUPS[stage]: CurationStatus.ACCEPTED})
    elif kind == ReleaseKind.AUTOMATIC:
        # Everything that survived the automatic filters (discarded items never became rows),
        # whatever people later said about it: the paper's auto-ALMITA.
        qs = Test.objects.all()
    else:
        raise ReleaseError(f"unknown release kind {kind!r}")
    qs = qs.exclude(gold_tests_q())  # issue #16: gold items (and what lies below them) never ship
    if filters.get("jobs"):
        qs = qs.filter(Q(job_id__in=filters["jobs"]) | Q(conversation__job_id__in=filters["jobs"]))
    if filters.get("intents"):
        qs = qs.filter(conversation__procedure__intent_id__in=filters["intents"])
    if filters.get("noise_kinds"):
        wanted = [k for k in filters["noise_kinds"] if k != NO_NOISE]
        cond = Q(pk__in=[])
        for k in wanted:
            cond |= Q(conversation__noise_kinds__contains=[k]) if _json_contains_supported() else Q(
                conversation__noise_kinds__icontains=f'"{k}"')
        if NO_NOISE in filters["noise_kinds"]:
            cond |= Q(conversation__noise_kinds=[])
        qs = qs.filter(cond)
    return qs


def release_preview(*, kind: str, filters: dict[str, Any] | None) -> dict[str, int]:
    """How many tests, conversations and conversation graphs a release would freeze now."""
    qs = tests_for(kind, clean_filters(filters)).order_by()
    agg = qs.aggregate(tests=Count("pk"), conversations=Count("conversation_id", distinct=True),
                       graphs=Count("conversation__path__conversation_graph_id", distinct=True))
    return {k: agg[k] or 0 for k in ("tests", "conversations", "graphs")}


def preview_text(counts: dict[str, int]) -> str:
    return f"{counts['tests']} tests from {counts['conversations']} conversations and {counts['graphs']} graphs"


def _json_contains_supported() -> bool:
    from django.db import connection

    return connection.features.supports_json_field_contains


def canonical(data: Any) -> bytes:
    """Compact JSON with sorted keys, non-ASCII kept: the bytes the content hash covers."""
    return canonical_text(data).encode()


@transaction.atomic
def release_create(*, name: str, kind: str = ReleaseKind.CURATED, filters: dict | None = None,
                   created_by=None, licence: str = "CC-BY-4.0") -> Release:
    """Freeze the selected tests into a new version of release `name`."""
    name = (name or "").strip()
    if not name or len(name) > 200:
        raise ReleaseError("a release needs a name of 1 to 200 characters")
    if kind not in ReleaseKind.values:
        raise ReleaseError(f"unknown release kind {kind!r}")
    if licence not in LICENCES:
        raise ReleaseError(f"licence must be one of {', '.join(LICENCES)}")
    filters = clean_filters(filters)
    if not tests_for(kind, filters).exists():  # (counting them all took a quarter second at 80,000)
        nothing = preview_text({"tests": 0, "conversations": 0, "graphs": 0})
        raise ReleaseError(f"the filters select {nothing}; an empty release is not made")
    selected = tests_for(kind, filters)
    # Issue #28: an automatic release leaves out what fails the fidelity audit. The freeze audits
    # each conversation as it reads it (issue #29: reading the selection a second time for the
    # audit put a release of 80,000 tests on PostgreSQL at 4.3-4.5 s, over its 4 s floor).
    auditor = LineageAudit() if kind == ReleaseKind.AUTOMATIC else None
    version = (Release.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0) + 1
    try:
        with transaction.atomic():
            release = Release.objects.create(
                name=name, version=version, kind=kind, filters=filters, created_by=created_by,
                created_at=timezone.now(), content_hash="", manifest={}, licence=licence,
                audit={"left_out": 0},
            )
    except IntegrityError:  # another release of this name took the version number first
        raise ReleaseError(f"'{name}' v{version} was just created by someone else; try again") from None
    digest = hashlib.sha256()
    stats = freeze(release, selected, digest, auditor)
    known, pairs = None, None
    if auditor is not None:
        if not stats["counts"].get("tests"):  # the transaction takes the release back
            raise ReleaseError(f"all {auditor.left_out} selected tests fail the fidelity audit; an empty "
                               "release is not made")
        release.audit = {"left_out": auditor.left_out}
        known, pairs = auditor.found, auditor.pairs
    release.content_hash = digest.hexdigest()
    release.manifest = release_manifest(release, stats)
    release.audit = release_audit(release, known=known, pairs=pairs)
    release.card = release_card(release, stats) + "\n" + "\n".join(audit_card_lines(release.audit))
    release.save(update_fields=["content_hash", "manifest", "card", "audit"])
    webhooks.emit("release.created", release_id=release.pk, name=release.name, version=release.version,
                  kind=release.kind, content_hash=release.content_hash)
    return release


def release_verify(release: Release) -> bool:
    """Recompute the content hash from the frozen rows: True when nothing changed."""
    if release.hash_scheme == "rows":
        return _verify_rows(release)
    return _verify_stored(release)


def _verify_rows(release: Release) -> bool:
    """The hash published with releases frozen before the slim rows: per batch of CHUNK
    conversations, every whole row's canonical JSON, then the records up to the batch's last
    conversation record (records after the last one were never covered)."""
    digest = hashlib.sha256()
    update = digest.update
    rec_iter = iter(release.records.order_by("id").values_list("kind", "object_id", "data"))

    def batch_records(last: int | None) -> None:
        for kind, oid, data in rec_iter:
            update(canonical([kind, data]) + b"\n")
            if kind == "conversation" and oid == last:
                return

    n, last = 0, None
    for _pk, cid, _pos, row in release_test_rows(release):
        if cid != last:
            if n and n % CHUNK == 0:
                batch_records(last)
            n, last = n + 1, cid
        update(canonical(row) + b"\n")
    batch_records(last)
    return digest.hexdigest() == release.content_hash


def _verify_stored(release: Release) -> bool:
    """Per test, the procedure it names, its stored JSON (SQLite: the text as stored,
    which the JSONL download sends; elsewhere its canonical text) and CSV record; after every
    CHUNK conversations, that batch's records, in the order release_freeze wrote them."""
    digest = hashlib.sha256()
    update = digest.update
    as_stored = connection.vendor == "sqlite"
    table = connection.ops.quote_name(ReleaseTest._meta.db_table)
    text_sql = "CAST(data AS TEXT)" if as_stored else "data::text"
    tests = raw_rows(f"SELECT conversation_id, procedure_id, context_len, {text_sql}, csv_line FROM {table} "
                     "WHERE release_id = %s ORDER BY conversation_id, position, id", [release.pk])
    # The records too: on SQLite as stored (readers slice message texts out of them).
    records = raw_rows(f"SELECT kind, object_id, {text_sql} FROM {connection.ops.quote_name(ReleaseRecord._meta.db_table)}"
                       " WHERE release_id = %s ORDER BY id", [release.pk])

    def batch_records(last: int | None) -> None:
        for kind, oid, data in records:
            update(f'["{kind}",{data if as_stored else canonical_text(json.loads(data))}]\n'.encode())
            if kind == "conversation" and oid == last:
                return

    n, last = 0, None
    for cid, pid, k, text, line in tests:
        if cid != last:
            if n and n % CHUNK == 0:
                batch_records(last)
            n, last = n + 1, cid
        update(test_hash_line(pid, k, text if as_stored else canonical_text(json.loads(text)), line))
    batch_records(None)  # the last batch's records, and any record added since
    return digest.hexdigest() == release.content_hash


def release_find(ref: str) -> Release:
    """A release by id, 'name' (latest version), 'name@3' or 'name v3'."""
    ref = ref.strip()
    if ref.isdigit():
        return Release.objects.get(pk=int(ref))
    name, version = ref, None
    for sep in ("@", " v", ":"):
        if sep in ref:
            head, tail = ref.rsplit(sep, 1)
            if tail.isdigit():
                name, version = head.strip(), int(tail)
                break
    qs = Release.objects.filter(name=name)
    if version is not None:
        return qs.get(version=version)
    found = qs.order_by("-version").first()
    if found is None:
        raise Release.DoesNotExist(f"no release named {name!r}")
    return found


def iter_entries(release: Release, chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    """Whole test rows in (conversation, position) order, whatever the release's format."""
    return (row for *_ids, row in release_test_rows(release, chunk_size=chunk_size))


def iter_records(release: Release, kinds: Iterable[str], chunk_size: int = 2000) -> Iterator[dict[str, Any]]:
    return records(release, kinds, chunk_size)


__all__ = [
    "FORMATS", "LICENCES", "ReleaseError", "audit_card_lines", "csv_stream", "export_release", "guarded", "jsonl_chunks", "plain_rows",
    "release_audit", "release_create", "release_find", "release_rows_raw", "release_test_row", "release_test_rows", "release_verify",
    "spreadsheet_safe", "tests_for", "write_chunks",
]

"""Replays the frozen format 1 releases (fixtures/format1/<vendor>/*/stored.json) through migration
0010 on a fresh database and compares every download with the format 1 code's output saved beside
them. Run by test_format1_migration in a subprocess (the suite itself runs without migrations):

    DATABASE_URL=... python -m tests.datasets.format1_replay

Prints one JSON object: {"releases": n, "problems": [...]}; exit status 1 when there are problems.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from io import BytesIO
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "format1"
BEFORE = "0007_i14_review_path_indexes"


def load(connection, stored: dict) -> None:
    """The release's rows as the format 1 code stored them (ids kept: records are read in id order)."""
    r = stored["release"]
    with connection.cursor() as c:
        c.execute("INSERT INTO curation_release (id, name, version, kind, filters, created_by_id, created_at, "
                  "content_hash, manifest, card, licence, format) VALUES (%s, %s, %s, %s, %s, NULL, %s, %s, %s, %s, %s, %s)",
                  [r["id"], r["name"], r["version"], r["kind"], json.dumps(r["filters"]), r["created_at"],
                   r["content_hash"], json.dumps(r["manifest"]), r["card"], r["licence"], r["format"]])
        for pk, test_id, conv, pos, data, line in stored["tests"]:
            c.execute("INSERT INTO curation_releasetest (id, release_id, test_id, conversation_id, position, data, "
                      "csv_line) VALUES (%s, %s, %s, %s, %s, %s, %s)", [pk, r["id"], test_id, conv, pos, data, line])
        for pk, kind, oid, data in stored["records"]:
            c.execute("INSERT INTO curation_releaserecord (id, release_id, kind, object_id, data) "
                      "VALUES (%s, %s, %s, %s, %s)", [pk, r["id"], kind, oid, data])


def compare(release, base: Path) -> list[str]:
    from curation.releases.exports import BUNDLES, file_sources, hf_sources, zip_chunks
    from curation.releases.services import release_verify

    problems = []
    for group, sources in (("files", file_sources(release)), ("hf", hf_sources(release))):
        for name, source in sources.items():
            want, error = base / group / name, base / group / f"{name}.error"
            try:
                got = "".join(source()).encode()
            except Exception as exc:  # noqa: BLE001 - the format 1 code failed this download too?
                if not (error.exists() and error.read_text() == type(exc).__name__):
                    problems.append(f"{base.name}/{group}/{name}: raised {type(exc).__name__}: {exc}")
                continue
            if not want.exists():
                problems.append(f"{base.name}/{group}/{name}: gives a file where format 1 raised")
            elif got != want.read_bytes():
                problems.append(f"{base.name}/{group}/{name}: differs from the format 1 output")
    for bundle, members in BUNDLES.items():
        try:
            data = b"".join(zip_chunks(members(release)))
        except Exception as exc:  # noqa: BLE001
            if not (base / f"{bundle}.error").exists():
                problems.append(f"{base.name}/{bundle}: raised {type(exc).__name__}")
            continue
        with zipfile.ZipFile(BytesIO(data)) as zf:
            got = {i.filename: hashlib.sha256(zf.read(i)).hexdigest() for i in zf.infolist()}
        if got != json.loads((base / f"{bundle}.json").read_text()):
            problems.append(f"{base.name}/{bundle}: members differ from the format 1 output")
    if release.hash_scheme != "rows" or not release_verify(release):
        problems.append(f"{base.name}: does not verify with the hash it was published with")
    return problems


def main() -> int:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", "curation", BEFORE, verbosity=0)
    dirs = sorted(p for p in (FIXTURES / connection.vendor).iterdir() if (p / "stored.json").exists())
    stored = {d: json.loads((d / "stored.json").read_text()) for d in dirs}
    for d in dirs:
        load(connection, stored[d])
    call_command("migrate", verbosity=0)

    from curation.models import Release

    problems = []
    for d in dirs:
        problems += compare(Release.objects.get(pk=stored[d]["release"]["id"]), d)
    print(json.dumps({"vendor": connection.vendor, "releases": len(dirs), "problems": problems}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

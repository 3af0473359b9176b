"""Benchmark: stream 1,000,000 release tests to JSON Lines and CSV; print rows/s and peak RSS.

    python bench/export.py                  # 1,000,000 synthetic rows from a generator
    python bench/export.py --rows 200000    # fewer rows
    python bench/export.py --db 1000000     # rows frozen in a real release in a throwaway SQLite DB

Default source: a generator of frozen test rows with the exact shape of ReleaseTest (data: a
procedure text of ~300 words, four APIs, contexts growing along 7 tests per conversation; and the
stored CSV record), fed through the same writer functions the download views and `export_release`
use, written to a temporary file:

* JSONL download: stored JSON text → curation.releases.exports.jsonl_chunks (what tests.jsonl streams);
* CSV download: stored CSV records → csv_line_chunks (what tests.csv streams);
* HF tests.jsonl (--db): stored HF lines → curation.releases.hf.hf_lines (slim ones spliced);
* CSV rendering: decoded rows → csv_chunks / CsvLineMaker, the work release_create does once per
  test.

With --db the rows are first inserted into two releases of a throwaway SQLite database (tables built
from the models), one of slim rows (release_create's) and one of whole rows (releases frozen before
the slim rows, and rows built by hand), and streamed from them exactly as the views do. Target: ≥ 50,000 rows/s and
< 300 MB peak RSS. Each line also gives rows per CPU-second and the load average, because the
figures depend on how busy the machine is.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def peak_rss_mb() -> float:
    """Peak resident set since the last reset_peak_rss() (Linux VmHWM), else since start."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def reset_peak_rss() -> None:
    """Start a new peak-RSS measurement (Linux: writing 5 to clear_refs resets VmHWM)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def setup_django(var_dir: str) -> None:
    os.environ.setdefault("DEBUG", "true")
    os.environ["ALMITA_VAR_DIR"] = var_dir
    os.environ.pop("DATABASE_URL", None) if os.environ.get("BENCH_KEEP_DB_URL") is None else None
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    import django

    django.setup()


WORDS = ("customer order refund parcel account verify address payment confirm cancel delivery "
         "status ask check apologise escalate record offer explain close").split()


def templates(n: int = 64) -> list[dict]:
    """A pool of realistic rows; the generator varies their ids."""
    import random

    rng = random.Random(7)
    out = []
    for k in range(n):
        text = " ".join(rng.choice(WORDS) for _ in range(300))
        apis = [{"name": f"api_{k}_{j}", "desc": "Does one thing for the agent.",
                 "params": [{"name": "order_id", "type": "int", "required": True, "description": ""},
                            {"name": "email", "type": "str", "required": False, "description": ""}],
                 "output": {"name": "result", "type": "dict"}} for j in range(4)]
        context = []
        for turn in range(7):  # a 14-message conversation; its tests see growing prefixes of it
            context += [{"role": "user", "content": f"Turn {turn}: my parcel never arrived, order 8812, a@b.example."},
                        {"role": "assistant", "content": f"Turn {turn}: sorry to hear that, let me look it up for you."}]
        expected = ({"type": "api_call", "name": f"api_{k}_1", "parameters": {"order_id": 8812}}
                    if k % 2 else {"type": "reply", "content": "I have opened a claim; you will hear from us."})
        out.append({
            "test_id": 0, "conversation_id": 0, "position": 6,
            "intent": {"id": k, "client": "PostCo", "issue": "A parcel was lost", "name": f"lost parcel {k}"},
            "procedure": {"id": k, "title": f"Lost parcels {k}", "text": text},
            "apis": apis, "context": context, "expected": expected, "noise_kinds": ["digression"] if k % 3 == 0 else [],
            "conversation_mode": "offline", "path_id": k, "path_node_ids": ["N0", "N1", "N2", "N3", "N4", "N5"],
            "conversation_graph_id": k, "flowgraph_id": k, "job_id": None,
        })
    return out


def synthetic_rows(n: int):
    pool = templates()
    size = len(pool)
    for i in range(n):
        tpl = pool[(i // 7) % size]  # 7 tests per conversation, contexts growing by 2 messages
        j = i % 7
        yield {**tpl, "test_id": i + 1, "conversation_id": i // 7 + 1, "position": 2 * j + 1,
               "context": tpl["context"][: 2 * j + 1]}


def synthetic_text_rows(n: int):
    """The rows as the database hands them to the JSONL download: stored JSON text."""
    import json

    # Pre-encode every (template, test-in-conversation) shape once; vary only the ids per row.
    pool = []
    for tpl in templates():
        for j in range(7):
            row = {**tpl, "test_id": 0, "conversation_id": 0, "position": 2 * j + 1,
                   "context": tpl["context"][: 2 * j + 1]}
            # Sorted keys: the canonical text of a whole row.
            text = json.dumps(row, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            head, tail = text.split('"conversation_id":0', 1)
            mid, end = tail.rsplit('"test_id":0', 1)
            pool.append((head, mid, end))
    for i in range(n):
        head, mid, end = pool[((i // 7) % 64) * 7 + i % 7]
        yield f'{head}"conversation_id":{i // 7 + 1}{mid}"test_id":{i + 1}{end}'


def synthetic_csv_lines(n: int):
    """The rows' CSV records as release_create stores them (ReleaseTest.csv_line)."""
    from curation.releases.exports import CsvLineMaker

    make = CsvLineMaker()
    pool = [make(d).split(",", 2)[2] for d in synthetic_rows(64 * 7)]  # everything after the two ids
    for i in range(n):
        yield f"{i + 1},{i // 7 + 1},{pool[((i // 7) % 64) * 7 + i % 7]}"


def synthetic_hf_lines(n: int, slim: bool):
    """The rows' stored HF lines (ReleaseTest.hf_line: release_freeze writes them, migration 0014
    filled them for releases frozen before): whole, or slim (no procedure values, named context)."""
    from curation.releases.hf import stored_line

    pool = []
    for d in synthetic_rows(64 * 7):
        line = stored_line({**d, "test_id": 0, "conversation_id": 0}, slim, slim)
        pool.append(line.split(",", 3)[3])  # everything after the three ids
    for i in range(n):
        yield f'{{"test_id":{i + 1},"conversation_id":{i // 7 + 1},"position":{2 * (i % 7) + 1},' \
              f'{pool[((i // 7) % 64) * 7 + i % 7]}'


def run(label: str, chunks, n: int, out: Path) -> None:
    import gc

    gc.collect()
    reset_peak_rss()
    start = time.perf_counter()
    cpu = time.process_time()
    written = 0
    with open(out, "wb") as fh:
        for chunk in chunks:
            data = chunk.encode() if isinstance(chunk, str) else chunk
            fh.write(data)
            written += len(data)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    # Wall-clock rows/s is the figure asked for; rows per CPU-second shows the code's own speed
    # when the machine is shared (load average printed alongside).
    print(f"{label:<26} {n:>9,} rows  {elapsed:6.2f} s  {n / elapsed:>8,.0f} rows/s  "
          f"({n / cpu:>8,.0f} rows per CPU-s)  {written / 1e6:>6,.0f} MB  peak RSS {peak_rss_mb():5.1f} MB  "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    out.unlink()


def settle_writes() -> None:
    """Let the set-up's writes reach the disk before anything is timed.

    The fill leaves gigabytes of dirty pages (the database and a write-ahead log of 2.7 GB per
    200,000 whole rows). While the kernel writes them back, the first path timed paid for it:
    JSONL of whole rows read 73.7k rows/s on its first pass and 196k on a second pass in the same
    run (200,000 rows); after a checkpoint that truncates the log and a sync, 253k and 229k.
    No export writes that much just before a download, so the set-up's flush is not part of a figure."""
    from django.db import connection

    if connection.vendor == "sqlite":  # BENCH_KEEP_DB_URL may point the bench elsewhere
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.sync()


def fill_db(n: int):
    """Freeze n synthetic rows into a release of a fresh database."""
    from django.apps import apps
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection, transaction

    from curation.models import Release, ReleaseRecord, ReleaseTest
    from curation.releases.exports import CSV_COLUMNS

    # Tables straight from the models, as the test suite does (--nomigrations).
    settings.MIGRATION_MODULES = {cfg.label: None for cfg in apps.get_app_configs()}
    call_command("migrate", run_syncdb=True, verbosity=0)
    start = time.perf_counter()
    with transaction.atomic():
        release = Release.objects.create(name="bench", version=1, content_hash="-", manifest={"csv_lines": True, "csv_columns": len(CSV_COLUMNS)})
        # The frozen procedure records a release keeps beside its tests (the CSV writer reads them).
        ReleaseRecord.objects.bulk_create([
            ReleaseRecord(release=release, kind="procedure", object_id=t["procedure"]["id"],
                          data={"kind": "procedure", "id": f"procedure-{t['procedure']['id']}", "intent": "",
                                "title": t["procedure"]["title"], "text": t["procedure"]["text"], "apis": t["apis"]})
            for t in templates()])
        # Plain executemany of pre-encoded rows: the set-up is not what is measured.
        table = ReleaseTest._meta.db_table
        sql = (f"INSERT INTO {table} (release_id, test_id, conversation_id, position, data, csv_line, hf_line) "
               "VALUES (%s, %s, %s, %s, %s, %s, %s)")
        with connection.cursor() as cursor:
            batch = []
            for i, (text, line, hf) in enumerate(zip(synthetic_text_rows(n), synthetic_csv_lines(n),
                                                     synthetic_hf_lines(n, slim=False))):
                batch.append((release.pk, i + 1, i // 7 + 1, 2 * (i % 7) + 1, text, line, hf))
                if len(batch) >= 5000:
                    cursor.executemany(sql, batch)
                    batch = []
            if batch:
                cursor.executemany(sql, batch)
    print(f"inserted {n:,} rows into SQLite in {time.perf_counter() - start:.1f} s (not part of the figures)")
    return release


def fill_db_slim(n: int):
    """The same n rows as release_create stores them: slim rows naming their
    procedure and their context's length, the procedure, intent and conversation records once."""
    from django.db import connection, transaction

    from curation.models import Release, ReleaseRecord, ReleaseTest
    from curation.releases.csv_render import _ENCODE, CsvLineMaker
    from curation.releases.rows import PIECE_KEYS, csv_cell

    start = time.perf_counter()
    pool, make = [], CsvLineMaker()
    for k, tpl in enumerate(templates()):
        for j in range(7):
            row = {**tpl, "test_id": 0, "conversation_id": 0, "position": 2 * j + 1, "context": tpl["context"][: 2 * j + 1]}
            slim = _ENCODE({key: v for key, v in row.items() if key not in PIECE_KEYS and key != "context"})
            head, tail = slim.split('"conversation_id":0', 1)
            tail, _ = tail.rsplit('"test_id":0', 1)
            full = make(row)  # test_id,conversation_id,position,<six procedure cells>,<context>,rest
            rest = full.split(",", 3)[3][len(make.procedures[k]) + 1 + len(csv_cell(make.context)) + 1:]
            pool.append((head, tail, rest))
    with transaction.atomic():
        release = Release.objects.create(name="bench slim", version=1, content_hash="-",
                                         manifest={"csv_lines": True, "csv_columns": len(CSV_COLUMNS_N())})
        records = []
        for t in templates():
            p, i = t["procedure"], t["intent"]
            records += [ReleaseRecord(release=release, kind="intent", object_id=i["id"], data={
                            "kind": "intent", "id": f"intent-{i['id']}", "client": i["client"], "issue": i["issue"],
                            "name": i["name"]}),
                        ReleaseRecord(release=release, kind="procedure", object_id=p["id"], data={
                            "kind": "procedure", "id": f"procedure-{p['id']}", "intent": f"intent-{i['id']}",
                            "title": p["title"], "text": p["text"], "apis": t["apis"]})]
        ReleaseRecord.objects.bulk_create(records)
        table = ReleaseTest._meta.db_table
        sql = (f"INSERT INTO {table} (release_id, test_id, conversation_id, position, procedure_id, context_len, data, "
               "csv_line, hf_line) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)")
        conv_sql = f"INSERT INTO {ReleaseRecord._meta.db_table} (release_id, kind, object_id, data) VALUES (%s, %s, %s, %s)"
        pool_tpl = templates()
        hf_lines = synthetic_hf_lines(n, slim=True)
        with connection.cursor() as cursor:
            batch, convs = [], []
            for i in range(n):
                k, j, cid = (i // 7) % 64, i % 7, i // 7 + 1
                head, tail, rest = pool[k * 7 + j]
                if j == 0:
                    t = pool_tpl[k]
                    convs.append((release.pk, "conversation", cid, _ENCODE({
                        "kind": "conversation", "id": f"conversation-{cid}", "procedure": f"procedure-{k}",
                        "path": f"path-{k}", "mode": "offline", "messages": t["context"], "noise_kinds": t["noise_kinds"],
                        "tests": []})))
                batch.append((release.pk, i + 1, cid, 2 * j + 1, k, 2 * j + 1,
                              f'{head}"conversation_id":{cid}{tail}"test_id":{i + 1}}}', f"{i + 1},{cid},{2 * j + 1},{rest}", next(hf_lines)))
                if len(batch) >= 5000:
                    cursor.executemany(sql, batch)
                    cursor.executemany(conv_sql, convs)
                    batch, convs = [], []
            if batch:
                cursor.executemany(sql, batch)
                cursor.executemany(conv_sql, convs)
    print(f"inserted {n:,} slim rows into SQLite in {time.perf_counter() - start:.1f} s (not part of the figures)")
    return release


def CSV_COLUMNS_N():
    from curation.releases.exports import CSV_COLUMNS

    return CSV_COLUMNS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--db", type=int, default=0, help="stream this many rows from a real release in SQLite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="almita-bench-") as tmp:
        setup_django(tmp)
        from curation.releases.exports import (
            csv_chunks,
            csv_line_chunks,
            hf_sources,
            jsonl_chunks,
            release_csv,
            release_rows_raw,
        )

        tmpdir = Path(tmp)
        print(f"baseline peak RSS after Django setup: {peak_rss_mb():.1f} MB")
        if args.db:
            release = fill_db(args.db)
            slim = fill_db_slim(args.db)
            settle_writes()
            import gc

            gc.collect()
            # Slim rows (release_create now) and whole rows (releases frozen before), same content.
            run("JSONL download (slim rows)", jsonl_chunks(release_rows_raw(slim)), args.db, tmpdir / "t2.jsonl")
            run("CSV download (slim rows)", release_csv(slim), args.db, tmpdir / "t2.csv")
            run("HF tests.jsonl (slim rows)", hf_sources(slim)["tests.jsonl"](), args.db, tmpdir / "h2.jsonl")
            del slim
            run("JSONL download (whole rows)", jsonl_chunks(release_rows_raw(release)), args.db, tmpdir / "t.jsonl")
            run("CSV download (whole rows)", release_csv(release), args.db, tmpdir / "t.csv")
            run("HF tests.jsonl (whole rows)", hf_sources(release)["tests.jsonl"](), args.db, tmpdir / "h.jsonl")
        else:
            n = args.rows
            run("JSONL download (generator)", jsonl_chunks(synthetic_text_rows(n)), n, tmpdir / "t.jsonl")
            run("CSV download (generator)", csv_line_chunks(synthetic_csv_lines(n)), n, tmpdir / "t.csv")
            run("CSV rendering (generator)", csv_chunks(synthetic_rows(n)), n, tmpdir / "r.csv")


if __name__ == "__main__":
    main()

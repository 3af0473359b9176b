"""Benchmark: import a generated ~5 MB OpenAPI document; print the time and peak memory of each step.

    python bench/import.py               # ~5 MB, JSON then the same document as YAML
    python bench/import.py --mb 10       # a larger document
    python bench/import.py --json-only

The document comes from ``generation.pipeline.synth_openapi.openapi_document`` (allOf chains,
oneOf/anyOf unions, a recursive schema, arrays and maps of objects, read-only and write-only fields,
header/cookie parameters, JSON, form and multipart bodies, second success responses, error
responses), its descriptions padded to reach the size asked for. It goes through exactly what
``import_items`` does: ``items_import`` (decode, format detection, the OpenAPI reader with its
report, the checks of every API, and the write of the rows in one transaction) into a throwaway
SQLite database (tables made by ``migrate``). Each step prints its wall time, its CPU time and the
process's peak RSS since the step began (Linux VmHWM, reset before each step). Targets: ≤ 10 s and
≤ 300 MB for the whole import. The machine is shared: the load average is printed too.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.export import peak_rss_mb, reset_peak_rss, setup_django  # noqa: E402


def document(target_mb: float) -> tuple[dict, bytes]:
    from generation.pipeline.synth_openapi import openapi_document

    sample = len(json.dumps(openapi_document(40, seed=5, description_words=24), indent=1))
    operations = max(4, int(target_mb * 1e6 / sample * 40))
    doc = openapi_document(operations, seed=5, description_words=24)
    return doc, json.dumps(doc, indent=1).encode()


def step(label: str, fn):
    reset_peak_rss()
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"  {label:<34} {wall:6.2f} s wall  {cpu:6.2f} s CPU  peak RSS {peak_rss_mb():6.1f} MB", flush=True)
    return value, wall


def run(kind: str, raw: bytes, operations: int) -> None:
    from django.db import transaction

    from generation.imports import items_import, load_document
    from generation.models import Api

    print(f"{kind}: {len(raw) / 1e6:.2f} MB, {operations} operations, load {os.getloadavg()[0]:.1f}", flush=True)
    step("decode only (load_document)", lambda: load_document(raw))
    try:
        with transaction.atomic():
            result, wall = step("items_import (whole import)", lambda: items_import(
                raw=raw, fmt="auto", name=f"bench {kind}", source=f"bench.{kind.lower()}"))
            notes = [n for n in result.notes if n.startswith("not kept: ")]
            print(f"  created {result.created['APIs']} APIs, {Api.objects.count()} in the database; "
                  f"{len(notes)} report lines of what was not kept", flush=True)
            print(f"  whole import: {wall:.2f} s (target ≤ 10 s), {peak_rss_mb():.1f} MB peak RSS (target ≤ 300 MB)")
            raise _Rollback
    except _Rollback:
        pass


class _Rollback(Exception):
    """Leave the database as it was, so the YAML run imports the same document afresh."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=float, default=5.0, help="size of the generated document (JSON)")
    parser.add_argument("--json-only", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as var:
        setup_django(var)
        from django.core.management import call_command

        call_command("migrate", run_syncdb=True, verbosity=0)
        print(f"python {sys.version.split()[0]}, start RSS {peak_rss_mb():.1f} MB", flush=True)
        (doc, raw), _ = step("generate the document", lambda: document(args.mb))
        operations = sum(1 for item in doc["paths"].values() for k in item if k != "parameters")
        run("JSON", raw, operations)
        if not args.json_only:
            import yaml

            dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
            text, _ = step("write it as YAML", lambda: yaml.dump(doc, Dumper=dumper, sort_keys=False).encode())
            run("YAML", text, operations)


if __name__ == "__main__":
    main()

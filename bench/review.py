"""Benchmark: server time of "next item" (claim) plus the review page, 8 annotators at once.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/almita_bench .venv/bin/python bench/review.py
    DATABASE_URL=sqlite:////tmp/almita_bench.sqlite3 .venv/bin/python bench/review.py

Creates a throw-away database ``test_<name>`` (tables from the models, as the test suite does),
loads ``--lineages`` full lineages (procedure → flowgraph → conversation graph → conversations),
renders each flowgraph's SVG once (it is cached on the row, as in steady use), then starts
``--annotators`` processes. Each logs in and loops: POST claim-next, GET the review page it is
sent to, record a verdict through the service (so that the next claim-next is a real claim, not
the resumption of one the submit view already made), optionally "think" for a while. Each request
is timed around Django's full handler (middleware, view, template, database): server time
without the network. Target: p95 of claim-next + review page ≤ 50 ms, on Postgres and on SQLite.
bench/review_http.py measures the same path through the web server. Also printed: the Django
process's own CPU time per claim + page (budget 12 ms), which does not depend on how many other
processes share the machine; run with ``--think 2`` for annotators who read each item.

Django's test client keeps one database connection per process across requests (it does not
close connections when a request finishes), so the figures leave out connection set-up, as a
server with persistent connections (CONN_MAX_AGE > 0) would. A first round per process
(template compilation) is not counted.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key")
os.environ.setdefault("ALMITA_TESTING", "1")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/almita_bench")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def load(*, lineages: int, annotators: int, render_svg: bool = True, password: str = "unused-password-1") -> list[str]:
    """Fill the (empty) database: full lineages, their review items, annotator users; their names.

    ``render_svg``: draw each flowgraph's SVG now (cached on the row, as in steady use); without
    it the first view of each item runs Graphviz. bench/review_http.py loads its data with this.
    """
    from django.contrib.auth.models import User

    from almita_web.roles import ANNOTATOR, assign_roles
    from curation.reviews.lineage import items_sync
    from generation.drawings import graphs_draw
    from generation.models import Flowgraph
    from tests.curation.factories import build_lineage

    for i in range(lineages):
        build_lineage(conversations=2, seed=i,
                      validation=[{"rule": "FG-LEAF-END", "where": "N3", "message": "demo"}] if i % 5 == 0 else None)
    items_sync()
    if render_svg:  # what the worker does when graphs are stored
        graphs_draw("generation.flowgraph", list(Flowgraph.objects.values_list("pk", flat=True)))
    users = []
    for i in range(annotators):
        user = User.objects.create_user(f"bench{i}", password=password)
        assign_roles(user, [ANNOTATOR])
        users.append(user.username)
    return users


def describe_items() -> str:
    from curation.models import ReviewItem, ReviewStage

    return (f"{ReviewItem.objects.count()} review items "
            f"({ReviewItem.objects.filter(stage=ReviewStage.FLOWGRAPH).count()} flowgraphs)")


def worker(username: str, stage: str, max_items: int, think: float, queue: mp.Queue) -> None:
    import random

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    from curation.reviews import services

    user = User.objects.get(username=username)
    client = Client()
    client.force_login(user)
    client.get("/curation/queue/")  # warm-up: imports, URL resolver, template compilation
    rng = random.Random(username)
    timings: dict[str, list[float]] = {"claim": [], "page": [], "claim+page": [], "verdict": [], "cpu claim+page": []}
    first = True
    for _ in range(max_items + 1):
        c0 = time.process_time()
        t0 = time.perf_counter()
        resp = client.post(f"/curation/queue/{stage}/next/")
        t1 = time.perf_counter()
        location = resp.get("Location", "")
        if "/curation/items/" not in location:
            break
        page = client.get(location)
        t2 = time.perf_counter()
        c2 = time.process_time()
        assert page.status_code == 200 and b"<svg" in page.content, page.status_code
        # The verdict goes through the service, not the submit view: the view would already claim
        # the next item, and the next "next item" request would only resume that claim.
        services.review_submit(annotator=user, item_id=int(location.rstrip("/").rsplit("/", 1)[1]), verdict="accept")
        t3 = time.perf_counter()
        if think:
            time.sleep(rng.uniform(0, 2 * think))  # reading the item before the verdict
        if first:
            # The first round compiles the review templates in this process: warm-up, not counted.
            first = False
            continue
        timings["claim"].append((t1 - t0) * 1000)
        timings["page"].append((t2 - t1) * 1000)
        timings["claim+page"].append((t2 - t0) * 1000)
        timings["verdict"].append((t3 - t2) * 1000)
        timings["cpu claim+page"].append((c2 - c0) * 1000)
    queue.put(timings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=8)
    parser.add_argument("--lineages", type=int, default=150, help="flowgraphs to review (2 reviews each)")
    parser.add_argument("--per-annotator", type=int, default=30, help="items each annotator reviews")
    parser.add_argument("--think", type=float, default=0.0,
                        help="mean seconds an annotator spends on an item (0 = back-to-back requests)")
    parser.add_argument("--keep", action="store_true", help="keep the benchmark database")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection, connections

    settings.DATABASES["default"].setdefault("TEST", {})["MIGRATE"] = False
    db_name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        from curation.models import ReviewStage

        t = time.perf_counter()
        users = load(lineages=args.lineages, annotators=args.annotators)
        print(f"database {db_name}: {describe_items()} set up in {time.perf_counter() - t:.1f}s")
        connections.close_all()

        ctx = mp.get_context("fork")
        queue: mp.Queue = ctx.Queue()
        procs = [ctx.Process(target=worker, args=(u, ReviewStage.FLOWGRAPH, args.per_annotator, args.think, queue)) for u in users]
        t = time.perf_counter()
        for p in procs:
            p.start()
        results = [queue.get(timeout=600) for _ in procs]
        for p in procs:
            p.join(60)
        wall = time.perf_counter() - t
        merged: dict[str, list[float]] = {}
        for r in results:
            for k, v in r.items():
                merged.setdefault(k, []).extend(v)
        n = len(merged["claim"])
        print(f"{args.annotators} annotators, {n} items reviewed in {wall:.1f}s on {connection.vendor}, "
              f"{os.cpu_count()} CPUs, "
              f"think time {args.think}s, load average {os.getloadavg()[0]:.1f}")
        print("(cpu claim+page = the Django process's own CPU time for the two requests)")
        print(f"{'request':<12}{'n':>6}{'median ms':>12}{'p95 ms':>10}{'max ms':>10}")
        for key in ("claim", "page", "claim+page", "verdict", "cpu claim+page"):
            v = merged[key]
            print(f"{key:<12}{len(v):>6}{statistics.median(v):>12.1f}{percentile(v, 95):>10.1f}{max(v):>10.1f}")
        p95 = percentile(merged["claim+page"], 95)
        cpu = statistics.median(merged["cpu claim+page"])
        print(f"target p95(claim+page) <= 50 ms: {'met' if p95 <= 50 else 'NOT met'} ({p95:.1f} ms)")
        print(f"CPU budget median(cpu claim+page) <= 12 ms: {'met' if cpu <= 12 else 'NOT met'} ({cpu:.1f} ms)")
        if not args.think:
            # With no think time, 8 annotators keep every core busy: wall time measures the queue
            # in front of the CPU more than the request. Real annotators read each item for seconds.
            print(f"no think time: {args.annotators} processes on {os.cpu_count()} CPUs, a saturation test; "
                  "--think 2 gives the realistic p95")
    finally:
        connections.close_all()
        if not args.keep:
            connection.creation.destroy_test_db(db_name, verbosity=0)


if __name__ == "__main__":
    main()

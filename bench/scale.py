"""Benchmark: how curation pages and actions grow with the number of review items.

    .venv/bin/python bench/scale.py                       # SQLite (a throw-away file database)
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/almita_bench .venv/bin/python bench/scale.py

For each size (default 500, 5,000 and 50,000 review items, spread over the four stages, half of
them reviewed twice by 8 annotators, one in ten of those in disagreement) it times, in process
(Django's full handler for pages, the service for actions): claim-next in every stage (one open
item in ten assigned to someone, issue #30), claim-next of an annotator's assigned items, assigning
and releasing 1,000 items, the queue, progress, adjudication and agreement pages, the home pages,
the audit log and analytics, the verdict CSV (a streamed download: timed to its last byte, and
separately to its first chunk; its rows/s printed), and one adjudication (resolve
with its cascade). Prints median and p95 per operation and size, and the growth factor from the
smallest to the largest size. Targets at 50,000: every page and action ≤ 200 ms p95, claim-next
≤ 15 ms. On PostgreSQL the tables are ANALYZEd after the bulk load (as autovacuum soon would).

Real artifacts stand behind the items: 1.6 tests per review item (80,000 tests at 50,000 items)
in conversations of 7 tests, with their whole lineage (bench/scale_data.py: the row shapes of
bench/export.py), so every artifact has its review item and the rest of the items point at ids
with no artifact. That lets it time the review page of a conversation and an automatic release
of every test (with its query count), 3 runs each, the release deleted between runs.
Target: the release of 80,000 tests ≤ 4 s.

    .venv/bin/python bench/scale.py --sizes 50000 --only analytics
    .venv/bin/python bench/scale.py --projects 10 --sizes 5000   # issue #30: 10 projects, timed in one

times analytics alone (issue #31): the page from the figures the worker stored, its first view
after a curation change (an adjudication reversed), analytics.csv, and the worker's recompute of
the whole table.
"""
from __future__ import annotations

import argparse
import os
import statistics
from functools import partial
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
os.environ.setdefault("SECRET_KEY", "benchmark-only-secret-key")
os.environ.setdefault("ALMITA_TESTING", "1")
if "DATABASE_URL" not in os.environ:
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/scale.sqlite3"
# Queued tasks (analytics recomputes) and the file cache go to a throw-away var/, not the checkout's.
os.environ.setdefault("ALMITA_VAR_DIR", tempfile.mkdtemp(prefix="almita-bench-"))

ANNOTATORS = 8
TESTS_PER_ITEM = 1.6  # 80,000 tests at 50,000 review items
RELEASE_REPEAT = 3


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


def load(n: int, annotators, artifacts: dict[str, list[int]], offset: int = 0) -> None:
    from django.utils import timezone

    from curation.models import ItemState, Review, ReviewItem, ReviewStage

    stages = ReviewStage.values
    now = timezone.now()
    items = []
    taken = {stage: 0 for stage in stages}
    for i in range(n):
        stage = stages[i % 4]
        real = artifacts.get(stage, [])
        object_id = real[taken[stage]] if taken[stage] < len(real) else 1_000_000 + offset + i
        taken[stage] += 1
        reviewed = (i // 4) % 2 == 0
        disagree = reviewed and (i // 8) % 10 == 0
        state = ItemState.OPEN if not reviewed else (ItemState.DISAGREEMENT if disagree else ItemState.DECIDED)
        items.append(ReviewItem(stage=stage, object_id=object_id, required_reviews=2, state=state,
                                decision="accept" if state == ItemState.DECIDED else "",
                                decided_at=now if state == ItemState.DECIDED else None,
                                review_count=2 if reviewed else 0, has_warnings=i % 13 == 0))
    ReviewItem.objects.bulk_create(items, batch_size=2000)
    reviews = []
    for k, item in enumerate(ReviewItem.objects.filter(review_count=2).order_by("pk").iterator()):
        a, b = annotators[k % ANNOTATORS], annotators[(k + 1) % ANNOTATORS]
        second = "reject" if item.state == ItemState.DISAGREEMENT else "accept"
        reviews += [Review(item=item, annotator=a, verdict="accept", created_at=now, updated_at=now),
                    Review(item=item, annotator=b, verdict=second, reason_codes=["OTHER"], comment="x",
                           created_at=now, updated_at=now)]
    Review.objects.bulk_create(reviews, batch_size=2000)


def measure(n: int, repeat: int, only: str = "", projects: int = 1) -> dict[str, list[float]]:
    """Load and time. With `projects` > 1 (issue #30 item 6): that many projects of `n` items each,
    made one after another; everything is timed in the last one (its rows have the highest ids, the
    other projects' rows lie before them in every index) through its /p/<slug>/ URLs."""
    from django.contrib.auth.models import User

    from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, assign_roles
    from projects.context import default_project, use_project
    from projects.models import Project

    spaces = [default_project()] + [Project.objects.create(slug=f"bench{k}", name=f"Bench {k}")
                                    for k in range(1, projects)]
    annotators = [User.objects.create_user(f"scale{i}", password="x") for i in range(ANNOTATORS)]
    boss = User.objects.create_user("scale_boss", password="x")
    fresh = User.objects.create_user("scale_fresh", password="x")
    for space in spaces:  # the same people in every project: their roles are looked up per project
        for u in annotators + [fresh]:
            assign_roles(u, [ANNOTATOR], space)
        assign_roles(boss, [ADJUDICATOR, RESEARCHER, ADMIN], space)
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT / "bench"))
    from scale_data import build_artifacts

    n_tests = round(n * TESTS_PER_ITEM)
    for k, space in enumerate(spaces):
        with use_project(space):
            artifacts = build_artifacts(n_tests)
            load(n, annotators, artifacts, offset=k * n)  # items without an artifact: ids unique per project
    # The loader's rows (kept for the timed ops; no web process holds them) out of full collections (195-218 ms spikes).
    import gc
    gc.collect()
    gc.freeze()
    target = spaces[-1]
    prefix = target.prefix.rstrip("/") if projects > 1 else ""
    with use_project(target if projects > 1 else None):
        return _timed_ops(n, repeat, only, annotators, boss, fresh, artifacts, n_tests, prefix, t0, len(spaces))


def _timed_ops(n, repeat, only, annotators, boss, fresh, artifacts, n_tests, prefix, t0, projects):
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import Client

    from almita_web.roles import ANNOTATOR, assign_roles
    from curation.models import Assignment, Claim, ReviewItem, ReviewStage
    from curation.reviews import assignment, services

    if connection.vendor == "postgresql":  # what autovacuum would do soon after a bulk load
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"  loaded {projects} × {n} items and {n_tests} tests with their lineage in "
          f"{time.perf_counter() - t0:.1f} s" + (f"; timing in {prefix}/" if prefix else ""), flush=True)

    times: dict[str, list[float]] = {}
    if only == "release":
        release_runs(times, boss, n_tests)
        return times
    if only == "analytics":
        from django.test import Client

        boss_client = Client()
        boss_client.force_login(boss)
        analytics_runs(times, boss_client, boss, repeat)
        return times

    def timed(name: str, fn, before=None, after=None) -> None:  # before/after: untimed, each run
        for k in range(repeat + 1):  # the first run warms up (template compilation, caches)
            if before:
                before()
            start = time.perf_counter()
            fn()
            took = (time.perf_counter() - start) * 1000
            if after:
                after()
            if k:
                times.setdefault(name, []).append(took)

    # Issue #30: one open item in ten is assigned to one of the annotators (held places the queue
    # counts for everyone), and 100 open conversations to `assigned`, whose claim-next reads them first.
    assigned = User.objects.create_user("scale_assigned", password="x")
    assign_roles(assigned, [ANNOTATOR])
    open_ids = list(ReviewItem.objects.filter(review_count=0).order_by("pk").values_list("pk", flat=True))
    mine = list(ReviewItem.objects.filter(review_count=0, stage=ReviewStage.CONVERSATION).order_by("-pk")
                .values_list("pk", flat=True)[:100])
    Assignment.objects.bulk_create(
        [Assignment(item_id=pk, annotator=annotators[k % ANNOTATORS], assigned_by=boss)
         for k, pk in enumerate(open_ids[::10]) if pk not in mine]
        + [Assignment(item_id=pk, annotator=assigned, assigned_by=boss) for pk in mine], batch_size=2000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE curation_assignment")
    for stage in ReviewStage.values:
        def claim(stage=stage):
            item = services.review_claim_next(annotator=fresh, stage=stage)
            if item is not None:  # give the claim back so every round is a real claim
                Claim.objects.filter(item=item, annotator=fresh).delete()
        timed(f"claim-next {stage}", claim)

    def claim_assigned():
        item = services.review_claim_next(annotator=assigned, stage=ReviewStage.CONVERSATION)
        assert item is not None and item.pk in mine
        Claim.objects.filter(item=item, annotator=assigned).delete()
    timed("claim-next (assigned items)", claim_assigned)
    batch = [pk for pk in open_ids if pk not in set(mine)][1::10][:1000]

    # Two actions (two requests in the explorer), each timed alone: 1,000 items to 3 annotators, evenly.
    give = partial(assignment.assign, actor=boss, item_ids=batch, mode="even",
                   annotators=[a.username for a in annotators[:3]])
    take = partial(assignment.release, actor=boss, item_ids=batch)
    timed(f"assign {len(batch):,} items", give, after=take)
    timed(f"unassign {len(batch):,} items", take, before=give)
    class Checked(Client):  # every timed page must answer 200, or the figure means nothing
        def get(self, path, *args, **kwargs):
            resp = super().get(prefix + path, *args, **kwargs)
            assert resp.status_code == 200, (args, resp.status_code)
            return resp

    client = Checked()
    client.force_login(fresh)
    timed("queue page", lambda: client.get("/curation/queue/"))
    boss_client = Checked()
    boss_client.force_login(boss)
    timed("progress page", lambda: boss_client.get("/curation/progress/"))
    timed("adjudication page", lambda: boss_client.get("/curation/adjudication/"))
    timed("agreement page", lambda: boss_client.get("/curation/agreement/"))
    # Issue #31: each role's home, the audit log's first page, analytics' one table.
    timed("home page (annotator)", lambda: client.get("/"))
    timed("home page (admin)", lambda: boss_client.get("/"))
    timed("audit log page", lambda: boss_client.get("/curation/audit/"))
    timed("audit log page (filtered)", lambda: boss_client.get("/curation/audit/?action=verdict&stage=conversation"))
    analytics_runs(times, boss_client, boss, repeat)
    # Issue #31 item 3: the explorer with previews (all columns rendered), filtered, an annotator's,
    # and its side panel on a conversation.
    timed("explorer page (conversation)", lambda: boss_client.get("/curation/explore/conversation/"))
    timed("explorer page (flowgraph, open)", lambda: boss_client.get("/curation/explore/flowgraph/?state=open&sort=-id"))
    timed("explorer page (annotator)", lambda: client.get("/curation/explore/conversation/"))
    panel_item = ReviewItem.objects.filter(stage=ReviewStage.CONVERSATION, object_id__in=artifacts["conversation"][:1]).first() \
        if isinstance(artifacts, dict) and artifacts.get("conversation") else None
    if panel_item is not None:
        timed("explorer side panel (conversation)", lambda: boss_client.get(f"/curation/explore/item/{panel_item.pk}/panel/"))
    # A streamed download: timed to its last byte (and, separately, to its first chunk).
    url = "/curation/agreement/verdicts.csv?stage=conversation"
    timed("verdicts CSV (conversation)", lambda: b"".join(boss_client.get(url).streaming_content))
    timed("verdicts CSV first chunk", lambda: next(iter(boss_client.get(url).streaming_content)))
    VERDICT_ROWS[n] = b"".join(boss_client.get(url).streaming_content).count(b"\n") - 1
    # Resolve one disputed item, then keep reversing it: each call decides and runs the cascade.
    target = services.adjudication_queue().filter(stage=ReviewStage.CONVERSATION).first()
    flip = iter(["accept", "reject"] * (repeat + 1))
    timed("resolve / reverse (cascade)", lambda: services.item_resolve(
        adjudicator=boss, item_id=target.pk, decision=next(flip), note="bench"))
    # The review page of a conversation the annotator holds (the item points at a real one).
    held = services.review_claim_next(annotator=fresh, stage=ReviewStage.CONVERSATION)
    timed("review page (conversation)", lambda: client.get(f"/curation/items/{held.pk}/"))
    Claim.objects.filter(item=held, annotator=fresh).delete()
    # Issue #30: the other sections' first pages and the API's lists, inside the project.
    for label, url in (("generation dashboard", "/generation/"), ("datasets page", "/datasets/"),
                       ("evaluation page", "/evaluation/"), ("webhooks page", "/webhooks/"),
                       ("API reviews list", "/api/reviews/"), ("API tests list", "/api/tests/"),
                       ("API conversations list", "/api/conversations/")):
        timed(label, lambda url=url: boss_client.get(url))
    release_runs(times, boss, n_tests)
    return times


def analytics_runs(times: dict[str, list[float]], client, boss, repeat: int) -> None:
    """The analytics page from its stored figures, its first view after a curation change, the CSV,
    and (issue #31) the worker's recompute of the whole table."""
    from curation.agreement import precompute
    from curation.models import ReviewStage
    from curation.reviews import services

    url = "/curation/analytics/"

    def page():
        resp = client.get(url)
        assert resp.status_code == 200 and b'id="analytics-table"' in resp.content, resp.status_code
        return resp

    for _ in range(3):  # what the worker does, timed; then the page has figures to show
        start = time.perf_counter()
        precompute.recompute()
        times.setdefault("analytics recompute (worker)", []).append((time.perf_counter() - start) * 1000)
    page()  # warm-up
    for _ in range(repeat):
        start = time.perf_counter()
        page()
        times.setdefault("analytics page (stored/cached)", []).append((time.perf_counter() - start) * 1000)
    for _ in range(2):
        start = time.perf_counter()
        resp = client.get("/curation/analytics.csv")
        assert resp.status_code == 200
        times.setdefault("analytics.csv", []).append((time.perf_counter() - start) * 1000)
    # First view after a change: one adjudication reversed (its audit events and cascade), then the page.
    target = services.adjudication_queue().filter(stage=ReviewStage.CONVERSATION).first()
    flip = iter(["accept", "reject"] * (repeat + 1))
    stale = 0
    for _ in range(repeat):
        services.item_resolve(adjudicator=boss, item_id=target.pk, decision=next(flip), note="bench")
        start = time.perf_counter()
        body = page().content
        times.setdefault("analytics first view after a change", []).append((time.perf_counter() - start) * 1000)
        stale += b"Recomputing" in body
    assert stale, "the page did not say its figures were stale"


def release_runs(times: dict[str, list[float]], boss, n_tests: int) -> None:
    """An automatic release of every test, RELEASE_REPEAT times (deleted between runs, untimed)."""
    from django.db import connection

    from curation.models import Release, ReleaseKind
    from curation.releases.services import release_create

    name = f"release automatic ({n_tests} tests)"
    for _ in range(RELEASE_REPEAT):
        # Counted with an execute wrapper: CaptureQueriesContext would also render every statement's
        # SQL for its log (seconds for bulk INSERTs), which is not part of making a release.
        # Bulk writes that bypass Django's cursor (COPY, the background writer) are not counted.
        ctx: list[str] = []

        def count(execute, sql, params, many, context):
            ctx.append(sql)
            return execute(sql, params, many, context)

        with connection.execute_wrapper(count):
            start = time.perf_counter()
            release = release_create(name="bench", kind=ReleaseKind.AUTOMATIC, created_by=boss)
            elapsed = (time.perf_counter() - start) * 1000
        assert release.manifest["counts"]["tests"] == n_tests
        times.setdefault(name, []).append(elapsed)
        QUERIES[name] = len(ctx)
        Release.objects.filter(pk=release.pk).delete()


QUERIES: dict[str, int] = {}
VERDICT_ROWS: dict[int, int] = {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500,5000,50000")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--projects", type=int, default=1,
                        help="issue #30: N projects of each size, timed in the last (e.g. --projects 10 --sizes 5000)")
    parser.add_argument("--only", choices=["release", "analytics"], default="",
                        help="time only the automatic release or only analytics (page from stored figures, "
                             "first view after a change, CSV, the worker's recompute)")
    parser.add_argument("--keep-db", action="store_true",
                        help="leave the last size's database in place (to EXPLAIN against its data)")
    args = parser.parse_args()
    import django

    django.setup()
    from django.db import connection

    sizes = [int(s) for s in args.sizes.split(",")]
    results: dict[int, dict[str, list[float]]] = {}
    for n in sizes:
        connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
        print(f"{connection.vendor}: {n} review items", flush=True)
        try:
            results[n] = measure(n, args.repeat, args.only, args.projects)
        finally:
            if args.keep_db and n == sizes[-1]:
                print(f"kept database {connection.settings_dict['NAME']}", flush=True)
            else:
                connection.creation.destroy_test_db(connection.settings_dict["NAME"], verbosity=0)
    ops = list(results[sizes[0]])
    release_ops = {n: next((op for op in results[n] if op.startswith("release")), "") for n in sizes}
    head = f"{'operation':38}" + "".join(f"{f'{n} med':>12}{f'{n} p95':>12}" for n in sizes) + f"{'growth':>9}"
    print(f"\n{connection.vendor}, ms, {args.repeat} runs each (shared machine: compare within one run), "
          f"load {os.getloadavg()[0]:.1f}")
    print(head)
    for op in ops:
        row = f"{('release automatic' if op.startswith('release') else op):38}"
        for n in sizes:
            v = results[n][release_ops[n] if op.startswith("release") else op]
            row += f"{statistics.median(v):12.1f}{percentile(v, 95):12.1f}"
        if op.startswith("release"):
            first, last = (statistics.median(results[m][release_ops[m]]) for m in (sizes[0], sizes[-1]))
        else:
            first, last = statistics.median(results[sizes[0]][op]), statistics.median(results[sizes[-1]][op])
        row += f"{last / first if first else float('nan'):8.1f}×"
        print(row)
    n = sizes[-1]
    checked = [op for op in results[n] if not op.startswith("release") and "worker" not in op]
    over = [f"{op} {percentile(results[n][op], 95):.1f} ms" for op in checked
            if percentile(results[n][op], 95) > (15 if op.startswith("claim-next") else 200)]
    print(f"targets at {n} items" + (f" × {args.projects} projects (timed in the last)" if args.projects > 1 else "")
          + f": claim-next ≤ 15 ms p95, every page and action ≤ 200 ms p95: {len(checked) - len(over)}/{len(checked)} met"
          + (f"; over: {'; '.join(over)}" if over else ""))
    for n in [] if args.only else sizes:
        med = statistics.median(results[n]["verdicts CSV (conversation)"]) / 1000
        print(f"verdicts CSV at {n} items: {VERDICT_ROWS[n]:,} rows, {VERDICT_ROWS[n] / med:,.0f} rows/s")
    for n in sizes if args.only != "analytics" else []:
        op = release_ops[n]
        tests = int(op.split("(")[1].split()[0])
        med = statistics.median(results[n][op]) / 1000
        print(f"{op} at {n} items: {QUERIES[op]} queries, {tests / med:,.0f} tests/s (median of {RELEASE_REPEAT}), "
              f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

"""Agreement figures aggregated in the database: one grouped query for all stages at once.

The page used to read every review of every complete item into Python; at 50,000 items that
was most of a second. The coefficients only need counts, so the database returns a histogram of
items per stage by shape (reviews, rejects; for doubly reviewed items also the first and second
verdict and both annotators with theirs): κ over first/second reviews, percent agreement over all
review pairs of an item, α from the label compositions (curation.agreement.measures's count forms), and
per annotator pair a table of (label of the first, label of the second) → items both reviewed.
Items with three reviews or more (rare) add two small queries restricted to them.

Only complete items count (every required review in; they never reveal a verdict to someone
who could still review the item), and gold items are checks, not data (issue #16).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from math import comb
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from curation.agreement.measures import (
    cohen_kappa_table,
    krippendorff_alpha_compositions,
    percent_from_counts,
)
from curation.models import GoldItem, ItemState, Review, ReviewItem, ReviewStage, Verdict
from projects.context import current_project_id

COMPLETE_STATES = (ItemState.DISAGREEMENT, ItemState.DECIDED)
LABELS = (Verdict.ACCEPT.value, Verdict.REJECT.value)  # bit 0 and 1 below
assert set(LABELS) == set(Verdict.values)  # the check constraint keeps every verdict to these


def _where(stage: str | None, many: bool = False) -> tuple[str, list[Any]]:
    gold = GoldItem._meta.db_table
    sql = (f"i.state IN ({', '.join(['%s'] * len(COMPLETE_STATES))}) "
           f"AND NOT EXISTS (SELECT 1 FROM {gold} g WHERE g.item_id = i.id)")
    params: list[Any] = [str(s) for s in COMPLETE_STATES]
    if many:  # the histogram reads excluded items too, to count them; these only live ones
        sql += " AND i.excluded = %s"
        params.append(False)
    if stage:
        sql += " AND i.stage = %s"
        params.append(stage)
    if many:  # only items with three reviews or more
        sql += f" AND (SELECT COUNT(*) FROM {Review._meta.db_table} x WHERE x.item_id = i.id) > 2"
    pid = current_project_id()
    if pid is not None:  # the current project's items only (issue #30)
        sql += " AND i.project_id = %s"
        params.append(pid)
    return sql, params


def _histogram(stage: str | None) -> list[tuple]:
    """(stage, reviews m, rejects, first, second, lower annotator, higher annotator, excluded, items).

    Excluded items (a rejected or withheld ancestor) are out of curation: their reviews are not
    agreement data any more. They come back in their own rows (excluded true) so that the page can
    say how many were left out without a second query.

    One pass over the reviews, grouped per item then per shape. A verdict is one bit (reject),
    so MIN/MAX of 2·id + bit give the first and last review's verdict, and MIN/MAX of
    2·annotator + bit the two annotators of a doubly reviewed item with their verdicts: no window
    and no self-join. first/second and the annotators are only meaningful when m = 2 (left NULL
    otherwise: items with more reviews go through _many_first_second and _many_pairs).
    """
    review, item = Review._meta.db_table, ReviewItem._meta.db_table
    where, params = _where(stage)
    bit = "CASE WHEN r.verdict = %s THEN 1 ELSE 0 END"
    sql = f"""
        SELECT stage, m, rej, CASE WHEN m = 2 THEN f %% 2 END, CASE WHEN m = 2 THEN l %% 2 END,
               CASE WHEN m = 2 THEN lo END, CASE WHEN m = 2 THEN hi END, ex, COUNT(*)
        FROM (SELECT i.stage AS stage, i.excluded AS ex, COUNT(*) AS m, SUM({bit}) AS rej,
                     MIN(2 * r.id + {bit}) AS f, MAX(2 * r.id + {bit}) AS l,
                     MIN(2 * r.annotator_id + {bit}) AS lo, MAX(2 * r.annotator_id + {bit}) AS hi
              FROM {review} r JOIN {item} i ON i.id = r.item_id WHERE {where}
              GROUP BY r.item_id, i.stage, i.excluded) per_item
        GROUP BY stage, m, rej, CASE WHEN m = 2 THEN f %% 2 END, CASE WHEN m = 2 THEN l %% 2 END,
                 CASE WHEN m = 2 THEN lo END, CASE WHEN m = 2 THEN hi END, ex"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [LABELS[1]] * 5 + params)
        return cursor.fetchall()


def _many_first_second(stage: str | None) -> list[tuple]:
    """(stage, first verdict, second verdict, items) over items with three reviews or more."""
    review, item = Review._meta.db_table, ReviewItem._meta.db_table
    where, params = _where(stage, many=True)
    sql = f"""
        SELECT stage, v1, v2, COUNT(*) FROM (
            SELECT item_id, stage, MAX(CASE WHEN rn = 1 THEN verdict END) AS v1,
                   MAX(CASE WHEN rn = 2 THEN verdict END) AS v2
            FROM (SELECT r.item_id, i.stage, r.verdict,
                         ROW_NUMBER() OVER (PARTITION BY r.item_id ORDER BY r.id) AS rn
                  FROM {review} r JOIN {item} i ON i.id = r.item_id WHERE {where}) ranked
            GROUP BY item_id, stage) per_item
        GROUP BY stage, v1, v2"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _many_pairs(stage: str | None) -> list[tuple]:
    """(stage, annotator a, annotator b, a's verdict, b's verdict, items), a < b by id, over
    items with three reviews or more."""
    review, item = Review._meta.db_table, ReviewItem._meta.db_table
    where, params = _where(stage, many=True)
    sql = f"""
        SELECT i.stage, r1.annotator_id, r2.annotator_id, r1.verdict, r2.verdict, COUNT(*)
        FROM {review} r1
        JOIN {review} r2 ON r2.item_id = r1.item_id AND r2.annotator_id > r1.annotator_id
        JOIN {item} i ON i.id = r1.item_id
        WHERE {where}
        GROUP BY i.stage, r1.annotator_id, r2.annotator_id, r1.verdict, r2.verdict"""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _figures(pairs_table: Counter, agree: int, n_pairs: int, units: Counter) -> dict[str, Any]:
    return {
        "percent": percent_from_counts(agree, n_pairs).as_dict(),
        "kappa": cohen_kappa_table(pairs_table).as_dict(),
        "alpha": krippendorff_alpha_compositions(units).as_dict(),
    }


def agreement_by_stage(stage: str | None = None) -> dict[str, dict[str, Any]]:
    """{stage: figures} for every stage (or just `stage`), in one query (three with triple reviews).

    Overall, percent agreement counts every pair of reviews on the same item; κ treats each
    item's first and second review as two raters (the usual stand-in when raters rotate); α uses
    all reviews of every item. Per pair, all three use the items both annotators reviewed.
    """
    stages = [stage] if stage else list(ReviewStage.values)
    first_second: dict[str, Counter] = defaultdict(Counter)
    units: dict[str, Counter] = defaultdict(Counter)
    agree: Counter = Counter()
    n_pairs: Counter = Counter()
    items: Counter = Counter()
    reviews: Counter = Counter()
    by_id: dict[str, dict[tuple[int, int], Counter]] = defaultdict(lambda: defaultdict(Counter))
    many = False
    excluded: Counter = Counter()
    for st, m, rej, v1, v2, lo, hi, ex, n in _histogram(stage):
        m, rej, n = int(m), int(rej), int(n)
        if ex:
            excluded[st] += n
            continue
        acc = m - rej
        items[st] += n
        reviews[st] += n * m
        units[st][tuple((label, k) for label, k in zip(LABELS, (acc, rej)) if k)] += n
        agree[st] += n * (comb(acc, 2) + comb(rej, 2))
        n_pairs[st] += n * comb(m, 2)
        if m == 2:
            first_second[st][(LABELS[int(v1)], LABELS[int(v2)])] += n
            lo, hi = int(lo), int(hi)
            by_id[st][(lo // 2, hi // 2)][(LABELS[lo % 2], LABELS[hi % 2])] += n
        many = many or m > 2
    if many:
        for st, v1, v2, n in _many_first_second(stage):
            first_second[st][(v1, v2)] += int(n)
        for st, a, b, va, vb, n in _many_pairs(stage):
            by_id[st][(a, b)][(va, vb)] += int(n)

    ids = {x for tables in by_id.values() for pair in tables for x in pair}
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username")) if ids else {}
    # Each pair is listed with the annotators in name order, its table oriented the same way.
    by_pair: dict[str, dict[tuple[int, int], Counter]] = defaultdict(lambda: defaultdict(Counter))
    for st, tables in by_id.items():
        for (a, b), table in tables.items():
            if names.get(a, "") > names.get(b, ""):
                a, b, table = b, a, Counter({(y, x): v for (x, y), v in table.items()})
            by_pair[st][(a, b)].update(table)

    labels = dict(ReviewStage.choices)
    out = {}
    for st in stages:
        overall = _figures(first_second[st], agree[st], n_pairs[st], units[st])
        pairs = []
        for (a, b), table in sorted(by_pair[st].items(), key=lambda kv: (names.get(kv[0][0], ""),
                                                                          names.get(kv[0][1], ""))):
            n = sum(table.values())
            same = sum(v for (x, y), v in table.items() if x == y)
            comps = Counter()
            for (x, y), v in table.items():
                comps[tuple(sorted(Counter((x, y)).items()))] += v
            pairs.append({"a": names.get(a, str(a)), "b": names.get(b, str(b)), "n": n, "disagreements": n - same,
                          **_figures(table, same, n, comps)})
        out[st] = {"stage": st, "label": labels[st], "items": items[st], "reviews": reviews[st],
                   "excluded": excluded.get(st, 0),
                   "overall": overall, "pairs": pairs}
    return out


def agreement_for_stage(stage: str) -> dict[str, Any]:
    """Agreement on `stage` overall and per annotator pair, with the counts behind every figure."""
    return agreement_by_stage(stage)[stage]

"""Agreement figures aggregated in the database: two grouped queries for all stages at once.

The page used to read every review of every complete item into Python; at 50,000 items that
was most of a second. The coefficients only need counts, so the database returns them:

* per stage, a histogram of items by (first label, second label, accepts, rejects): κ over
  first/second reviews, percent agreement over all review pairs of an item, and α from the
  label compositions (curation.agreement's count forms);
* per stage and annotator pair (the pair ordered by username, as the page lists it), a table of
  (label of the first, label of the second) → items both reviewed.

Only complete items count (every required review in; they never reveal a verdict to someone
who could still review the item), and gold items are checks, not data (issue #16).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from math import comb
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection

from curation.agreement import (
    cohen_kappa_table, krippendorff_alpha_compositions, percent_from_counts,
)
from curation.annotation_models import GoldItem
from curation.models import ItemState, Review, ReviewItem, ReviewStage, Verdict

COMPLETE_STATES = (ItemState.DISAGREEMENT, ItemState.DECIDED)
LABELS = tuple(Verdict.values)  # the check constraint keeps every verdict to these


def _where(stage: str | None) -> tuple[str, list[Any]]:
    gold = GoldItem._meta.db_table
    sql = (f"i.state IN ({', '.join(['%s'] * len(COMPLETE_STATES))}) "
           f"AND NOT EXISTS (SELECT 1 FROM {gold} g WHERE g.item_id = i.id)")
    params: list[Any] = [str(s) for s in COMPLETE_STATES]
    if stage:
        sql += " AND i.stage = %s"
        params.append(stage)
    return sql, params


def _item_histogram(stage: str | None) -> list[tuple]:
    """(stage, first verdict, second verdict, n per label..., items) over complete items."""
    review, item = Review._meta.db_table, ReviewItem._meta.db_table
    where, params = _where(stage)
    per_label = ", ".join(f"SUM(CASE WHEN verdict = %s THEN 1 ELSE 0 END) AS n{k}" for k in range(len(LABELS)))
    label_cols = ", ".join(f"n{k}" for k in range(len(LABELS)))
    sql = f"""
        SELECT stage, v1, v2, {label_cols}, COUNT(*) FROM (
            SELECT item_id, stage,
                   MAX(CASE WHEN rn = 1 THEN verdict END) AS v1,
                   MAX(CASE WHEN rn = 2 THEN verdict END) AS v2, {per_label}
            FROM (SELECT r.item_id, i.stage, r.verdict,
                         ROW_NUMBER() OVER (PARTITION BY r.item_id ORDER BY r.id) AS rn
                  FROM {review} r JOIN {item} i ON i.id = r.item_id WHERE {where}) ranked
            GROUP BY item_id, stage) per_item
        GROUP BY stage, v1, v2, {label_cols}"""
    with connection.cursor() as cursor:
        cursor.execute(sql, [*LABELS, *params])
        return cursor.fetchall()


def _pair_tables(stage: str | None) -> list[tuple]:
    """(stage, annotator a, annotator b, a's verdict, b's verdict, items), a's username < b's."""
    review, item, user = Review._meta.db_table, ReviewItem._meta.db_table, get_user_model()._meta.db_table
    where, params = _where(stage)
    sql = f"""
        SELECT i.stage, r1.annotator_id, r2.annotator_id, r1.verdict, r2.verdict, COUNT(*)
        FROM {review} r1
        JOIN {review} r2 ON r2.item_id = r1.item_id AND r2.id <> r1.id
        JOIN {user} u1 ON u1.id = r1.annotator_id
        JOIN {user} u2 ON u2.id = r2.annotator_id AND u1.username < u2.username
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
    """{stage: figures} for every stage (or just `stage`), in two queries.

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
    for row in _item_histogram(stage):
        st, v1, v2, per, n = row[0], row[1], row[2], [int(x) for x in row[3:-1]], int(row[-1])
        m = sum(per)
        items[st] += n
        reviews[st] += n * m
        if v2 is not None:
            first_second[st][(v1, v2)] += n
        units[st][tuple((label, k) for label, k in zip(LABELS, per) if k)] += n
        agree[st] += n * sum(comb(k, 2) for k in per)
        n_pairs[st] += n * comb(m, 2)

    by_pair: dict[str, dict[tuple[int, int], Counter]] = defaultdict(lambda: defaultdict(Counter))
    for st, a, b, va, vb, n in _pair_tables(stage):
        by_pair[st][(a, b)][(va, vb)] += int(n)
    ids = {x for tables in by_pair.values() for pair in tables for x in pair}
    names = dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username")) if ids else {}

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
            pairs.append({"a": names.get(a, str(a)), "b": names.get(b, str(b)), "n": n,
                          **_figures(table, same, n, comps)})
        out[st] = {"stage": st, "label": labels[st], "items": items[st], "reviews": reviews[st],
                   "overall": overall, "pairs": pairs}
    return out


def agreement_for_stage(stage: str) -> dict[str, Any]:
    """Agreement on `stage` overall and per annotator pair, with the counts behind every figure."""
    return agreement_by_stage(stage)[stage]

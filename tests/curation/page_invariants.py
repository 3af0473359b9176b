"""What the pages show, checked against the effective state recomputed from the raw rows.

For the state machine (tests/curation/reviews/test_state_machine.py): every badge, list and count
on the explorer, adjudication, progress, agreement and queue pages equals what the rows say; and
an annotator's pages read the same whether the others agreed with them or not (``blind_pair``).
Pages are read through Django's test client in the machine's own transaction.
"""
from __future__ import annotations

import re
from collections import Counter

from django.db import transaction
from django.db.models import Q
from django.test import Client
from django.utils import timezone

from curation.models import (ArtifactVersion, CorrectionMark, GoldItem, ItemState, Resolution, Review, ReviewItem,
                             ReviewStage, Verdict)
from curation.reviews import queue, services
from curation.reviews.state import BLIND_LABELS, Effective, effective_of

ROW = re.compile(r'<tr data-item="(\d+)">.*?data-state="(\w+)"[^>]*>([^<]*)</span>', re.S)
RECENT = re.compile(r'<li data-item="(\d+)">.*?data-state="(\w+)"', re.S)
SKIPPED: Counter = Counter()  # why candidate items were not compared (reported by the state machine)
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*"|(csrf-token" content=")[^"]*"')


def _html(client: Client, url: str) -> str:
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    return resp.content.decode()


def _rows(html: str) -> dict[int, tuple[str, str]]:
    return {int(pk): (state, label.strip()) for pk, state, label in ROW.findall(html)}


def check_staff_pages(staff: Client, stage: str, state: str) -> None:
    """The adjudicator's explorer (one stage, unfiltered and filtered by `state`), adjudication
    list, progress funnel, agreement counts and one adjudication page, against the rows."""
    items = {i.pk: i for i in ReviewItem.objects.all()}
    mine = {pk for pk, i in items.items() if i.stage == stage}
    shown = _rows(_html(staff, f"/curation/explore/{stage}/"))
    assert set(shown) == mine or len(shown) == 50, (stage, set(shown) ^ mine)
    for pk, (st, _label) in shown.items():
        assert st == effective_of(items[pk]), (pk, st, effective_of(items[pk]))
    filtered = _rows(_html(staff, f"/curation/explore/{stage}/?state={state}"))
    key = {"open": Effective.OPEN, "disagreement": Effective.AWAITING}.get(state, state)
    assert set(filtered) == {pk for pk in mine if effective_of(items[pk]) == key}, (stage, state)

    page = _html(staff, "/curation/adjudication/")
    listed = {int(x) for x in re.findall(r'<tr data-item="(\d+)">', page)}
    assert listed == {pk for pk, i in items.items() if effective_of(i) == Effective.AWAITING}
    for pk, st in RECENT.findall(page):
        assert st == effective_of(items[int(pk)]), (pk, st)

    funnel = _html(staff, "/curation/progress/")
    for s in ReviewStage.values:
        cells = re.search(rf'<tr data-stage="{s}"><th>[^<]*</th>((?:<td>\d+</td>){{7}})', funnel)
        got = [int(x) for x in re.findall(r"<td>(\d+)</td>", cells.group(1))]
        c = Counter(effective_of(i) for i in items.values() if i.stage == s)
        open_ = [i for i in items.values() if i.stage == s and effective_of(i) == Effective.OPEN]
        want = [sum(c.values()), sum(1 for i in open_ if not i.review_count), sum(1 for i in open_ if i.review_count),
                c[Effective.AWAITING], c[Effective.ACCEPTED], c[Effective.REJECTED], c[Effective.EXCLUDED]]
        assert got == want, (s, got, want)

    agreement = _html(staff, "/curation/agreement/")
    gold = set(GoldItem.objects.values_list("item_id", flat=True))
    complete = [i for i in items.values() if i.stage == stage and i.state != ItemState.OPEN and i.pk not in gold]
    n = int(re.search(rf'id="agreement-{stage}">\s*<h2>[^<]*<span class="muted">— (\d+) items', agreement).group(1))
    assert n == sum(1 for i in complete if not i.excluded)
    note = re.search(rf'id="excluded-{stage}">(\d+) ', agreement)
    assert (int(note.group(1)) if note else 0) == sum(1 for i in complete if i.excluded)

    decided = [i for i in items.values() if i.stage == stage and i.state != ItemState.OPEN]
    if decided:
        item = decided[0]
        page = _html(staff, f"/curation/adjudication/{item.pk}/")
        badge = re.search(r'id="item-state"[^>]*>([^<]*)<', page).group(1)
        assert badge.startswith(Effective(effective_of(item)).label.split(" (")[0]), (badge, effective_of(item))
        assert ('id="item-decision"' in page) == (effective_of(item) in (Effective.ACCEPTED, Effective.REJECTED))


def check_annotator_pages(client: Client, user) -> None:
    """The annotator's explorer lists exactly their reviewed items, each with its blind label,
    their own verdict and nobody else's; the queue page's numbers are the queue's."""
    items = {i.pk: i for i in ReviewItem.objects.all()}
    reviewed = set(Review.objects.filter(annotator=user).values_list("item_id", flat=True))
    for stage in ReviewStage.values:
        html = _html(client, f"/curation/explore/{stage}/")
        rows = _rows(html)
        assert set(rows) == {pk for pk in reviewed if items[pk].stage == stage}, stage
        for pk, (_st, label) in rows.items():
            assert label == BLIND_LABELS[effective_of(items[pk])], (pk, label)
        assert html.count('title="you"') == len(rows)  # one verdict per row: their own
    page = _html(client, "/curation/queue/")
    now = timezone.now()
    for stage in ReviewStage.values:
        n = queue.count_candidates(stage=stage, annotator_id=user.pk, now=now, cap=101)
        shown = re.search(rf'<tr data-stage="{stage}"><th>[^<]*</th><td>([^<]*)</td>', page).group(1)
        assert shown == ("100+" if n > 100 else str(n)), (stage, shown, n)
    check_correction_notices(client, user, page)


def _notice_due(item: ReviewItem) -> tuple[int, set[str]]:
    """(the current version, 0 when never corrected; the kinds of marks on it), from the rows."""
    last = ArtifactVersion.objects.filter(stage=item.stage, object_id=item.object_id).order_by("-number").first()
    kinds = set(CorrectionMark.objects.filter(stage=item.stage, object_id=item.object_id).values_list("kind", flat=True))
    return (last.number if last else 0), kinds


def check_correction_notices(client: Client, user, queue_page: str) -> None:
    """Every item the annotator holds shows, on the queue and on its review page, the corrections
    the rows record (its version, the marks above it) and no adjudicator's note."""
    notes = set(ArtifactVersion.objects.exclude(note="").values_list("note", flat=True))
    held = services.held_claims(annotator=user)
    due = {c.item_id: _notice_due(c.item) for c in held}
    assert queue_page.count('class="correction-held"') == sum(1 for v, k in due.values() if v or k), due
    for claim in held[:2]:
        version, kinds = due[claim.item_id]
        page = _html(client, f"/curation/items/{claim.item_id}/")
        notice = re.search(r'id="correction-notice" data-version="(\d+)"', page)
        assert bool(notice) == bool(version or kinds), (claim.item_id, version, kinds)
        if version:
            assert int(notice.group(1)) == version and f"you review version {version}" in page
        assert set(re.findall(r'class="correction-mark" data-mark="(\w+)"', page)) == kinds
        assert not any(n in page for n in notes if len(n) > 8)


def _below(user, item: ReviewItem, limit: int = 3) -> list[int]:
    """Items below `item` that `user` holds or reviewed (their review pages show the lineage)."""
    from curation.reviews.corrections import descendants

    q = Q(pk__in=[])
    for stage, oid in descendants(item.stage, item.object_id):
        q |= Q(stage=stage, object_id=oid)
    mine = Q(reviews__annotator=user) | Q(claims__annotator=user)
    return list(ReviewItem.objects.filter(q).filter(mine).order_by("pk").values_list("pk", flat=True).distinct()[:limit])


def _annotator_view(client: Client, item: ReviewItem, below: list[int]) -> list[str]:
    urls = [f"/curation/explore/{s}/" for s in ReviewStage.values]
    urls += [f"/curation/explore/{item.stage}/?state={st}" for st in ("waiting", "complete", "excluded")]
    urls += [f"/curation/explore/{item.stage}/?sort={s}" for s in ("-id", "-reviews", "warnings")]
    urls += ["/curation/queue/", f"/curation/items/{item.pk}/", "/curation/my-verdicts/", "/", "/curation/notifications/"]
    urls += [f"/curation/items/{pk}/" for pk in below]
    return [CSRF.sub(lambda m: (m.group(1) or m.group(2)) + '"', _html(client, u)) for u in urls]


def blind_pair(client: Client, user, item: ReviewItem) -> bool:
    """`user`'s pages with the item as it is, and with the other reviews turned so that an agreement
    becomes a disagreement (or back): equal, page by page. Returns False when the item does not
    qualify (not complete, decided by an adjudicator, excluded, or a rejection whose cascade
    would exclude reviewable descendants: those leave the queue, as they must)."""
    reviews = list(Review.objects.filter(item=item).order_by("id"))
    own = next((r for r in reviews if r.annotator_id == user.pk), None)
    others = [r for r in reviews if r.annotator_id != user.pk]
    if own is None or not others or item.excluded or item.state == ItemState.OPEN:
        SKIPPED["not complete, excluded or alone"] += 1
        return False
    if Resolution.objects.filter(item=item).exists():
        SKIPPED["adjudicated"] += 1
        return False  # an adjudicator's call (a decision or a reversal), out of this comparison
    agreed = item.state == ItemState.DECIDED and all(r.verdict == own.verdict for r in others)
    if item.state == ItemState.DECIDED and not agreed:
        SKIPPED["decided disagreement"] += 1
        return False  # a decided disagreement: the adjudicator's call, out of this comparison
    if own.verdict == Verdict.REJECT and item.stage != ReviewStage.CONVERSATION:
        SKIPPED["rejection above the leaves"] += 1
        return False
    below = _below(user, item)
    before = _annotator_view(client, item, below)
    sid = transaction.savepoint()
    try:
        Resolution._base_manager.filter(item=item).delete()  # the item is the project's (a scoped read)
        if agreed:  # → one other reviewer disagrees, the item awaits adjudication
            Review.objects.filter(pk=others[0].pk).update(
                verdict=Verdict.ACCEPT if own.verdict == Verdict.REJECT else Verdict.REJECT)
            ReviewItem.objects.filter(pk=item.pk).update(state=ItemState.DISAGREEMENT, decision="", decided_at=None)
        else:  # → everyone agrees with the user, decided at once
            Review.objects.filter(pk__in=[r.pk for r in others]).update(verdict=own.verdict)
            ReviewItem.objects.filter(pk=item.pk).update(state=ItemState.DECIDED, decision=own.verdict,
                                                         decided_at=timezone.now())
        services.cascade_apply(ReviewItem.objects.get(pk=item.pk))
        after = _annotator_view(client, item, below)
    finally:
        transaction.savepoint_rollback(sid)
    for b, a in zip(before, after):
        assert b == a, _first_difference(b, a)
    return True


def _first_difference(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"pages differ at {i}: {a[max(0, i - 120):i + 80]!r} vs {b[max(0, i - 120):i + 80]!r}"

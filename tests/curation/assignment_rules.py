"""Assignment rules and invariants for the curation state machine (issue #30 item 4), as a mixin of
tests/curation/reviews/test_state_machine.py's Curation machine.

Rules: assign open items of a stage (named, even or by percentage) to some of the annotators;
release some items' assignments; and read an annotator's pages blind (``blind_pair``) while they
hold assignments. Invariants, from the raw rows after every step:

* capacity: reviews + holders (active claims and holding assignments, each annotator once) never
  exceed an item's required reviews, so an item whose places its assignees hold is claimed by
  them only;
* the queue offers nobody an item whose places others hold, and offers an annotator their own
  claimable assigned items first.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from curation.models import Assignment, Claim, ItemState, ReviewItem, ReviewStage
from curation.models.assignments import holding_q
from curation.reviews import assignment, queue
from tests.curation.page_invariants import blind_pair

TALLY: Counter = Counter()
REFUSALS = ("needs", "already reviewed", "place(s) left", "only open items", "Select at least one item")


def holders_by_item() -> dict[int, set[int]]:
    now = timezone.now()
    holders: dict[int, set[int]] = defaultdict(set)
    for item_id, user_id in Claim.objects.filter(expires_at__gt=now).values_list("item_id", "annotator_id"):
        holders[item_id].add(user_id)
    for item_id, user_id in Assignment.objects.filter(holding_q()).values_list("item_id", "annotator_id"):
        holders[item_id].add(user_id)
    return holders


class AssignmentRules:
    """Mixed into the Curation state machine (which provides annotators, adjudicator, admin, _user,
    _client)."""

    @rule(stage=st.sampled_from(ReviewStage.values), picks=st.lists(st.integers(0, 50), min_size=1, max_size=4),
          mode=st.sampled_from(["named", "even", "percent"]), who=st.lists(st.integers(0, 3), min_size=1, max_size=3),
          by_admin=st.booleans())
    def assign(self, stage: str, picks: list[int], mode: str, who: list[int], by_admin: bool) -> None:
        pool = list(ReviewItem.objects.filter(stage=stage, state=ItemState.OPEN, excluded=False).order_by("pk"))
        if not pool:
            return
        chosen = sorted({pool[p % len(pool)].pk for p in picks})
        names = list(dict.fromkeys(self._user(w).username for w in who))
        shares = ()
        if mode == "percent":
            pcts = [100 // len(names)] * len(names)
            pcts[0] += 100 - sum(pcts)
            shares = list(zip(names, pcts, strict=True))
        try:
            result = assignment.assign(actor=self.admin if by_admin else self.adjudicator, item_ids=chosen, mode=mode,
                                       annotators=names, shares=shares, stage=stage)
        except assignment.AssignError as exc:
            assert mode == "named" and any(r in str(exc) for r in REFUSALS), exc
            TALLY["assign refused"] += 1
            return
        TALLY["assignments made"] += result["assignments"]
        assert result["items"] + result["unchanged"] == len(chosen)

    @rule(picks=st.lists(st.integers(0, 50), min_size=1, max_size=3), who=st.integers(0, 4))
    def release(self, picks: list[int], who: int) -> None:
        pool = list(Assignment.objects.filter(active=True).order_by("pk").values_list("item_id", flat=True))
        if not pool:
            return
        chosen = sorted({pool[p % len(pool)] for p in picks})
        names = [self._user(who).username] if who < len(self.annotators) else []
        before = Assignment.objects.filter(active=True).count()
        result = assignment.release(actor=self.adjudicator, item_ids=chosen, annotators=names)
        assert Assignment.objects.filter(active=True).count() == before - result["released"]
        TALLY["assignments released"] += result["released"]

    @rule(who=st.integers(0, 3), pick=st.integers(0, 50))
    def blind_while_assigned(self, who: int, pick: int) -> None:
        """The annotator's pages, with assignments of theirs shown, still read the same whether the
        others agreed with them or not."""
        user = self._user(who)
        if not Assignment.objects.filter(active=True, annotator=user).exists():
            return
        candidates = list(ReviewItem.objects.filter(reviews__annotator=user).exclude(state=ItemState.OPEN).order_by("pk"))
        for k in range(len(candidates)):
            if blind_pair(self._client(user), user, candidates[(pick + k) % len(candidates)]):
                TALLY["blind pairs with assignments"] += 1
                return

    @invariant()
    def assignments_hold(self) -> None:
        if not self.annotators:
            return
        now = timezone.now()
        holders = holders_by_item()
        items = {i.pk: i for i in ReviewItem.objects.all()}
        for item_id, who in holders.items():
            item = items[item_id]
            assert item.review_count + len(who) <= item.required_reviews, (item, item.review_count, who)
        assigned: dict[int, set[int]] = defaultdict(set)
        for item_id, user_id in Assignment.objects.filter(holding_q()).values_list("item_id", "annotator_id"):
            assigned[user_id].add(item_id)
        for user in self.annotators:
            for stage in ReviewStage.values:
                offered = [i.pk for i in queue.candidates(stage=stage, annotator_id=user.pk, now=now)]
                for pk in offered:  # never an item whose places the others hold
                    item = items[pk]
                    assert item.review_count + len(holders[pk] - {user.pk}) < item.required_reviews, (item, user)
                mine = [pk for pk in offered if pk in assigned[user.pk]]
                if mine:  # claim-next would take one of these first
                    first = queue.first_candidate(stage=stage, annotator_id=user.pk, now=now, assigned_only=True)
                    assert first is not None and first.pk in mine, (user, stage, mine)
                    TALLY["assigned first checked"] += 1

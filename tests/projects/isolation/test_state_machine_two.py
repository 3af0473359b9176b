"""(e) The curation state machine (tests/curation/reviews/test_state_machine.py), its rules run in
project B while project A holds its own items, verdicts, claims and gold; the people overlap (every
annotator of B annotates in A too, B's adjudicator and admin annotate or adjudicate in A).

After every step, besides the invariants of the original machine (checked in B), A's counts and
A's pages must be exactly what they were before B's first step: nothing B's people do in B moves
anything in A.
"""
from __future__ import annotations

import os

import pytest
from django.core.cache import cache
from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, run_state_machine_as_test

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, assign_roles
from curation.models import AuditEvent, Claim, GoldItem, GuidelineVersion, Release, Review, ReviewItem, ReviewStage
from curation.reviews import services
from generation.models import GenerationJob, Test
from projects.context import reset_current, set_current, use_project
from projects.models import Project
from tests.conftest import PASSWORD
from tests.curation.factories import build_lineage
from tests.curation.reviews.test_state_machine import TALLY, Curation
from tests.projects.isolation.routes import mask

A_PAGES = ["/p/alpha/", "/p/alpha/curation/queue/", "/p/alpha/curation/progress/", "/p/alpha/curation/adjudication/",
           "/p/alpha/curation/explore/conversation/", "/p/alpha/curation/agreement/verdicts.csv",
           "/p/alpha/api/reviews/", "/p/alpha/curation/gold/"]


class InB(Client):
    """A client whose unprefixed paths go to project B (the original rules' pages use reverse())."""

    def generic(self, method, path, *args, **kwargs):
        if not path.startswith("/p/"):
            path = "/p/beta" + path
        return super().generic(method, path, *args, **kwargs)


def _user(name: str):
    from django.contrib.auth.models import User

    return User.objects.create_user(name, password=PASSWORD)


def _where(key, before, after) -> str:
    if not isinstance(before, tuple):
        return f"{key}: {before!r} → {after!r}"[:600]
    a, b = before[1], after[1]
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{key}: {before[0]}→{after[0]} at byte {at}: {a[max(0, at - 80):at + 80]!r} → {b[max(0, at - 80):at + 80]!r}"


class TwoProjects(Curation):
    def teardown(self) -> None:
        if getattr(self, "_token", None) is not None:
            reset_current(self._token)
        super().teardown()
        cache.clear()

    @initialize(n=st.integers(2, 4), required=st.sampled_from([2, 2, 1, 3]), lineages=st.integers(1, 2))
    def setup(self, n: int, required: int, lineages: int) -> None:
        TALLY["runs (two projects)"] += 1
        self.a = Project.objects.create(slug="alpha", name="Alpha")
        self.b = Project.objects.create(slug="beta", name="Beta")
        self.annotators = [_user(f"sm2_annotator_{i}") for i in range(n)]
        self.adjudicator, self.admin = _user("sm2_adjudicator"), _user("sm2_admin")
        for user in self.annotators:
            assign_roles(user, [ANNOTATOR], self.a)
            assign_roles(user, [ANNOTATOR], self.b)
        assign_roles(self.adjudicator, [ADJUDICATOR], self.b)
        assign_roles(self.adjudicator, [ANNOTATOR], self.a)
        assign_roles(self.admin, [ADMIN], self.b)
        assign_roles(self.admin, [ADJUDICATOR, ANNOTATOR], self.a)
        self.clients = {}
        with use_project(self.a):  # A: items, verdicts, an open claim
            build_lineage(conversations=2, seed=5)
            services.items_sync()
            for user in self.annotators[:2]:
                item = services.review_claim_next(annotator=user, stage=ReviewStage.PROCEDURE)
                services.review_submit(annotator=user, item_id=item.pk, verdict="accept")
            services.review_claim_next(annotator=self.annotators[0], stage=ReviewStage.FLOWGRAPH)
        self._token = set_current(self.b)  # every rule of the original machine now runs in B
        for i in range(lineages):
            build_lineage(conversations=2, seed=i)
        services.items_sync()
        ReviewItem.objects.update(required_reviews=min(required, n))
        self.a_clients = {}
        for user in (self.annotators[0], self.adjudicator, self.admin):
            self.a_clients[user.username] = Client()
            self.a_clients[user.username].force_login(user)
        self.a_before = self._a_state()

    def _client(self, user) -> Client:
        if user.pk not in self.clients:
            self.clients[user.pk] = InB()
            self.clients[user.pk].force_login(user)
        return self.clients[user.pk]

    def _a_state(self) -> dict:
        with use_project(self.a):
            items = ReviewItem.objects.all()
            state = {
                "items": sorted(items.values_list("pk", "stage", "state", "decision", "excluded", "review_count",
                                                  "required_reviews")),
                "reviews": sorted(Review.objects.filter(item__in=items).values_list("pk", "verdict", "annotator_id")),
                "claims": sorted(Claim.objects.filter(item__in=items).values_list("pk", "annotator_id", "expires_at")),
                "audit": AuditEvent.objects.count(), "gold": GoldItem.objects.count(),
                "guidelines": GuidelineVersion.objects.count(), "releases": Release.objects.count(),
                "jobs": GenerationJob.objects.count(), "tests": sorted(Test.objects.values_list("pk", "status")),
            }
        for who, client in self.a_clients.items():
            for url in A_PAGES:
                response = client.get(url)
                content = b"".join(response.streaming_content) if response.streaming else response.content
                state[f"{who} {url}"] = (response.status_code, mask(content))
        return state

    @invariant()
    def a_unchanged(self) -> None:
        if not getattr(self, "a_before", None):
            return
        TALLY["A compared"] += 1
        now = self._a_state()
        changed = [_where(k, self.a_before[k], now[k]) for k in self.a_before if self.a_before[k] != now[k]]
        assert not changed, "B's step changed A:\n" + "\n".join(changed)


@pytest.mark.django_db
def test_curation_state_machine_over_two_projects() -> None:
    run_state_machine_as_test(
        TwoProjects,
        settings=settings(max_examples=int(os.environ.get("SM2_EXAMPLES", 8)), stateful_step_count=25,
                          deadline=None, suppress_health_check=list(HealthCheck)),
    )
    print(dict(TALLY))
    assert TALLY["A compared"] and TALLY["pages checked"], TALLY

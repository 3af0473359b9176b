"""Two projects with overlapping people and data of every kind, for the isolation tests.

Project A ("alpha") and project B ("beta") each get a lineage (intent → … → tests), their review
items with claims, verdicts, a skip, a disagreement resolved by an adjudicator, a comment and a
notification, a guideline version, a gold item, a demo job, a release, an agent with an
evaluation run and a session run, and a webhook with a delivery. Every text of B carries
MARK_B, so a page of A that shows anything of B is caught by a plain substring search.

Ids: before A's rows are made every table's next id is raised to BASE_A, before B's to BASE_B
(`lift_ids`). So the first row of *every* model of A has the id BASE_A and of B the id BASE_B:
one URL per route, filled with BASE_B, names B's row of whatever model the route takes, and an
id of B can never be an id of A by coincidence (a 200 there is a leak, not a collision).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth.models import User
from django.db import connection
from django.utils import timezone

from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, assign_roles
from projects.context import use_project
from projects.models import Project
from tests.conftest import PASSWORD

BASE_A = 50_000
BASE_B = 900_000
MARK_A = "alphamark"
MARK_B = "betamark"
APPS = ("generation", "curation", "evaluation", "webhooks")
# The owning models of issue 30 item 1 (children reach their project through these).
OWNING = ["generation.Intent", "generation.Procedure", "generation.Api", "generation.Flowgraph",
          "generation.ConversationGraph", "generation.SampledPath", "generation.Conversation", "generation.Test",
          "generation.GenerationJob", "curation.ReviewItem", "curation.GuidelineVersion", "curation.GoldItem",
          "curation.Release", "curation.AuditEvent", "evaluation.Agent", "evaluation.EvaluationRun",
          "evaluation.SessionRun", "webhooks.Webhook"]


def data_models() -> list:
    return [m for a in APPS for m in apps.get_app_config(a).get_models()]


def project_models() -> list:
    """Every model of the four apps with a `project` column."""
    return [m for m in data_models() if any(f.name == "project" for f in m._meta.fields)]


def lift_ids(base: int) -> None:
    """The next id of every table of the four apps becomes `base` (SQLite and PostgreSQL)."""
    with connection.cursor() as cursor:
        for model in data_models():
            table, col = model._meta.db_table, model._meta.pk.column
            if model._meta.pk.get_internal_type() not in ("AutoField", "BigAutoField"):
                continue
            if connection.vendor == "sqlite":
                cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [table])
                cursor.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (%s, %s)", [table, base - 1])
            else:
                cursor.execute("SELECT pg_get_serial_sequence(%s, %s)", [table, col])
                seq = cursor.fetchone()[0]
                cursor.execute("SELECT setval(%s, %s, true)", [seq, base - 1])


@dataclass
class Side:
    project: Project
    mark: str
    lineage: object = None
    ids: dict[str, list[int]] = field(default_factory=dict)  # model label → ids made in this project


@dataclass
class World:
    a: Side
    b: Side
    root: User          # site-wide administrator
    ann_a_admin_b: User  # annotator in A, admin in B
    admin_a_ann_b: User  # admin in A, annotator in B
    adj_both: User       # adjudicator and researcher in both
    ann_both: User       # annotator in both
    only_b: User         # annotator in B only

    def a_users(self) -> dict[str, User]:
        return {"root": self.root, "ann_a_admin_b": self.ann_a_admin_b, "admin_a_ann_b": self.admin_a_ann_b,
                "adj_both": self.adj_both, "ann_both": self.ann_both}


def _user(name: str) -> User:
    return User.objects.create_user(name, password=PASSWORD)


def snapshot_ids() -> dict[str, set[int]]:
    return {m._meta.label: set(m._base_manager.values_list("pk", flat=True)) for m in data_models()}


def populate(side: Side, annotators: list[User], adjudicator: User, admin: User, seed: int = 0) -> None:
    """Data of every kind in `side.project` (the current project while it is made)."""
    from curation.guidance.gold import gold_mark
    from curation.guidance.guidelines import guideline_save, reason_codes
    from curation.models import ReviewItem, ReviewStage
    from curation.releases.services import release_create
    from curation.reviews import discussion, services
    from evaluation.models import Agent, SessionRun
    from evaluation.services.runs import run_create
    from generation.models import Intent, LLMCall, Procedure
    from generation.services import demo_build
    from tests.curation.factories import build_lineage
    from webhooks.models import Delivery
    from webhooks.services import webhook_create

    before = snapshot_ids()
    mark = side.mark
    with use_project(side.project):
        lin = build_lineage(conversations=2, seed=seed)
        Intent.objects.filter(pk=lin.intent.pk).update(name=f"{mark} intent", client=f"{mark} client")
        Procedure.objects.filter(pk=lin.procedure.pk).update(title=f"{mark} procedure")
        side.lineage = lin
        services.items_sync()
        guideline_save(actor=admin, stage=ReviewStage.FLOWGRAPH, summary=f"{mark} guide", checks="- look",
                       codes=f"{mark.upper()}1: {mark} reason")
        one, two = annotators[:2]
        objects = {ReviewStage.PROCEDURE: lin.procedure.pk, ReviewStage.FLOWGRAPH: lin.flowgraph.pk,
                   ReviewStage.CONVERSATION_GRAPH: lin.conversation_graph.pk,
                   ReviewStage.CONVERSATION: lin.conversations[0].pk}

        def item_of(stage, object_id):  # explicit rows: the world is the same whether or not scoping works
            return ReviewItem._base_manager.get(stage=stage, object_id=object_id)

        # Agreement above, a disagreement on a conversation (resolved by the adjudicator).
        for stage, verdicts in ((ReviewStage.PROCEDURE, ("accept", "accept")),
                                (ReviewStage.FLOWGRAPH, ("accept", "accept")),
                                (ReviewStage.CONVERSATION_GRAPH, ("accept", "accept")),
                                (ReviewStage.CONVERSATION, ("accept", "reject"))):
            item = item_of(stage, objects[stage])
            for user, verdict in zip((one, two), verdicts):
                services._claim_upsert(item, user, timezone.now())
                codes = [reason_codes(stage)[0][0]] if verdict == "reject" else []
                services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes,
                                       comment=f"{mark} comment")
        disputed = item_of(ReviewStage.CONVERSATION, objects[ReviewStage.CONVERSATION])
        discussion.comment_add(author=one, item_id=disputed.pk, body=f"{mark} discussion")
        services.item_resolve(adjudicator=adjudicator, item_id=disputed.pk, decision="reject", note=f"{mark} note")
        other = item_of(ReviewStage.CONVERSATION, lin.conversations[1].pk)
        services._claim_upsert(other, one, timezone.now())
        services.review_skip(annotator=one, item_id=other.pk, reason="unsure")
        services._claim_upsert(other, two, timezone.now())  # an open claim
        gold_mark(actor=admin, expected="accept", item_ids=[other.pk])
        job = demo_build(flowgraphs=[lin.flowgraph], paths=1, name=f"{mark} job", created_by=admin)
        LLMCall.objects.create(job=job, stage="flowgraph", model=f"{mark}-model", prompt_hash="0" * 64)
        services.items_sync()
        release = release_create(name=f"{mark} release", kind="automatic", filters={}, created_by=admin)
        agent = Agent.objects.create(name=f"{mark} agent", model="gpt-test", description=f"{mark} agent",
                                     base_url=f"http://{mark}.example/v1")
        run_create(agent=agent, release=release, created_by=admin, start=False)
        SessionRun.objects.create(agent=agent, release=release, created_by=admin)
        hook, _secret = webhook_create(name=f"{mark} hook", url=f"https://{mark}.example/hook",
                                       secret="s" * 20, created_by=admin)
        Delivery.objects.create(webhook=hook, event="release.created", body=f'{{"{mark}": 1}}')
    after = snapshot_ids()
    side.ids = {label: sorted(after[label] - before[label]) for label in after if after[label] - before[label]}


def build_world() -> World:
    a = Project.objects.create(slug="alpha", name="Alpha")
    b = Project.objects.create(slug="beta", name="Beta")
    root = User.objects.create_superuser("root", password=PASSWORD)
    ann_a_admin_b, admin_a_ann_b = _user("ann_a_admin_b"), _user("admin_a_ann_b")
    adj_both, ann_both, only_b = _user("adj_both"), _user("ann_both"), _user("only_b")
    for p in (a, b):
        assign_roles(adj_both, [ADJUDICATOR, RESEARCHER], p)
        assign_roles(ann_both, [ANNOTATOR], p)
    assign_roles(ann_a_admin_b, [ANNOTATOR], a)
    assign_roles(ann_a_admin_b, [ADMIN], b)
    assign_roles(admin_a_ann_b, [ADMIN], a)
    assign_roles(admin_a_ann_b, [ANNOTATOR], b)
    assign_roles(only_b, [ANNOTATOR], b)
    world = World(Side(a, MARK_A), Side(b, MARK_B), root, ann_a_admin_b, admin_a_ann_b, adj_both, ann_both, only_b)
    lift_ids(BASE_A)
    populate(world.a, [ann_both, ann_a_admin_b], adj_both, admin_a_ann_b, seed=0)
    lift_ids(BASE_B)
    populate(world.b, [ann_both, admin_a_ann_b, only_b], adj_both, ann_a_admin_b, seed=3)
    return world


def change_b(world: World, round_: int = 1) -> None:
    """B's data changes: more items, verdicts, a release, a run, a webhook (all by overlapping users)."""
    from curation.models import ReviewStage
    from curation.releases.services import release_create
    from curation.reviews import services
    from evaluation.models import Agent
    from evaluation.services.runs import run_create
    from tests.curation.factories import build_lineage
    from webhooks.services import webhook_create

    mark = f"{MARK_B}{round_}"
    with use_project(world.b.project):
        build_lineage(conversations=2, seed=10 + round_)
        services.items_sync()
        for user in (world.ann_both, world.admin_a_ann_b):
            for stage in (ReviewStage.PROCEDURE, ReviewStage.FLOWGRAPH):
                item = services.review_claim_next(annotator=user, stage=stage)
                if item is not None:
                    services.review_submit(annotator=user, item_id=item.pk, verdict="accept")
        release = release_create(name=f"{mark} release", kind="automatic", filters={},
                                 created_by=world.ann_a_admin_b)
        agent = Agent.objects.create(name=f"{mark} agent", model="gpt-test", base_url=f"http://{mark}.example/v1")
        run_create(agent=agent, release=release, created_by=world.ann_a_admin_b, start=False)
        webhook_create(name=f"{mark} hook", url=f"https://{mark}.example/h", secret="t" * 20,
                       created_by=world.ann_a_admin_b)

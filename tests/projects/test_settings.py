"""Per-project settings: the page (admins only, audited), and the settings actually used."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from curation.models import AuditEvent, ReviewItem
from projects.context import use_project

pytestmark = pytest.mark.django_db


def _post(client, slug, **changes):
    data = {"name": "Shipping bot", "reviews_per_item": 2, "claim_minutes": 30,
            "reviewed_stages": ["procedure", "flowgraph", "conversation_graph", "conversation"],
            "default_instructions": "", "llm_base_url": "", "llm_key_env": "", **changes}
    return client.post(f"/p/{slug}/settings/", data)


def test_settings_page_is_for_the_projects_admins_and_audited(client, world):
    client.force_login(world.both)  # an annotator in B
    assert client.get("/p/shipping/settings/").status_code == 403
    client.force_login(world.admin_b)
    assert client.get("/p/shipping/settings/").status_code == 200
    assert client.get("/p/default/settings/").status_code == 404
    response = _post(client, "shipping", reviews_per_item=3, claim_minutes=5, model_flowgraph="gpt-4o-mini")
    assert response.status_code == 302 and response["Location"] == "/p/shipping/settings/"
    world.b.refresh_from_db()
    assert (world.b.reviews_per_item, world.b.claim_minutes, world.b.default_models) == (3, 5, {"flowgraph": "gpt-4o-mini"})
    event = AuditEvent._base_manager.get(action="settings")
    assert event.project_id == world.b.pk and event.actor == world.admin_b
    assert event.before == {"reviews_per_item": None, "claim_minutes": 30, "default_models": {}}  # unset: site default
    assert event.after == {"reviews_per_item": 3, "claim_minutes": 5, "default_models": {"flowgraph": "gpt-4o-mini"}}
    with use_project(world.a):
        assert not AuditEvent.objects.filter(action="settings").exists()  # not in Default's audit log


def test_a_key_itself_is_refused_only_a_variable_name(client, world):
    client.force_login(world.admin_b)
    response = _post(client, "shipping", llm_key_env="sk-live-abcdef")
    assert response.status_code == 200 and b"environment variable" in response.content
    world.b.refresh_from_db()
    assert world.b.llm_key_env == ""


def test_reviews_per_item_and_reviewed_stages_shape_new_items(world):
    from curation.reviews import services
    from tests.curation.factories import build_lineage

    world.b.reviews_per_item = 3
    world.b.reviewed_stages = ["flowgraph"]
    world.b.save()
    with use_project(world.b):
        lineage = build_lineage(conversations=1, seed=11)
        services.items_sync()
        # By (stage, id): ids of different stages' tables may coincide (PostgreSQL's sequences run on).
        mine = {("flowgraph", lineage.flowgraph.pk), ("procedure", lineage.procedure.pk),
                ("conversation_graph", lineage.conversation_graph.pk)}
        items = {i.stage: i.required_reviews for i in ReviewItem.objects.all() if (i.stage, i.object_id) in mine}
    assert items == {"flowgraph": 3}


def test_claims_last_the_projects_claim_expiry(world):
    from curation.reviews import services

    world.b.claim_minutes = 7
    world.b.save()
    with use_project(world.b):
        item = services.review_claim_next(annotator=world.both, stage="procedure")
        claim = item.claims.get(annotator=world.both)
    assert round((claim.expires_at - claim.claimed_at).total_seconds()) == 7 * 60


def test_two_projects_keys_never_mix(world, settings, monkeypatch):
    from generation.llm.config import endpoint_api_key, endpoint_base_url, stage_model

    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = "http://site.test/v1", "site-key"
    monkeypatch.setenv("SHIPPING_KEY", "shipping-key")
    world.b.llm_base_url, world.b.llm_key_env = "http://shipping.test/v1", "SHIPPING_KEY"
    world.b.default_models = {"conversations": "small-model"}
    world.b.save()
    third = type(world.b).objects.create(slug="third", name="Third", llm_base_url="http://third.test/v1")
    with use_project(world.a):
        assert (endpoint_base_url(), endpoint_api_key()) == ("http://site.test/v1", "site-key")
        assert stage_model("conversations") == settings.LLM_STAGE_MODELS["conversations"]
    with use_project(world.b):
        assert (endpoint_base_url(), endpoint_api_key()) == ("http://shipping.test/v1", "shipping-key")
        assert stage_model("conversations") == "small-model"
    with use_project(third):  # its own endpoint, no variable named: the site's key is not sent there
        assert (endpoint_base_url(), endpoint_api_key()) == ("http://third.test/v1", "")


def test_the_job_form_shows_the_projects_default_models(client, world):
    world.b.default_models = {"intents": "intent-model-b"}
    world.b.save()
    client.force_login(world.admin_b)
    assert b'placeholder="intent-model-b"' in client.get("/p/shipping/generation/").content


def test_webhook_events_reach_only_the_projects_webhooks(world, django_capture_on_commit_callbacks, monkeypatch):
    from webhooks import services as hooks
    from webhooks.models import Delivery, Webhook

    monkeypatch.setattr(hooks, "_enqueue", lambda ids: None)
    with use_project(world.a):
        a_hook = Webhook.objects.create(name="a", url="http://a.test/", secret_encrypted="x", secret_hint="x")
    with use_project(world.b):
        Webhook.objects.create(name="b", url="http://b.test/", secret_encrypted="x", secret_hint="x")
        with django_capture_on_commit_callbacks(execute=True):
            hooks.emit("job.finished", job_id=1, name="j", status="done", error="")
    deliveries = list(Delivery._base_manager.values_list("webhook__name", "body"))
    assert [d[0] for d in deliveries] == ["b"] and '"project": "shipping"' in deliveries[0][1]
    assert not Delivery._base_manager.filter(webhook=a_hook).exists()


def test_a_task_refuses_a_row_of_another_project(world):
    from evaluation.models import Agent, EvaluationRun
    from evaluation.tasks import evaluate_lane
    from curation.models import Release

    with use_project(world.b):
        release = Release.objects.create(name="b", version=1, content_hash="0" * 64, manifest={})
        run = EvaluationRun.objects.create(agent=Agent.objects.create(name="b"), release=release)
    with use_project(world.a):  # a message sent from project A naming B's run
        assert evaluate_lane.run(run.pk) is None
    run.refresh_from_db()
    assert run.status == "queued"


def test_commands_take_project(world):
    graph = str(world.b_lineage.conversation_graph.pk)
    out = io.StringIO()
    call_command("coverage", "--graph", graph, "--project", "shipping", "--json", stdout=out)
    assert out.getvalue().strip()
    with pytest.raises(CommandError):  # Default (the default project) has no such graph
        call_command("coverage", "--graph", graph, stdout=io.StringIO())
    with pytest.raises(CommandError, match="No project 'nowhere'"):
        call_command("coverage", "--graph", graph, "--project", "nowhere")


def test_release_versions_are_numbered_per_project(world):
    from curation.models import Release

    with use_project(world.a):
        Release.objects.create(name="same", version=1, content_hash="0" * 64, manifest={})
    with use_project(world.b):
        Release.objects.create(name="same", version=1, content_hash="0" * 64, manifest={})
    assert Release._base_manager.filter(name="same").count() == 2


def test_the_dataset_card_names_its_project(world, admin_user):
    from curation.releases.services import release_create
    from curation.reviews import services

    with use_project(world.b):
        release = release_create(name="ship", kind="automatic")
    assert "- Project: Shipping bot (`shipping`)" in release.card
    assert release.project_id == world.b.pk
    released = set(release.entries.values_list("test_id", flat=True))
    assert released and released <= {t.pk for t in world.b_lineage.tests}  # nothing of Default

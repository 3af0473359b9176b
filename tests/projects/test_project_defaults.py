"""A project's defaults reach its work: the job form is prefilled from its settings, and its own
"reviews per item" wins over the site's REVIEWS_PER_STAGE once its admins set one."""
from __future__ import annotations

import pytest

from curation.models import ReviewItem
from projects.context import use_project

pytestmark = pytest.mark.django_db


def test_the_job_form_is_prefilled_from_the_current_projects_settings(world):
    from generation.forms import JobForm

    world.a.default_instructions, world.a.default_models = "", {}
    world.a.save()
    world.b.default_instructions = "Write every procedure for a parcel-delivery company."
    world.b.default_models = {"intents": "intent-model-b", "conversations": "small-model"}
    world.b.save()
    with use_project(world.b):
        form = JobForm()
        assert form["instructions"].initial == "Write every procedure for a parcel-delivery company."
        assert (form["model_intents"].initial, form["model_conversations"].initial) == ("intent-model-b", "small-model")
        assert form["model_apis"].initial is None  # not set by the project: the site's model, as a placeholder
    with use_project(world.a):
        form = JobForm()
        assert form["instructions"].initial is None and form["model_intents"].initial is None


def test_the_launch_page_shows_the_prefill_and_the_job_keeps_the_instructions(client, world):
    from generation.services.config import JobConfigError, job_config_normalise

    world.b.default_instructions = "Parcels only."
    world.b.save()
    client.force_login(world.admin_b)
    page = client.get("/p/shipping/generation/").content.decode()
    assert "Parcels only.</textarea>" in page
    assert job_config_normalise({"intents": 1, "instructions": "  Parcels only. "})["instructions"] == "Parcels only."
    assert "instructions" not in job_config_normalise({"intents": 1, "instructions": "  "})
    with pytest.raises(JobConfigError):
        job_config_normalise({"intents": 1, "instructions": "x" * 4001})


def test_a_jobs_instructions_are_appended_to_every_prompt_and_mark_the_version(world):
    from generation.models import GenerationJob
    from generation.stages.base import Context

    with use_project(world.b):
        job = GenerationJob(config={"instructions": "Parcels only."})
    messages, version = Context(job).with_feedback([{"role": "user", "content": "Make intents."}], "A.1")
    assert messages[-1]["content"].endswith("Additional instructions:\nParcels only.")
    assert version.endswith("+instructions")
    plain, plain_version = Context(GenerationJob(config={})).with_feedback([{"role": "user", "content": "x"}], "A.1")
    assert plain[-1]["content"] == "x" and "+instructions" not in plain_version


def test_a_projects_own_reviews_per_item_wins_over_the_sites_per_stage_default(world, settings):
    settings.REVIEWS_PER_ITEM, settings.REVIEWS_PER_STAGE = 2, {"conversation": 1}
    world.b.reviews_per_item = None  # never set: the site's defaults
    assert (world.b.reviews_needed("conversation"), world.b.reviews_needed("flowgraph")) == (1, 2)
    world.b.reviews_per_item = 3  # set by the project's admins: every stage, whatever the site says
    assert (world.b.reviews_needed("conversation"), world.b.reviews_needed("flowgraph")) == (3, 3)
    world.b.save()
    ReviewItem._base_manager.filter(project=world.b).delete()
    from curation.reviews import services

    with use_project(world.b):
        services.items_sync()
        assert set(ReviewItem.objects.values_list("required_reviews", flat=True)) == {3}


def test_the_settings_page_can_leave_reviews_unset_and_says_the_site_default(client, world, settings):
    settings.REVIEWS_PER_ITEM, settings.REVIEWS_PER_STAGE = 2, {"conversation": 1}
    world.b.reviews_per_item = 4
    world.b.save()
    client.force_login(world.admin_b)
    page = client.get("/p/shipping/settings/").content.decode()
    assert "wins over the site" in page and "the site's default (2; conversation: 1)" in page
    response = client.post("/p/shipping/settings/", {
        "name": "Shipping bot", "reviews_per_item": "", "claim_minutes": 30, "reviewed_stages": ["conversation"],
        "default_instructions": "", "llm_base_url": "", "llm_key_env": ""})
    assert response.status_code == 302
    world.b.refresh_from_db()
    assert world.b.reviews_per_item is None and world.b.reviews_needed("conversation") == 1

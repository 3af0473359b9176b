"""The generation dashboard: every page for every role, launching, cancelling, escaping, SVG."""
from __future__ import annotations

import pytest
from django.urls import reverse

from generation import services
from generation.models import (
    ConversationGraph, Flowgraph, GenerationJob, LLMCall, SampledPath, Test,
)
from tests.fake_openai import point_settings_at
from tests.generation.scripts import APIS, FLOWGRAPH, JOB_CONFIG, StageScript
from tests.generation.test_jobs import import_doc

NON_ADMINS = ["annotator", "adjudicator", "researcher", "outsider"]


@pytest.fixture
def finished_job(db, settings):
    settings.OPENAI_BASE_URL = ""
    job = services.job_create(config={"paths": 2, "noise": 0.5}, import_data=import_doc(), enqueue=False,
                              name="<b>imported</b>")
    job = services.job_run_inline(job=job)
    LLMCall.objects.create(job=job, stage="flowgraph", model="m", prompt_hash="h", template="A.4",
                           request={"messages": [{"role": "user", "content": "<script>alert('prompt')</script>"}]},
                           response="<img src=x onerror=alert(1)>")
    return job


def pages(job: GenerationJob) -> list[str]:
    call = LLMCall.objects.get(job=job)
    urls = [reverse("generation:dashboard"), reverse("generation:jobs_fragment"), reverse("generation:job", args=[job.pk]),
            reverse("generation:job_fragment", args=[job.pk]), reverse("generation:llm_call", args=[job.pk, call.pk])]
    urls += [reverse("generation:items", args=[job.pk, s]) for s in
             ("intents", "procedures", "apis", "flowgraph", "conversation_graph", "paths", "conversations", "tests")]
    for kind, model in (("flowgraph", Flowgraph), ("conversation_graph", ConversationGraph), ("path", SampledPath),
                        ("test", Test)):
        urls.append(reverse("generation:item", args=[kind, model.objects.filter(job=job).first().pk]))
    from generation.models import Api, Conversation, Intent, Procedure

    for kind, model in (("intent", Intent), ("procedure", Procedure), ("api", Api), ("conversation", Conversation)):
        urls.append(reverse("generation:item", args=[kind, model.objects.filter(job=job).first().pk]))
    return urls


def test_admin_sees_every_page_escaped(client, admin_user, finished_job):
    client.force_login(admin_user)
    for url in pages(finished_job):
        response = client.get(url)
        assert response.status_code == 200, url
        body = response.content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body and "<b>imported" not in body, url
    job_page = client.get(reverse("generation:job", args=[finished_job.pk])).content.decode()
    for label in ("Flowgraphs", "Conversation graphs", "Noisy graphs", "Paths", "Conversations", "Tests"):
        assert label in job_page
    call_page = client.get(reverse("generation:llm_call", args=[finished_job.pk, LLMCall.objects.get().pk]))
    assert "&lt;script&gt;alert" in call_page.content.decode()


@pytest.mark.parametrize("role", NON_ADMINS)
def test_other_roles_are_refused(client, personas, finished_job, role):
    client.force_login(personas[role])
    for url in pages(finished_job):
        assert client.get(url).status_code == 403, url
    assert client.post(reverse("generation:launch"), {"intents": 1}).status_code == 403
    assert client.post(reverse("generation:cancel", args=[finished_job.pk])).status_code == 403


def test_anonymous_goes_to_login(client, finished_job):
    for url in pages(finished_job) + [reverse("generation:launch"), reverse("generation:cancel", args=[finished_job.pk])]:
        response = client.get(url) if "new" not in url and "cancel" not in url else client.post(url)
        assert response.status_code == 302 and reverse("login") in response["Location"], url


def test_wrong_methods(client, admin_user, finished_job):
    client.force_login(admin_user)
    assert client.get(reverse("generation:launch")).status_code == 405
    assert client.get(reverse("generation:cancel", args=[finished_job.pk])).status_code == 405
    assert client.post(reverse("generation:dashboard")).status_code == 405
    assert client.post(reverse("generation:job", args=[finished_job.pk])).status_code == 405


FORM = {"procedures_per_intent": 1, "paths": 2, "sampler": "algorithm1", "noise": 0, "seed": 0,
        "conversation_graph": "deterministic", "conversations": "offline"}


def test_launch_and_cancel(client, admin_user, settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    client.force_login(admin_user)
    response = client.post(reverse("generation:launch"), {**FORM, "intents": 4, "model_intents": "small-model",
                                                          "name": "from the form"})
    job = GenerationJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("generation:job", args=[job.pk])
    assert job.config["intents"] == 4 and job.config["models"] == {"intents": "small-model"}
    assert job.created_by == admin_user and job.status == "queued"
    response = client.post(reverse("generation:cancel", args=[job.pk]), follow=True)
    job.refresh_from_db()
    assert job.status == "cancelled" and "cancelled" in response.content.decode()
    # a finished job cannot be cancelled again
    response = client.post(reverse("generation:cancel", args=[job.pk]), follow=True)
    assert "cannot be cancelled" in response.content.decode()


def test_launch_from_seed_intents(client, admin_user, settings, fake_openai):
    point_settings_at(settings, fake_openai)
    client.force_login(admin_user)
    response = client.post(reverse("generation:launch"), {**FORM, "seed_intents": "bank | card blocked | blocked card"})
    assert response.status_code == 302
    job = GenerationJob.objects.get()
    assert job.config["start"] == "procedures"
    assert job.progress.get(stage="intents").imported == 1


def test_launch_errors_are_shown(client, admin_user, settings):
    settings.OPENAI_BASE_URL = ""
    client.force_login(admin_user)
    response = client.post(reverse("generation:launch"), {**FORM, "intents": 2})
    assert response.status_code == 400 and "No LLM endpoint is configured" in response.content.decode()
    response = client.post(reverse("generation:launch"), FORM)
    assert response.status_code == 400 and "exactly one of" in response.content.decode()
    assert not GenerationJob.objects.exists()
    assert "No LLM endpoint is configured" in client.get(reverse("generation:dashboard")).content.decode()


def test_graph_svg_is_drawn_by_the_worker_and_graphviz_missing_is_explained(client, admin_user, finished_job,
                                                                             monkeypatch, drawing_queue):
    client.force_login(admin_user)
    fg = Flowgraph.objects.filter(job=finished_job).first()
    Flowgraph.objects.filter(pk=fg.pk).update(svg="")  # the worker has not drawn it yet
    page = client.get(reverse("generation:item", args=["flowgraph", fg.pk])).content.decode()
    assert "<svg" not in page and "Drawing…" in page and len(drawing_queue) == 1
    drawing_queue.run()  # the worker
    fg.refresh_from_db()
    assert fg.svg.startswith("<svg")
    assert "<svg" in client.get(reverse("generation:item", args=["flowgraph", fg.pk])).content.decode()
    cg = ConversationGraph.objects.filter(job=finished_job).first()
    ConversationGraph.objects.filter(pk=cg.pk).update(svg="")
    monkeypatch.setenv("PATH", "/nonexistent")  # no dot program in the worker
    client.get(reverse("generation:item", args=["conversation_graph", cg.pk]))
    drawing_queue.run()
    page = client.get(reverse("generation:item", args=["conversation_graph", cg.pk])).content.decode()
    assert "Graphviz is not installed" in page
    # the stored picture still shows
    assert "<svg" in client.get(reverse("generation:item", args=["flowgraph", fg.pk])).content.decode()


def test_live_progress_fragment_reports_activity(client, admin_user, settings, fake_openai):
    point_settings_at(settings, fake_openai)
    client.force_login(admin_user)
    job = services.job_create(config=JOB_CONFIG, enqueue=False)
    body = client.get(reverse("generation:jobs_fragment")).content.decode()
    assert 'data-active="1"' in body
    body = client.get(reverse("generation:job_fragment", args=[job.pk])).content.decode()
    assert 'data-active="1"' in body and "Cancel job" in body


def test_launch_from_imported_flowgraphs(client, admin_user, settings):
    from generation.models import Api, Intent, Procedure
    from generation.pipeline.formats import graph_to_json, parse_graph_text

    settings.OPENAI_BASE_URL = ""
    client.force_login(admin_user)
    response = client.post(reverse("generation:launch"), {**FORM, "existing": "flowgraph"})
    assert response.status_code == 400 and "no imported flowgraphs" in response.content.decode()
    intent = Intent.objects.create(client="c", issue="i", name="n", key="imp:i", origin="imported")
    proc = Procedure.objects.create(intent=intent, text="t", key="imp:p", origin="imported")
    for a in APIS["apis"]:
        Api.objects.create(procedure=proc, name=a["name"], parameters=a["params"], output_name=a["output"]["name"],
                           output_type=a["output"]["type"], key=f"imp:{a['name']}", origin="imported")
    fg = Flowgraph.objects.create(procedure=proc, data=graph_to_json(parse_graph_text(FLOWGRAPH)), key="imp:fg",
                                  origin="imported")
    response = client.post(reverse("generation:launch"), {**FORM, "existing": "flowgraph"})
    assert response.status_code == 302
    job = GenerationJob.objects.get()
    assert job.config["start"] == "conversation_graph" and job.config["input_ids"] == {"flowgraph": [fg.pk]}
    job = services.job_run_inline(job=job)
    assert job.status == "succeeded"
    assert ConversationGraph.objects.get(job=job).flowgraph == fg
    asked = 2 - job.progress.get(stage="paths").notes.get("fewer_distinct_paths", 0)
    assert SampledPath.objects.filter(job=job).count() == asked >= 1

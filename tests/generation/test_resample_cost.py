"""No item lost to bad luck (issue #32 item 2): a fresh conversation after the repairs are spent, and a
job's cost limit that stops it cleanly, against the suite's fake OpenAI server."""
from __future__ import annotations

import json
import threading
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from generation import services
from generation.models import Conversation, Discard, GenerationJob, Intent, LLMCall, Procedure, StageProgress
from generation.services.estimate import calls_per_stage, job_estimate
from tests.fake_openai import Reply, first_question, is_repair_turn, point_settings_at
from tests.generation.scripts import BAD_FLOWGRAPH, JOB_CONFIG, MARKERS, StageScript
from tests.generation.test_jobs import funnel

pytestmark = pytest.mark.django_db


def run(config: dict):
    return services.job_run_inline(job=services.job_create(config=config, enqueue=False))


def first_conversation_stuck(inner, stage: str, bad: Reply):
    """Every conversation of `stage` fails however it is repaired; a fresh one (the same first
    question again, with no repair turn, after the first conversation) passes."""
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def handler(body: dict, n: int) -> Reply:
        original = first_question(body)
        text = json.dumps(original["messages"])
        if MARKERS[stage] not in text:
            return inner(original, n)
        with lock:
            if not is_repair_turn(body):
                seen[text] = seen.get(text, 0) + 1
            fresh = seen[text]
        return bad if fresh == 1 else inner(original, n)

    return handler


def test_an_item_whose_repairs_are_spent_is_resampled_and_kept(settings, fake_openai, client, admin_user):
    point_settings_at(settings, fake_openai, LLM_CACHE=False, LLM_REPAIR_ATTEMPTS=2, LLM_RESAMPLES=1)
    fake_openai.set_handler(StageScript())
    clean = funnel(run(JOB_CONFIG))
    fake_openai.reset()
    fake_openai.set_handler(first_conversation_stuck(StageScript(), "flowgraph", Reply(content=BAD_FLOWGRAPH)))
    job = run(JOB_CONFIG)
    assert job.status == "succeeded", job.error
    assert funnel(job) == clean  # nothing lost
    sp = StageProgress.objects.get(job=job, stage="flowgraph")
    assert sp.resampled == sp.passed == clean["flowgraph"][1] > 0 and sp.repaired == 0 and sp.discarded == 0
    # Per item: three turns of the first conversation, all invalid, then a fresh one that passed.
    for key in set(LLMCall.objects.filter(job=job, stage="flowgraph").values_list("key", flat=True)):
        rows = LLMCall.objects.filter(job=job, key=key).order_by("id")
        assert [(r.resample, r.repair, r.outcome) for r in rows] == [
            (0, 0, "invalid"), (0, 1, "invalid"), (0, 2, "invalid"), (1, 0, "ok")]
        assert rows.last().validated and not any(r.validated for r in rows[:3])
    # The fresh conversation went out as the original question, with no repair turn in it.
    fresh = [b for b in fake_openai.requests if MARKERS["flowgraph"] in json.dumps(b["messages"])
             and not is_repair_turn(b)]
    assert len(fresh) == 2 * sp.passed
    # Flowgraphs are asked at temperature 0; a fresh conversation at LLM_RESAMPLE_TEMPERATURE (0.7).
    assert sorted(b["temperature"] for b in fresh) == [0.0] * sp.passed + [0.7] * sp.passed
    row = next(r for r in services.job_funnel(job) if r["stage"] == "flowgraph")
    assert row["resampled"] == sp.passed
    client.force_login(admin_user)
    page = client.get(reverse("generation:job", args=[job.pk])).content.decode()
    assert ">Resampled</th>" in page and f"{sp.passed} resampled in a fresh conversation" in page
    assert "fresh #1" in page


def test_with_no_resample_the_stuck_item_is_discarded(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_CACHE=False, LLM_REPAIR_ATTEMPTS=1, LLM_RESAMPLES=0)
    fake_openai.set_handler(first_conversation_stuck(StageScript(), "flowgraph", Reply(content=BAD_FLOWGRAPH)))
    job = run(JOB_CONFIG)
    sp = StageProgress.objects.get(job=job, stage="flowgraph")
    assert sp.passed == sp.resampled == 0 and sp.discarded == sp.total > 0
    assert not LLMCall.objects.filter(job=job, resample__gt=0).exists()


def test_a_resample_is_a_new_cache_entry(settings, fake_openai):
    """Served from the cache, a resample would repeat the stuck conversation's first reply."""
    point_settings_at(settings, fake_openai, LLM_CACHE=True, LLM_REPAIR_ATTEMPTS=0, LLM_RESAMPLES=1)
    fake_openai.set_handler(first_conversation_stuck(StageScript(), "flowgraph", Reply(content=BAD_FLOWGRAPH)))
    job = run(JOB_CONFIG)
    rows = LLMCall.objects.filter(job=job, stage="flowgraph")
    assert rows.filter(resample=1, outcome="ok").count() == rows.filter(resample=0, outcome="invalid").count() > 0
    assert not set(rows.filter(resample=1).values_list("prompt_hash", flat=True)) & set(
        rows.filter(resample=0).values_list("prompt_hash", flat=True))


# --------------------------------------------------------------------------- the cost limit


def test_reaching_the_cost_limit_fails_the_job_and_keeps_what_was_made(settings, fake_openai):
    # $1 per thousand prompt tokens: each call costs cents, so the limit falls mid-job.
    point_settings_at(settings, fake_openai, LLM_CACHE=False, LLM_PRICES="gpt-4o=1000/1000")
    fake_openai.set_handler(StageScript())
    unlimited = run(JOB_CONFIG)
    full_cost = unlimited.cost_usd
    limit = round(float(full_cost) / 3, 2)
    fake_openai.reset()
    job = run({**JOB_CONFIG, "cost_limit": limit})
    assert job.status == "failed" and job.error.startswith("cost limit reached"), job.error
    assert f"of the ${limit:.2f} limit" in job.error and "everything made so far is kept" in job.error
    # Stopped: no request went out once the limit was reached (one thread: rows in the order sent).
    spent = Decimal(0)
    for cost in LLMCall.objects.filter(job=job).order_by("id").values_list("cost_usd", flat=True):
        assert spent < Decimal(str(limit))
        spent += cost
    assert job.cost_usd == spent >= Decimal(str(limit)) and job.cost_usd < full_cost
    assert fake_openai.request_count == LLMCall.objects.filter(job=job).count() < unlimited.llm_calls.count()
    # What was made before is kept, and the counts say what happened.
    assert Intent.objects.filter(job=job).exists() and Procedure.objects.filter(job=job).exists()
    assert not Conversation.objects.filter(job=job).exists()
    assert not Discard.objects.filter(job=job, reason__in=["stage_error", "task_error"]).exists()
    assert job.counters  # counted when it failed


def test_cost_limit_bounds_on_every_launch_path(settings, admin_user, client):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # never called
    for bad in (0, -1, "abc", float("nan"), 10**9):
        with pytest.raises(services.JobConfigError, match="cost_limit"):
            services.job_create(config={**JOB_CONFIG, "cost_limit": bad}, enqueue=False)
    job = services.job_create(config={**JOB_CONFIG, "cost_limit": "2.5"}, enqueue=False)
    assert job.config["cost_limit"] == 2.5
    client.force_login(admin_user)
    form = {"intents": 3, "procedures_per_intent": 2, "paths": 2, "sampler": "algorithm1", "noise": 0, "seed": 0,
            "conversation_graph": "llm", "conversations": "llm", "cost_limit": "1.25", "chain_length": 2}
    response = client.post(reverse("generation:launch"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    launched = GenerationJob.objects.order_by("-pk").first()
    assert launched.config["cost_limit"] == 1.25
    # The estimate shown with the form is kept with the job and on its page.
    assert launched.config["estimate"]["calls"] == 1 + 6 * 4 + 6 * 2
    page = client.get(reverse("generation:job", args=[launched.pk])).content.decode()
    assert "of the $1.25 limit" in page and "for 37 calls" in page
    response = client.post(reverse("generation:launch"), {**form, "cost_limit": "-3"})
    assert response.status_code == 400 and "greater than or equal to 0.01" in response.content.decode()
    out = StringIO()
    call_command("generate", "--intents", "2", "--cost-limit", "0.5", stdout=out)
    assert GenerationJob.objects.order_by("-pk").first().config["cost_limit"] == 0.5


def test_the_estimate_counts_calls_as_the_plan_does(settings):
    cfg = services.job_config_normalise({"intents": 25, "procedures_per_intent": 2, "paths": 3,
                                         "conversation_graph": "deterministic", "conversations": "llm"})
    # A.1 in batches of 10; A.2-A.4 per procedure; no A.5 (deterministic); A.6 per path.
    assert calls_per_stage(cfg) == {"intents": 3, "procedures": 50, "apis": 50, "flowgraph": 50,
                                    "conversations": 150}
    from_flowgraphs = services.job_config_normalise({**cfg, "start": "conversation_graph", "intents": 0})
    assert calls_per_stage(from_flowgraphs, inputs=4) == {"conversations": 12}
    settings.LLM_PRICES = "gpt-4o=1000/0"
    settings.LLM_STAGE_MODELS = {s: "gpt-4o" for s in ("intents", "procedures", "apis", "flowgraph",
                                                       "conversation_graph", "conversations")}
    # No earlier replies: the default tokens per call, priced at $1 per thousand prompt tokens.
    estimate = job_estimate(from_flowgraphs, inputs=4)
    assert estimate["calls"] == 12 and estimate["cost_usd"] == pytest.approx(12 * 1.5)


def test_estimate_fragment_follows_the_form(settings, client, admin_user, annotator_a):
    url = reverse("generation:estimate")
    client.force_login(annotator_a)
    assert client.get(url, {"intents": 3}).status_code == 403
    client.force_login(admin_user)
    page = client.get(url, {"intents": 3, "procedures_per_intent": 2, "conversations": "llm", "paths": 2}).content
    assert b"for about 31 LLM calls" in page  # 1 + 3 x 2 x 3 + 3 x 2 x 2
    assert b"No estimate: paths must be" in client.get(url, {"intents": 3, "paths": "9999"}).content
    assert b"Give a number of intents" in client.get(url).content
    assert client.post(url).status_code == 405

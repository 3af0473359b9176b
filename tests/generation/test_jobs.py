"""Jobs run in this process (job_run_inline) against the fake server: funnel, cache, cancel, imports."""
from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from generation import services
from generation.models import (
    Conversation, Discard, Flowgraph, GenerationJob, Intent, LLMCall, Procedure, SampledPath, StageProgress, Test,
)
from generation.pipeline.extract import extract_tests
from generation.stages.derived import case_fingerprint
from tests.fake_openai import point_settings_at
from tests.generation.scripts import APIS, BAD, EXPECTED, EXPECTED_REASONS, FLOWGRAPH, JOB_CONFIG, StageScript


def funnel(job: GenerationJob) -> dict[str, tuple[int, int]]:
    return {r["stage"]: (r["generated"], r["passed"]) for r in services.job_funnel(job) if r["state"] != "skipped"}


def notes(job: GenerationJob, stage: str) -> dict[str, int]:
    return StageProgress.objects.get(job=job, stage=stage).notes


def assert_expected_funnel(job: GenerationJob, reasons: bool = True) -> None:
    rows = {r["stage"]: r for r in services.job_funnel(job)}
    assert job.status == "succeeded", job.error
    got = funnel(job)
    tests = got.pop("tests")
    assert got == EXPECTED
    if reasons:  # (with faults in the content, an item that never passes may end on a fault's reason)
        assert {s: rows[s]["reasons"] for s in EXPECTED_REASONS} == EXPECTED_REASONS
    # Tests: one per agent turn after a user message or an api_output of each kept conversation.
    # Two paths of one graph share their opening turns: a test met twice is stored once.
    extracted = [t for c in Conversation.objects.filter(job=job) for t in extract_tests(c.messages)]
    distinct = {case_fingerprint(t["context"], t["expected"]) for t in extracted}
    expected_tests = len(distinct)
    assert tests == (len(extracted), expected_tests) and expected_tests >= 6 and len(extracted) >= 8
    assert rows["tests"]["notes"].get("duplicate_test", 0) == len(extracted) - expected_tests
    assert Test.objects.filter(job=job).count() == expected_tests
    assert set(Test.objects.filter(job=job).values_list("fingerprint", flat=True)) == distinct
    assert Intent.objects.filter(job=job).count() == 3 and Procedure.objects.filter(job=job).count() == 5
    assert SampledPath.objects.filter(job=job).count() == 6
    assert Discard.objects.filter(job=job).count() == 5


@pytest.mark.django_db
def test_whole_job_inline_exact_funnel(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript(bad=BAD))
    job = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    assert_expected_funnel(job)
    calls = LLMCall.objects.filter(job=job)
    assert set(calls.values_list("template", flat=True)) == {"A.1", "A.2", "A.3", "A.4", "A.6"}
    assert job.prompt_tokens == 10 * calls.filter(outcome__in=["ok", "invalid"]).count()
    # lineage: every test leads back to an intent of this job
    t = Test.objects.filter(job=job).select_related("conversation__path__conversation_graph__flowgraph__procedure").first()
    assert t.conversation.path.conversation_graph.flowgraph.procedure.intent.job == job
    assert json.loads(json.dumps(job.counters))["flowgraph"]["discarded"] == {"FG-END-OUT": 1}


@pytest.mark.django_db
def test_rerun_hits_the_cache(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_CACHE=True)
    fake_openai.set_handler(StageScript(bad=BAD))
    first = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    sent = fake_openai.request_count
    second = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    # Only replies that passed were cached: the BAD prompts (and their repairs) reach the endpoint again.
    invalid_first = LLMCall.objects.filter(job=first, outcome="invalid").count()
    assert invalid_first > 0
    assert fake_openai.request_count - sent == invalid_first
    assert funnel(second) == funnel(first)
    assert LLMCall.objects.filter(job=second, outcome="cached").count() == LLMCall.objects.filter(
        job=first, outcome="ok", validated=True).count()
    assert not LLMCall.objects.filter(job=second, outcome="ok").exists()
    # switched off, the same job calls the endpoint again
    settings.LLM_CACHE = False
    services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    assert fake_openai.request_count > sent


@pytest.mark.django_db
def test_item_runs_once(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    job = services.job_create(config={**JOB_CONFIG, "intents": 2}, enqueue=False)
    published: list[tuple[str, str]] = []
    services.job_advance(job_id=job.pk, publish=lambda stage, key: published.append((stage, key)))
    assert published == [("intents", "intents:0:batch")]
    assert services.item_run(job_id=job.pk, stage="intents", key="intents:0:batch") is True
    assert services.item_run(job_id=job.pk, stage="intents", key="intents:0:batch") is True  # redelivery
    assert Intent.objects.filter(job=job).count() == 2
    assert fake_openai.request_count == 1
    assert StageProgress.objects.get(job=job, stage="intents").generated == 2


@pytest.mark.django_db
def test_cancel(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    queued = services.job_create(config=JOB_CONFIG, enqueue=False)
    assert services.job_cancel(job=queued).status == "cancelled"

    job = services.job_create(config=JOB_CONFIG, enqueue=False)
    published: list[tuple[str, str]] = []
    services.job_advance(job_id=job.pk, publish=lambda stage, key: published.append((stage, key)))
    services.item_run(job_id=job.pk, stage="intents", key=published[0][1])
    services.job_advance(job_id=job.pk, publish=lambda stage, key: published.append((stage, key)))
    assert len(published) == 1 + 6  # the procedures are published...
    job.refresh_from_db()
    assert services.job_cancel(job=job).status == "cancelling"
    for stage, key in published[1:]:  # ...but no new work happens after cancel
        services.item_run(job_id=job.pk, stage=stage, key=key)
    services.job_advance(job_id=job.pk, publish=lambda stage, key: published.append((stage, key)))
    job.refresh_from_db()
    assert job.status == "cancelled" and job.finished_at
    assert Procedure.objects.filter(job=job).count() == 0
    assert fake_openai.request_count == 1
    assert set(StageProgress.objects.get(job=job, stage="procedures").items.values()) == {"cancelled"}


@pytest.mark.django_db
def test_llm_stages_refuse_without_endpoint(settings):
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(services.JobConfigError, match="No LLM endpoint is configured.*intents"):
        services.job_create(config=JOB_CONFIG, enqueue=False)
    with pytest.raises(CommandError, match="OPENAI_BASE_URL"):
        call_command("generate", "--intents", "2", stdout=StringIO())


def import_doc(flowgraph: str = FLOWGRAPH) -> dict:
    return {"procedures": [{"intent": {"client": "library", "issue": "renewal", "name": "renew"}, "title": "Renew",
                            "text": "Renew a library loan.", "apis": APIS, "flowgraph": fg}
                           for fg in (flowgraph, flowgraph.replace("Greet the member", "Hello"))]}


@pytest.mark.django_db
def test_imported_flowgraphs_run_offline_without_endpoint(settings, tmp_path):
    settings.OPENAI_BASE_URL = ""
    path = tmp_path / "import.json"
    path.write_text(json.dumps(import_doc()))
    out = StringIO()
    call_command("generate", "--from-file", str(path), "--inline", "--paths", "3", "--noise", "0.5", stdout=out)
    job = GenerationJob.objects.get()
    assert job.status == "succeeded" and job.config["start"] == "conversation_graph"
    text = out.getvalue()
    assert "Conversation graphs" in text and "succeeded" in text
    f = funnel(job)
    assert f["flowgraph"] == (2, 2) and f["conversation_graph"] == (2, 2) and f["noise"] == (2, 2)
    # 6 paths asked; repeats of a path are dropped and noted (distinct paths, issue #12).
    assert f["paths"][0] + notes(job, "paths").get("fewer_distinct_paths", 0) == 6
    assert f["paths"][0] == f["paths"][1] == f["conversations"][0] == f["conversations"][1]
    assert LLMCall.objects.count() == 0
    assert Flowgraph.objects.filter(job=job, origin="imported").count() == 2


@pytest.mark.django_db
def test_invalid_imported_flowgraph_is_discarded(settings):
    settings.OPENAI_BASE_URL = ""
    bad = "[N0](start_message){Hi}\n[E0](N0, N1){x}\n[N1](message){dangling}"
    job = services.job_create(config={"paths": 1}, import_data={"procedures": [
        {"text": "p", "apis": APIS, "flowgraph": FLOWGRAPH}, {"text": "q", "apis": APIS, "flowgraph": bad}]},
        enqueue=False)
    job = services.job_run_inline(job=job)
    assert Discard.objects.get(job=job).reason == "FG-LEAF-END"
    assert funnel(job)["flowgraph"] == (2, 1) and funnel(job)["conversation_graph"] == (1, 1)


@pytest.mark.django_db
def test_import_errors_are_clear():
    with pytest.raises(services.JobConfigError, match=r"procedures\[0\]: needs a non-empty 'text'"):
        services.import_parse({"procedures": [{"title": "x"}]})
    with pytest.raises(services.JobConfigError, match="flowgraph"):
        services.import_parse({"procedures": [{"text": "x", "apis": APIS, "flowgraph": "[N0](bogus"}]})
    assert services.import_parse({"intents": [{"client": "a", "issue": "b", "name": "c"}]})[0] == "procedures"


@pytest.mark.django_db
def test_demo_build_is_deterministic():
    from generation.models import Api, Intent as I, Procedure as P
    from generation.pipeline.formats import graph_to_json, parse_graph_text

    intent = I.objects.create(client="c", issue="i", name="n", key="demo:i")
    proc = P.objects.create(intent=intent, text="t", key="demo:p")
    for a in APIS["apis"]:
        Api.objects.create(procedure=proc, name=a["name"], parameters=a["params"], output_name=a["output"]["name"],
                           output_type=a["output"]["type"], key=f"demo:{a['name']}")
    fg = Flowgraph.objects.create(procedure=proc, data=graph_to_json(parse_graph_text(FLOWGRAPH)), key="demo:fg")
    one = services.demo_build(flowgraphs=[fg], paths=3, seed=1)
    two = services.demo_build(flowgraphs=[fg], paths=3, seed=1)
    assert one.status == two.status == "succeeded"
    msgs = lambda job: [c.messages for c in Conversation.objects.filter(job=job).order_by("key")]  # noqa: E731
    # The graph has only 2 distinct paths: both, and the funnel notes why the third is missing.
    assert msgs(one) == msgs(two) and len(msgs(one)) == 2 == SampledPath.objects.filter(job=one).count()
    assert notes(one, "paths") == {"fewer_distinct_paths": 1}
    assert Test.objects.filter(job=one).count() == Test.objects.filter(job=two).count() > 0


@pytest.mark.django_db
def test_llm_conversation_graphs_and_a7_conversations(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript(bad={"conversation_graph": ["Hello"]}))
    doc = import_doc()
    job = services.job_run_inline(job=services.job_create(
        config={"paths": 2, "conversation_graph": "llm", "conversations": "llm"}, import_data=doc, enqueue=False))
    f = funnel(job)
    assert f["conversation_graph"] == (2, 1)  # the graph of the second flowgraph came back broken
    assert Discard.objects.get(job=job).reason == "CG-ASSISTANT-USER"
    assert f["paths"][0] + notes(job, "paths").get("fewer_distinct_paths", 0) == 2
    assert f["paths"][0] == f["paths"][1] == f["conversations"][0] == f["conversations"][1]
    assert set(LLMCall.objects.filter(job=job).values_list("template", flat=True)) == {"A.5", "A.6"}

    # A.7 ablation: conversations straight from procedures, no graphs at all
    job = services.job_run_inline(job=services.job_create(
        config={"paths": 2, "conversations": "procedure"}, import_data=doc, enqueue=False))
    f = funnel(job)
    assert "conversation_graph" not in f and "paths" not in f
    assert f["conversations"] == (4, 4)
    assert set(Conversation.objects.filter(job=job).values_list("mode", "path")) == {("procedure", None)}
    assert set(LLMCall.objects.filter(job=job).values_list("template", flat=True)) == {"A.7"}
    assert Test.objects.filter(job=job).count() > 0


def test_prompt_templates_render_and_the_a4_example_is_valid():
    import re

    from generation import prompts
    from generation.pipeline.formats import parse_graph_text
    from generation.pipeline.validate import errors, validate_flowgraph

    values = {"number_issues": 3, "batch": 0, "client": "c", "issue": "i", "name": "n", "variant": 1, "variants": 2,
              "procedure": "p", "apis": "[]", "flowgraph": "f", "conversation_graph": "g", "path": "[N0]", "calls": "Call 1"}
    for template_id in prompts.CURRENT:
        messages = prompts.render(template_id, **values)
        assert [m["role"] for m in messages] == ["system", "user"]
        assert "{{" not in messages[0]["content"] + messages[1]["content"]
        assert prompts.version_of(template_id) == "v1"
    with pytest.raises(prompts.PromptError):
        prompts.render("A.1")
    system = prompts.render("A.4", **values)[0]["content"]
    example = re.findall(r"<flow>(.*?)</flow>", system, re.DOTALL)[-1]
    g = parse_graph_text(example)
    assert not errors(validate_flowgraph(g, ["find_membership", "freeze_membership"]))

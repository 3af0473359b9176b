"""Repair instead of discard, and a cache that never serves a reply that failed (issue #12)."""
from __future__ import annotations

import json

import pytest

from generation import llm, services
from generation.models import Discard, LLMCall, StageProgress, Test
from tests.fake_openai import Reply, fail_then_repair, is_repair_turn, never_passing, point_settings_at
from tests.generation.scripts import BAD_FLOWGRAPH, JOB_CONFIG, MARKERS, StageScript
from tests.generation.test_jobs import funnel

pytestmark = pytest.mark.django_db

CLEAN = {**JOB_CONFIG}


def run(config: dict | None = None):
    return services.job_run_inline(job=services.job_create(config=config or CLEAN, enqueue=False))


def is_stage(stage: str):
    return lambda body: MARKERS[stage] in "\n".join(str(m.get("content")) for m in body["messages"])


def test_reply_failing_once_is_repaired_with_the_findings(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    clean = run()
    clean_funnel = funnel(clean)
    # Every flowgraph reply fails validation once, then passes on the repair turn.
    fake_openai.reset()
    fake_openai.set_handler(fail_then_repair(StageScript(), lambda body: Reply(content=BAD_FLOWGRAPH),
                                             when=is_stage("flowgraph")))
    settings.LLM_CACHE = False
    job = run()
    assert job.status == "succeeded", job.error
    assert funnel(job) == clean_funnel  # nothing lost
    sp = StageProgress.objects.get(job=job, stage="flowgraph")
    assert sp.repaired == sp.passed == clean_funnel["flowgraph"][1] and sp.discarded == 0
    rows = LLMCall.objects.filter(job=job, stage="flowgraph").order_by("key", "repair")
    assert [r.outcome for r in rows if r.repair == 0] == ["invalid"] * sp.passed
    assert [r.outcome for r in rows if r.repair == 1] == ["ok"] * sp.passed
    assert all(r.validated for r in rows if r.repair == 1) and not any(r.validated for r in rows if r.repair == 0)
    assert all("FG-END-OUT" in r.rules for r in rows if r.repair == 0)
    # The repair turn went to the endpoint in the same conversation, naming the rule.
    repairs = [b for b in fake_openai.requests if is_repair_turn(b)]
    assert len(repairs) == sp.passed
    assert repairs[0]["messages"][-2] == {"role": "assistant", "content": BAD_FLOWGRAPH}
    assert "FG-END-OUT" in repairs[0]["messages"][-1]["content"]
    assert services.job_funnel(job)[3]["repaired"] == sp.passed


def test_reply_that_never_passes_is_discarded_with_every_attempt(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_REPAIR_ATTEMPTS=2)
    fake_openai.set_handler(never_passing(lambda body: Reply(content="Too short."), StageScript(),
                                          when=lambda body: "Name: renewal problem 1\n\nWrite procedure variant 2"
                                          in "\n".join(m["content"] for m in body["messages"])))
    job = run()
    assert job.status == "succeeded"
    d = Discard.objects.get(job=job, stage="procedures")
    assert d.reason == "procedure_too_short"
    assert "attempt 1" in d.detail and "attempt 6" in d.detail
    # Two repair turns, then one fresh conversation (a resample) with its own two repairs.
    calls = LLMCall.objects.filter(job=job, key=d.key).order_by("id")
    assert [(c.resample, c.repair, c.outcome) for c in calls] == [
        (r, t, "invalid") for r in (0, 1) for t in (0, 1, 2)]
    assert all(c.rules == ["procedure_too_short"] for c in calls)
    assert StageProgress.objects.get(job=job, stage="procedures").resampled == 0


@pytest.mark.parametrize("bad", [Reply.wrong_shape(), Reply.truncated_json()], ids=["wrong-shape", "truncated"])
def test_wrong_shape_and_truncated_json_are_repaired(settings, fake_openai, bad):
    point_settings_at(settings, fake_openai, LLM_CACHE=False)
    fake_openai.set_handler(StageScript())
    clean_funnel = funnel(run())
    fake_openai.set_handler(fail_then_repair(StageScript(), lambda body: bad, when=is_stage("conversations")))
    job = run()
    assert funnel(job) == clean_funnel
    sp = StageProgress.objects.get(job=job, stage="conversations")
    assert sp.repaired == sp.passed > 0
    reasons = set(r for rules in LLMCall.objects.filter(job=job, outcome="invalid").values_list("rules", flat=True)
                  for r in rules)
    assert reasons == ({"wrong_shape"} if bad.content.startswith('{"answer"') else {"invalid_json"})


def test_cache_keeps_only_validated_replies_and_a_rerun_calls_again_for_what_failed(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_CACHE=True, LLM_REPAIR_ATTEMPTS=0)
    fake_openai.set_handler(StageScript())
    expected = funnel(run())
    LLMCall.objects.all().delete()  # start with an empty cache
    # A faulty endpoint: every A.6 conversation comes back as garbage; nothing is repaired here.
    fake_openai.reset()
    fake_openai.set_handler(never_passing(lambda body: Reply.truncated_json(), StageScript(),
                                          when=is_stage("conversations")))
    broken = run()
    assert funnel(broken)["conversations"][1] == 0 and broken.status == "failed"
    assert "conversations" in broken.error and "invalid_json" in broken.error
    garbage = LLMCall.objects.filter(job=broken, stage="conversations")
    assert {c.outcome for c in garbage} == {"invalid"} and not any(c.validated for c in garbage)
    # The healthy endpoint again: the broken replies are not served, fresh calls are made for them.
    fake_openai.reset()
    fake_openai.set_handler(StageScript())
    rerun = run()
    assert funnel(rerun) == expected and rerun.status == "succeeded"
    assert fake_openai.request_count == garbage.filter(resample=0).count()  # one per item (each was also resampled)
    assert garbage.filter(resample=1).count() == garbage.filter(resample=0).count()
    assert set(LLMCall.objects.filter(job=rerun, stage="conversations").values_list("outcome", flat=True)) == {"ok"}
    assert set(LLMCall.objects.filter(job=rerun).exclude(stage="conversations")
               .values_list("outcome", flat=True)) == {"cached"}


def test_job_can_switch_the_cache_off(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_CACHE=True)
    fake_openai.set_handler(StageScript())
    run()
    sent = fake_openai.request_count
    job = run({**CLEAN, "cache": False})
    assert fake_openai.request_count == 2 * sent
    assert not LLMCall.objects.filter(job=job, outcome="cached").exists()


def test_cache_key_has_temperature_and_sample_index(settings, fake_openai):
    point_settings_at(settings, fake_openai, LLM_CACHE=True)
    fake_openai.set_handler(lambda body, n: Reply(content=f"reply {n}"))
    msg = [{"role": "user", "content": "hello"}]
    ask = lambda **kw: llm.chat(stage="procedures", messages=msg, model="m", validated=True, **kw).content  # noqa: E731
    # At temperature > 0, n samples of one prompt are n different samples; each is cached under its index.
    assert [ask(temperature=0.7, sample=i) for i in range(3)] == ["reply 0", "reply 1", "reply 2"]
    assert ask(temperature=0.7, sample=1) == "reply 1"
    assert ask(temperature=0.9, sample=1) == "reply 3"  # the temperature is part of the key
    # At temperature 0 the sample index does not matter: one deterministic answer.
    assert ask(temperature=0.0, sample=0) == "reply 4"
    assert ask(temperature=0.0, sample=5) == "reply 4"
    assert fake_openai.request_count == 5


def test_items_of_one_prompt_are_different_samples(settings, fake_openai):
    """Procedures of one intent at temperature 0.7: each item is its own sample, in cache and request."""
    point_settings_at(settings, fake_openai, LLM_CACHE=True)
    fake_openai.set_handler(StageScript())
    job = run({**CLEAN, "temperatures": {"procedures": 0.7}})
    calls = LLMCall.objects.filter(job=job, stage="procedures")
    assert {c.sample for c in calls} == set(range(6))
    assert len({c.prompt_hash for c in calls}) == 6
    assert all(json.loads(json.dumps(c.request))["temperature"] == 0.7 for c in calls)


def test_job_never_stores_two_equal_tests_or_paths(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript())
    # The library graph has two distinct paths; asking for 5 per graph must keep 2 and say so.
    job = run({**CLEAN, "paths": 5})
    sp = StageProgress.objects.get(job=job, stage="paths")
    graphs = StageProgress.objects.get(job=job, stage="conversation_graph").passed
    assert sp.passed == 2 * graphs and sp.notes == {"fewer_distinct_paths": 3 * graphs}
    sequences = [(p.conversation_graph_id, tuple(p.node_ids)) for p in job_paths(job)]
    assert len(sequences) == len(set(sequences))
    tests = list(Test.objects.filter(job=job).values_list("context", "expected_type", "expected_text",
                                                             "expected_api_name", "expected_parameters"))
    assert len(tests) == len({json.dumps(t, sort_keys=True) for t in tests}) > 0
    assert StageProgress.objects.get(job=job, stage="tests").notes.get("duplicate_test", 0) > 0
    assert "fewer_distinct_paths=" in services.format_funnel(job)


def job_paths(job):
    from generation.models import SampledPath

    return SampledPath.objects.filter(job=job)


def test_a_procedure_without_numbered_steps_is_not_kept(settings, fake_openai):
    """A 200 carrying JSON or graph text where A.2 asked for numbered steps is a finding, not a procedure."""
    point_settings_at(settings, fake_openai, LLM_REPAIR_ATTEMPTS=1)
    fake_openai.set_handler(never_passing(lambda body: Reply.wrong_shape(), StageScript(),
                                          when=lambda body: "Name: renewal problem 0\n\nWrite procedure variant 1"
                                          in "\n".join(m["content"] for m in body["messages"])))
    job = run()
    d = Discard.objects.get(job=job, stage="procedures")
    assert d.reason == "procedure_no_steps" and "0 numbered steps" in d.detail
    assert StageProgress.objects.get(job=job, stage="procedures").passed == 5

"""One run end to end through a real Celery worker process and the fake OpenAI server, started
with `manage.py evaluate --wait`, which prints the metric table when the worker is done."""
from __future__ import annotations

import pytest
from django.core.management import call_command

from evaluation import services
from evaluation.models import AgentMode, EvaluationRun, RunStatus
from tests.evaluation.conftest import EXPECTED, make_release, scripted_agent
from tests.fake_openai import FakeOpenAI, point_settings_at


@pytest.mark.worker
@pytest.mark.slow
def test_evaluate_wait_through_the_worker_gives_the_hand_computed_metrics(celery_worker_factory, settings, capsys):
    with FakeOpenAI(scripted_agent, max_concurrency=2) as fake:
        env = point_settings_at(settings, fake)
        worker = celery_worker_factory(extra_env=env, concurrency=3)
        make_release()
        services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
        try:
            call_command("evaluate", "--release", "hand-made", "--agent", "scripted", "--wait", "--similarity",
                         "lexical", "--concurrency", "2", "--timeout", "90")
        except BaseException:
            print(worker.log()[-4000:])
            raise
        out = capsys.readouterr().out
        run = EvaluationRun.objects.get()
        assert run.status == RunStatus.SUCCEEDED, run.error
        m = run.metrics["metrics"]
        assert {k: (v["numerator"], v["denominator"]) for k, v in m.items()} == EXPECTED
        # Each test is asked once; a further request is only ever a retry the client recorded. This
        # run once saw 11 requests and no retry on PostgreSQL: two lanes had both claimed one test
        # (the scoped claim's UPDATE was not re-checked; tests/evaluation/test_claim_race.py).
        from generation.models import LLMCall, LLMOutcome

        retried = LLMCall.objects.filter(outcome=LLMOutcome.RETRIED).count()
        calls = list(LLMCall.objects.order_by("id").values_list("key", "attempt", "outcome"))
        assert fake.request_count == 10 + retried, (fake.request_count, calls, worker.log()[-3000:])
        assert fake.peak_in_flight <= 2
        assert run.results.count() == 10
        assert "Conversation correctness" in out and "1/4" in out and "3/10" in out  # exact comparison: t5 is wrong
        # Re-judging through the worker: one lane scores the stored answers, the agent is not asked.
        call_command("evaluate", "--rejudge", str(run.pk), "--threshold", "0.99", "--wait", "--similarity",
                     "lexical", "--timeout", "90")
        again = EvaluationRun.objects.get(rejudged_from=run)
        assert again.status == RunStatus.SUCCEEDED, again.error
        assert {k: (v["numerator"], v["denominator"]) for k, v in again.metrics["metrics"].items()} == EXPECTED
        assert fake.request_count == 10 and again.threshold == 0.99



@pytest.mark.worker
@pytest.mark.slow
def test_session_run_through_the_worker(celery_worker_factory, settings, capsys):
    """Session lanes on a real Celery worker: the fake server plays user, agent and judge."""
    from evaluation.models import SessionRun
    from tests.evaluation.sessions_script import make_release as make_session_release
    from tests.evaluation.sessions_script import scripted

    with FakeOpenAI(scripted(), max_concurrency=4) as fake:
        env = point_settings_at(settings, fake)
        worker = celery_worker_factory(extra_env=env, concurrency=2)
        make_session_release()
        services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
        try:
            call_command("evaluate_sessions", "--release", "sessions", "--agent", "scripted", "--wait",
                         "--concurrency", "2", "--timeout", "90")
        except BaseException:
            print(worker.log()[-4000:])
            raise
        run = SessionRun.objects.get()
        assert run.status == RunStatus.SUCCEEDED, run.error
        m = run.metrics["metrics"]
        assert (m["success_rate"]["numerator"], m["success_rate"]["denominator"]) == (1, 2)
        assert (m["tool_recall"]["numerator"], m["tool_recall"]["denominator"]) == (2, 3)
        assert run.results.count() == 2 and fake.request_count == 16  # 7 agent + 6 user + 3 judge calls
        assert "Task progress" in capsys.readouterr().out

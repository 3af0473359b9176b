"""One run end to end through a real Celery worker process and the fake OpenAI server."""
from __future__ import annotations

import pytest

from evaluation import services
from evaluation.models import AgentMode, EvaluationRun, RunStatus
from tests.conftest import wait_for
from tests.evaluation.conftest import EXPECTED, make_release, scripted_agent
from tests.fake_openai import FakeOpenAI, point_settings_at


@pytest.mark.worker
@pytest.mark.slow
def test_run_through_the_worker_gives_the_hand_computed_metrics(celery_worker_factory, settings):
    with FakeOpenAI(scripted_agent, max_concurrency=2) as fake:
        env = point_settings_at(settings, fake)
        worker = celery_worker_factory(extra_env=env, concurrency=3)
        release = make_release()
        agent = services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
        run = services.run_create(agent=agent, release=release, similarity="lexical", concurrency=2)
        wait_for(lambda: not EvaluationRun.objects.get(pk=run.pk).is_active, timeout=90,
                 message=f"the run to finish; worker log:\n{worker.log()[-3000:]}")
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED, run.error
        m = run.metrics["metrics"]
        assert {k: (v["numerator"], v["denominator"]) for k, v in m.items()} == EXPECTED
        assert fake.request_count == 10 and fake.peak_in_flight <= 2
        assert run.results.count() == 10

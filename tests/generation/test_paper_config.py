"""The paper's configuration as job settings (#32 item 7, used by bench/generation_economy.py):
`dedup: false` realises Algorithm 1's walks as drawn, repeats included; `repairs: 0` discards a
reply that fails instead of re-asking. Inline jobs against the real local fake server."""
from __future__ import annotations

from collections import Counter

import pytest

from generation import services
from generation.models import Conversation, LLMCall, SampledPath
from generation.pipeline.formats import graph_from_json
from generation.pipeline.sampling import raw_walks
from generation.services.config import JobConfigError
from generation.stages.base import content_seed
from tests.fake_openai import point_settings_at
from tests.generation.scripts import BAD, StageScript, import_document

pytestmark = pytest.mark.django_db


def _run(settings, fake, **config):
    point_settings_at(settings, fake, LLM_CACHE=False)
    fake.set_handler(StageScript(bad=BAD))
    job = services.job_create(config={"paths": 6, "conversations": "llm", "seed": 2, "cache": False, **config},
                              import_data=import_document(1), enqueue=False)
    return services.job_run_inline(job=job)


def test_walks_as_drawn_with_repeats(settings, fake_openai):
    job = _run(settings, fake_openai, dedup=False)
    paths = list(SampledPath.objects.filter(job=job).order_by("index"))
    cg = paths[0].conversation_graph
    # Exactly Algorithm 1's six walks, in order, repeats kept (the graph has two distinct paths).
    expected = raw_walks(graph_from_json(cg.data), 6, seed=content_seed(2, cg.data))
    assert [p.node_ids for p in paths] == [[str(n) for n in w] for w in expected]
    assert len({tuple(p.node_ids) for p in paths}) == 2
    assert Conversation.objects.filter(job=job).count() == 6  # one LLM conversation per walk
    assert job.progress.get(stage="paths").notes == {"repeated_paths": 4}
    # The default keeps one path per node sequence.
    job = _run(settings, fake_openai)
    assert SampledPath.objects.filter(job=job).count() == 2


def test_no_repairs_discards_the_first_failing_reply(settings, fake_openai):
    bad = {"conversations": ["Greet the member, desk 0"]}  # every conversation of the graph breaks a rule
    point_settings_at(settings, fake_openai, LLM_CACHE=False)
    for repairs, turns in ((0, {0}), (None, {0, 1, 2})):
        fake_openai.set_handler(StageScript(bad=bad))
        config = {"paths": 2, "conversations": "llm", "cache": False}
        if repairs is not None:
            config["repairs"] = repairs
        job = services.job_run_inline(job=services.job_create(config=config, import_data=import_document(1),
                                                               enqueue=False))
        calls = LLMCall.objects.filter(job=job, stage="conversations")
        assert set(calls.values_list("repair", flat=True)) == turns
        assert Counter(calls.values_list("outcome", flat=True)) == {"invalid": 2 * len(turns)}


@pytest.mark.parametrize("config, message", [({"dedup": "no"}, "dedup must be true or false"),
                                             ({"repairs": 9}, "repairs must be a whole number"),
                                             ({"repairs": True}, "repairs must be a whole number")])
def test_settings_checked(settings, config, message):
    with pytest.raises(JobConfigError, match=message):
        services.job_create(config={"intents": 1, **config}, enqueue=False)

"""Regenerate with feedback (i15): a job that regenerates the children of one parent whose children
reviewers rejected, with their reasons summarised into the prompt as things to avoid.

The summary text is written by the curation app (it owns the reviews) and handed in here. The job
records it in ``config["feedback"]``; every LLM call of the job gets it appended to the prompt and
its template version marked ``<version>+feedback``, so yield can be compared per prompt version.

Parents and what is regenerated:
- ``procedure``: its flowgraph (prompt A.4), and everything below it again;
- ``flowgraph``: its conversation graph (prompt A.5, LLM mode), and below;
- ``conversation_graph``: the rejected conversations, from their paths (prompt A.6).
"""
from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from generation.models import GenerationJob, StageProgress, StageState

PARENTS = ("procedure", "flowgraph", "conversation_graph")
FEEDBACK_SUFFIX = "+feedback"
FEEDBACK_HEADER = "Human reviewers rejected earlier outputs for this input. Avoid these problems:"


def with_feedback(messages: list[dict], text: str) -> list[dict]:
    """The prompt with the feedback appended to its last user message."""
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = f"{m.get('content', '')}\n\n{text}"
            return out
    return out + [{"role": "user", "content": text}]


def feedback_version(version: str, config: dict[str, Any]) -> str:
    return f"{version}{FEEDBACK_SUFFIX}" if config.get("feedback") else version


@transaction.atomic
def feedback_job_create(*, parent: str, parent_id: int, text: str, rejected: list[int], codes: dict[str, int],
                        created_by=None, enqueue: bool = True) -> GenerationJob:
    """Create (and start after commit) the regeneration job; raises JobConfigError on bad input."""
    from generation import llm
    from generation.services import JobConfigError, job_config_normalise, job_create
    from generation.stages import STAGE_ORDER

    if parent not in PARENTS:
        raise JobConfigError(f"cannot regenerate the children of a {parent!r}; one of {', '.join(PARENTS)}")
    if not rejected:
        raise JobConfigError(f"no rejected child of {parent} {parent_id} to regenerate")
    if not llm.endpoint_configured():
        raise JobConfigError(f"{llm.NO_ENDPOINT_MESSAGE} Regenerating with feedback needs it.")
    feedback = {"parent": parent, "parent_id": parent_id, "text": text, "rejected": rejected, "codes": codes}
    base = {"intents": 0, "paths": 2, "sampler": "coverage", "conversations": "llm",
            "conversation_graph": "llm", "feedback": feedback}
    name = f"Regenerate {parent} {parent_id} with feedback"
    if parent == "procedure":
        return job_create(config={**base, "conversation_graph": "deterministic", "conversations": "offline"},
                          existing="apis", existing_ids=[parent_id], name=name, created_by=created_by,
                          enqueue=enqueue)
    if parent == "flowgraph":
        return job_create(config={**base, "conversations": "offline"}, existing="flowgraph",
                          existing_ids=[parent_id], name=name, created_by=created_by, enqueue=enqueue)
    # A graph's conversations: start at the conversations stage from the rejected ones' paths.
    from generation.models import Conversation

    paths = sorted(set(Conversation.objects.filter(pk__in=rejected, path__conversation_graph_id=parent_id)
                       .values_list("path_id", flat=True)))
    if not paths:
        raise JobConfigError(f"the rejected conversations of graph {parent_id} have no paths to regenerate from")
    cfg = job_config_normalise({**base, "start": "conversations", "input_ids": {"paths": paths}})
    job = GenerationJob.objects.create(name=name, config=cfg, created_by=created_by)
    now = timezone.now()
    StageProgress.objects.bulk_create([StageProgress(job=job, stage=s) for s in STAGE_ORDER])
    StageProgress.objects.filter(job=job, stage__in=STAGE_ORDER[:STAGE_ORDER.index("conversations")]).update(
        state=StageState.SKIPPED, started_at=now, finished_at=now)
    StageProgress.objects.filter(job=job, stage="paths").update(
        state=StageState.DONE, imported=len(paths), generated=len(paths), passed=len(paths))
    if enqueue:
        from generation.tasks import job_advance_task

        transaction.on_commit(lambda: job_advance_task.delay(job.pk))
    return job

"""Rejection reasons fed back (i15): the reasons and comments reviewers gave for rejecting the
children of one parent, summarised as things to avoid, and the regeneration job that uses them."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from curation.guidance.services import reason_codes
from curation.models import ItemState, Resolution, Review, ReviewItem, ReviewStage, Verdict
from generation.feedback import FEEDBACK_HEADER, PARENTS, feedback_job_create
from generation.models import Conversation, ConversationGraph, Flowgraph, GenerationJob

MAX_COMMENTS = 5
MAX_COMMENT_CHARS = 300
# parent kind → (child review stage, child queryset for a parent id)
CHILDREN = {
    "procedure": (ReviewStage.FLOWGRAPH, lambda pk: Flowgraph.objects.filter(procedure_id=pk)),
    "flowgraph": (ReviewStage.CONVERSATION_GRAPH, lambda pk: ConversationGraph.objects.filter(flowgraph_id=pk)),
    "conversation_graph": (ReviewStage.CONVERSATION, lambda pk: Conversation.objects.filter(
        path__conversation_graph_id=pk)),
}


class FeedbackError(ValueError):
    pass


@dataclass
class Feedback:
    parent: str
    parent_id: int
    stage: str
    rejected: list[int] = field(default_factory=list)
    codes: Counter = field(default_factory=Counter)
    comments: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        labels = dict(reason_codes(self.stage))
        lines = [FEEDBACK_HEADER]
        for code, n in self.codes.most_common():
            lines.append(f"- {code} ({n}x): {labels.get(code, code)}")
        for c in self.comments:
            lines.append(f'- A reviewer wrote: "{c}"')
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"parent": self.parent, "parent_id": self.parent_id, "rejected": self.rejected,
                "codes": dict(self.codes), "comments": self.comments, "text": self.text}


def feedback_for(*, parent: str, parent_id: int) -> Feedback:
    """What reviewers said about the rejected children of the parent (both verdicts of a rejection
    and an adjudicator's note when they settled it)."""
    if parent not in CHILDREN:
        raise FeedbackError(f"parent must be one of {', '.join(PARENTS)}")
    stage, children = CHILDREN[parent]
    ids = list(children(parent_id).values_list("pk", flat=True))
    items = ReviewItem.objects.filter(stage=stage, object_id__in=ids, state=ItemState.DECIDED,
                                      decision=Verdict.REJECT)
    fb = Feedback(parent=parent, parent_id=parent_id, stage=stage,
                  rejected=sorted(items.values_list("object_id", flat=True)))
    comments: list[str] = []
    for codes, comment in Review.objects.filter(item__in=items, verdict=Verdict.REJECT).order_by("id").values_list(
            "reason_codes", "comment"):
        fb.codes.update(codes or [])
        comments.append(comment)
    comments += list(Resolution.objects.filter(item__in=items).order_by("id").values_list("note", flat=True))
    seen = set()
    for c in comments:
        c = " ".join((c or "").split())[:MAX_COMMENT_CHARS]
        if c and c.lower() not in seen and len(fb.comments) < MAX_COMMENTS:
            seen.add(c.lower())
            fb.comments.append(c)
    return fb


def regenerate_with_feedback(*, parent: str, parent_id: int, created_by=None, enqueue: bool = True
                             ) -> tuple[GenerationJob, Feedback]:
    fb = feedback_for(parent=parent, parent_id=parent_id)
    if not fb.rejected:
        raise FeedbackError(f"no child of {parent} {parent_id} has been rejected")
    job = feedback_job_create(parent=parent, parent_id=parent_id, text=fb.text, rejected=fb.rejected,
                              codes=dict(fb.codes), created_by=created_by, enqueue=enqueue)
    return job, fb

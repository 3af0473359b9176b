"""Corrections in the curation state machine (tests/curation/reviews/test_state_machine.py).

Rules: an adjudicator or admin corrects a flowgraph, conversation graph or conversation with a
text-only or a structural edit; an admin regenerates below a structurally corrected graph through
a real generation job. After every step the machine's invariants run, with these:

* "Regenerate"-marked items are withheld and Excluded: never offered, no claim on them, counted
  as excluded (not open) in every funnel, never released; "Include again" refuses them.
* "Review again" changes no review state (checked in the rule: the items' rows are unchanged).
* An item is flagged ``corrected`` exactly when its artifact has versions or a mark.
* A corrected artifact holds its latest version's content; a corrected conversation's tests are
  exactly what its current messages yield.
"""
from __future__ import annotations

import copy
from collections import Counter

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from curation.models import ArtifactVersion, Claim, CorrectionMark, MarkKind, ReviewItem, ReviewStage
from curation.reviews import corrections, services
from curation.reviews.corrections import CorrectionError
from curation.reviews.state import Effective, effective_of
from generation.models import Conversation, ConversationGraph, Flowgraph, Test
from generation.stages.derived import test_fields

EDITABLE = st.sampled_from([ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION])
TALLY: Counter = Counter()


def _fresh_id(rows: list[dict], prefix: str) -> str:
    taken = {r["id"] for r in rows}
    return next(f"{prefix}{k}" for k in range(len(rows), len(rows) + 1000) if f"{prefix}{k}" not in taken)


def edited(stage: str, content: dict, structural: bool, salt: int) -> dict:
    """The content with one small edit: a wording change, or a new branch / two more turns."""
    new = copy.deepcopy(content)
    if stage == ReviewStage.CONVERSATION:
        turns = new["messages"]
        if structural:
            turns += [{"role": "user", "content": f"Thanks ({salt})."}, {"role": "assistant", "content": "You are welcome."}]
        else:
            last = max(i for i, t in enumerate(turns) if t["role"] == "assistant")
            turns[last]["content"] += f" (corrected {salt})"
        return new
    nodes, edges = new["nodes"], new["edges"]
    say = "message" if stage == ReviewStage.FLOWGRAPH else "assistant"
    anchor = next(n for n in nodes if n["type"] == say and any(e["source"] == n["id"] for e in edges))
    if not structural:
        anchor["label"] += f" (corrected {salt})"
        return new
    if stage == ReviewStage.FLOWGRAPH:
        leaf = {"id": _fresh_id(nodes, "N"), "type": "end_message", "label": f"Goodbye ({salt})."}
        nodes.append(leaf)
        edges.append({"id": _fresh_id(edges, "E"), "source": anchor["id"], "target": leaf["id"], "label": "never mind"})
    else:
        user = {"id": _fresh_id(nodes, "N"), "type": "user", "label": f"No, thanks ({salt})"}
        nodes.append(user)
        bye = {"id": _fresh_id(nodes, "N"), "type": "assistant", "label": "Alright, have a good day."}
        nodes.append(bye)
        edges.append({"id": _fresh_id(edges, "E"), "source": anchor["id"], "target": user["id"], "label": ""})
        edges.append({"id": _fresh_id(edges, "E"), "source": user["id"], "target": bye["id"], "label": ""})
    return new


class CorrectionRules:
    """Mixed into the Curation machine (which provides adjudicator, admin and annotators)."""

    regenerations = 0

    @rule(stage=EDITABLE, structural=st.booleans(), by_admin=st.booleans(), pick=st.integers(0, 50))
    def correct(self, stage: str, structural: bool, by_admin: bool, pick: int) -> None:
        editor = self.admin if by_admin else self.adjudicator
        pool = [i for i in ReviewItem.objects.filter(stage=stage).order_by("pk") if corrections.may_correct(editor, i)]
        if not pool:
            return
        item = pool[pick % len(pool)]
        artifact = corrections.load(item)
        before_rows = {i.pk: (i.state, i.decision, i.review_count, i.excluded)
                       for i in ReviewItem.objects.exclude(pk=item.pk)}
        try:
            version = corrections.correct(editor=editor, item_id=item.pk, note=f"adjudicator note {pick}",
                                          payload=edited(stage, corrections.current_content(stage, artifact), structural, pick))
        except CorrectionError as exc:
            TALLY[f"correction refused: {str(exc)[:40]}"] += 1
            return
        TALLY[f"corrected {stage} {version.change}"] += 1
        assert version.change == ("structure" if structural else "text"), version.change
        marks = list(CorrectionMark.objects.filter(version=version))
        assert {m.kind for m in marks} <= {MarkKind.REGENERATE if structural else MarkKind.REVIEW}
        if not structural or stage == ReviewStage.CONVERSATION:
            # Nothing but the corrected item's own flag changed in any review row.
            after = {i.pk: (i.state, i.decision, i.review_count, i.excluded) for i in ReviewItem.objects.exclude(pk=item.pk)}
            assert after == before_rows

    @precondition(lambda self: self.regenerations < 2)
    @rule(pick=st.integers(0, 50))
    def regenerate(self, pick: int) -> None:
        from generation import services as generation

        marked = ArtifactVersion.objects.filter(marks__kind=MarkKind.REGENERATE).values_list("stage", "object_id")
        pool = list(ReviewItem.objects.filter(stage__in=corrections.GRAPH_STAGES).order_by("pk"))
        pool = [i for i in pool if (i.stage, i.object_id) in set(marked)]
        if not pool:
            return
        self.regenerations += 1
        item = pool[pick % len(pool)]
        try:
            job = corrections.regenerate_below(user=self.admin, item_id=item.pk)
        except CorrectionError as exc:
            # Only a graph curation has rejected (or put out) may not seed a job.
            assert effective_of(ReviewItem.objects.get(pk=item.pk)) in (Effective.REJECTED, Effective.EXCLUDED), exc
            TALLY["regeneration refused (graph out of curation)"] += 1
            return
        job = generation.job_run_inline(job=job)
        assert job.status == "succeeded", (job.status, job.error)
        TALLY[f"regenerated below {item.stage}"] += 1
        services.items_sync()
        ReviewItem.objects.filter(review_count=0, required_reviews__gt=len(self.annotators)).update(
            required_reviews=len(self.annotators))


def check_corrections() -> None:
    """The invariants corrections add (module docstring)."""
    items = {(i.stage, i.object_id): i for i in ReviewItem.objects.all()}
    versions: dict[tuple[str, int], list] = {}
    for v in ArtifactVersion.objects.order_by("number"):
        versions.setdefault((v.stage, v.object_id), []).append(v)
    marks = set(CorrectionMark.objects.values_list("stage", "object_id"))
    regen = set(CorrectionMark.objects.filter(kind=MarkKind.REGENERATE).values_list("stage", "object_id"))
    for key, item in items.items():
        assert item.corrected == (key in versions or key in marks), (item, item.corrected)
        if key in regen:
            assert item.withheld and effective_of(item) == Effective.EXCLUDED, (item, effective_of(item))
    held = set(Claim.objects.values_list("item__stage", "item__object_id"))
    assert not held & regen, held & regen
    models = {ReviewStage.FLOWGRAPH: Flowgraph, ReviewStage.CONVERSATION_GRAPH: ConversationGraph,
              ReviewStage.CONVERSATION: Conversation}
    for (stage, oid), vs in versions.items():
        artifact = models[stage].objects.get(pk=oid)
        assert corrections.current_content(stage, artifact) == vs[-1].content, (stage, oid)
        assert [v.number for v in vs] == list(range(1, len(vs) + 1))
        if stage == ReviewStage.CONVERSATION:
            fields = ("position", "expected_type", "expected_text", "expected_api_name", "fingerprint")
            want = [tuple(t[f] for f in fields) for t in test_fields(artifact.messages)]
            got = list(Test.objects.filter(conversation_id=oid).order_by("position").values_list(*fields))
            assert got == want, (oid, got, want)

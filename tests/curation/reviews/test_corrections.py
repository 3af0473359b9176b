"""Issue #31 item 5: adjudicators correct a flowgraph, conversation graph or conversation."""
from __future__ import annotations

import copy
import json

import pytest
from django.urls import reverse

from curation.guidance import services as guidance
from curation.models import ArtifactVersion, AuditEvent, CorrectionMark, ItemState, Review, ReviewItem, ReviewStage
from curation.reviews import corrections, services
from curation.reviews.corrections import CorrectionError
from generation.models import Conversation, ConversationGraph, Flowgraph
from tests.curation.factories import HOSTILE, build_lineage
from tests.curation.invariants import check_all

FG, CG, CV = ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION


def submit(user, item, verdict):
    """Take the item (the only one of its stage) from the queue and give a verdict."""
    assert services.review_claim_next(annotator=user, stage=item.stage).pk == item.pk
    codes = [] if verdict == "accept" else [sorted(guidance.reason_code_set(item.stage))[0]]
    services.review_submit(annotator=user, item_id=item.pk, verdict=verdict, reason_codes=codes)


def disagree(stage, a, b):
    """Both annotators review the item of `stage` and disagree: it awaits adjudication."""
    item = ReviewItem.objects.get(stage=stage)
    submit(a, item, "accept")
    submit(b, item, "reject")
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT
    return item


@pytest.fixture
def drawn(monkeypatch, django_capture_on_commit_callbacks):
    """Runs what a correction queued for the worker (generation.graphs_draw), as the worker would."""
    from generation import tasks

    queued = []
    monkeypatch.setattr(tasks.graphs_draw_task, "delay", lambda *args: queued.append(args))

    def run():
        for args in queued:
            tasks.graphs_draw_task(*args)
        n = len(queued)
        queued.clear()
        return n

    return queued, run


@pytest.fixture
def lin(db):
    lineage = build_lineage(conversations=1)
    services.items_sync()
    return lineage


def relabel(data, node, label):
    out = copy.deepcopy(data)
    next(n for n in out["nodes"] if n["id"] == node)["label"] = label
    return out


def test_text_edit_keeps_reviews_stores_versions_and_marks_descendants_for_review(lin, annotator_a, annotator_b,
                                                                                  adjudicator, drawn,
                                                                                  django_capture_on_commit_callbacks):
    item = disagree(FG, annotator_a, annotator_b)
    original = copy.deepcopy(lin.flowgraph.data)
    with django_capture_on_commit_callbacks(execute=True):
        v = corrections.correct(editor=adjudicator, item_id=item.pk, note="Clearer question",
                                payload=relabel(original, "N1", "Could you give me your order number?"))
    assert Flowgraph.objects.get(pk=lin.flowgraph.pk).svg == ""  # not drawn in the request
    assert drawn[0] == [("generation.flowgraph", [lin.flowgraph.pk])] and drawn[1]() == 1  # the worker
    assert (v.number, v.change, v.previous.number, v.previous.content) == (2, "text", 1, original)
    fg = Flowgraph.objects.get(pk=lin.flowgraph.pk)
    assert fg.pk == item.object_id and "Could you give me your order number?" in fg.text
    assert next(n for n in fg.data["nodes"] if n["id"] == "N1")["label"] == "Could you give me your order number?"
    assert "data-layout=" in fg.svg[:400] and "Could you give" in fg.svg  # drawn again
    # The reviews stay with the item, which is still awaiting adjudication.
    item.refresh_from_db()
    assert item.state == ItemState.DISAGREEMENT and Review.objects.filter(item=item).count() == 2
    # Descendants (from the lineage itself, not from the service's walk) are marked for review.
    expected = {(CG, lin.conversation_graph.pk)} | {(CV, c.pk) for c in lin.conversations}
    marks = CorrectionMark.objects.filter(version=v)
    assert {(m.stage, m.object_id) for m in marks} == expected and {m.kind for m in marks} == {"review"}
    event = AuditEvent.objects.get(action=AuditEvent.Action.CORRECT, item=item)
    assert event.actor == adjudicator and event.after["version"] == 2 and event.after["descendants_marked"] == 2
    check_all([annotator_a, annotator_b])


def test_structural_edit_marks_descendants_for_regeneration(lin, annotator_a, annotator_b, adjudicator):
    item = disagree(FG, annotator_a, annotator_b)
    data = copy.deepcopy(lin.flowgraph.data)
    # A confirmation step between the greeting and the question: one node and one edge more.
    data["nodes"].append({"id": "N7", "type": "message", "label": "I am sorry to hear that."})
    edge = next(e for e in data["edges"] if e["source"] == "N0")
    edge["target"] = "N7"
    data["edges"].append({"id": "E6", "source": "N7", "target": "N1", "label": "Thanks"})
    v = corrections.correct(editor=adjudicator, item_id=item.pk, payload=data, note="Apologise first")
    assert v.change == "structure"
    assert set(CorrectionMark.objects.filter(version=v).values_list("kind", flat=True)) == {"regenerate"}
    assert CorrectionMark.objects.filter(version=v).count() == 1 + len(lin.conversations)
    # A second edit makes version 3 on top of 2; version 1 is not saved twice.
    v3 = corrections.correct(editor=adjudicator, item_id=item.pk, note="typo",
                             payload=relabel(data, "N7", "I am so sorry to hear that."))
    assert [x.number for x in corrections.history(item)] == [1, 2, 3] and v3.previous_id == v.pk
    check_all([annotator_a, annotator_b])


@pytest.mark.parametrize("old_new, kind", [
    ((("N2", "api", "get_order"), ("N2", "api", "refund_order")), "structure"),  # another API is called
    ((("N1", "message", "a"), ("N1", "message", "b")), "text"),
    ((("N1", "message", "a"), ("N1", "end_message", "a")), "structure"),
])
def test_change_kind(old_new, kind):
    (i, t, label), (i2, t2, label2) = old_new
    old = {"nodes": [{"id": i, "type": t, "label": label}], "edges": []}
    new = {"nodes": [{"id": i2, "type": t2, "label": label2}], "edges": []}
    assert corrections.change_kind(FG, old, new) == kind


@pytest.mark.parametrize("payload, says", [
    ("not an object", "Expected an object"),
    ({"nodes": "N0", "edges": []}, "must be lists"),
    ({"nodes": [{"id": "N0", "type": "start_message", "label": "x" * 5000}], "edges": []}, "at most 4000"),
    ({"nodes": [{"id": ["N0"], "type": "start_message", "label": "hi"}], "edges": []}, "expected text"),
])
def test_bad_input_is_refused_with_a_reason(lin, annotator_a, annotator_b, adjudicator, payload, says):
    item = disagree(FG, annotator_a, annotator_b)
    with pytest.raises(CorrectionError, match=says):
        corrections.correct(editor=adjudicator, item_id=item.pk, payload=payload, note="n")
    assert not ArtifactVersion.objects.exists()


def test_validator_errors_refuse_the_save(lin, annotator_a, annotator_b, adjudicator):
    item = disagree(FG, annotator_a, annotator_b)
    data = copy.deepcopy(lin.flowgraph.data)
    next(n for n in data["nodes"] if n["id"] == "N0")["type"] = "message"  # no start node any more
    with pytest.raises(CorrectionError, match="FG-ROOT"):
        corrections.correct(editor=adjudicator, item_id=item.pk, payload=data, note="oops")
    dangling = copy.deepcopy(lin.flowgraph.data)
    dangling["edges"].append({"id": "E9", "source": "N1", "target": "N99", "label": ""})
    with pytest.raises(CorrectionError, match="N99"):
        corrections.correct(editor=adjudicator, item_id=item.pk, payload=dangling, note="oops")
    with pytest.raises(CorrectionError, match="Nothing changed"):
        corrections.correct(editor=adjudicator, item_id=item.pk, payload=lin.flowgraph.data, note="same")
    with pytest.raises(CorrectionError, match="note"):
        corrections.correct(editor=adjudicator, item_id=item.pk, payload=relabel(lin.flowgraph.data, "N1", "x"), note=" ")
    assert not ArtifactVersion.objects.exists() and not AuditEvent.objects.filter(action="correct").exists()
    assert Flowgraph.objects.get(pk=lin.flowgraph.pk).data == lin.flowgraph.data


def test_who_may_correct(lin, annotator_a, annotator_b, adjudicator, admin_user):
    from tests.conftest import make_user
    from almita_web.roles import ADJUDICATOR, ANNOTATOR

    item = ReviewItem.objects.get(stage=FG)
    assert not corrections.may_correct(adjudicator, item)  # still open
    assert corrections.may_correct(admin_user, item)  # admins may, even while open
    both = make_user("both", ADJUDICATOR, ANNOTATOR)
    submit(both, item, "accept")
    submit(annotator_a, item, "reject")
    item.refresh_from_db()
    assert corrections.may_correct(adjudicator, item)
    assert not corrections.may_correct(both, item)  # reviewed it
    assert not corrections.may_correct(annotator_b, item)
    with pytest.raises(CorrectionError, match="reviewed this item yourself"):
        corrections.correct(editor=both, item_id=item.pk, payload=relabel(lin.flowgraph.data, "N1", "x"), note="n")
    proc = ReviewItem.objects.get(stage=ReviewStage.PROCEDURE)
    assert not corrections.may_correct(admin_user, proc)  # procedures are not edited here
    # Rejecting the flowgraph puts its descendants out of curation: nobody corrects them.
    services.item_resolve(adjudicator=adjudicator, item_id=item.pk, decision="reject", note="wrong branch")
    cg_item = ReviewItem.objects.get(stage=CG)
    assert cg_item.excluded and not corrections.may_correct(admin_user, cg_item)
    with pytest.raises(CorrectionError, match="out of curation"):
        corrections.correct(editor=admin_user, item_id=cg_item.pk, payload={"nodes": [], "edges": []}, note="n")
    check_all([annotator_a, annotator_b, both])


def test_conversation_turn_edit_and_version_seen(lin, annotator_a, annotator_b, admin_user):
    item = ReviewItem.objects.get(stage=CV)
    submit(annotator_a, item, "accept")
    conv = lin.conversations[0]
    messages = [dict(m) for m in conv.messages]
    last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    messages[last]["content"] = "Done. <b>Anything else?</b>"
    v = corrections.correct(editor=admin_user, item_id=item.pk, payload={"messages": messages}, note="Friendlier")
    assert v.change == "text" and Conversation.objects.get(pk=conv.pk).messages[last]["content"].endswith("else?</b>")
    assert not CorrectionMark.objects.exists()  # nothing reviewable below a conversation
    submit(annotator_b, item, "accept")
    versions = corrections.history(item)
    seen = {r.annotator_id: corrections.version_seen(versions, r.updated_at) for r in Review.objects.filter(item=item)}
    assert seen == {annotator_a.pk: 1, annotator_b.pk: 2}
    bad = messages + [{"role": "user", "content": "bye"}]  # ends with the user
    with pytest.raises(CorrectionError, match="CV-LAST-ASSISTANT"):
        corrections.correct(editor=admin_user, item_id=item.pk, payload={"messages": bad}, note="n")
    check_all([annotator_a, annotator_b])


def test_conversation_graph_edit_redraws_and_marks_conversations(lin, annotator_a, annotator_b, adjudicator, drawn,
                                                                  django_capture_on_commit_callbacks):
    item = disagree(CG, annotator_a, annotator_b)
    cg = lin.conversation_graph
    node = next(n for n in cg.data["nodes"] if n["type"] == "assistant")
    with django_capture_on_commit_callbacks(execute=True):
        corrections.correct(editor=adjudicator, item_id=item.pk, note="wording",
                            payload=relabel(cg.data, node["id"], "Hello! Corrected wording."))
    assert drawn[0] == [("generation.conversationgraph", [cg.pk])] and drawn[1]() == 1  # the worker's drawing
    stored = ConversationGraph.objects.get(pk=cg.pk)
    assert "Corrected wording" in stored.svg and "Corrected wording" in stored.text
    assert {(m.stage, m.object_id, m.kind) for m in CorrectionMark.objects.all()} == {
        (CV, c.pk, "review") for c in lin.conversations}


# --------------------------------------------------------------------------- pages


def test_pages_role_checks_and_errors(client, lin, annotator_a, annotator_b, adjudicator, researcher):
    item = disagree(FG, annotator_a, annotator_b)
    url, check = reverse("curation:correct", args=[item.pk]), reverse("curation:correct_check", args=[item.pk])
    assert client.get(url).status_code == 302  # to the login page
    for user in (annotator_a, researcher):
        client.force_login(user)
        assert client.get(url).status_code == 403
        assert client.post(check, "{}", content_type="application/json").status_code == 403
    client.force_login(adjudicator)
    assert client.get(reverse("curation:correct", args=[10 ** 9])).status_code == 404
    assert client.post(reverse("curation:correct_check", args=[10 ** 9]), "{}", content_type="application/json").status_code == 404
    assert client.post(reverse("curation:correct_check", args=[2 ** 63]), "{}", content_type="application/json").status_code == 400
    page = client.get(url)
    assert page.status_code == 200 and b'id="correct-form"' in page.content
    assert b'id="btn-correct"' in client.get(reverse("curation:adjudicate", args=[item.pk])).content
    for body in ("{not json", "[1, 2]", json.dumps({"nodes": [1], "edges": []})):
        r = client.post(check, body, content_type="application/json")
        assert r.status_code == 400 and r.json()["error"]
    data = copy.deepcopy(lin.flowgraph.data)
    data["nodes"].append({"id": "N7", "type": "message", "label": "orphan"})
    r = client.post(check, json.dumps(data), content_type="application/json")
    assert r.status_code == 200 and r.json()["change"] == "structure"
    assert {(f["rule"], f["where"]) for f in r.json()["findings"]} >= {("FG-UNREACHABLE", "N7"), ("FG-LEAF-END", "N7")}
    # A refused save says why and keeps the rows; a good one redirects and lists the version.
    r = client.post(url, {"content": json.dumps(data), "note": "add"})
    assert r.status_code == 400 and b"validator finding" in r.content and b"orphan" in r.content
    assert client.post(url, {"content": "{", "note": "x"}).status_code == 400
    r = client.post(url, {"content": json.dumps(relabel(lin.flowgraph.data, "N1", "Order id, please?")), "note": "shorter"})
    assert r.status_code == 302
    page = client.get(url).content.decode()
    assert 'data-version="2"' in page and "saw version 1" in page and "Review again" in page
    cg_item = ReviewItem.objects.get(stage=CG)
    assert f'href="/curation/adjudication/{cg_item.pk}/"' in page


def test_hostile_text_is_escaped(client, db, annotator_a, annotator_b, admin_user):
    build_lineage(conversations=1, hostile=True)
    services.items_sync()
    item = ReviewItem.objects.get(stage=FG)
    client.force_login(admin_user)
    page = client.get(reverse("curation:correct", args=[item.pk])).content.decode()
    assert HOSTILE not in page and "<script>alert" not in page
    assert "\\u003Cscript\\u003Ealert" in page  # the rows travel in a json_script block


def test_regenerate_below_a_structural_correction(client, lin, annotator_a, annotator_b, adjudicator, admin_user):
    from generation.models import GenerationJob

    item = disagree(FG, annotator_a, annotator_b)
    regen = reverse("curation:correct_regenerate", args=[item.pk])
    client.force_login(admin_user)
    corrections.correct(editor=admin_user, item_id=item.pk, note="text", payload=relabel(lin.flowgraph.data, "N1", "Id?"))
    r = client.post(regen, follow=True)
    assert b"No structural correction" in r.content and not GenerationJob.objects.exists()
    data = copy.deepcopy(lin.flowgraph.data)
    data["nodes"].append({"id": "N7", "type": "end_message", "label": "Goodbye."})
    data["edges"].append({"id": "E6", "source": "N1", "target": "N7", "label": "never mind"})
    corrections.correct(editor=admin_user, item_id=item.pk, note="a way out", payload=data)
    client.force_login(adjudicator)
    assert b"btn-regenerate" not in client.get(reverse("curation:correct", args=[item.pk])).content
    client.post(regen)
    assert not GenerationJob.objects.exists()  # adjudicators do not start jobs
    client.force_login(admin_user)
    r = client.post(regen)
    job = GenerationJob.objects.get()
    assert r.status_code == 302 and job.config["start"] == "conversation_graph"
    assert job.config["conversation_graph"] == "deterministic" and job.config["conversations"] == "offline"
    assert AuditEvent.objects.filter(action="correct", after__regenerate_job=job.pk).exists()
    assert client.get(regen).status_code == 405
    # The job really builds from the corrected flowgraph: a new graph with the new ending.
    from generation import services as generation

    before = set(ConversationGraph.objects.values_list("pk", flat=True))
    job = generation.job_run_inline(job=job)
    new = ConversationGraph.objects.exclude(pk__in=before).filter(flowgraph_id=lin.flowgraph.pk)
    assert job.status == "succeeded", (job.status, job.error)
    assert any(n["label"] == "Goodbye." for g in new for n in g.data["nodes"])
    assert Conversation.objects.filter(path__conversation_graph__in=new).exists()

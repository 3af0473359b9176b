"""The fidelity audit on releases (issue #28 item 3): stored on every release, counted per test,
shown on the card and the release page, `manage.py audit_release`, and an automatic release that
leaves out the tests failing it. The expected counts are worked out here from the corrupted
message's position, not read from the audit."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from curation.models import ReleaseKind
from curation.releases.services import release_create
from generation.models import Conversation, Test
from tests.datasets.conftest import accept_all


def _corrupt(kind: str) -> tuple[Conversation, int]:
    """Break one conversation at one message; return it and the message index."""
    conv = max(Conversation.objects.all(), key=lambda c: len(c.messages))
    msgs = [dict(m) for m in conv.messages]
    if kind == "speech":
        i = max(k for k, m in enumerate(msgs) if m["role"] == "assistant")
        msgs[i]["content"] = "Let me subgoal: tell the customer the tracking_status."
    else:  # a random word where the tracking number was
        i = next(k for k, m in enumerate(msgs) if m["role"] == "api")
        msgs[i]["content"] = "track_parcel(tracking_number='until')"
    Conversation.objects.filter(pk=conv.pk).update(messages=msgs)
    return conv, i


def _failing(conv: Conversation, index: int) -> int:
    return Test.objects.filter(conversation=conv, position__gte=index).count()


@pytest.mark.django_db
def test_a_clean_release_passes_and_says_so(imported, researcher):
    accept_all()
    release = release_create(name="clean", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    a = release.audit
    assert a["tests"] == Test.objects.count() and a["failed"] == 0 and a["left_out"] == 0
    assert a["conversations"] == Conversation.objects.count()
    assert "## Fidelity audit" in release.card and f"{a['tests']} of {a['tests']} tests pass" in release.card


@pytest.mark.django_db
def test_an_automatic_release_leaves_out_failing_tests_and_says_how_many(imported, researcher):
    conv, index = _corrupt("speech")
    expected = _failing(conv, index)
    assert expected >= 1
    release = release_create(name="auto", kind=ReleaseKind.AUTOMATIC, filters={}, created_by=researcher)
    assert release.entries.count() == Test.objects.count() - expected
    assert not release.entries.filter(conversation_id=conv.pk, position__gte=index).exists()
    assert release.audit["left_out"] == expected and release.audit["failed"] == 0
    assert f"{expected} tests that failed the audit were left out" in release.card


@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["speech", "value"])
def test_the_stored_report_of_an_automatic_release_equals_a_fresh_audit_of_its_frozen_records(
        imported, researcher, kind):
    """The automatic release reuses its pre-freeze findings for its report; read from the frozen
    records alone (what audit_release does), the report must be the same."""
    from curation.releases.audit import release_audit

    _corrupt(kind)
    release = release_create(name="auto", kind=ReleaseKind.AUTOMATIC, filters={}, created_by=researcher)
    assert release.audit["left_out"] >= 1
    assert release_audit(release) == release.audit
    accept_all()
    curated = release_create(name="kept", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    assert curated.audit["failed"] >= 1 and release_audit(curated) == curated.audit
    # The shortcut given findings for every conversation (failures included) reports the same.
    from generation.models import Test as LiveTest
    from generation.services.audit import audit_tests
    memo: dict = {}
    audit_tests(LiveTest.objects.all(), memo=memo)
    assert release_audit(curated, known=memo) == curated.audit
    assert release_audit(curated, known={0: []}) == curated.audit  # not covering: read the records


@pytest.mark.django_db
def test_a_curated_release_keeps_and_reports_them_and_the_command_audits_it(imported, researcher):
    accept_all()
    conv, index = _corrupt("value")
    expected = _failing(conv, index)
    release = release_create(name="cur", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    a = release.audit
    assert a["failed"] == expected and a["failed_by_kind"] == {"outcome": 0, "value": expected, "speech": 0}
    assert a["findings"][0]["conversation"] == f"conversation-{conv.pk}" and a["findings"][0]["index"] == index
    assert f"{a['tests'] - expected} of {a['tests']} tests pass the audit ({expected} fail)" in release.card
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_:
        call_command("audit_release", f"cur@{release.version}", stdout=out)
    assert exit_.value.code == 1
    assert "tracking_number='until'" in out.getvalue() and "[value]" in out.getvalue()
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("audit_release", str(release.pk), "--json", stdout=out)
    assert json.loads(out.getvalue())["failed"] == expected


@pytest.mark.django_db
def test_the_command_refuses_an_unknown_release_and_passes_a_clean_one(imported, researcher):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="not found"):
        call_command("audit_release", "nope")
    accept_all()
    release = release_create(name="ok", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    release.audit = {}
    release.save(update_fields=["audit"])
    out = io.StringIO()
    call_command("audit_release", "ok", "--save", stdout=out)  # exit 0: nothing fails
    release.refresh_from_db()
    assert release.audit["failed"] == 0 and "tests pass the audit" in out.getvalue()


@pytest.mark.django_db
def test_the_release_page_shows_the_audit_panel_to_researchers_only(client, imported, researcher, annotator_a):
    accept_all()
    conv, index = _corrupt("speech")
    release = release_create(name="page", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    client.force_login(annotator_a)
    assert client.get(f"/datasets/{release.pk}/").status_code == 403
    client.force_login(researcher)
    page = client.get(f"/datasets/{release.pk}/").content.decode()
    assert 'id="release-audit"' in page and f"{release.audit['failed']} of {release.audit['tests']} tests fail" in page
    assert "Let me subgoal" in page and "<script" not in page.split('id="release-audit"')[1].split("</section>")[0]
    listing = client.get("/datasets/").content.decode()  # the release's card in the list
    assert f"audit: {release.audit['failed']} of {release.audit['tests']} tests fail" in listing


def _spoil_everywhere(conv: Conversation) -> None:
    """Every assistant turn and API call of ``conv`` fails the audit: so does each of its tests."""
    msgs = [dict(m) for m in conv.messages]
    for m in msgs:
        if m["role"] == "assistant":
            m["content"] = "Subgoal: tell the customer."
        elif m["role"] == "api":
            m["content"] = "track_parcel(tracking_number='until')"
    Conversation.objects.filter(pk=conv.pk).update(messages=msgs)


@pytest.mark.django_db
def test_the_freeze_audit_leaves_out_exactly_what_the_plain_audit_fails(imported, researcher):
    """Issue #29: the automatic release audits inside the freeze. generation.services.audit's
    audit_tests (the plain reading of the live rows) is the independent check: the frozen tests are
    all minus its failures, and freezing the survivors without the audit (a curated release of
    exactly them) gives the same content hash, counts and card sections."""
    from generation.services.audit import audit_tests

    convs = sorted(Conversation.objects.all(), key=lambda c: c.pk)
    assert len(convs) >= 3
    _corrupt("speech")
    graph = convs[0].path.conversation_graph
    for conv in Conversation.objects.filter(path__conversation_graph=graph):
        _spoil_everywhere(conv)  # a graph left with no test: no records, no coverage of it either
    failing = audit_tests(Test.objects.all())
    assert Test.objects.filter(conversation=convs[0]).count() > 0
    assert set(Test.objects.filter(conversation=convs[0]).values_list("pk", flat=True)) <= set(failing)
    auto = release_create(name="auto", kind=ReleaseKind.AUTOMATIC, filters={}, created_by=researcher)
    frozen = set(auto.entries.values_list("test_id", flat=True))
    assert frozen == set(Test.objects.values_list("pk", flat=True)) - set(failing)
    assert auto.audit["left_out"] == len(failing) and auto.audit["failed"] == 0
    assert not auto.records.filter(kind="conversation", object_id=convs[0].pk).exists()
    assert not auto.records.filter(kind="conversation_graph", object_id=graph.pk).exists()
    assert auto.records.filter(kind="conversation_graph").exists()

    Conversation.objects.update(status="accepted")
    Test.objects.update(status="accepted")
    Test.objects.filter(pk__in=list(failing)).update(status="rejected")
    plain = release_create(name="plain", kind=ReleaseKind.CURATED, filters={}, created_by=researcher)
    assert plain.content_hash == auto.content_hash
    assert plain.manifest["counts"] == auto.manifest["counts"]
    sections = {part.split("\n", 1)[0]: part for part in auto.card.split("\n## ")}
    for title in ("Coverage of the conversation graphs", "Noise kinds"):
        assert sections[title] in plain.card


@pytest.mark.django_db
def test_an_automatic_release_whose_every_test_fails_is_refused_and_leaves_nothing(imported, researcher):
    from curation.models import Release
    from curation.releases.services import ReleaseError

    for conv in Conversation.objects.all():
        _spoil_everywhere(conv)
    with pytest.raises(ReleaseError, match=rf"all {Test.objects.count()} selected tests fail"):
        release_create(name="none", kind=ReleaseKind.AUTOMATIC, filters={}, created_by=researcher)
    assert not Release.objects.exists()

"""Contexts stored as a count (context_len) or whole: a context is a count exactly when its text is
the text of its conversation's first messages (the former comparison, kept as the oracle here), on
both databases, including contexts that are not a prefix, numbers equal as jsonb but not as text,
and SQLite texts as written. The messages' items, scanned once, give both the comparison's item
ends and the conversation record's messages. The release card's coverage from the freeze's own data
equals the coverage read back from the release."""
from __future__ import annotations

import json

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.loop.services import card_lines
from curation.models import ReleaseKind
from curation.releases.freeze import _json, _scan_items
from curation.releases.rows import raw_rows, release_test_rows
from curation.releases.services import release_create, release_verify
from generation.models import Conversation, Test
from tests.curation.factories import build_lineage
from tests.datasets.test_release_format2 import assert_same_outputs

pytestmark = pytest.mark.django_db

PG = connection.vendor == "postgresql"


def raw_texts(test_ids: list[int]) -> dict[int, tuple[str, str]]:
    """{test id: (the conversation's messages, the test's context)} as the database's text."""
    cast = "{}::text" if PG else "CAST({} AS TEXT)"
    rows = list(raw_rows(f"SELECT t.id, {cast.format('c.messages')}, {cast.format('t.context')} FROM generation_test t "
                         "JOIN generation_conversation c ON c.id = t.conversation_id WHERE t.id IN "
                         f"({', '.join('%s' for _ in test_ids)})", test_ids))
    return {pk: (m, c) for pk, m, c in rows}


def one_test(messages, context) -> Test:
    lin = build_lineage(conversations=1)
    conv = lin.conversations[0]
    Conversation.objects.filter(pk=conv.pk).update(messages=messages)
    test = Test.objects.filter(conversation=conv).order_by("position").first()
    Test.objects.filter(conversation=conv).exclude(pk=test.pk).delete()
    Test.objects.filter(pk=test.pk).update(context=context)
    return test


def test_generated_contexts_are_stored_as_counts():
    build_lineage(conversations=3)
    release = release_create(name="generated", kind=ReleaseKind.AUTOMATIC)
    tests = {t.pk: t for t in Test.objects.all()}
    entries = list(release.entries.all())
    assert entries and all(e.context_len == len(tests[e.test_id].context) for e in entries)
    assert all(e.context_len == old_prefix_check(*raw_texts([e.test_id])[e.test_id]) for e in entries)


MESSAGES = [{"role": "user", "content": "hello, ] \"world\""}, {"role": "assistant", "content": "hi"},
            {"role": "user", "content": "bye"}]


@pytest.mark.parametrize("context, k", [
    ([], 0), (MESSAGES[:1], 1), (MESSAGES[:2], 2), (MESSAGES, 3),
    (MESSAGES[1:2], None),  # not the start
    ([{"role": "user", "content": "hello"}], None),  # the first message's text cut short
    ([{"role": "user", "content": 'HELLO, ] "WORLD"'}], None),  # as long as the first message
    ([MESSAGES[0], {"role": "assistant", "content": "HI"}], None),
    (MESSAGES + [{"role": "user", "content": "more"}], None),  # longer than the conversation
    ([{**MESSAGES[0], "extra": 1}], None),
])
def test_prefix_or_not(context, k, researcher):
    test = one_test(MESSAGES, context)
    assert old_prefix_check(*raw_texts([test.pk])[test.pk]) == k
    release = release_create(name="one", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    entry = release.entries.get(test_id=test.pk)
    assert entry.context_len == k and ("context" in entry.data) == (k is None)
    assert release_verify(release)
    assert_same_outputs(release)


def test_numbers_equal_as_json_but_not_as_text_are_not_a_prefix(researcher):
    """1.0 and 1 are equal as jsonb (and as Python values) but print differently: the context stays
    whole and keeps its own number."""
    messages = [{"role": "user", "content": "x", "n": 1.0}, {"role": "assistant", "content": "y"}]
    test = one_test(messages, [{"role": "user", "content": "x", "n": 1}])
    other = one_test(messages, messages[:1])  # the same number: a prefix
    release = release_create(name="numbers", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    entries = {e.test_id: e for e in release.entries.all()}
    assert entries[test.pk].context_len is None and entries[other.pk].context_len == 1
    rows = {row["test_id"]: row for *_x, row in release_test_rows(release)}
    assert rows[test.pk]["context"] == [{"role": "user", "content": "x", "n": 1}]
    assert type(rows[test.pk]["context"][0]["n"]) is int and type(rows[other.pk]["context"][0]["n"]) is float
    assert release_verify(release)
    assert_same_outputs(release)


def test_a_context_that_is_not_a_prefix_is_stored_whole(researcher):
    lin = build_lineage(conversations=2)
    tests = list(Test.objects.filter(conversation=lin.conversations[0]).order_by("position"))
    odd, short = tests[1], tests[2]
    Test.objects.filter(pk=odd.pk).update(context=[{"role": "user", "content": "not said"}, *odd.context])
    Test.objects.filter(pk=short.pk).update(context=short.context[:-1] + [{**short.context[-1], "content": "cut"}])
    release = release_create(name="odd", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    whole = release.entries.filter(context_len__isnull=True)
    assert sorted(whole.values_list("test_id", flat=True)) == sorted([odd.pk, short.pk])
    assert all(e.data["context"] == Test.objects.get(pk=e.test_id).context for e in whole)
    assert release.entries.filter(context_len__isnull=False).count() == Test.objects.count() - 2
    assert release_verify(release)
    assert_same_outputs(release)


@pytest.mark.skipif(PG, reason="PostgreSQL stores jsonb: its text is always canonical")
@pytest.mark.parametrize("messages, context", [
    ('[1 , 2]', '[1]'), ('[1 , 2]', '[1 ]'), ('[1 ]', '[1 ]'), ('[1,2]', '[1]'), ('[12, 3]', '[1]'),
    ('[1.5, 3]', '[1]'), ('[1, 2]', '[1 ]'), ('[ "a", "b"]', '[ "a"]'), ('["a]", 1]', '["a]"]'), ('[[1], 2]', '[[1]]'),
    ('[[1, 2]]', '[[1]]'), ('[{"a": 1},{"b": 2}]', '[{"a": 1}]'), ('[]', '[]'), ('{"a": 1}', '[]'), ('[1, 2]', '[ ]'),
])
def test_sqlite_texts_as_stored(messages, context):
    """SQLite keeps the JSON text as written: spacing and where a number ends decide, and the
    conversation record holds the messages as decoded."""
    test = one_test([], [])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE generation_conversation SET messages = %s WHERE id = %s",
                       [messages, test.conversation_id])
        cursor.execute("UPDATE generation_test SET context = %s WHERE id = %s", [context, test.pk])
    release = release_create(name="texts", kind=ReleaseKind.AUTOMATIC)
    entry = release.entries.get(test_id=test.pk)
    assert entry.context_len == old_prefix_check(messages, context)
    row = next(row for *_x, row in release_test_rows(release) if row["test_id"] == test.pk)
    assert row["context"] == json.loads(context)
    record = release.records.get(kind="conversation", object_id=test.conversation_id).data
    assert record["messages"] == json.loads(messages)
    assert release_verify(release)


def old_prefix_ends(raw):
    """release_freeze's item ends before the messages' items were kept with them (the oracle)."""
    out = {}
    if raw.__class__ is not str or not raw.startswith("["):
        return None
    i, k, n = 1, 0, len(raw)
    while True:
        while i < n and raw[i] in " \t\n\r":
            i += 1
        if i >= n or raw[i] == "]":
            return out
        try:
            i = json.JSONDecoder().scan_once(raw, i)[1]
        except (ValueError, StopIteration):
            return None
        k += 1
        out[i] = k
        while i < n and raw[i] in " \t\n\r":
            i += 1
        if i < n and raw[i] == ",":
            i += 1
        else:
            return out


def old_prefix_check(messages: str, context: str) -> int | None:
    prefixes = old_prefix_ends(messages)
    if prefixes is None:
        return None
    k = 0 if context == "[]" else prefixes.get(len(context) - 1)
    return None if k and not (context[-1] == "]" and messages.startswith(context[:-1])) else k


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(['1', '2.5', '"a,]"', '[]', '[1, [2]]', '{"a": ", "}', 'null', '-0']),
                          st.sampled_from(['', ' ', '\n', '  '])), max_size=4),
       st.sampled_from(['', ' ', ',', ', ', ']', 'x']), st.booleans())
def test_scanned_items_are_the_decoded_array_and_its_item_ends(parts, tail, close):
    raw = "[" + ",".join(ws + item + ws for item, ws in parts) + tail + ("]" if close else "")
    items, ends = _scan_items(raw)
    assert ends == old_prefix_ends(raw)
    try:
        whole = _json(raw)  # what the conversation record held before (trailing text is ignored)
    except (ValueError, StopIteration):
        whole = None
    assert items == whole and (items is None or type(items) is list), raw


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, 1.0, 2.25])
    | st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "role"]), inner, max_size=2),
    max_leaves=6)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(messages=st.lists(json_values, max_size=4), cut=st.integers(0, 5), change=st.sampled_from(
    ["none", "last", "append", "first"]))
def test_random_contexts_agree_with_python(messages, cut, change):
    context = messages[:cut]
    if change == "last" and context:
        context[-1] = [context[-1]]
    elif change == "append":
        context = context + [json.loads(json.dumps(messages[-1])) if messages else 0]
    elif change == "first" and context:
        context = [{"x": context[0]}] + context[1:]
    with transaction.atomic():
        test = one_test(messages, context)
        release = release_create(name="random", kind=ReleaseKind.AUTOMATIC)
        texts = raw_texts([test.pk])[test.pk]
        assert release.entries.get().context_len == old_prefix_check(*texts)
        transaction.set_rollback(True)


def test_card_coverage_from_the_freeze_equals_the_coverage_read_back(researcher):
    lin = build_lineage(conversations=3)
    build_lineage(conversations=2, seed=5)
    Conversation.objects.filter(pk=lin.conversations[1].pk).update(path=None)  # no graph to cover
    release = release_create(name="card", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    section = card_lines(release)  # read from the release's rows, as before
    assert any("Node coverage" in line for line in section)
    assert "\n".join(section) in release.card


def test_deleting_a_release_deletes_its_rows_without_a_database_constraint(researcher):
    """The release foreign keys carry no database constraint (UNCHECKED_RELEASE_FK): Django's
    cascade still removes a release's rows, and another release's rows stay."""
    from curation.models import Release, ReleaseRecord, ReleaseTest

    build_lineage(conversations=2)
    gone = release_create(name="gone", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    kept = release_create(name="kept", kind=ReleaseKind.AUTOMATIC, created_by=researcher)
    with connection.cursor() as cursor:
        for model in (ReleaseTest, ReleaseRecord):
            fks = [c for c in connection.introspection.get_constraints(cursor, model._meta.db_table).values()
                   if c["foreign_key"] and c["columns"] == ["release_id"]]
            assert fks == []
    Release.objects.filter(pk=gone.pk).delete()
    assert not ReleaseTest.objects.filter(release_id=gone.pk).exists()
    assert not ReleaseRecord.objects.filter(release_id=gone.pk).exists()
    assert ReleaseTest.objects.filter(release=kept).count() == Test.objects.count()
    assert release_verify(kept)

"""tests.csv rendered from format 1 rows (curation.releases.format1_csv): the text-cutting fast path gives
byte-for-byte the CSV of the per-row path (release_rows_slim + CsvLineMaker) on random rows with
hostile text, on SQLite and on PostgreSQL, and rows it cannot prove take the per-row path."""
from __future__ import annotations

import json

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curation.models import Release, ReleaseRecord, ReleaseTest
from curation.releases.csv_render import CsvLineMaker, csv_chunks
from curation.releases.exports import release_csv
from curation.releases.format1_csv import FastCsvLines, rendered_csv_chunks
from curation.releases.format1_rows import format1_texts, release_rows_slim
from curation.releases.freeze import canonical_text
from curation.releases.rows import plain_rows

pytestmark = pytest.mark.django_db

# Quotes, commas, line breaks, TAB, backslashes, slashes, control characters, non-ASCII, and every
# character that starts a spreadsheet formula.
hostile = st.text(alphabet=st.sampled_from(list('ab ,"\n\r\t\\/=+-@\'é{}[]:\x01\x0b\x1f\x7f') + ["\u2028", "😀"]),
                  max_size=10)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "api", "=cmd"]) | hostile,
                                 "content": hostile})
odd_item = (st.integers(-3, 3) | st.sampled_from([1.5, -2.25, 0.1, 1.0, 100.0]) | st.booleans()
            | hostile | st.fixed_dictionaries({"content": hostile, "role": hostile, "name": hostile}))
# (floats that PostgreSQL's numeric gives back as the same text)
scalar = st.none() | st.integers(-5, 10**12) | st.sampled_from([1.5, -2.25, 0.1, 1.0, 100.0]) | st.booleans() | hostile


def procedure(pid: int) -> tuple[dict, dict, list]:
    """(intent, procedure, apis) of a procedure id: the same for every test naming it (as frozen)."""
    text = ["=SUM(A1)", 'text, "quoted"\nline\r\n', "plain", "\ttab", "-1", "@x"][pid % 6]
    return ({"id": pid % 3, "client": "c,\"x" if pid % 2 else "+client", "issue": "i", "name": f"n\n{pid}"},
            {"id": pid, "title": "t", "text": f"{text} {pid}"},
            [{"name": f"a{pid}", "desc": "d,\"", "params": [{"name": "x", "type": "str"}], "n": 1.5}])


@st.composite
def frozen_rows(draw, odd: bool = True):
    rows = []
    for conv in range(draw(st.integers(1, 4))):
        pid = draw(st.integers(1, 3))
        messages = draw(st.lists(message, min_size=1, max_size=7))
        if odd and draw(st.integers(0, 5)) == 0:  # a message of another shape (per-row path)
            messages.insert(draw(st.integers(0, len(messages))), draw(odd_item))
        positions = sorted(draw(st.sets(st.integers(0, len(messages)), min_size=1, max_size=5)))
        for pos in positions:
            context = messages[:pos]
            if draw(st.integers(0, 6)) == 0:  # sometimes not a prefix of the conversation
                context = draw(st.lists(message | (odd_item if odd else message), max_size=3))
            call = draw(st.booleans())
            intent, proc, apis = procedure(pid)
            row = {
                "test_id": len(rows) + 1, "conversation_id": conv, "position": pos, "intent": intent,
                "procedure": proc, "apis": apis, "context": context,
                "expected": ({"type": "api_call", "name": draw(hostile), "parameters": draw(st.dictionaries(
                    hostile, scalar, max_size=3))} if call else {"type": draw(st.sampled_from(["reply", "=x"])),
                                                                   "content": draw(hostile)}),
                "noise_kinds": draw(st.lists(st.sampled_from(["digression", "a,b", "=n"]), max_size=2)),
                "path_node_ids": draw(st.lists(st.sampled_from(["N0", "N 1", "-N2"]), max_size=3)),
                "flowgraph_id": draw(st.none() | st.integers(0, 9)), "conversation_graph_id": draw(st.none() | st.integers(0, 9)),
                "conversation_mode": "offline", "job_id": None, "path_id": conv,
            }
            if draw(st.booleans()):
                row["expected_action"] = draw(st.none() | hostile)
            rows.append(row)
    return rows


def store(rows: list[dict], text=canonical_text) -> Release:
    """A format 1 release of these rows, stored as release_create stored them (canonical text)."""
    version = (Release.objects.filter(name="f1").order_by("-version").values_list("version", flat=True).first() or 0) + 1
    release = Release.objects.create(name="f1", version=version, content_hash="-", manifest={}, format=1)
    pids = {d["procedure"]["id"]: d for d in rows}
    ReleaseRecord.objects.bulk_create([
        ReleaseRecord(release=release, kind="procedure", object_id=pid, data={
            "kind": "procedure", "id": f"procedure-{pid}", "text": d["procedure"]["text"], "apis": d["apis"]})
        for pid, d in pids.items()])
    table = connection.ops.quote_name(ReleaseTest._meta.db_table)
    with connection.cursor() as cursor:
        for d in rows:
            cursor.execute(f"INSERT INTO {table} (release_id, test_id, conversation_id, position, data, csv_line) "
                           "VALUES (%s, %s, %s, %s, %s, '')",
                           [release.pk, d["test_id"], d["conversation_id"], d["position"], text(d)])
    return release


def slow(release: Release) -> str:
    return "".join(csv_chunks(release_rows_slim(release)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(frozen_rows())
def test_rendered_csv_equals_the_per_row_path_on_random_hostile_rows(rows):
    release = store(rows)
    fast = "".join(rendered_csv_chunks(release))
    assert fast == slow(release)
    if connection.vendor == "sqlite":  # and what the rows themselves render to, keys in stored order
        assert fast == "".join(csv_chunks(json.loads(canonical_text(d)) for d in rows))
    assert "".join(release_csv(release)) == fast  # the download (no stored CSV records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(frozen_rows(odd=False))
def test_message_rows_mostly_take_the_fast_path_and_equal_the_per_row_path(rows):
    """Rows of messages only: every row the fast path renders is the per-row path's record."""
    release = store(rows)
    if connection.vendor == "sqlite":
        texts = [t for t, _ctx in plain_rows(format1_texts(release, True))]
        lines = FastCsvLines(release)
        assert [lines(t) for t in texts] == list(map(CsvLineMaker(), release_rows_slim(release)))
        # Per row only: a procedure's first test, and a test whose context does not extend the one
        # before it in its conversation.
        ordered = sorted(rows, key=lambda d: (d["conversation_id"], d["position"], d["test_id"]))
        seen, per_row, prev = set(), 0, None
        for d in ordered:
            pid = d["procedure"]["id"]
            if pid not in seen or (prev is not None and prev["conversation_id"] == d["conversation_id"]
                                   and d["context"][:len(prev["context"])] != prev["context"]):
                per_row += 1
            seen.add(pid)
            prev = d
        assert lines.fallbacks == per_row
    assert "".join(rendered_csv_chunks(release)) == slow(release)


def test_odd_shapes_take_the_per_row_path():
    """Rows the fast path cannot prove render per row, to the same bytes."""
    intent, proc, apis = procedure(1)
    base = {"test_id": 1, "conversation_id": 7, "position": 2, "intent": intent, "procedure": proc, "apis": apis,
            "context": [{"role": "user", "content": "hi"}], "expected": {"type": "reply", "content": "=1+1"},
            "noise_kinds": [], "path_node_ids": ["N0"], "flowgraph_id": 1, "conversation_graph_id": 2}
    release = store([base])
    lines = FastCsvLines(release)
    canonical = canonical_text(base)
    first = lines(canonical)  # a procedure's first test: its cells are built per row
    assert lines.fallbacks == 1 and lines.fast(canonical) == first

    warm = canonical

    def fresh() -> FastCsvLines:  # one that has seen the procedure, then a test of another conversation
        got = FastCsvLines(release)
        got(warm)
        return got

    def per_row(text: str) -> str:
        make = CsvLineMaker()
        make(json.loads(warm))
        return make(json.loads(text))

    base = {**base, "conversation_id": 8}
    canonical = canonical_text(base)
    assert fresh().fast(canonical) == per_row(canonical)  # the control: this shape is taken
    odd = {
        "ORM text (spaces)": json.dumps(base),
        "a key after test_id": canonical_text({**base, "zzz": 1}),
        "context not a list": canonical_text({**base, "context": {"role": "user"}}),
        "a message with another key": canonical_text({**base, "context": [{"role": "u", "content": "c", "x": 1}]}),
        "a non-canonical escape": canonical.replace('"hi"', '"h\\u0069"'),
        "an escaped slash": canonical.replace('"hi"', '"h\\/"'),
        "no expected": canonical_text({k: v for k, v in base.items() if k != "expected"}),
        "expected not an object": canonical_text({**base, "expected": "reply"}),
        "a float position": canonical_text({**base, "position": 2.0}),
        "a negative test id": canonical_text({**base, "test_id": -1}),
        "nested position and procedure keys": canonical_text({**base, "intent": {**intent, "position": 1, "procedure": {"id": 1}}}),
        "a nested expected key": canonical_text({**base, "context": [], "conversation_graph_id": {"a": 1, "expected": {}}}),
        "a list conversation id": canonical_text({**base, "conversation_id": [7]}),
        "a procedure without text": canonical_text({**base, "procedure": {"id": 1, "title": "t"}}),
        "a string procedure id": canonical_text({**base, "procedure": {**proc, "id": "1"}}),
        "no conversation id": canonical_text({k: v for k, v in base.items() if k != "conversation_id"}),
    }
    for why, text in odd.items():
        assert fresh().fast(text) is None, why
    # Nested keys named like the row's own are cut around, not mistaken for them.
    for ok in ({**base, "expected": {"type": "api_call", "name": "f", "parameters": {"position": 3, "procedure": {}}}},
               {**base, "intent": {**intent, "position": 3, "test_id": 4}}, {**base, "intent": {**intent, "procedure": {"id": 1}}}):
        assert fresh().fast(canonical_text(ok)) == per_row(canonical_text(ok))


def test_same_conversation_context_equal_as_values_but_not_as_text_goes_per_row():
    """[1] then [1.0, 2] in one conversation: CsvLineMaker compares values (1 == 1.0) and grows its
    text; the fast path does not see a text prefix and leaves the row to the per-row path."""
    intent, proc, apis = procedure(2)
    rows = [{"test_id": k + 1, "conversation_id": 1, "position": k, "intent": intent, "procedure": proc, "apis": apis,
             "context": ctx, "expected": {"type": "reply", "content": "x"}}
            for k, ctx in enumerate([[{"content": "a", "role": "user"}], [1], [1.0, 2], [True, 2, 3],
                                     [{"content": "a", "role": "user"}], [{"content": "a", "role": "user"}]])]
    release = store(rows)
    assert "".join(rendered_csv_chunks(release)) == slow(release) == "".join(csv_chunks(rows))
    assert FastCsvLines(release).fast(canonical_text(rows[2])) is None

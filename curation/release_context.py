"""The tests a release freezes, with the number of messages of each context the database can prove
to be the start of its conversation's messages.

release_freeze stores a context that is the first k messages of its conversation as k alone
(ReleaseTest.context_len), comparing the database's texts: the context's text without its closing
bracket must start the messages' text and end where the messages' k-th item ends. Fetching every
context only to make that comparison, and then dropping it, took about a second of an 80,000-test
release on PostgreSQL (jsonb printed as text, sent, decoded). There the stream built here answers,
per test, ``k`` where SQL proves that comparison holds, and then no context; otherwise NULL and the
context as before, which release_freeze compares as it always did (so SQL only ever skips work: it
never decides that a context is not a prefix).

Equal jsonb values print the same text except for numbers (1.0 = 1 as jsonb, but not as text): a
conversation whose messages hold any number is left to the text comparison. The empty array is 0
when the messages are an array, as in release_freeze.

SQLite keeps JSON as text and hands it over in-process: its contexts cost next to nothing to fetch,
while the same comparison in SQL (substr on text, json_array_length) took longer than fetching
them, so there k is always NULL and release_freeze compares every context (decoding each message
once, for the comparison and the conversation record together).
"""
from __future__ import annotations

from django.db import connection
from django.db.models import IntegerField, Value

from generation.models import Conversation

# The columns release_freeze reads per test, after the stream's (pk, conversation_id, position, k, context).
TEST_COLUMNS = ("expected_type", "expected_text", "expected_api_name", "expected_parameters", "action", "job_id")

_PG_K = """CASE WHEN jsonb_typeof(t.context) = 'array' AND jsonb_typeof(c.messages) = 'array' THEN
  CASE WHEN jsonb_array_length(t.context) = 0 THEN 0
       WHEN NOT c.numbers AND t.context = jsonb_path_query_array(
         c.messages, '$[0 to $n]', jsonb_build_object('n', jsonb_array_length(t.context) - 1))
       THEN jsonb_array_length(t.context) END END"""
_PG_CONVERSATIONS = ("SELECT id, messages, jsonb_path_exists(messages, 'strict $.** ? (@.type() == \"number\")') "
                     "AS numbers FROM {table}")


def prefixed_tests(tests_qs):
    """The tests of `tests_qs` in (conversation, position) order, each row (pk, conversation_id,
    position, k or NULL, NULL or the context's value, *TEST_COLUMNS): SQL and its parameters on
    PostgreSQL; elsewhere a queryset whose k is always NULL."""
    if connection.vendor != "postgresql":
        return tests_qs.annotate(k=Value(None, output_field=IntegerField())).order_by(
            "conversation_id", "position").values_list(
            "pk", "conversation_id", "position", "k", "context", *TEST_COLUMNS)
    tests_sql, params = tests_qs.order_by().values_list(
        "pk", "conversation_id", "position", "context", *TEST_COLUMNS).query.sql_with_params()
    ids_sql, ids_params = tests_qs.order_by().values("conversation_id").query.sql_with_params()
    convs = _PG_CONVERSATIONS.format(table=connection.ops.quote_name(Conversation._meta.db_table))
    rest = ", ".join(f"s.{c}" for c in TEST_COLUMNS)
    # OFFSET 0 keeps each subquery from being merged into its parent: the conversations' number
    # check runs once per conversation (not per test), k once per test (not once per use).
    sql = (f"SELECT s.pk, s.conversation_id, s.position, s.k, CASE WHEN s.k IS NULL THEN s.context END, {rest} "
           f"FROM (SELECT t.*, {_PG_K} AS k FROM ({tests_sql}) t "
           f"INNER JOIN ({convs} WHERE id IN ({ids_sql}) OFFSET 0) c ON c.id = t.conversation_id "
           "ORDER BY t.conversation_id, t.position OFFSET 0) s ORDER BY s.conversation_id, s.position")
    return sql, [*params, *ids_params]

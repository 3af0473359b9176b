"""Dialogue-action labels are stored on generated tests and conversations, travel with release
rows and the CSV export, and show on the review page."""
from __future__ import annotations

import csv
import io

import pytest
from django.template.loader import render_to_string

from curation.releases import services as releases
from curation.releases.exports import CSV_COLUMNS, CsvLineMaker
from curation.reviews.present import turns_with_actions
from generation import services
from generation.models import Conversation, Test
from generation.pipeline.dialogue_actions import ACTIONS, answer_action, label_turns
from tests.fake_openai import point_settings_at
from tests.generation.scripts import BAD, JOB_CONFIG, StageScript


@pytest.mark.django_db
def test_generated_tests_and_turns_carry_their_actions(settings, fake_openai):
    point_settings_at(settings, fake_openai)
    fake_openai.set_handler(StageScript(bad=BAD))
    job = services.job_run_inline(job=services.job_create(config=JOB_CONFIG, enqueue=False))
    tests = list(Test.objects.filter(job=job).select_related("conversation__procedure__intent"))
    assert tests
    for t in tests:
        assert t.action in ACTIONS and t.action == answer_action(t.context, t.expected)
    assert {t.action for t in tests if t.expected_type == "api_call"} == {"call"}
    for conv in Conversation.objects.filter(job=job):
        assert conv.turn_actions == label_turns(conv.messages) and len(conv.turn_actions) == len(conv.messages)
    release = releases.release_create(name="actions", kind="automatic")
    from curation.releases.rows import csv_lines, release_test_rows

    entries = list(zip(release_test_rows(release), csv_lines(release)))
    assert entries
    for (_pk, _conv, _pos, data), line in entries:
        action = Test.objects.get(pk=data["test_id"]).action
        assert data["expected_action"] == action
        row = next(csv.reader(io.StringIO(line)))
        assert CSV_COLUMNS[-1] == "expected_action" and row[-1] == action and len(row) == len(CSV_COLUMNS)
        assert line == CsvLineMaker()(data)


def test_review_turns_show_the_action_escaped():
    messages = [{"role": "user", "content": "I didn't receive my order"},
                {"role": "assistant", "content": "Can you give me the order ID?"}]
    turns = turns_with_actions(messages, None)  # an older row without stored labels: labelled now
    assert [m["action"] for m in turns] == ["inform_intent_clear", "request"]
    html = render_to_string("curation/_item.html", {"artifact": object(), "turns": turns, "graphs": []})
    assert 'class="dialogue-action"' in html and ">request</span>" in html
    stored = turns_with_actions(messages, ["<b>x</b>", "request"])
    html = render_to_string("curation/_item.html", {"artifact": object(), "turns": stored, "graphs": []})
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html

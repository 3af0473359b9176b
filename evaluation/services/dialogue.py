"""Dialogue actions and dialogue-state tracking in turn-level runs: the gold state of a release
test (it needs the other tests of its conversation), asking an agent for the state (DST mode),
and the report sections (action prediction with its confusion matrix; joint goal accuracy and
slot F1 by stage and noise kind)."""
from __future__ import annotations

from typing import Any

from django.conf import settings

from curation.models import ReleaseTest
from curation.releases.services import release_test_row, release_test_rows
from evaluation import dialogue_actions as DA
from evaluation import dst as D
from evaluation.agents import PROMPT_TEMPLATE, build_messages
from evaluation.models import Agent, EvaluationRun, ResultState
from evaluation.services.agents import LLM_STAGE, agent_api_key, with_workflow


def conversation_gold_states(release_id: int, conversation_ids=None) -> dict[int, dict[str, Any]]:
    """entry pk -> gold dialogue state, for the release's tests (of the given conversations)."""
    by_conv: dict[int, list[tuple[int, dict]]] = {}
    for pk, conv, pos, row in release_test_rows(release_id, conversation_ids=conversation_ids):
        by_conv.setdefault(conv, []).append((pk, {"position": pos, "context": row.get("context") or [],
                                                  "expected": row.get("expected") or {}}))
    out = {}
    for items in by_conv.values():
        for (pk, _), state in zip(items, D.gold_states([t for _, t in items])):
            out[pk] = state
    return out


def agent_state(agent: Agent, entry: ReleaseTest, *, key: str) -> dict[str, Any]:
    """DST mode: the state the agent reports for one test ({"api", "slots"}, or {"invalid": why}).
    The gold reference agent answers the gold state; the other references report no state."""
    if agent.is_reference:
        if agent.mode == "gold":
            return conversation_gold_states(entry.release_id, [entry.conversation_id])[entry.pk]
        return {"api": None, "slots": {}}
    from generation.llm import chat

    data = with_workflow(agent, release_test_row(entry))
    messages = build_messages(data, knowledge=agent.knowledge)
    messages[0]["content"] += "\n\n" + D.DST_INSTRUCTION
    result = chat(stage=LLM_STAGE, messages=messages, model=agent.model or settings.EVALUATION_MODEL,
                  temperature=agent.temperature, key=key + ":dst", template=PROMPT_TEMPLATE + "_dst",
                  template_version="1", base_url=agent.base_url or None, api_key=agent_api_key(agent),
                  use_cache=False)
    state = D.parse_state(result.content)
    return state if state is not None else {"invalid": (result.content or "")[:500]}


def agent_action_label(agent: Agent, entry: ReleaseTest, *, key: str) -> str:
    """Action labels asked of the model (ToolDial's action prediction): the action the agent's model
    says comes next after the test's context, or ``invalid``. A reference agent has no model: the
    gold agent answers the expected action, the others the rules' label of their fixed answer."""
    data = release_test_row(entry)
    if agent.is_reference:
        from evaluation.agents import reference_action

        if agent.mode == "gold":
            return DA.expected_action_of(data)
        return DA.answer_action(data.get("context") or [], reference_action(agent.mode, data))
    from generation.llm import chat

    messages = build_messages(with_workflow(agent, data), knowledge=agent.knowledge)
    messages[0]["content"] += "\n\n" + DA.ACTION_INSTRUCTION
    result = chat(stage=LLM_STAGE, messages=messages, model=agent.model or settings.EVALUATION_MODEL,
                  temperature=agent.temperature, key=key + ":action", template=PROMPT_TEMPLATE + "_action",
                  template_version="1", base_url=agent.base_url or None, api_key=agent_api_key(agent),
                  use_cache=False)
    return DA.parse_action_label(result.content)


def dialogue_sections(run: EvaluationRun, groups: dict[int, dict[str, list[str]]]) -> dict[str, Any]:
    """The report's "actions" section (first trial; an unanswered test is a wrong action) and,
    for a DST run, its "dst" section."""
    tests = {pk: (row.get("context"), row.get("expected")) for pk, _c, _p, row in release_test_rows(run.release_id)}
    rows = [(pk, *rest, *tests[pk]) for pk, *rest in run.results.filter(trial=0).values_list(
        "entry_id", "state", "parsed", "predicted_action", "predicted_state")]
    pairs, finished = [], not run.is_active
    dst_rows = []
    gold = conversation_gold_states(run.release_id) if run.dst else {}
    for pk, state, parsed, predicted_action, predicted_state, context, expected in rows:
        answered = state == ResultState.DONE
        if not answered and not (state == ResultState.FAILED or finished):
            continue
        expected_action = DA.expected_action_of({"context": context, "expected": expected})
        predicted = (predicted_action or DA.answer_action(context or [], parsed or {})) if answered else DA.FAILED
        pairs.append((expected_action, predicted))
        if run.dst:
            dst_rows.append((gold.get(pk, {"api": None, "slots": {}}),
                             predicted_state if answered and isinstance(predicted_state, dict)
                             and "invalid" not in predicted_state else None, groups.get(pk, {})))
    out: dict[str, Any] = {"actions": {**DA.action_report(pairs), "labels_from": run.action_labels,
                                       "labels_from_detail": DA.ACTION_LABELS.get(run.action_labels, "")}}
    if run.dst:
        out["dst"] = {**D.dst_scores((g, p) for g, p, _ in dst_rows),
                      "by_stage": D.dst_breakdown(dst_rows, "stage"), "by_noise": D.dst_breakdown(dst_rows, "noise")}
    return out

"""Session-level evaluation with a simulated user (FlowBench §4, "simulated session-level").

Pure functions, no database: the reference session and its task summary from a release's tests,
the user simulator's and the judge's prompts and parsers, the API environment, and the metrics.

- The reference session of a conversation is the context of its last test plus that test's
  expected action. Its API calls are the tool-invocation information, and its user lines the
  facts the simulated user may use.
- The task summary lists the goals (FlowBench's "user goals"): the customer's issue, and each
  API call the workflow should make with its parameters. The judge counts the goals reached.
- The environment answers an agent's API call with the reference output of the first unused
  reference call it matches (name and required parameters, as below), else with an error, so a session is
  reproducible and never calls anything real.
- Metrics: success rate (sessions whose judge says every goal was met), task progress (mean share
  of goals met), tool-invocation precision / recall / F1 over the session, and the mean number of
  user turns. Tool calls are scored as FlowBench §5.1 does: a call matches a reference call on
  the API name and the API's *required* parameters only (optional ones are ignored; names and
  values compared leniently); each reference call, in order, is matched with the first unused
  predicted call that matches it, so calls pair one to one (reference [A], predicted [A, A, A]:
  precision 1/3, recall 1/1). An API the release does not describe has all the reference call's
  parameters compared.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

from evaluation import metrics as M
from evaluation.agents import tools_from_apis
from generation.pipeline.extract import ApiCallParseError, format_api_call, parse_api_call

END_MARK = "END"
MAX_AGENT_STEPS = 5  # agent actions (API calls, then a reply) per user turn


@dataclass
class Call:
    name: str
    parameters: dict[str, Any]
    output: Any = None

    def matches(self, other: "Call", required: dict[str, list[str]] | None = None) -> bool:
        """The same API (lenient name) with equal values of its required parameters; `required`
        maps a normalised API name to its required parameter names (absent: every parameter of
        either call is compared)."""
        if not M.names_match(self.name, other.name, M.LENIENT):
            return False
        keys = (required or {}).get(M.normalise_name(self.name))
        if keys is None:
            return M.params_match(self.parameters, other.parameters, M.LENIENT)
        wanted = {M.normalise_name(k) for k in keys}
        return M.params_match(_only(self.parameters, wanted), _only(other.parameters, wanted), M.LENIENT)

    def text(self) -> str:
        return format_api_call(self.name, self.parameters)


def _only(params: dict[str, Any] | None, keys: set[str]) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if M.normalise_name(k) in keys}


def required_parameters(apis: list[dict[str, Any]] | None) -> dict[str, list[str]]:
    """{normalised API name: its required parameter names} from a release's API list (the same
    reading the agents' tool specs use: a parameter is required unless it says otherwise)."""
    out: dict[str, list[str]] = {}
    for tool in tools_from_apis([a for a in apis or [] if isinstance(a, dict)]):
        fn = tool["function"]
        out[M.normalise_name(fn["name"])] = list(fn["parameters"]["required"])
    return out


@dataclass
class SessionTask:
    conversation_id: Any
    intent: str
    issue: str
    user_lines: list[str]
    calls: list[Call]
    goals: list[str]
    reference: list[dict[str, Any]] = field(default_factory=list)
    required: dict[str, list[str]] = field(default_factory=dict)  # normalised API name -> required params

    def to_json(self) -> dict[str, Any]:
        return {"conversation_id": self.conversation_id, "intent": self.intent, "issue": self.issue,
                "user_lines": self.user_lines, "goals": self.goals, "required": self.required,
                "calls": [{"name": c.name, "parameters": c.parameters, "output": c.output} for c in self.calls]}


def _parse_output(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def reference_session(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The whole reference conversation from the release rows of one conversation."""
    last = max(rows, key=lambda d: int(d.get("position") or 0))
    messages = [dict(m) for m in last.get("context") or []]
    expected = last.get("expected") or {}
    if expected.get("type") == M.REPLY:
        messages.append({"role": "assistant", "content": str(expected.get("content", ""))})
    elif expected.get("type") == M.API_CALL:
        messages.append({"role": "api", "content": format_api_call(str(expected.get("name")),
                                                                   expected.get("parameters") or {})})
    return messages


def session_task(rows: list[dict[str, Any]]) -> SessionTask:
    """The task summary of a reference conversation (raises ValueError when it has no user line)."""
    messages = reference_session(rows)
    first = rows[0]
    intent = first.get("intent") or {}
    if not isinstance(intent, dict):
        intent = {"name": str(intent)}
    name = str(intent.get("name") or intent.get("issue") or "the customer's request")
    issue = str(intent.get("issue") or name)
    calls: list[Call] = []
    for i, m in enumerate(messages):
        if m.get("role") != "api":
            continue
        try:
            call_name, params = parse_api_call(str(m.get("content", "")))
        except ApiCallParseError:
            continue
        output = messages[i + 1].get("content") if i + 1 < len(messages) and messages[i + 1].get("role") == "api_output" \
            else None
        calls.append(Call(call_name, params, _parse_output(output)))
    user_lines = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
    if not user_lines:
        raise ValueError(f"conversation {first.get('conversation_id')} has no user message")
    goals = [f"The agent handles the customer's request: {issue}"]
    seen: set[str] = set()
    for c in calls:
        text = c.text()
        if text not in seen:
            seen.add(text)
            goals.append(f"The agent calls {text}")
    return SessionTask(conversation_id=first.get("conversation_id"), intent=name, issue=issue,
                       user_lines=user_lines, calls=calls, goals=goals, reference=messages,
                       required=required_parameters(first.get("apis")))


# --------------------------------------------------------------------------- the simulated user

USER_SYSTEM = """You play a customer who contacts a support agent. Stay in role: write only the \
customer's next message, in one or two short sentences, with no role label.

<situation>
{issue}
</situation>

What you want, in order:
{goals}

What you know and may say when the agent asks for it (a customer in the reference conversation \
said these lines; reuse their facts, such as ids, names and dates, exactly):
{lines}

When everything you want is done, or the agent clearly cannot help further, reply with the single \
word {end}."""

USER_MARKER = "<situation>"  # how the fake server tells the simulated user's requests apart


def user_messages(task: SessionTask, history: list[dict[str, Any]]) -> list[dict[str, str]]:
    goals = "\n".join(f"- {g.replace('The agent calls ', 'that the agent runs ')}" for g in task.goals)
    lines = "\n".join(f"- {line}" for line in task.user_lines)
    system = USER_SYSTEM.format(issue=task.issue, goals=goals, lines=lines, end=END_MARK)
    shown = "\n".join(f"{'customer' if m['role'] == 'user' else 'agent'}: {m['content']}"
                      for m in history if m["role"] in ("user", "assistant")) or "(the conversation starts now)"
    return [{"role": "system", "content": system},
            {"role": "user", "content": f"<conversation>\n{shown}\n</conversation>\nThe customer's next message:"}]


def parse_user_message(text: str | None) -> tuple[str | None, str]:
    """(message, "") or (None, why the session ends or the output is unusable)."""
    said = re.sub(r"^(customer|user)\s*:\s*", "", (text or "").strip(), flags=re.I)
    said = said.strip().strip('"').strip()
    if not said:
        return None, "the simulated user said nothing"
    if said.rstrip(".!").upper() == END_MARK or said.upper().endswith(f" {END_MARK}"):
        return None, "the simulated user ended the session"
    return said, ""


# --------------------------------------------------------------------------- the environment


def environment(task: SessionTask, used: list[bool], call: Call, api_names: list[str]) -> Any:
    """The reference output of the first unused reference call that this call matches."""
    for i, ref in enumerate(task.calls):
        if not used[i] and ref.matches(call, task.required):
            used[i] = True
            return ref.output if ref.output is not None else {"ok": True}
    known = {M.normalise_name(n) for n in api_names}
    if M.normalise_name(call.name) not in known:
        return {"error": f"unknown API {call.name!r}"}
    return {"error": "no record matches these parameters"}


# --------------------------------------------------------------------------- the judge

JUDGE_SYSTEM = """You judge whether a customer-support agent reached the customer's goals in a \
conversation, following a workflow.

Rules:
- Only judge goals within the workflow and its APIs; a goal outside them, or one the customer \
never asked for, counts as met.
- Do not judge whether API outputs are plausible: only whether the agent collected the right \
parameters and made the calls the goals name.
- Be rigorous: a goal is met only if the conversation shows it.

Answer in exactly this form:
Result: yes or no (yes only if every goal is met)
Total number of goals: N
Number of accomplished goals: M
Reason: one sentence"""

JUDGE_MARKER = "Number of accomplished goals"


def judge_messages(task: SessionTask, procedure: str, session: list[dict[str, Any]]) -> list[dict[str, str]]:
    goals = "\n".join(f"{i}. {g}" for i, g in enumerate(task.goals, 1))
    shown = "\n".join(f"{m['role']}: {m['content'] if isinstance(m['content'], str) else json.dumps(m['content'])}"
                      for m in session)
    user = (f"<workflow>\n{procedure.strip()}\n</workflow>\n<goals>\n{goals}\n</goals>\n"
            f"<conversation>\n{shown}\n</conversation>")
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]


@dataclass
class Verdict:
    success: bool
    total: int
    accomplished: int
    reason: str


class JudgeOutputError(ValueError):
    """The judge's answer is not in the required form, or contradicts itself."""


_RESULT = re.compile(r"result\s*:\s*\**\s*(yes|no)\b", re.I)
_TOTAL = re.compile(r"total number of goals\s*:\s*\**\s*(\d+)", re.I)
_DONE = re.compile(r"number of accomplished goals\s*:\s*\**\s*(\d+)", re.I)
_REASON = re.compile(r"reason\s*:\s*(.+)", re.I | re.S)


def parse_judge(text: str | None, goals: int) -> Verdict:
    text = text or ""
    result, total, done = _RESULT.search(text), _TOTAL.search(text), _DONE.search(text)
    missing = [name for name, m in (("Result", result), ("Total number of goals", total),
                                    ("Number of accomplished goals", done)) if m is None]
    if missing:
        raise JudgeOutputError(f"the judge's answer lacks {', '.join(missing)}: {text[:200]!r}")
    success, n, k = result.group(1).lower() == "yes", int(total.group(1)), int(done.group(1))
    if n < 1 or k > n:
        raise JudgeOutputError(f"the judge counted {k} of {n} goals")
    if n != goals:
        raise JudgeOutputError(f"the judge counted {n} goals; the task has {goals}")
    if success != (k == n):
        raise JudgeOutputError(f"the judge said {'yes' if success else 'no'} with {k} of {n} goals met")
    reason = _REASON.search(text)
    return Verdict(success, n, k, reason.group(1).strip()[:1000] if reason else "")


# --------------------------------------------------------------------------- metrics


def match_calls(reference: list[Call], predicted: list[Call],
                required: dict[str, list[str]] | None = None) -> list[tuple[int, int]]:
    """[(reference index, predicted index)]: FlowBench checks each reference call in order against
    the predicted ones; here each predicted call serves at most one reference call. Matching is
    equality of (name, required values) after lenient normalisation, so this greedy pass finds a
    largest one-to-one matching."""
    taken: set[int] = set()
    pairs = []
    for i, ref in enumerate(reference):
        j = next((j for j, p in enumerate(predicted) if j not in taken and ref.matches(p, required)), None)
        if j is not None:
            taken.add(j)
            pairs.append((i, j))
    return pairs


def tool_counts(reference: list[Call], predicted: list[Call],
                required: dict[str, list[str]] | None = None) -> dict[str, int]:
    """Matched calls count once on each side: recalled = precise = the size of the matching."""
    matched = len(match_calls(reference, predicted, required))
    return {"recalled": matched, "reference": len(reference), "precise": matched, "predicted": len(predicted)}


SESSION_METRICS = [
    ("success_rate", "Success rate"), ("task_progress", "Task progress"), ("tool_precision", "Tool precision"),
    ("tool_recall", "Tool recall"), ("tool_f1", "Tool F1"), ("avg_turns", "Mean user turns"),
]


@dataclass
class SessionOutcome:
    success: bool
    total_goals: int
    accomplished: int
    turns: int
    tools: dict[str, int]


def _aggregate(outcomes: list[SessionOutcome]) -> dict[str, float | None]:
    n = len(outcomes)
    if not n:
        return {k: None for k, _ in SESSION_METRICS}
    recalled = sum(o.tools["recalled"] for o in outcomes)
    reference = sum(o.tools["reference"] for o in outcomes)
    precise = sum(o.tools["precise"] for o in outcomes)
    predicted = sum(o.tools["predicted"] for o in outcomes)
    p = precise / predicted if predicted else None
    r = recalled / reference if reference else None
    if p is None or r is None:
        f1 = None
    else:
        f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "success_rate": sum(o.success for o in outcomes) / n,
        "task_progress": sum(o.accomplished / o.total_goals for o in outcomes) / n,
        "tool_precision": p, "tool_recall": r, "tool_f1": f1,
        "avg_turns": sum(o.turns for o in outcomes) / n,
    }


def session_metrics(outcomes: list[SessionOutcome], *, bootstrap: int = 0, seed: int = 0,
                    level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Each metric's value, with counts where it has them, and a bootstrap interval over sessions."""
    values = _aggregate(outcomes)
    out: dict[str, dict[str, Any]] = {}
    for key, label in SESSION_METRICS:
        out[key] = {"key": key, "label": label, "value": values[key], "ci_low": None, "ci_high": None}
    out["success_rate"].update(numerator=sum(o.success for o in outcomes), denominator=len(outcomes))
    out["tool_precision"].update(numerator=sum(o.tools["precise"] for o in outcomes),
                                 denominator=sum(o.tools["predicted"] for o in outcomes))
    out["tool_recall"].update(numerator=sum(o.tools["recalled"] for o in outcomes),
                              denominator=sum(o.tools["reference"] for o in outcomes))
    if bootstrap and outcomes:
        rng = random.Random(seed)
        samples: dict[str, list[float]] = {k: [] for k, _ in SESSION_METRICS}
        for _ in range(bootstrap):
            drawn = _aggregate(rng.choices(outcomes, k=len(outcomes)))
            for k, v in drawn.items():
                if v is not None:
                    samples[k].append(v)
        alpha = (1 - level) / 2
        for k, vals in samples.items():
            if vals and values[k] is not None:
                vals.sort()
                out[k]["ci_low"] = M.percentile(vals, alpha)
                out[k]["ci_high"] = M.percentile(vals, 1 - alpha)
    return out


def metric_cells(metrics: dict[str, dict[str, Any]], *, unit: str = "") -> list[dict[str, str]]:
    """Display strings per session metric, in SESSION_METRICS order: the value (percent with
    `unit` appended; mean turns as a number), "num/den" where counted, and the interval."""
    cells = []
    for key, label in SESSION_METRICS:
        m = metrics.get(key) or {}

        def show(v: float | None, key: str = key) -> str:
            if v is None:
                return "–"
            return f"{v:.2f}" if key == "avg_turns" else f"{100 * v:.1f}{unit}"

        nd = f"{m['numerator']}/{m['denominator']}" if "numerator" in m else ""
        ci = f"[{show(m['ci_low'])}, {show(m['ci_high'])}]" if m.get("ci_low") is not None else ""
        cells.append({"key": key, "label": label, "value": show(m.get("value")), "nd": nd, "ci": ci})
    return cells

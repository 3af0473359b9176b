"""What annotators check at each stage, and the reason codes a rejection may carry.

The structural reason codes are the validator rule ids of ``generation.pipeline.validate.RULES``
(stable ids, so automatic warnings and human rejections speak the same language); the other codes
cover what only a person can judge, following the paper's stage rules (§3.2–§3.8).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from curation.models import ReviewStage
from generation.pipeline.validate import RULES

OTHER = "OTHER"


@dataclass(frozen=True)
class StageGuide:
    summary: str
    checks: tuple[str, ...]
    rule_prefix: str
    human_codes: tuple[tuple[str, str], ...]


GUIDES: dict[str, StageGuide] = {
    ReviewStage.PROCEDURE: StageGuide(
        summary="A procedure tells a support agent exactly how to resolve one intent; its APIs are the "
                "agent-side tools it needs.",
        checks=(
            "The steps are specific and granular; no general statements such as \u201cexplain the policy\u201d.",
            "Every conditional has a clear resolution inside the procedure.",
            "Steps are agent actions or API calls, never browsing actions (\u201cclick the login page\u201d).",
            "Each API is an agent API (not customer-facing), is actually needed, and declares its "
            "inputs, output and a short description.",
        ),
        rule_prefix="PR-",
        human_codes=(
            ("PR-GENERAL", "Contains general or vague statements instead of precise steps."),
            ("PR-OPEN-CONDITION", "A conditional has no clear resolution in the steps."),
            ("PR-BROWSING", "A step is a browsing action rather than an agent action or API call."),
            ("PR-OFF-INTENT", "The procedure does not solve the stated intent."),
            ("PR-API-MISSING", "A step needs an API that is not in the API list."),
            ("PR-API-WRONG", "An API is customer-facing, unused, or its parameters/output are wrong."),
        ),
    ),
    ReviewStage.FLOWGRAPH: StageGuide(
        summary="Nodes are agent actions (messages or API calls); edges are customer replies or API outputs.",
        checks=(
            "Every detail of the procedure appears in a node: reasons to fail, information to collect.",
            "Exactly one start_message; conversations end only in end_message nodes.",
            "Edges leaving an api node are labelled with the API outcome.",
            "api nodes call APIs from the list, at the point the procedure calls them.",
        ),
        rule_prefix="FG-",
        human_codes=(
            ("FG-UNFAITHFUL", "The graph drops, adds or changes a step, branch or API call of the procedure."),
            ("FG-WRONG-BRANCH", "A branch goes to the wrong next step for that reply or outcome."),
        ),
    ),
    ReviewStage.CONVERSATION_GRAPH: StageGuide(
        summary="The flowgraph rewritten as turns: assistant, user and api nodes, with noise turns marked in red.",
        checks=(
            "The root is an assistant node; assistant is followed by user; user by assistant or api; "
            "api by api or assistant.",
            "Only edges leaving api nodes carry labels (the API outcome).",
            "Every branch of the flowgraph is still there.",
            "Noise turns (red, dashed) are plausible off-topic customer turns that the agent deflects.",
        ),
        rule_prefix="CG-",
        human_codes=(
            ("CG-UNFAITHFUL", "The graph does not match its flowgraph."),
            ("CG-BAD-NOISE", "A noise turn is implausible or breaks the conversation."),
        ),
    ),
    ReviewStage.CONVERSATION: StageGuide(
        summary="A conversation realises one sampled path of the conversation graph (highlighted in purple).",
        checks=(
            "The user speaks first and the conversation follows the highlighted path, turn by turn.",
            "Every api call names a known API with all required parameters, using values said earlier "
            "by the user or returned by an earlier API output.",
            "Every api call is followed by its api_output, in JSON of the declared type.",
            "Messages read naturally and the agent never invents facts.",
        ),
        rule_prefix="CV-",
        human_codes=(
            ("CV-OFF-PATH", "The conversation does not follow the highlighted path."),
            ("CV-HALLUCINATION", "The agent states facts that come from nowhere."),
            ("CV-UNNATURAL", "Turns are unnatural or contradictory."),
        ),
    ),
}


BUILT_IN_VERSION = 1
LOCAL_SECONDS = 2.0
_LOCAL: dict[str, tuple[float, tuple]] = {}
KEYS = "1234567890"


def _guide_key(stage: str) -> str:
    """Guidelines are per project (issue #30): so is their cache entry."""
    from projects.context import current_slug

    return f"curation:guide:{current_slug()}:{stage}"


def current_guide(stage: str) -> tuple[StageGuide, int]:
    """The stage's guide as last saved by an admin (curation.GuidelineVersion), else the built-in one.

    The built-in text counts as version 1; every saved edit takes the next number.
    """
    from django.core.cache import cache

    from curation.models import GuidelineVersion

    # In the shared cache (cleared by guideline_save), with a two-second copy in the process in
    # front of it: every review page reads it several times.
    key = _guide_key(stage)
    local = _LOCAL.get(key)
    if local is not None and time.monotonic() - local[0] < LOCAL_SECONDS:
        return local[1]
    hit = cache.get(key)
    if hit is not None:
        _LOCAL[key] = (time.monotonic(), hit)
        return hit
    row = GuidelineVersion.objects.filter(stage=stage).order_by("-version").first()
    base = GUIDES[stage]
    if row is None:
        out = (base, BUILT_IN_VERSION)
    else:
        codes = tuple((str(c), str(t)) for c, t in row.human_codes)
        out = (StageGuide(summary=row.summary, checks=tuple(str(c) for c in row.checks),
                          rule_prefix=base.rule_prefix, human_codes=codes), row.version)
    cache.set(key, out, 3600)
    _LOCAL[key] = (time.monotonic(), out)
    return out


def human_codes(stage: str, guide: StageGuide | None = None) -> list[tuple[str, str, str]]:
    """(key, code, description): the checkboxes a reviewer ticks, OTHER last, each with a key."""
    guide = guide or current_guide(stage)[0]
    codes = [c for c in guide.human_codes if c[0] != OTHER] + [(OTHER, "Another problem: describe it in the comment.")]
    return [(KEYS[i] if i < len(KEYS) else "", code, text) for i, (code, text) in enumerate(codes)]


def rule_codes(stage: str) -> list[tuple[str, str]]:
    """Validator rule ids of the stage: the automatic checks' codes, still valid as reasons."""
    prefix = GUIDES[stage].rule_prefix
    return [(rule, text) for rule, text in RULES.items() if rule.startswith(prefix)]


def reason_codes(stage: str, guide: StageGuide | None = None) -> list[tuple[str, str]]:
    """(code, description) pairs a reviewer may cite for `stage`, human judgements first, OTHER last."""
    human = [(code, text) for _, code, text in human_codes(stage, guide)]
    return human[:-1] + rule_codes(stage) + human[-1:]


def reason_code_set(stage: str) -> frozenset[str]:
    return frozenset(code for code, _ in reason_codes(stage))


SKIP_REASONS: tuple[tuple[str, str], ...] = (
    ("unsure", "Not sure: needs someone else"),
    ("expertise", "Needs domain knowledge I lack"),
    ("broken", "The item does not display correctly"),
    ("conflict", "Conflict of interest (I wrote or imported it)"),
)


class GuidelineError(ValueError):
    """An edit of the guidelines that cannot be saved; the message names the line."""


_CODE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def parse_codes(text: str, stage: str) -> list[tuple[str, str]]:
    """`CODE: description` per line → [(code, description)]; raises GuidelineError naming the line."""
    out: list[tuple[str, str]] = []
    rules = {code for code, _ in rule_codes(stage)}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        code, sep, desc = line.partition(":")
        code, desc = code.strip(), desc.strip()
        if not sep or not code or not desc:
            raise GuidelineError(f"Reason codes, line {n}: write CODE: description.")
        if not (2 <= len(code) <= 40) or set(code) - _CODE_CHARS:
            raise GuidelineError(f"Reason codes, line {n}: {code[:40]!r} must be 2–40 capital letters, digits or dashes.")
        if code == OTHER or code in rules:
            raise GuidelineError(f"Reason codes, line {n}: {code} is reserved (OTHER or a validator rule id).")
        if code in dict(out):
            raise GuidelineError(f"Reason codes, line {n}: {code} appears twice.")
        out.append((code, desc[:300]))
    if not out:
        raise GuidelineError("Give at least one human-judgement reason code.")
    if len(out) > len(KEYS) - 1:
        raise GuidelineError(f"At most {len(KEYS) - 1} human-judgement codes (each needs a key; OTHER takes the last).")
    return out


def guideline_save(*, actor, stage: str, summary: str, checks: str, codes: str):
    """Save a new version of `stage`'s guidelines; reviews made from now on record its number."""
    from django.core.cache import cache
    from django.db import transaction
    from django.db.models import Max

    from curation.models import GuidelineVersion

    if stage not in GUIDES:
        raise GuidelineError("Unknown stage.")
    summary = summary.strip()
    if not summary:
        raise GuidelineError("The summary cannot be empty.")
    check_list = [c.strip() for c in checks.splitlines() if c.strip()]
    human = parse_codes(codes, stage)
    with transaction.atomic():
        # Lock the stage's versions so two saves never take the same number.
        list(GuidelineVersion.objects.select_for_update().filter(stage=stage).values_list("pk", flat=True))
        last = GuidelineVersion.objects.filter(stage=stage).aggregate(m=Max("version"))["m"] or BUILT_IN_VERSION
        row = GuidelineVersion.objects.create(stage=stage, version=last + 1, summary=summary[:10000],
                                              checks=check_list[:50], human_codes=[list(c) for c in human],
                                              created_by=actor)
    cache.delete(_guide_key(stage))
    _LOCAL.pop(_guide_key(stage), None)
    return row


def reset_guide_cache() -> None:
    """Forget the process's copies of the guides (tests: the database was rolled back)."""
    _LOCAL.clear()

"""Gold and attention checks: items whose right verdict is known.

An admin marks existing items as gold with their known verdict, or seeds known-bad copies of
accepted items (a dropped edge, a broken rule, a swapped API, a parameter value nobody said)
into the queues at a set rate. A seeded copy is a new artifact row under the same parent,
reviewed like any other item, so annotators cannot tell it apart. Gold items never reach a
release (``gold_tests_q``) and never count in the agreement figures (``stats``).
"""
from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from typing import Any

from django.db import transaction
from django.db.models import Q

from curation.models import GoldItem, GoldOrigin, ItemState, Review, ReviewItem, ReviewStage, Verdict
from curation.reviews import services as reviews
from generation.models import CurationStatus
from generation.pipeline.formats import GraphFormatError, graph_from_json, graph_to_json, write_graph_text

SEEDABLE = (ReviewStage.FLOWGRAPH, ReviewStage.CONVERSATION_GRAPH, ReviewStage.CONVERSATION)


class GoldError(Exception):
    """A gold action that cannot run; the message is shown to the user."""


# --------------------------------------------------------------------------- mutations (pure)


def mutate_graph(data: dict, kind: str, rng: random.Random) -> tuple[dict, str]:
    """A known-bad copy of graph data: ("dropped edge" | "broken rule") → (data, what was done)."""
    g = graph_from_json(data)
    edges = list(g.edges)
    if not edges:
        raise GoldError("The graph has no edges to break.")
    roots = [n for n in g if g.in_degree(n) == 0] or [next(iter(g))]
    if kind == "broken rule":
        leaves = [n for n in g if g.out_degree(n) == 0 and n not in roots]
        if leaves:
            leaf = rng.choice(leaves)
            g.add_edge(leaf, roots[0], id=f"E{len(edges)}", label="")
            return graph_to_json(g), f"broken rule: added an edge from the end {leaf} back to the start {roots[0]}"
        kind = "dropped edge"
    # Drop an edge whose target keeps another way in when possible, else any edge but the first.
    candidates = [e for e in edges if g.in_degree(e[1]) > 1] or edges[1:] or edges
    u, v = rng.choice(candidates)
    g.remove_edge(u, v)
    return graph_to_json(g), f"dropped edge: removed the edge {u} -> {v}"


_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\((.*)\)\s*$", re.S)
_VALUE = re.compile(r"""=\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[-\w.]+)""")


def mutate_conversation(messages: list[dict], api_names: list[str], kind: str, rng: random.Random) -> tuple[list[dict], str]:
    """A known-bad copy of a conversation: "swapped API" or "unsaid value"."""
    calls = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "api"
             and _CALL.match(str(m.get("content", "")))]
    if not calls:
        raise GoldError("The conversation has no API call to change.")
    out = [dict(m) for m in messages]
    if kind == "swapped API":
        for i in rng.sample(calls, len(calls)):
            name = _CALL.match(out[i]["content"]).group(1)
            others = sorted(set(api_names) - {name})
            if others:
                new = rng.choice(others)
                out[i]["content"] = out[i]["content"].replace(name, new, 1)
                return out, f"swapped API: turn {i + 1} calls {new} instead of {name}"
        kind = "unsaid value"
    for i in rng.sample(calls, len(calls)):
        match = _VALUE.search(out[i]["content"])
        if match:
            fresh = "'" + "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(8)) + "'"
            out[i]["content"] = out[i]["content"][: match.start(1)] + fresh + out[i]["content"][match.end(1):]
            return out, f"unsaid value: turn {i + 1} passes {fresh}, a value nobody said"
    raise GoldError("The conversation's API calls have no parameter value to change.")


# --------------------------------------------------------------------------- services


@transaction.atomic
def gold_mark(*, actor, item_ids: list[int], expected: str) -> int:
    """Mark existing items as gold with their known verdict; returns how many were marked."""
    if expected not in Verdict.values:
        raise GoldError("The known verdict must be accept or reject.")
    items = list(ReviewItem.objects.filter(pk__in=item_ids))
    if len(items) != len(set(item_ids)):
        missing = sorted(set(item_ids) - {i.pk for i in items})
        raise GoldError(f"No review item with id {', '.join(map(str, missing[:5]))}.")
    n = 0
    for item in items:
        GoldItem.objects.update_or_create(
            item=item, defaults={"expected": expected, "created_by": actor, "origin": GoldOrigin.MARKED})
        n += 1
    return n


@transaction.atomic
def gold_unmark(*, actor, item_id: int) -> bool:
    """Unmark an item an admin marked gold; False when it was not gold. A seeded known-bad copy
    stays gold: unmarked, it would count as an ordinary item and could reach a release."""
    gold = GoldItem.objects.select_for_update().filter(item_id=item_id).first()
    if gold is None:
        return False
    if gold.origin != GoldOrigin.MARKED:
        raise GoldError("A seeded known-bad copy stays gold.")
    gold.delete()
    return True


def _copy_artifact(source_item: ReviewItem, rng: random.Random, kind: str | None):
    src = reviews.artifact_for(source_item)
    if src is None:
        raise GoldError(f"{source_item} has no artifact.")
    copy = type(src).objects.get(pk=src.pk)
    copy.pk = None
    copy.id = None
    copy._state.adding = True
    copy.key = ""
    # Not the job's output: kept out of per-job yield, cost and analytics.
    copy.job = None
    copy.status = CurationStatus.PENDING
    if source_item.stage == ReviewStage.CONVERSATION:
        names = list(src.procedure.apis.values_list("name", flat=True))
        copy.messages, what = mutate_conversation(src.messages or [], names, kind or rng.choice(
            ["swapped API", "unsaid value"]), rng)
    else:
        try:
            copy.data, what = mutate_graph(src.data, kind or rng.choice(["dropped edge", "broken rule"]), rng)
        except GraphFormatError as exc:
            raise GoldError(f"{source_item}: {exc}") from None
        copy.text = write_graph_text(graph_from_json(copy.data))
        copy.svg = ""
    copy.save()
    return copy, what


def seed_count(stage: str, rate: float) -> int:
    """How many more seeded copies make them `rate` of the stage's open queue."""
    open_items = ReviewItem.objects.filter(stage=stage, state=ItemState.OPEN, excluded=False)
    seeded_open = open_items.filter(gold__origin=GoldOrigin.SEEDED).count()
    real_open = open_items.count() - seeded_open
    if rate <= 0 or real_open == 0:
        return 0
    return max(0, math.ceil(rate * real_open / (1 - rate)) - seeded_open)


@transaction.atomic
def gold_seed(*, actor, stage: str, rate: float, limit: int = 100, seed: int | None = None,
              kind: str | None = None) -> list[GoldItem]:
    """Seed known-bad copies of accepted items of `stage` so they make `rate` of its open queue."""
    if stage not in SEEDABLE:
        raise GoldError("Seeding works for flowgraphs, conversation graphs and conversations.")
    if not 0 < rate < 0.5:
        raise GoldError("The rate must be above 0 % and below 50 %.")
    rng = random.Random(seed)
    wanted = min(seed_count(stage, rate), max(0, limit))
    sources = list(ReviewItem.objects.filter(stage=stage, state=ItemState.DECIDED, decision=Verdict.ACCEPT,
                                             excluded=False, gold__isnull=True).order_by("id"))
    rng.shuffle(sources)
    made: list[GoldItem] = []
    for source in sources:
        if len(made) >= wanted:
            break
        try:
            copy, what = _copy_artifact(source, rng, kind)
        except GoldError:
            continue
        item = ReviewItem.objects.create(stage=stage, object_id=copy.pk, required_reviews=source.required_reviews,
                                         has_warnings=source.has_warnings)
        made.append(GoldItem.objects.create(item=item, expected=Verdict.REJECT, origin=GoldOrigin.SEEDED,
                                            mutation=what, source=source, created_by=actor))
    return made


def gold_object_ids() -> dict[str, set[int]]:
    out: dict[str, set[int]] = defaultdict(set)
    for stage, oid in GoldItem.objects.values_list("item__stage", "item__object_id"):
        out[stage].add(oid)
    return out


def gold_tests_q() -> Q:
    """Tests under any gold item (by lineage): releases exclude them with ``.exclude(...)``."""
    ids = gold_object_ids()
    q = Q(pk__in=[])
    if ids.get(ReviewStage.CONVERSATION):
        q |= Q(conversation_id__in=ids[ReviewStage.CONVERSATION])
    if ids.get(ReviewStage.CONVERSATION_GRAPH):
        q |= Q(conversation__path__conversation_graph_id__in=ids[ReviewStage.CONVERSATION_GRAPH])
    if ids.get(ReviewStage.FLOWGRAPH):
        q |= Q(conversation__path__conversation_graph__flowgraph_id__in=ids[ReviewStage.FLOWGRAPH])
    if ids.get(ReviewStage.PROCEDURE):
        q |= Q(conversation__procedure_id__in=ids[ReviewStage.PROCEDURE])
    return q


# --------------------------------------------------------------------------- accuracy


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a proportion (95 % by default); (0, 1) when n is 0."""
    if n == 0:
        return 0.0, 1.0
    p = correct / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def gold_accuracy() -> list[dict[str, Any]]:
    """Per annotator: verdicts on gold items, how many matched the known verdict, with an interval."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for name, verdict, expected in Review.objects.filter(item__gold__isnull=False).values_list(
            "annotator__username", "verdict", "item__gold__expected"):
        counts[name][0] += verdict == expected
        counts[name][1] += 1
    out = []
    for name, (correct, n) in sorted(counts.items()):
        lo, hi = wilson(correct, n)
        out.append({"annotator": name, "n": n, "correct": correct, "accuracy": correct / n, "low": lo, "high": hi})
    return out


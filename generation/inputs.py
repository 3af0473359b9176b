"""Which existing rows a job may start from: curation's verdicts, read from the rows' status.

A rejected artifact, or one excluded because an ancestor was rejected, must not seed new work:
everything generated from it would be born excluded. Jobs drop those inputs, and the launch form
says how many it will drop. (The status columns live on generation's own rows, kept in step by
curation's cascade, so no arrow points from generation to curation.)
"""
from __future__ import annotations

from collections.abc import Sequence

from generation.models import ConversationGraph, CurationStatus, Flowgraph, Intent, Procedure

CURATED_OUT = (CurationStatus.REJECTED, CurationStatus.EXCLUDED)
LEVEL_MODELS = {"intents": Intent, "procedures": Procedure, "apis": Procedure, "flowgraph": Flowgraph,
                "conversation_graph": ConversationGraph}


def usable_inputs(level: str, ids: Sequence[int]) -> tuple[list[int], int]:
    """(the ids a job may start from, how many were dropped as rejected or excluded)."""
    ids = list(ids)
    model = LEVEL_MODELS[level]
    out = set(model.objects.filter(pk__in=ids, status__in=CURATED_OUT).values_list("pk", flat=True))
    return [i for i in ids if i not in out], len(out)


def existing_choice_labels(choices: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The launch form's "imported items" choices, each with how many rows it would use and skip."""
    from generation.services import existing_imports

    labelled = []
    for value, label in choices:
        if value in LEVEL_MODELS:
            qs = existing_imports(value)
            total = qs.count()
            skipped = qs.filter(status__in=CURATED_OUT).count()
            label = f"{label} ({total - skipped}"
            label += f"; skips {skipped} rejected or excluded in curation)" if skipped else ")"
        labelled.append((value, label))
    return labelled

"""The progress page's issue-#16 block: time per item, items per hour, accuracy on gold."""
from __future__ import annotations

from collections import defaultdict
from statistics import median
from typing import Any

from curation.guidance.services import gold_accuracy
from curation.models import ReviewMeta
from projects.context import current_project_id

# A claim left open over lunch is not time spent reviewing: longer spans count as this much.
MAX_SECONDS = 30 * 60


def annotator_timing() -> list[dict[str, Any]]:
    """Per annotator: reviews timed (claim to verdict), median seconds per item, items per hour."""
    spans: dict[str, list[int]] = defaultdict(list)
    metas = ReviewMeta.objects.filter(seconds__isnull=False)
    project_id = current_project_id()
    if project_id is not None:  # a meta is reached through its review's item (projects.context)
        metas = metas.filter(review__item__project_id=project_id)
    for name, seconds in metas.values_list(
            "review__annotator__username", "seconds"):
        spans[name].append(min(seconds, MAX_SECONDS))
    out = []
    for name, values in sorted(spans.items()):
        total = sum(values)
        out.append({"annotator": name, "n": len(values), "median_seconds": median(values),
                    "per_hour": (len(values) * 3600 / total) if total else None})
    return out


def progress_extras() -> dict[str, Any]:
    return {"timing": annotator_timing(), "accuracy": gold_accuracy()}

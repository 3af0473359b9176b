"""Extra figures for the job page that apps above generation provide (the arrows run curation →
generation, so the curation app registers its job panels here at start-up instead of generation
importing it)."""
from __future__ import annotations

from typing import Any, Callable

JOB_PANELS: list[Callable[[Any], dict[str, Any]]] = []


def register_job_panel(fn: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    if fn not in JOB_PANELS:
        JOB_PANELS.append(fn)
    return fn


def job_panels(job) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for fn in JOB_PANELS:
        out.update(fn(job))
    return out

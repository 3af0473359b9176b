"""The agreement package's one door (agreement, per-stage figures, progress, analytics, economics):
the other curation packages and other apps import these names from here, never the modules behind it."""
from curation.agreement.economics import format_economics, job_economics, job_panel, release_economics, review_minutes
from curation.agreement.precompute import audit_event_saved, recompute as recompute_analytics
from curation.agreement.progress import progress_extras
from curation.agreement.stats import (
    VERDICT_FIELDS,
    agreement_by_stage,
    agreement_for_stage,
    annotator_available,
    annotator_progress,
    stage_funnel,
    verdict_rows,
    verdict_table,
)

__all__ = [
    "VERDICT_FIELDS", "agreement_by_stage", "audit_event_saved", "recompute_analytics", "agreement_for_stage", "annotator_available", "annotator_progress",
    "format_economics", "job_economics", "job_panel", "progress_extras", "release_economics", "review_minutes",
    "stage_funnel", "verdict_rows", "verdict_table",
]

"""Generation workflows (create, advance, cancel and inspect jobs; import; the demo builder).

Other apps and the views call these names; the modules are internals:
config (settings and bounds), importing, jobs (lifecycle, see its docstring for how a job runs),
reporting (funnel, counters, graph pictures).
"""
from generation.services.config import DEFAULT_CONFIG, JobConfigError, job_config_normalise, llm_stages
from generation.services.health import job_watchdog, jobs_watchdog
from generation.services.importing import import_parse
from generation.services.items import item_fail
from generation.services.items import item_run
from generation.services.jobs import (
    EXISTING_LEVELS,
    PLANNING_STALE,
    demo_build,
    existing_imports,
    job_advance,
    job_cancel,
    job_create,
    job_fail,
    job_resume,
    job_run_inline,
    jobs_recover,
)
from generation.services.reporting import (
    ARTIFACT_MODELS,
    FUNNEL_COLUMNS,
    STAGE_LABELS,
    format_funnel,
    graph_svg,
    job_artifact_counts,
    job_counters,
    job_funnel,
)

__all__ = [
    "ARTIFACT_MODELS", "DEFAULT_CONFIG", "EXISTING_LEVELS", "FUNNEL_COLUMNS", "PLANNING_STALE", "STAGE_LABELS",
    "JobConfigError", "demo_build", "existing_imports", "format_funnel", "graph_svg", "import_parse", "item_run",
    "job_advance", "job_artifact_counts", "job_cancel", "job_config_normalise", "job_counters", "job_create",
    "item_fail", "job_watchdog", "jobs_watchdog", "job_fail", "job_funnel", "job_resume", "job_run_inline", "jobs_recover", "llm_stages",
]

"""Evaluation services: what other apps, views, the API, commands and tasks call.

The package is split by run kind and concern; this module re-exports the public names so that
``from evaluation import services; services.run_create(...)`` keeps working:

* ``common``     the error type and constants;
* ``agents``     agents under test: reference agents, creation, keys, answers, the probe;
* ``lifecycle``  start / cancel / resume / claim / fail / finish, shared with session runs;
* ``runs``       turn-level runs: create, lanes, one step, judging, inline execution;
* ``rejudge``    re-judging a run's stored answers;
* ``reports``    reports, progress, comparisons, the Table 2 row;
* ``downloads``  per-test rows and the missed-API-calls table.
"""
from evaluation.services.agents import (  # noqa: F401
    CHECK_TEST,
    KEY_VARIABLE,
    REFERENCE_AGENTS,
    Answer,
    agent_answer,
    agent_api_key,
    agent_check,
    agent_create,
    reference_agents_ensure,
    with_workflow,
)
from evaluation.services.common import BOOTSTRAP_SAMPLES, LLM_STAGE, EvaluationError  # noqa: F401
from evaluation.services.downloads import (  # noqa: F401
    RESULT_COLUMNS,
    api_confusions,
    pending_count,
    result_row,
    result_rows_query,
    run_result_rows,
)
from evaluation.services.lifecycle import (  # noqa: F401
    cancel_run,
    claim_pending,
    dispatch_lanes,
    fail_run,
    finish_run,
    lanes_to_dispatch,
    resume_run,
    stale_before,
    start_run,
)
from evaluation.services.rejudge import REJUDGE_CHUNK, JUDGED_COLUMNS, rejudge_execute, run_rejudge  # noqa: F401
from evaluation.services.reports import (  # noqa: F401
    latest_runs_by_agent,
    extra_report_lines,
    metric_table,
    releases_compare,
    run_current_report,
    run_outcomes,
    run_progress,
    run_report,
    runs_compare,
    runs_differences,
    runs_with_progress,
)
from evaluation.services.runs import (  # noqa: F401
    judge_answer,
    judged_fields,
    run_cancel,
    run_create,
    run_execute_inline,
    run_fail,
    run_finish_if_done,
    run_lane,
    run_resume,
    run_start,
    run_step,
)

"""Pipeline artifacts (paper Figure 1) and the jobs and LLM calls that produce them.

Every artifact row keeps its parent (lineage), its origin, the job that produced it and its
curation status (models/artifacts.py); jobs, their stage progress, discards, LLM calls and item
claims are in models/jobs.py. Everything is imported from here: `from generation.models import Test`.
"""
from generation.models.jobs import (  # noqa: F401 - re-exported
    JOB_TRANSITIONS,
    TERMINAL_JOB_STATUSES,
    CurationStatus,
    Discard,
    GenerationJob,
    IllegalTransition,
    ItemClaim,
    JobStatus,
    LLMCall,
    LLMOutcome,
    Origin,
    OutputForm,
    Stage,
    StageProgress,
    StageState,
    WorkerHeartbeat,
)
from generation.models.batches import (  # noqa: F401 - re-exported
    BatchRequest,
    BatchRequestState,
    BatchStatus,
    EndpointCapability,
    LLMBatch,
)
from generation.models.artifacts import (  # noqa: F401 - re-exported
    Api,
    Artifact,
    Conversation,
    ConversationGraph,
    Flowgraph,
    GapFill,
    Intent,
    MessageRole,
    Procedure,
    SampledPath,
    Test,
)

__all__ = [
    "BatchRequest", "BatchRequestState", "BatchStatus", "EndpointCapability", "LLMBatch", "OutputForm",
    "JOB_TRANSITIONS", "TERMINAL_JOB_STATUSES", "Api", "Artifact", "Conversation", "ConversationGraph",
    "CurationStatus", "Discard", "Flowgraph", "GapFill", "GenerationJob", "IllegalTransition", "Intent", "ItemClaim",
    "JobStatus", "LLMCall", "LLMOutcome", "MessageRole", "Origin", "Procedure", "SampledPath", "Stage",
    "StageProgress", "StageState", "Test", "WorkerHeartbeat",
]

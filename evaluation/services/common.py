"""What every evaluation service module shares: the error type and the constants."""
from __future__ import annotations

LLM_STAGE = "evaluation"
BOOTSTRAP_SAMPLES = 1000


class EvaluationError(Exception):
    pass

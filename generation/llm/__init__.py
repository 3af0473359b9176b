"""The one door to the LLM (see client.py): chat with retries, bounded concurrency, logging and caching."""
from generation.llm.accounting import calls_mark_lost, estimate_prompt_tokens
from generation.llm.client import backoff_delay, cache_key, chat, request_hash
from generation.llm.limiter import limiter_for
from generation.llm.config import (
    NO_ENDPOINT_MESSAGE,
    LLMDeferred,
    LLMError,
    LLMFailed,
    LLMResult,
    LLMStopped,
    LLMUnavailable,
    cost_of,
    endpoint_configured,
    parse_prices,
    public_endpoint,
    require_endpoint,
    stage_model,
)
from generation.llm.repair import Answer, ask, repair_message

__all__ = [
    "NO_ENDPOINT_MESSAGE", "Answer", "ask", "cache_key", "calls_mark_lost", "estimate_prompt_tokens", "repair_message", "LLMDeferred", "LLMError", "LLMFailed", "LLMResult", "LLMStopped", "LLMUnavailable", "backoff_delay", "chat",
    "cost_of", "endpoint_configured", "limiter_for", "parse_prices", "public_endpoint", "request_hash",
    "require_endpoint", "stage_model",
]

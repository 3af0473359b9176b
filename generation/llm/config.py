"""Errors, the result type, endpoint settings and prices of the LLM layer."""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings


class LLMError(Exception):
    pass


class LLMUnavailable(LLMError):
    """No endpoint is configured."""


class LLMFailed(LLMError):
    """The call failed for good: retries exhausted or a non-retryable error."""

    def __init__(self, message: str, *, call_id: int | None = None) -> None:
        super().__init__(message)
        self.call_id = call_id


class LLMStopped(LLMError):
    """The job the call belongs to stopped (failed, cancelled, its cost limit reached): nothing was sent."""

    def __init__(self, message: str, *, cost_limit: bool = False) -> None:
        super().__init__(message)
        self.cost_limit = cost_limit


class LLMDeferred(LLMError):
    """Batch mode: the request waits for its batch; the item runs again once the reply is in."""


NO_ENDPOINT_MESSAGE = (
    "No LLM endpoint is configured: set OPENAI_BASE_URL (and OPENAI_API_KEY if the server needs "
    "one) to use the LLM stages. Imported items and the deterministic stages work without it."
)


@dataclass
class LLMResult:
    content: str | None
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    cached: bool = False
    call_id: int | None = None
    model: str = ""
    cost_usd: Decimal = Decimal(0)
    # What `check` found wrong with the reply ([] when it passed or nothing was checked).
    findings: list[tuple[str, str]] = field(default_factory=list)


# --------------------------------------------------------------------------- configuration


def endpoint_base_url() -> str:
    """The LLM endpoint of the current project (its settings page), else the site's OPENAI_BASE_URL."""
    from projects.context import current_project

    project = current_project()
    return (project.llm_base_url if project is not None and project.llm_base_url else "") or settings.OPENAI_BASE_URL


def endpoint_api_key() -> str:
    """The key for endpoint_base_url(), read from the environment variable the project names.

    A project with an endpoint of its own but no variable named gets no key at all: the site's
    OPENAI_API_KEY is sent only to the site's endpoint, so two projects' keys never mix."""
    import os

    from projects.context import current_project

    project = current_project()
    if project is not None and project.llm_key_env:
        return os.environ.get(project.llm_key_env, "")
    if project is not None and project.llm_base_url and \
            project.llm_base_url.rstrip("/") != (settings.OPENAI_BASE_URL or "").rstrip("/"):
        return ""
    return settings.OPENAI_API_KEY


def endpoint_configured(base_url: str | None = None) -> bool:
    return bool(base_url or endpoint_base_url())


def require_endpoint() -> None:
    if not endpoint_configured():
        raise LLMUnavailable(NO_ENDPOINT_MESSAGE)


def stage_model(stage: str) -> str:
    """The current project's default model for the stage (its settings page), else the site's."""
    from projects.context import current_project

    project = current_project()
    own = (project.default_models or {}).get(stage) if project is not None else None
    return own or settings.LLM_STAGE_MODELS.get(stage) or settings.EVALUATION_MODEL


def parse_prices(text: str) -> dict[str, tuple[Decimal, Decimal]]:
    """"model=input/output,..." in USD per million tokens."""
    prices: dict[str, tuple[Decimal, Decimal]] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        try:
            model, pair = part.split("=", 1)
            inp, out = pair.split("/", 1)
            prices[model.strip()] = (Decimal(inp.strip()), Decimal(out.strip()))
        except (ValueError, ArithmeticError):
            raise ValueError(f"LLM_PRICES entry {part!r} is not model=input/output") from None
    return prices


def cost_of(model: str, prompt_tokens: int, completion_tokens: int) -> Decimal:
    price = parse_prices(settings.LLM_PRICES).get(model)
    if price is None:
        return Decimal(0)
    million = Decimal(1_000_000)
    return (price[0] * prompt_tokens + price[1] * completion_tokens) / million


def public_endpoint(base_url: str) -> str:
    """The base URL without any user:password part, safe to store."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


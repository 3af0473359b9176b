"""What an endpoint and model can do, learnt once and remembered (EndpointCapability rows).

* Structured outputs: a call that carries a JSON Schema `response_format` and gets a reply proves
  it; one answered 400 about its response_format proves the opposite, and every later call to that
  endpoint and model uses the prompt-only form. Nothing is probed twice.
* Batches: `GET /batches` answers (200) or not (404) — asked by the endpoint test on the jobs page
  and before a job in batch mode starts.

`probe()` is the endpoint test: which provider was detected, whether the models list answers,
and the two capabilities, with short messages and never the key.
"""
from __future__ import annotations

from typing import Any

import openai
from django.conf import settings
from django.utils import timezone

from generation.llm.config import LLMError, public_endpoint, stage_model
from generation.llm.providers import client_for, provider_for
from generation.models import EndpointCapability
from generation.redact import redact
from generation.llm.config import endpoint_api_key, endpoint_base_url


def structured_outputs(base_url: str, model: str) -> bool | None:
    """True / False once learnt for this endpoint and model; None when not known yet."""
    return (EndpointCapability.objects.filter(endpoint=public_endpoint(base_url), model=model)
            .values_list("structured_outputs", flat=True).first())


def batches_available(base_url: str) -> bool | None:
    return (EndpointCapability.objects.filter(endpoint=public_endpoint(base_url), model="")
            .values_list("batches", flat=True).first())


def remember(base_url: str, model: str, **fields: Any) -> None:
    EndpointCapability.objects.update_or_create(
        endpoint=public_endpoint(base_url), model=model,
        defaults={**fields, "provider": provider_for(base_url), "checked_at": timezone.now()})


# A schema every structured-output server accepts: the endpoint test asks for it.
_PROBE_SCHEMA = {"name": "probe", "strict": True, "schema": {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": False}}


def refused_schema(status: int | None, message: str) -> bool:
    """A 400 that names the response_format (or the schema): the server does not take structured outputs."""
    text = (message or "").lower()
    return status == 400 and any(w in text for w in ("response_format", "json_schema", "structured", "schema"))


def _probe_batches(client: openai.OpenAI) -> tuple[bool, str]:
    try:
        client.batches.list(limit=1)
        return True, "the endpoint lists batches"
    except openai.NotFoundError:
        return False, "the endpoint has no /batches (HTTP 404)"
    except openai.APIStatusError as exc:
        return False, f"/batches answered HTTP {exc.status_code}"
    except openai.APIError as exc:
        return False, f"/batches: {type(exc).__name__}"


def probe(base_url: str | None = None, api_key: str | None = None, model: str | None = None) -> dict[str, Any]:
    """The endpoint test: provider, reachability, structured outputs and batches (remembered)."""
    base_url = base_url or endpoint_base_url()
    api_key = endpoint_api_key() if api_key is None else api_key
    model = model or stage_model("conversations")
    secrets = [api_key] if api_key else []
    out: dict[str, Any] = {"endpoint": public_endpoint(base_url), "provider": provider_for(base_url), "model": model,
                           "ok": False, "message": "", "structured_outputs": None, "batches": None}
    try:
        client = client_for(base_url, api_key, min(settings.OPENAI_TIMEOUT, 20.0))
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": 'Answer {"ok": true}.'}],
            response_format={"type": "json_schema", "json_schema": _PROBE_SCHEMA})
        out.update(ok=True, structured_outputs=True,
                   message=f"the endpoint answered ({reply.usage.total_tokens if reply.usage else 0} tokens)")
    except openai.BadRequestError as exc:
        if refused_schema(exc.status_code, exc.message):
            out.update(ok=True, structured_outputs=False,
                       message="the endpoint answered but refused a JSON Schema response_format")
        else:
            out["message"] = redact(f"HTTP 400: {exc.message}", secrets)[:300]
    except openai.APIStatusError as exc:
        out["message"] = redact(f"HTTP {exc.status_code}: {exc.message}", secrets)[:300]
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        out["message"] = f"could not reach the endpoint ({type(exc).__name__})"
        return out
    except LLMError as exc:
        out["message"] = str(exc)
        return out
    if out["ok"]:
        remember(base_url, model, structured_outputs=out["structured_outputs"])
    out["batches"], out["batches_message"] = _probe_batches(client)
    if out["batches"] or "404" in out["batches_message"]:
        remember(base_url, "", batches=out["batches"])
    return out

"""Which client speaks to the endpoint: any OpenAI-compatible base URL, or Azure OpenAI.

Azure OpenAI differs in three ways the official package's `AzureOpenAI` client handles: the model
name of a request is a *deployment* name (the client puts it in the path,
`/openai/deployments/<name>/chat/completions`), every request carries `?api-version=`, and the key
goes in an `api-key` header instead of `Authorization: Bearer`. It is detected from the host
(`*.openai.azure.com`, `*.cognitiveservices.azure.com`, `*.services.ai.azure.com`) or chosen with
OPENAI_PROVIDER=azure; OPENAI_API_VERSION gives the api-version. Set the stage models
(LLM_MODEL, LLM_MODEL_<STAGE>) to the deployment names.
"""
from __future__ import annotations

import hashlib
import threading
from urllib.parse import urlsplit

import openai
from django.conf import settings

from generation.llm.config import LLMUnavailable

AZURE = "azure"
OPENAI = "openai"
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com")

_lock = threading.Lock()
_clients: dict[tuple, openai.OpenAI] = {}


def provider_for(base_url: str) -> str:
    """'azure' or 'openai': OPENAI_PROVIDER when set, else from the endpoint's host."""
    chosen = (settings.OPENAI_PROVIDER or "auto").lower()
    if chosen in (AZURE, OPENAI):
        return chosen
    host = (urlsplit(base_url).hostname or "").lower()
    return AZURE if host.endswith(_AZURE_HOSTS) else OPENAI


def azure_endpoint(base_url: str) -> str:
    """The resource URL AzureOpenAI wants (it appends /openai itself)."""
    url = base_url.rstrip("/")
    for suffix in ("/openai/v1", "/openai"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def client_for(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    """One client per endpoint, key and timeout for the process (the client pools its connections)."""
    provider = provider_for(base_url)
    # Keyed on a hash of the key so the key itself is not kept as a dict key in plain sight.
    ident = (provider, base_url, hashlib.sha256(api_key.encode()).hexdigest(), timeout,
             settings.OPENAI_API_VERSION if provider == AZURE else "")
    with _lock:
        client = _clients.get(ident)
        if client is None:
            if provider == AZURE:
                if not settings.OPENAI_API_VERSION:
                    raise LLMUnavailable("Azure OpenAI needs an api-version: set OPENAI_API_VERSION "
                                         "(for example 2024-10-21)")
                client = openai.AzureOpenAI(azure_endpoint=azure_endpoint(base_url), api_key=api_key or "not-needed",
                                            api_version=settings.OPENAI_API_VERSION, max_retries=0, timeout=timeout)
            else:
                client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", max_retries=0,
                                       timeout=timeout)
            _clients[ident] = client
        return client


def batch_url(base_url: str) -> str:
    """The `url` of a Batch API line: Azure's batches take the path without the /v1 prefix."""
    return "/chat/completions" if provider_for(base_url) == AZURE else "/v1/chat/completions"

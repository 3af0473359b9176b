"""Secret redaction: applied before any error text, response body or log line is stored or shown.

Two kinds of secret are removed: the keys this deployment is configured with (OPENAI_API_KEY and
any key a caller passes in, e.g. an agent's), and anything shaped like a credential whatever its
origin — user:password in URLs, `sk-…` tokens, `Bearer …` and `Basic …` authorisation values, and `api-key: …` /
`api_key=…` / `"x-api-key": "…"` pairs — because an endpoint or a gateway may echo a header
we never saw. This module imports no models: the logging configuration loads it before Django's
apps are ready.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Iterable

MASK = "[redacted]"
_MIN_KEY_LENGTH = 6  # shorter configured "keys" (e.g. "x") would shred ordinary text

_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.\-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)

_PATTERNS = [
    # OpenAI-style keys: sk-..., sk-proj-..., and similar prefixed tokens.
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
    # Authorization header values.
    re.compile(r"\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=\-]+", re.IGNORECASE),
    # key: value and key=value pairs, quoted or not (api-key, api_key, x-api-key, apikey, authorization).
    re.compile(r"""(?P<name>["']?(?:x-)?api[-_ ]?key["']?|["']?authorization["']?)(?P<sep>\s*[:=]\s*)"""
               r"""(?P<quote>["']?)(?P<value>[^\s"',;}]+)""", re.IGNORECASE),
]


def configured_keys() -> list[str]:
    """The secrets this deployment holds (read lazily so tests can change settings)."""
    try:
        from django.conf import settings

        keys = [getattr(settings, "OPENAI_API_KEY", "") or ""]
        from generation.llm.config import endpoint_api_key

        keys.append(endpoint_api_key() or "")  # the current project's own key (issue #30)
    except Exception:  # noqa: BLE001 - settings not configured (a bare script): only the patterns apply
        keys = []
    return [k for k in keys if len(k) >= _MIN_KEY_LENGTH]


def redact(text: Any, extra_keys: Iterable[str] = ()) -> str:
    """`text` with every configured key and credential-shaped token replaced by [redacted]."""
    if text is None:
        return ""
    out = text if isinstance(text, str) else str(text)
    if not out:
        return out
    for key in sorted({*configured_keys(), *(k for k in extra_keys if k and len(k) >= _MIN_KEY_LENGTH)},
                      key=len, reverse=True):
        out = out.replace(key, MASK)
    out = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{MASK}@", out)
    for pattern in _PATTERNS:
        if pattern.groups:
            out = pattern.sub(lambda m: f"{m.group('name')}{m.group('sep')}{m.group('quote')}{MASK}"
                              if "name" in m.groupdict() else MASK, out)
        else:
            out = pattern.sub(MASK, out)
    return out


def redact_json(value: Any, extra_keys: Iterable[str] = ()) -> Any:
    """The same for a JSON-like structure (strings inside lists and dicts)."""
    if isinstance(value, str):
        return redact(value, extra_keys)
    if isinstance(value, list):
        return [redact_json(v, extra_keys) for v in value]
    if isinstance(value, dict):
        return {k: redact_json(v, extra_keys) for k, v in value.items()}
    return value


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the formatted message (and drops the args it used)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is logged as is
            return True
        clean = redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        record.msg, record.args = clean, None
        return True

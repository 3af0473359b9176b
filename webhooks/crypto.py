"""Webhook secrets at rest, and signatures.

HMAC signing needs the secret itself, so it cannot be stored as a hash. It is encrypted with
Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`) under a key derived from SECRET_KEY with
HMAC-SHA256 and a purpose label: a database dump alone does not reveal any secret, and no page
ever shows more than its last four characters. Rotating SECRET_KEY makes stored secrets
unreadable; deliveries then fail with a message saying to set a new secret.

Signature (docs/agent-protocol.md, "Webhooks"): ``X-Almita-Signature: sha256=<hex>`` where hex is
HMAC-SHA256(secret, f"{timestamp}.{body}") and timestamp is ``X-Almita-Timestamp`` (Unix seconds).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

PURPOSE = b"almita-studio/webhook-secrets/v1"
SIGNATURE_HEADER = "X-Almita-Signature"
TIMESTAMP_HEADER = "X-Almita-Timestamp"
EVENT_HEADER = "X-Almita-Event"
DELIVERY_HEADER = "X-Almita-Delivery"
TOLERANCE_SECONDS = 300


class SecretUnreadable(Exception):
    pass


def _fernet() -> Fernet:
    key = hmac.new(settings.SECRET_KEY.encode(), PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def encrypt(secret: str) -> str:
    return _fernet().encrypt(secret.encode()).decode()


def decrypt(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode()).decode()
    except (InvalidToken, ValueError):
        raise SecretUnreadable("the webhook's secret cannot be decrypted (was SECRET_KEY changed?): "
                               "set a new secret") from None


def hint(secret: str) -> str:
    return "…" + secret[-4:]


def sign(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str, *, now: float,
           tolerance: int = TOLERANCE_SECONDS) -> bool:
    """What a receiver does: a fresh timestamp and a matching signature (constant-time compare)."""
    try:
        ts = int(timestamp)
    except (TypeError, ValueError):
        return False
    if abs(now - ts) > tolerance:
        return False
    return hmac.compare_digest(sign(secret, ts, body), signature or "")

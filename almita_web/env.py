"""Small, loud readers for environment variables.

Every reader names the variable in its error, so a typo in deployment stops start-up with a
message that says exactly what to fix instead of running with a silently wrong default.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "", environ: dict | None = None) -> str:
    environ = os.environ if environ is None else environ
    return environ.get(name, default)


def env_bool(name: str, default: bool, environ: dict | None = None) -> bool:
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use one of true/false, 1/0, yes/no, on/off")


def env_int(name: str, default: int, environ: dict | None = None, minimum: int | None = None) -> int:
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_float(name: str, default: float, environ: dict | None = None, minimum: float | None = None) -> float:
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str], environ: dict | None = None) -> list[str]:
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    if raw is None:
        return list(default)
    items = [item.strip() for item in raw.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}={raw!r} has an empty entry; use a comma-separated list")
    return items


def env_mapping(name: str, allowed_keys: set[str], parse, environ: dict | None = None) -> dict:
    """"key=value,key=value" with known keys; `parse(value)` converts (and may raise ValueError)."""
    environ = os.environ if environ is None else environ
    raw = environ.get(name, "").strip()
    result: dict = {}
    if not raw:
        return result
    for part in raw.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ImproperlyConfigured(f"{name}={raw!r}: entry {part!r} is not key=value")
        if key not in allowed_keys:
            raise ImproperlyConfigured(f"{name}: unknown key {key!r}; use one of {', '.join(sorted(allowed_keys))}")
        try:
            result[key] = parse(value)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: bad value for {key!r}: {exc}") from None
    return result


def database_from_url(url: str, base_dir: Path, name: str = "DATABASE_URL") -> dict:
    """Turn `sqlite:///path` or `postgres://user:pw@host:port/db` into a Django DATABASES entry."""
    parsed = urlparse(url)
    scheme = parsed.scheme
    if scheme == "sqlite":
        # sqlite:///relative/path or sqlite:////absolute/path
        raw_path = unquote(url[len("sqlite://"):])
        if raw_path.startswith("/") and not raw_path.startswith("//"):
            raw_path = raw_path[1:]
        elif raw_path.startswith("//"):
            raw_path = raw_path[1:]
        if not raw_path:
            raise ImproperlyConfigured(f"{name}={url!r} has no database file path")
        path = Path(raw_path)
        if not path.is_absolute():
            path = base_dir / path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # IMMEDIATE makes every atomic block take SQLite's write lock up front, so two
            # annotators can never both read "one review still needed" and both claim the item;
            # a writer that finds it taken waits in SQLite's busy handler, up to `timeout` seconds.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # One connection per server thread, kept across requests: opening one (and running the
            # PRAGMAs above) on every request cost more than the review page's queries.
            "CONN_MAX_AGE": 600,
            "TEST": {"NAME": str(path.with_name(f"test_{path.name}"))},
        }
    if scheme in ("postgres", "postgresql", "pgsql"):
        db_name = unquote(parsed.path.lstrip("/"))
        if not db_name:
            raise ImproperlyConfigured(f"{name}={url!r} names no database (postgres://user@host:port/NAME)")
        options = dict(parse_qsl(parsed.query))
        # PostgreSQL's JIT compiles a plan whose estimate passes jit_above_cost, which stale
        # statistics reach on small queries: at 50,000 items the progress page's assignment query
        # spent 139 ms of its 179 ms compiling (p95 208 ms, floor 200). The pages' and releases'
        # queries run in milliseconds to seconds, where compiling never pays. A URL's own
        # ?options=... replaces this.
        options.setdefault("options", "-c jit=off")
        try:
            port = parsed.port
        except ValueError:
            raise ImproperlyConfigured(f"{name}={url!r} has a bad port") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parsed.username or ""),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "",
            "PORT": str(port or ""),
            "OPTIONS": options,
            # Reuse connections across requests: opening one costs more than a review page.
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise ImproperlyConfigured(f"{name}={url!r}: unsupported scheme {scheme!r}; use sqlite:/// or postgres://")


@dataclass(frozen=True)
class BrokerConfig:
    url: str
    transport_options: dict


def broker_from_url(url: str, var_dir: Path, name: str = "CELERY_BROKER_URL") -> BrokerConfig:
    """The default `filesystem://` broker needs no server: kombu passes messages as files in var/."""
    scheme = urlparse(url).scheme
    if scheme == "filesystem":
        queue_dir = var_dir / "broker" / "queue"
        processed_dir = var_dir / "broker" / "processed"
        return BrokerConfig(
            url="filesystem://",
            transport_options={
                "data_folder_in": str(queue_dir),
                "data_folder_out": str(queue_dir),
                "processed_folder": str(processed_dir),
                # Broadcast/control messages (celery inspect, pidbox) would otherwise land in ./control.
                "control_folder": str(var_dir / "broker" / "control"),
                "store_processed": False,
                # kombu polls the folder; its 1 s default would make each task wait a second.
                "polling_interval": 0.02,
            },
        )
    if scheme in ("redis", "rediss", "amqp", "memory"):
        return BrokerConfig(url=url, transport_options={"visibility_timeout": 3600} if scheme.startswith("redis") else {})
    raise ImproperlyConfigured(f"{name}={url!r}: unsupported broker; use filesystem:// or redis://host:port/db")


def cache_from_url(cache_url: str, broker_url: str, cache_dir: Path, name: str = "CACHE_URL") -> dict:
    """The default cache: one for every web host (sessions, path-highlighted drawings).

    ``CACHE_URL`` decides when set: ``redis://host:port/db`` (Django's Redis cache) or ``file://``
    (files under ``cache_dir``; ``file:///path`` elsewhere). Unset, a stack whose broker is Redis
    (docker-compose) uses that Redis server with the next database number, so clearing the cache
    never touches the task queue; the embedded default (filesystem broker) keeps files in var/.
    """
    url = cache_url.strip()
    if not url:
        parsed = urlparse(broker_url)
        if parsed.scheme in ("redis", "rediss"):
            try:
                db = int(parsed.path.lstrip("/") or 0)
            except ValueError:
                raise ImproperlyConfigured(f"CELERY_BROKER_URL={broker_url!r} has a bad database number") from None
            url = parsed._replace(path=f"/{(db + 1) % 16}").geturl()
        else:
            url = "file://"
    scheme = urlparse(url).scheme
    if scheme in ("redis", "rediss"):
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url, "KEY_PREFIX": "almita"}
    if scheme == "file":
        path = unquote(urlparse(url).path) or str(cache_dir)
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": path,
                "OPTIONS": {"MAX_ENTRIES": 5000}}
    raise ImproperlyConfigured(f"{name}={url!r}: unsupported cache; use redis://host:port/db or file://")

"""Almita Studio settings: one file, every value from the environment, loud on bad values.

Defaults give the embedded setup (SQLite under var/, a filesystem Celery broker, no LLM
endpoint), so `manage.py runserver` works on a fresh clone with nothing configured.
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from almita_web.env import (
    broker_from_url,
    cache_from_url,
    database_from_url,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_mapping,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("ALMITA_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (set DEBUG=true for local work)")
    SECRET_KEY = "insecure-local-development-key-only-used-with-DEBUG-on"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "projects",
    "webhooks",
    "generation",
    "curation",
    "evaluation",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Serves /static/ from the app itself when DEBUG is off (the WSGI server serves no files);
    # compressed and cache-friendly, so no separate web server is needed in front of it.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # /p/<slug>/… names the project (issue #30): stripped before URLs are resolved.
    "projects.middleware.ProjectPrefixMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "projects.middleware.ProjectAccessMiddleware",
    "almita_web.bounds.BoundedPathIdsMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "almita_web.urls"
WSGI_APPLICATION = "almita_web.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "almita_web.roles.roles_context",
                "almita_web.nav.nav_context",
                "curation.reviews.discussion_views.notifications_context",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'almita.sqlite3'}"), BASE_DIR),
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
# WhiteNoise finds files where the static finders do, so a deployment needs no collectstatic step.
WHITENOISE_USE_FINDERS = True
# It also serves STATIC_ROOT when collectstatic has filled it; until then it would warn at every start.
warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)

# One cache every server process and web host shares (sessions, path-highlighted drawings): Redis
# when the stack has Redis (CACHE_URL, or the broker's server), files under VAR_DIR (CACHE_DIR moves
# them) on the embedded default.
CACHES = {
    "default": cache_from_url(env_str("CACHE_URL"), env_str("CELERY_BROKER_URL", "filesystem://"),
                              Path(env_str("CACHE_DIR", str(VAR_DIR / "cache")))),
}

# Sessions are read on every request: from the shared cache above (a file read), written through
# to the database, so a lost cache entry only costs one query.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"

# --- Celery -------------------------------------------------------------------------------
_broker = broker_from_url(env_str("CELERY_BROKER_URL", "filesystem://"), VAR_DIR)
CELERY_BROKER_URL = _broker.url
CELERY_BROKER_TRANSPORT_OPTIONS = _broker.transport_options
if CELERY_BROKER_URL == "filesystem://":
    # The stock filesystem transport lets a consumer read a half-written message.
    CELERY_BROKER_TRANSPORT = "almita_web.broker:Transport"
# Results and progress live on model rows; no result backend is needed.
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged only once it finished, so a worker killed mid-task leaves the message
# on the broker and a restarted worker runs it again; tasks are idempotent by construction.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# With `celery beat` running, the generation watchdog looks for stalled jobs every few minutes.
CELERY_BEAT_SCHEDULE = {
    "generation-watchdog": {"task": "generation.jobs_watchdog", "schedule": 300.0},
    # Batch mode polls itself while batches are open; the beat is the safety net if a poll is lost.
    "generation-batches-poll": {"task": "generation.batches_poll", "schedule": 300.0},
    "curation-digest": {"task": "curation.send_digest", "schedule": 86400.0},
}
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Webhook deliveries wait on other people's servers (a receiver answering in 30 s held a worker
# thread for 30 s): they go to their own queue, which its own worker process consumes
# (scripts/run.sh, docker-compose.yml), so generation never waits behind them.
WEBHOOK_QUEUE = "webhooks"
CELERY_TASK_ROUTES = {"webhooks.tasks.deliver_webhook": {"queue": WEBHOOK_QUEUE}}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- E-mail --------------------------------------------------------------------------------
# The daily digest of notifications (curation.send_digest under celery beat, or `manage.py
# send_digest`) is sent only when this is on, through Django's EMAIL_* settings.
ALMITA_DIGEST_EMAIL = env_bool("ALMITA_DIGEST_EMAIL", False)
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "almita@localhost")

# --- LLM endpoint ---------------------------------------------------------------------------
# The key is read from the environment when a client is built and is never stored on a row.
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_TIMEOUT = env_float("OPENAI_TIMEOUT", 60.0, minimum=0.1)
# "auto" tells Azure OpenAI from its host name; "azure" or "openai" chooses (generation/llm/providers.py).
OPENAI_PROVIDER = env_str("OPENAI_PROVIDER", "auto").lower()
if OPENAI_PROVIDER not in ("auto", "openai", "azure"):
    raise ImproperlyConfigured(f"OPENAI_PROVIDER must be auto, openai or azure (got {OPENAI_PROVIDER!r})")
OPENAI_API_VERSION = env_str("OPENAI_API_VERSION", "")  # Azure OpenAI's api-version
# Send JSON stages' schemas as structured outputs where the endpoint accepts them (#32).
LLM_STRUCTURED_OUTPUTS = env_bool("LLM_STRUCTURED_OUTPUTS", True)
# Batch mode (#32): how often open batches are polled, the price factor of a batch's tokens, the window.
LLM_BATCH_POLL_SECONDS = env_float("LLM_BATCH_POLL_SECONDS", 60.0, minimum=0.05)
LLM_BATCH_PRICE_FACTOR = env_float("LLM_BATCH_PRICE_FACTOR", 0.5, minimum=0.0)
LLM_BATCH_WINDOW = env_str("LLM_BATCH_WINDOW", "24h")
LLM_MAX_CONCURRENCY = env_int("LLM_MAX_CONCURRENCY", 4, minimum=1)
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 4, minimum=0)
LLM_BACKOFF_BASE = env_float("LLM_BACKOFF_BASE", 0.5, minimum=0.0)
LLM_CACHE = env_bool("LLM_CACHE", True)
# A reply that fails parsing or the stage's validators is re-asked this many times with the findings.
LLM_REPAIR_ATTEMPTS = env_int("LLM_REPAIR_ATTEMPTS", 2, minimum=0)
# An item whose repairs are spent starts this many times more from a fresh conversation before it is discarded.
LLM_RESAMPLES = env_int("LLM_RESAMPLES", 1, minimum=0)
# ...at this temperature at least (at 0 most endpoints would give the same reply again).
LLM_RESAMPLE_TEMPERATURE = env_float("LLM_RESAMPLE_TEMPERATURE", 0.7, minimum=0.0)
# An unfinished job with no progress for this long is marked failed by the watchdog.
JOB_STALL_MINUTES = env_int("JOB_STALL_MINUTES", 30, minimum=1)
# Every worker process looks for dead workers' items (and stalled jobs) this often; 0 turns it off.
JOB_RECOVERY_SECONDS = env_int("JOB_RECOVERY_SECONDS", 20, minimum=0)
# Closed loop (#15): attempts per uncovered edge; idle gaps longer than this are not annotator time.
GAP_FILL_RETRY_LIMIT = env_int("GAP_FILL_RETRY_LIMIT", 3, minimum=1)
CURATION_IDLE_MINUTES = env_float("CURATION_IDLE_MINUTES", 10.0, minimum=0.1)
_default_model = env_str("LLM_MODEL", "gpt-4o")
LLM_STAGE_MODELS = {
    stage: env_str(f"LLM_MODEL_{stage.upper()}", _default_model)
    for stage in ("intents", "procedures", "apis", "flowgraph", "conversation_graph", "conversations")
}
EVALUATION_MODEL = env_str("EVALUATION_MODEL", _default_model)
# USD per million tokens: "model=input/output,model=input/output".
LLM_PRICES = env_str("LLM_PRICES", "gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6")

# --- Curation and evaluation ----------------------------------------------------------------
REVIEWS_PER_ITEM = env_int("REVIEWS_PER_ITEM", 2, minimum=1)
_REVIEW_STAGES = {"procedure", "flowgraph", "conversation_graph", "conversation"}


def _positive_int(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(f"{number} must be at least 1")
    return number


def _policy(value: str) -> str:
    if value not in ("adjudication", "strict"):
        raise ValueError(f"{value!r} is not 'adjudication' or 'strict'")
    return value


# "conversation=1,flowgraph=3": reviews needed per stage (others use REVIEWS_PER_ITEM).
REVIEWS_PER_STAGE = env_mapping("REVIEWS_PER_STAGE", _REVIEW_STAGES, _positive_int)
# "flowgraph=strict": the paper's rule (any reject rejects) instead of adjudication.
CURATION_POLICIES = env_mapping("CURATION_POLICIES", _REVIEW_STAGES, _policy)
CLAIM_MINUTES = env_int("CLAIM_MINUTES", 30, minimum=1)
BERTSCORE_THRESHOLD = env_float("BERTSCORE_THRESHOLD", 0.55)
# Webhooks (issue #18): per-request timeout, attempts in all, first retry delay (doubling).
WEBHOOK_TIMEOUT = env_float("WEBHOOK_TIMEOUT", 10.0, minimum=0.1)
WEBHOOK_MAX_ATTEMPTS = env_int("WEBHOOK_MAX_ATTEMPTS", 6, minimum=1)
WEBHOOK_BACKOFF_BASE = env_float("WEBHOOK_BACKOFF_BASE", 30.0, minimum=0.0)
# BERTScore encoder precision: auto (bf16 where the CPU has native bf16 units), fp32 or bf16.
EVALUATION_BERTSCORE_PRECISION = env_str("EVALUATION_BERTSCORE_PRECISION", "auto").lower()
if EVALUATION_BERTSCORE_PRECISION not in ("auto", "fp32", "bf16"):
    raise ImproperlyConfigured(f"EVALUATION_BERTSCORE_PRECISION={EVALUATION_BERTSCORE_PRECISION!r}: use auto, fp32 or bf16")
# Torch intra-op threads for BERTScore; 0 keeps torch's own choice.
EVALUATION_TORCH_THREADS = env_int("EVALUATION_TORCH_THREADS", 1, minimum=0)

# --- REST API ---------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Almita Studio API",
    "DESCRIPTION": "Pipeline artifacts, reviews, jobs and releases of Almita Studio.",
    "VERSION": "1.0.0",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    # Every log line passes the secret redactor (configured keys, sk-…, Bearer …, api-key: …).
    "filters": {"redact": {"()": "generation.redact.RedactingFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # httpx logs request lines; keep them out of INFO so no header ever reaches a log.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # openai 3.x speaks through httpx2.
        "httpx2": {"level": "WARNING"},
        "httpcore2": {"level": "WARNING"},
    },
}

if os.environ.get("ALMITA_TESTING") == "1":
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

#!/usr/bin/env bash
# README command 2: the whole test suite. Extra arguments go to pytest.
# DATABASE_URL / CELERY_BROKER_URL choose the database and broker (default SQLite + filesystem).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test
exec .venv/bin/python -m pytest "$@"

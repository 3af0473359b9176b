"""Run a migration replay script (a module printing one JSON line last) in a fresh database of the
suite's vendor: a throw-away PostgreSQL database next to the test one, or a SQLite file."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

from django.db import connection

REPO = Path(__file__).resolve().parents[1]


def _run(module: str, database_url: str, var: Path, ok_codes: tuple[int, ...]) -> dict:
    env = dict(os.environ, DATABASE_URL=database_url, ALMITA_VAR_DIR=str(var), DEBUG="true")
    done = subprocess.run([sys.executable, "-m", module], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in ok_codes, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def replay_in_fresh_database(module: str, tmp_path: Path, prefix: str, ok_codes: tuple[int, ...] = (0,)) -> dict:
    if connection.vendor != "postgresql":
        return _run(module, f"sqlite:///{tmp_path}/replay.sqlite3", tmp_path, ok_codes)
    import psycopg2

    params = connection.get_connection_params()
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = psycopg2.connect(**{**params, "dbname": "postgres"})
    admin.autocommit = True
    admin.cursor().execute(f'CREATE DATABASE "{name}"')
    user = params.get("user") or "postgres"
    url = f"postgres://{user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{name}"
    try:
        return _run(module, url, tmp_path, ok_codes)
    finally:
        admin.cursor().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

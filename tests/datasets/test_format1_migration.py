"""Migration 0012 rewrites format 1 releases into the one storage format without changing a byte
of any download: releases frozen by the format 1 code (fixtures/format1/<vendor>/: stored rows and
every download, saved before format 1's readers were deleted) are loaded into a fresh database at
0007, migrated, and every file, zip member and the content hash compared (format1_replay).
The downloads were rendered again by the format 1 code after the released columns became one schema
(issue #31: `expected_content`, the Hugging Face folder's ids), so they are what a format 1 release
served just before this migration."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parents[2]


def _replay(database_url: str, var: Path) -> dict:
    env = dict(os.environ, DATABASE_URL=database_url, ALMITA_VAR_DIR=str(var), DEBUG="true")
    done = subprocess.run([sys.executable, "-m", "tests.datasets.format1_replay"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_format1_releases_migrate_and_every_download_keeps_its_bytes(tmp_path):
    if connection.vendor == "postgresql":
        import psycopg2

        params = connection.get_connection_params()
        name = f"almita_f1replay_{uuid.uuid4().hex[:8]}"
        admin = psycopg2.connect(**{**params, "dbname": "postgres"})
        admin.autocommit = True
        admin.cursor().execute(f'CREATE DATABASE "{name}"')
        user = params.get("user") or "postgres"
        url = f"postgres://{user}@{params.get('host', '127.0.0.1')}:{params.get('port', 5432)}/{name}"
        try:
            result = _replay(url, tmp_path)
        finally:
            admin.cursor().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.close()
    else:
        result = _replay(f"sqlite:///{tmp_path}/replay.sqlite3", tmp_path)
    assert result["vendor"] == connection.vendor
    assert result["releases"] == 5 and result["problems"] == [], result

"""The projects migrations move every existing row to Default, keeping ids and relations, and
turn role groups into Default memberships (a populated database at the previous migrations)."""
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
    done = subprocess.run([sys.executable, "-m", "tests.projects.migration_replay"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_existing_rows_move_to_default_with_their_ids(tmp_path):
    if connection.vendor == "postgresql":
        import psycopg2

        params = connection.get_connection_params()
        name = f"almita_p30mig_{uuid.uuid4().hex[:8]}"
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
    assert result["projects"] == ["default"]
    assert result["found"] == {name: "default" for name in result["found"]}, result["found"]
    assert result["relations_kept"]
    assert result["roles"] == [["ann", "default", "annotator"], ["boss", "default", "admin"],
                               ["boss", "default", "researcher"]]

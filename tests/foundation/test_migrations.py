"""The suite runs with --nomigrations, so check the migrations themselves here."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_models_and_migrations_agree(tmp_path):
    env = dict(os.environ, ALMITA_VAR_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path}/check.sqlite3")
    result = subprocess.run([sys.executable, "manage.py", "makemigrations", "--check", "--dry-run"], cwd=REPO,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, "models changed without a migration:\n" + result.stdout + result.stderr


def test_migrate_builds_a_fresh_sqlite_database(tmp_path):
    env = dict(os.environ, ALMITA_VAR_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path}/fresh.sqlite3")
    result = subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    demo = subprocess.run([sys.executable, "manage.py", "load_demo"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout + demo.stderr

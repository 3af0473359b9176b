"""Settings parsing: good values work, bad values stop start-up naming the variable."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from almita_web.env import broker_from_url, database_from_url, env_bool, env_float, env_int, env_list, env_mapping

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("raw,expected", [("true", True), ("1", True), ("YES", True), ("off", False), ("0", False), ("", False)])
def test_env_bool_good(raw, expected):
    assert env_bool("DEBUG", not expected, {"DEBUG": raw}) is expected


def test_env_bool_default_when_unset():
    assert env_bool("DEBUG", True, {}) is True


@pytest.mark.parametrize("raw", ["maybe", "2", "truee"])
def test_env_bool_bad_names_variable(raw):
    with pytest.raises(ImproperlyConfigured, match="DEBUG"):
        env_bool("DEBUG", False, {"DEBUG": raw})


def test_env_int_and_float():
    assert env_int("N", 3, {"N": "7"}) == 7
    assert env_int("N", 3, {}) == 3
    with pytest.raises(ImproperlyConfigured, match="N='x'"):
        env_int("N", 3, {"N": "x"})
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("N", 3, {"N": "0"}, minimum=1)
    assert env_float("T", 1.0, {"T": "0.25"}) == 0.25
    with pytest.raises(ImproperlyConfigured, match="T="):
        env_float("T", 1.0, {"T": "fast"})


def test_env_list():
    assert env_list("HOSTS", ["a"], {"HOSTS": "x.org, y.org"}) == ["x.org", "y.org"]
    with pytest.raises(ImproperlyConfigured, match="HOSTS"):
        env_list("HOSTS", [], {"HOSTS": "x.org,,y.org"})


def test_database_url_sqlite_relative_and_absolute(tmp_path):
    rel = database_from_url("sqlite:///var/db.sqlite3", tmp_path)
    assert rel["ENGINE"] == "django.db.backends.sqlite3"
    assert rel["OPTIONS"]["timeout"] == 30 and rel["CONN_MAX_AGE"] > 0
    assert rel["NAME"] == str(tmp_path / "var" / "db.sqlite3")
    assert rel["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    absolute = database_from_url("sqlite:////tmp/x/almita.sqlite3", tmp_path)
    assert absolute["NAME"] == "/tmp/x/almita.sqlite3"


def test_database_url_postgres():
    db = database_from_url("postgres://alice:s%40cret@db.local:6543/almita?sslmode=require", Path("/"))
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert db["CONN_HEALTH_CHECKS"] is True and db["CONN_MAX_AGE"] > 0
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == ("alice", "s@cret", "db.local", "6543", "almita")
    assert db["OPTIONS"] == {"sslmode": "require", "options": "-c jit=off"}
    own = database_from_url("postgres://h/almita?options=-c%20statement_timeout%3D5000", Path("/"))
    assert own["OPTIONS"] == {"options": "-c statement_timeout=5000"}  # the URL's own wins


def test_postgres_sessions_run_without_jit(db):
    """The suite's own connection, when it is PostgreSQL, has JIT off (issue #29: compiling a plan
    whose stale estimate passed jit_above_cost cost the progress page 139 ms)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only")
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"


@pytest.mark.parametrize("url,fragment", [("mysql://x/y", "unsupported scheme"), ("postgres://host:5432/", "names no database"), ("sqlite://", "no database file")])
def test_database_url_bad(url, fragment):
    with pytest.raises(ImproperlyConfigured, match=fragment):
        database_from_url(url, Path("/"))


def test_broker_filesystem_and_redis(tmp_path):
    fs = broker_from_url("filesystem://", tmp_path)
    assert fs.url == "filesystem://"
    assert fs.transport_options["data_folder_in"] == str(tmp_path / "broker" / "queue")
    assert fs.transport_options["polling_interval"] == 0.02
    # Nothing of the broker may land in the current directory.
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        assert fs.transport_options[key].startswith(str(tmp_path)), key
    redis = broker_from_url("redis://127.0.0.1:6379/0", tmp_path)
    assert redis.url == "redis://127.0.0.1:6379/0"
    with pytest.raises(ImproperlyConfigured, match="CELERY_BROKER_URL"):
        broker_from_url("kafka://x", tmp_path)


def _start(env_overrides: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()}
    for key, value in env_overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )


def test_startup_refuses_bad_debug_value():
    result = _start({"DEBUG": "maybe", "DJANGO_SETTINGS_MODULE": "almita_web.settings"})
    assert result.returncode != 0
    assert "DEBUG='maybe'" in result.stderr


def test_startup_requires_secret_key_when_debug_off():
    result = _start({"DEBUG": "false", "SECRET_KEY": None, "DJANGO_SETTINGS_MODULE": "almita_web.settings"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_startup_debug_without_secret_key_works():
    result = _start({"DEBUG": "true", "SECRET_KEY": None, "DJANGO_SETTINGS_MODULE": "almita_web.settings"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


def test_startup_refuses_bad_database_url():
    result = _start({"DATABASE_URL": "oracle://x/y", "DJANGO_SETTINGS_MODULE": "almita_web.settings"})
    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr


def test_per_stage_models(settings):
    assert set(settings.LLM_STAGE_MODELS) == {"intents", "procedures", "apis", "flowgraph", "conversation_graph", "conversations"}


def test_env_mapping():
    stages = {"flowgraph", "conversation"}
    assert env_mapping("R", stages, int, {"R": "flowgraph=3, conversation=1"}) == {"flowgraph": 3, "conversation": 1}
    assert env_mapping("R", stages, int, {}) == {}
    with pytest.raises(ImproperlyConfigured, match="R: unknown key 'poem'"):
        env_mapping("R", stages, int, {"R": "poem=2"})
    with pytest.raises(ImproperlyConfigured, match="R: bad value for 'flowgraph'"):
        env_mapping("R", stages, int, {"R": "flowgraph=many"})
    with pytest.raises(ImproperlyConfigured, match="not key=value"):
        env_mapping("R", stages, int, {"R": "flowgraph"})


def test_startup_refuses_bad_curation_policy():
    result = _start({"CURATION_POLICIES": "flowgraph=lenient", "DJANGO_SETTINGS_MODULE": "almita_web.settings"})
    assert result.returncode != 0
    assert "CURATION_POLICIES" in result.stderr and "lenient" in result.stderr


def _manage(env_overrides: dict[str, str | None]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in env_overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_manage_py_runs_on_a_fresh_clone_without_configuration():
    result = _manage({"SECRET_KEY": None, "DEBUG": None, "DJANGO_SETTINGS_MODULE": None})
    assert result.returncode == 0, result.stderr


def test_manage_py_still_refuses_debug_off_without_secret_key():
    result = _manage({"SECRET_KEY": None, "DEBUG": "false", "DJANGO_SETTINGS_MODULE": None})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_cache_is_redis_when_the_stack_has_redis_and_files_otherwise(tmp_path):
    from almita_web.env import cache_from_url

    files = cache_from_url("", "filesystem://", tmp_path)
    assert files["BACKEND"].endswith("FileBasedCache") and files["LOCATION"] == str(tmp_path)
    derived = cache_from_url("", "redis://redis:6379/0", tmp_path)  # docker-compose: the broker's server
    assert derived["BACKEND"].endswith("RedisCache") and derived["LOCATION"] == "redis://redis:6379/1"
    assert cache_from_url("", "redis://h:6379/15", tmp_path)["LOCATION"] == "redis://h:6379/0"
    assert cache_from_url("redis://c:1/3", "filesystem://", tmp_path)["LOCATION"] == "redis://c:1/3"
    assert cache_from_url("file:///srv/c", "redis://h/0", tmp_path)["LOCATION"] == "/srv/c"
    with pytest.raises(ImproperlyConfigured, match="CACHE_URL"):
        cache_from_url("memcached://x", "filesystem://", tmp_path)
    with pytest.raises(ImproperlyConfigured, match="database number"):
        cache_from_url("", "redis://h/x", tmp_path)


@pytest.mark.skipif(not os.environ.get("CELERY_BROKER_URL", "").startswith("redis"),
                    reason="runs when CELERY_BROKER_URL points at Redis (CI does)")
def test_the_derived_redis_cache_is_shared_through_the_server(tmp_path):
    """Two cache objects built from the same settings (two web hosts) see each other's entries."""
    import uuid

    from django.core.cache.backends.redis import RedisCache

    from almita_web.env import cache_from_url

    conf = cache_from_url("", os.environ["CELERY_BROKER_URL"], tmp_path)
    params = {k: v for k, v in conf.items() if k not in ("BACKEND", "LOCATION")}
    one, two = RedisCache(conf["LOCATION"], params), RedisCache(conf["LOCATION"], params)
    key = f"test-{uuid.uuid4().hex}"
    one.set(key, {"svg": "<svg/>"}, 30)
    assert two.get(key) == {"svg": "<svg/>"}
    two.delete(key)
    assert one.get(key) is None

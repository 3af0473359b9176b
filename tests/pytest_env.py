"""Loaded with `-p` before pytest-django reads the settings: test-only environment defaults."""
import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-deployment")
os.environ.setdefault("ALMITA_TESTING", "1")
# Playwright's sync API runs an event loop in the test thread; Django's ORM guard would refuse.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Each test session gets its own var/ (SQLite files, filesystem broker), so parallel runs and
# the developer's own database never share state.
if "ALMITA_VAR_DIR" not in os.environ:
    import tempfile

    os.environ["ALMITA_VAR_DIR"] = tempfile.mkdtemp(prefix="almita-test-")
# Files under the session's var/ unless a run names a cache: tests clear the cache, and a cache
# derived from a Redis broker would be a database number other runs may use.
os.environ.setdefault("CACHE_URL", "file://")

"""The Celery application. Tasks take ids, progress lives on rows (see house-style.md)."""
from __future__ import annotations

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")

app = Celery("almita_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Database connections in the worker follow Django's own CONN_MAX_AGE and CONN_HEALTH_CHECKS, as
# in the web server, instead of Celery's Django fixup closing every connection before and after
# each task (a huge reuse count turns that off; the handlers below apply Django's rule). A py-spy
# profile of bench/generation.py --part overhead (SQLite, C 16) put opening and closing the
# thread's connection at about a fifth of the worker's CPU; in the interleaved runs that followed
# the change, the LLM stage's ratio moved within the bench's noise.
app.conf["CELERY_DB_REUSE_MAX"] = 2**62
app.autodiscover_tasks(["generation"], related_name="heartbeat")


@app.on_after_configure.connect
def _ensure_broker_folders(sender: Celery, **_: object) -> None:
    # The filesystem transport does not create its folders itself.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        folder = options.get(key)
        if folder:
            os.makedirs(folder, exist_ok=True)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _connections_by_django_rule(**_: object) -> None:
    from django.db import close_old_connections

    close_old_connections()

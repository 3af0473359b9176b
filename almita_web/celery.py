"""The Celery application. Tasks take ids, progress lives on rows (see house-style.md)."""
from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")

app = Celery("almita_web")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["generation"], related_name="heartbeat")


@app.on_after_configure.connect
def _ensure_broker_folders(sender: Celery, **_: object) -> None:
    # The filesystem transport does not create its folders itself.
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "processed_folder", "control_folder"):
        folder = options.get(key)
        if folder:
            os.makedirs(folder, exist_ok=True)

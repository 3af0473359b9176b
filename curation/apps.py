from django.apps import AppConfig
from django.db.models.signals import post_save


class CurationConfig(AppConfig):
    name = "curation"
    verbose_name = "Curation"

    def ready(self) -> None:
        from curation.agreement.services import audit_event_saved
        from curation.agreement.services import job_panel
        from curation.models import AuditEvent
        from generation.panels import register_job_panel

        register_job_panel(job_panel)  # i15: curation economics on the job page
        # Analytics are recomputed by the worker a few seconds after a curation change.
        post_save.connect(audit_event_saved, sender=AuditEvent, dispatch_uid="curation-analytics-recompute")

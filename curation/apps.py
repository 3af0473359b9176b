from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "curation"
    verbose_name = "Curation"

    def ready(self) -> None:
        from curation.agreement.services import job_panel
        from generation.panels import register_job_panel

        register_job_panel(job_panel)  # i15: curation economics on the job page

from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from projects import celery  # noqa: F401  (connects the task signals)
        from projects.context import forget_cached
        from projects.models import Project

        def _forget(**_kwargs) -> None:
            forget_cached()

        post_save.connect(_forget, sender=Project, weak=False, dispatch_uid="projects_forget_save")
        post_delete.connect(_forget, sender=Project, weak=False, dispatch_uid="projects_forget_delete")

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Demo users and data. The one app allowed to depend on every other (it drives generation,
    curation and evaluation end to end), so those apps keep their one-way arrows."""

    name = "demo"
    default_auto_field = "django.db.models.BigAutoField"

#!/usr/bin/env python
"""Django's command-line utility for Almita Studio."""
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")
    # manage.py is the developer's tool: with nothing configured it runs in debug mode, so
    # `manage.py makemigrations` works on a fresh clone. Deployments set DEBUG=false explicitly
    # (docker-compose does), and the web server and the Celery worker never pass through here, so they
    # still refuse to start without SECRET_KEY.
    if "SECRET_KEY" not in os.environ:
        os.environ.setdefault("DEBUG", "true")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()

"""The WSGI application (served through almita_web/production.py)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "almita_web.settings")

application = get_wsgi_application()

# One image for the web server and the Celery worker (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends graphviz \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt .
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

RUN useradd --create-home almita && mkdir -p /app/var && chown -R almita /app/var
USER almita
EXPOSE 8000
CMD ["gunicorn", "almita_web.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3"]

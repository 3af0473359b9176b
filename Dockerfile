# One image for the web server and the Celery worker (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends graphviz \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# The runtime set only, through its lock (every package pinned with its hash): no test tools, no ML
# extra (without it reports use a lexical F1 and say so; requirements/ml.lock adds it).
COPY requirements/runtime.lock requirements/
RUN pip install --no-cache-dir --require-hashes --only-binary :all: -r requirements/runtime.lock
COPY . .
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

RUN useradd --create-home almita && mkdir -p /app/var && chown -R almita /app/var
USER almita
EXPOSE 8000
# almita_web/serve.py: granian, processes and threads chosen with bench/review_http.py.
CMD ["python", "-m", "almita_web.serve"]

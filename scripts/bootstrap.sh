#!/usr/bin/env bash
# Create .venv, install the pinned requirements, and install system packages where missing.
# Usage: scripts/bootstrap.sh [--test]   (--test also installs Chromium for browser tests)
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

apt_install() {
  # Only root (or password-less sudo) can install system packages; otherwise say what to do.
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "!! missing system packages: $* — install them with: sudo apt-get install -y $*" >&2
      return 0
    fi
  fi
  echo ">> apt-get install $*"
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
if [ "$want_test" = 1 ]; then
  [ -x /usr/bin/chromium ] || missing+=(chromium chromium-driver)
fi
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt_install "${missing[@]}"
fi

# The interpreter: $PYTHON if set, else the distribution's Python 3.11 when it can make a venv,
# else python3 from PATH. Debian and Ubuntu build theirs with profile-guided and link-time
# optimisation; a pyenv or source build without --enable-optimizations (this machine kind's
# python3) ran the review path about 20 % slower: bench/review_http.py, Postgres, server CPU
# 10.5-10.8 ms per verdict against 8.4-8.6, claim+page p95 53.8-54.6 ms against 44.4-44.6.
PY=${PYTHON:-}
if [ -z "$PY" ]; then
  PY=python3
  if [ -x /usr/bin/python3.11 ] && /usr/bin/python3.11 -c "import venv, ensurepip" 2>/dev/null; then
    PY=/usr/bin/python3.11
  fi
fi
if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv with $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo ">> installing requirements.txt"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi

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

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv"
  "$PY" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo ">> installing requirements.txt"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  echo "$want" > "$stamp"
fi

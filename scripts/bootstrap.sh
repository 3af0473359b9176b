#!/usr/bin/env bash
# Create .venv, install the locked packages, and install system packages where missing.
# Usage: scripts/bootstrap.sh [--test]
#   (no option)  the runtime set, requirements/runtime.lock (make run)
#   --test       the runtime set and the test group, requirements/test.lock, and Chromium (make test)
# The lock files pin every package with its hashes (scripts/lock.sh writes them from pyproject.toml).
# They are installed with uv, itself installed first from requirements/installer.lock: a cold install
# of the runtime set takes about 2 s with uv against about 22 s with pip, which downloads one file at a
# time and compiles every module ahead of use (measured from the registry, empty caches).
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
# The venv gets no pip of its own when the interpreter has one that can install into it (pip's
# --python): seeding pip takes 2-4 s of a cold start; uv does the installing.
host_pip=0
"$PY" -m pip --version >/dev/null 2>&1 && host_pip=1
if [ ! -x .venv/bin/python ]; then
  echo ">> creating .venv with $PY ($("$PY" -c 'import sys; print(sys.version.split()[0])'))"
  if [ "$host_pip" = 1 ]; then "$PY" -m venv --without-pip .venv; else "$PY" -m venv .venv; fi
fi
lock=requirements/runtime.lock
[ "$want_test" = 1 ] && lock=requirements/test.lock
stamp=".venv/.$(basename "$lock").sha256"
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  if ! .venv/bin/uv --version 2>/dev/null | grep -qF "$(sed -n 's/^uv==\([^ ]*\).*/\1/p' requirements/installer.lock)"; then
    echo ">> installing uv (requirements/installer.lock)"
    if .venv/bin/python -m pip --version >/dev/null 2>&1; then
      .venv/bin/python -m pip install -q --disable-pip-version-check --require-hashes -r requirements/installer.lock
    else
      "$PY" -m pip --python .venv/bin/python install -q --disable-pip-version-check --require-hashes \
        -r requirements/installer.lock
    fi
  fi
  echo ">> installing $lock"
  t0=${EPOCHREALTIME/./}
  # Additive (uv pip install, not sync): packages installed on top, such as the ml extra, stay.
  .venv/bin/uv pip install -q --python .venv/bin/python --require-hashes --only-binary :all: -r "$lock"
  echo "$want" > "$stamp"
  echo ">> installed $lock in $(awk -v us=$(( ${EPOCHREALTIME/./} - t0 )) 'BEGIN { printf "%.1f", us / 1e6 }') s"
  # The test set contains the runtime set at the same versions (tests/foundation/test_lock.py).
  if [ "$want_test" = 1 ]; then sha256sum requirements/runtime.lock | cut -d' ' -f1 > .venv/.runtime.lock.sha256; fi
fi

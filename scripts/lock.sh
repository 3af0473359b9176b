#!/usr/bin/env bash
# Regenerate the lock files under requirements/ from pyproject.toml, with hashes, after a change
# to the dependencies there. Versions already locked are kept unless pyproject.toml needs others
# (delete a lock file, or pass --upgrade, to move everything to the newest allowed release).
#   runtime.lock    [project].dependencies                (make run, the Docker image)
#   test.lock       the same plus the `test` group        (make test, .ci/run)
#   ml.lock         the `ml` extra, torch as the CPU wheel (.ci/run, from /opt/wheels when present)
#   installer.lock  uv itself, which scripts/bootstrap.sh installs first
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh >/dev/null
UV=.venv/bin/uv
compile() { "$UV" pip compile --quiet --no-header --generate-hashes --python-version 3.11 "$@"; }

compile --universal pyproject.toml -o requirements/runtime.lock "$@"
compile --universal pyproject.toml --group test -c requirements/runtime.lock -o requirements/test.lock "$@"
# The ml extra on top of the test set. torch is pinned to its CPU build (+cpu): from PyPI, plain
# torch 2.13.0 is a CUDA build that pulls several GB of nvidia-* wheels.
ml_in=$(mktemp)
trap 'rm -f "$ml_in"' EXIT
python3 - "$ml_in" <<'PY'
import re, sys, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["ml"]
lines = [re.sub(r"^torch==([0-9.]+)$", r"torch==\1+cpu", r.strip()) for r in extra]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
compile "$ml_in" -c requirements/test.lock --find-links /opt/wheels \
  --python-platform x86_64-manylinux_2_28 -o requirements/ml.lock "$@"
sed -i "s#${ml_in}#pyproject.toml (the ml extra)#" requirements/ml.lock
echo "uv==$("$UV" --version | cut -d' ' -f2)" | compile --universal - -o requirements/installer.lock "$@"
echo ">> requirements/*.lock regenerated; commit them with pyproject.toml"

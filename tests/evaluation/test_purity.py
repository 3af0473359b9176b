"""metrics.py, trials.py, the answer reader (reader.py) and the prompt (agents.py) import no Django: the standalone
runner (engineer #18) imports them without settings. Checked in a fresh interpreter."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PURE = ["evaluation.metrics", "evaluation.reader", "evaluation.agents", "evaluation.trials", "evaluation.dialogue_actions", "evaluation.comparison",
        "evaluation.dst", "evaluation.sessions"]


def test_pure_evaluation_modules_never_import_django():
    code = ("import importlib, sys\n"
            f"for name in {PURE!r}:\n"
            "    importlib.import_module(name)\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', 'celery'))\n"
            "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""

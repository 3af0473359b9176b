"""Dependencies run one way: evaluation → curation → generation (and the demo app may use all)."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

# app → apps it must never import
FORBIDDEN = {"generation": {"curation", "evaluation", "demo"}, "curation": {"evaluation", "demo"},
             "evaluation": {"demo"}}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_every_arrow_runs_evaluation_to_curation_to_generation():
    wrong = []
    for app, forbidden in FORBIDDEN.items():
        files = [p for p in (REPO / app).rglob("*.py") if "migrations" not in p.parts]
        assert files, app
        for path in files:
            bad = _imports(path) & forbidden
            if bad:
                wrong.append(f"{path.relative_to(REPO)} imports {', '.join(sorted(bad))}")
    assert not wrong, wrong


def test_the_demo_loader_lives_in_the_demo_app():
    assert (REPO / "demo" / "management" / "commands" / "load_demo.py").exists()
    assert not (REPO / "generation" / "management" / "commands" / "load_demo.py").exists()

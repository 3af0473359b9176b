"""Dependencies run one way: evaluation → curation → generation → pipeline (and the demo app may use
all); inside curation, each package (reviews, releases, agreement, guidance, loop) is reached by the
others, and by the other apps, only through its services module."""
from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

# app → apps it must never import
FORBIDDEN = {"generation": {"curation", "evaluation", "demo"}, "curation": {"evaluation", "demo"},
             "evaluation": {"demo"},
             # projects sits below every app: they all scope their rows through it.
             "projects": {"generation", "curation", "evaluation", "webhooks", "demo"}}

PACKAGES = {"reviews", "releases", "agreement", "guidance", "loop"}
# What the app's own wiring (urls, admin, API routes, commands) may take from a package besides its
# services: the modules Django itself calls into.
ENTRY_POINTS = {"services", "views", "explorer_views", "discussion_views", "corrections_views", "gold_views", "guideline_views", "urls", "api"}


def _imports(path: Path) -> set[str]:
    """Every absolute module a file imports, and for ``from a.b import c`` also ``a.b.c``."""
    tree = ast.parse(path.read_text(), str(path))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _python_files(folder: str) -> list[Path]:
    return [p for p in (REPO / folder).rglob("*.py") if "migrations" not in p.parts]


def _package_of(path: Path) -> str | None:
    parts = path.relative_to(REPO).parts
    return parts[1] if parts[0] == "curation" and len(parts) > 2 and parts[1] in PACKAGES else None


def _reaches_inside(module: str, allowed: set[str]) -> str | None:
    """The package `module` reaches past its allowed modules, if it does."""
    parts = module.split(".")
    if len(parts) < 3 or parts[0] != "curation" or parts[1] not in PACKAGES:
        return None
    return None if parts[2] in allowed else parts[1]


def test_every_arrow_runs_evaluation_to_curation_to_generation():
    wrong = []
    for app, forbidden in FORBIDDEN.items():
        files = _python_files(app)
        assert files, app
        for path in files:
            bad = {m.split(".")[0] for m in _imports(path)} & forbidden
            if bad:
                wrong.append(f"{path.relative_to(REPO)} imports {', '.join(sorted(bad))}")
    assert not wrong, wrong


def test_curation_packages_reach_each_other_only_through_their_services():
    assert {p.name for p in (REPO / "curation").iterdir() if (p / "__init__.py").exists()} >= PACKAGES
    wrong = []
    for path in _python_files("curation"):
        own = _package_of(path)
        # a package's modules; or the app's wiring (its root modules, commands, tags, and URL lists)
        allowed = {"services"} if own and path.name != "urls.py" else ENTRY_POINTS
        for module in sorted(_imports(path)):
            other = _reaches_inside(module, allowed)
            if other and other != own:
                wrong.append(f"{path.relative_to(REPO)} imports {module}")
    assert not wrong, wrong


def test_other_apps_reach_curation_only_through_its_models_and_services():
    wrong = []
    for app in ("evaluation", "demo", "webhooks", "generation"):
        for path in _python_files(app):
            for module in sorted(_imports(path)):
                if module.startswith("curation.") and _reaches_inside(module, {"services"}):
                    wrong.append(f"{path.relative_to(REPO)} imports {module}")
                elif module.split(".")[:2] == ["curation", "models"] or module == "curation":
                    continue
                elif module.startswith("curation.") and module.split(".")[1] not in PACKAGES:
                    wrong.append(f"{path.relative_to(REPO)} imports {module}")
    assert not wrong, wrong


def test_no_module_is_named_for_a_shortcut():
    """No `*_extra` or `hot_*` modules: a concern's name says what it is."""
    names = [p for app in ("almita_web", "curation", "generation", "evaluation", "webhooks", "demo")
             for p in _python_files(app)]
    bad = [str(p.relative_to(REPO)) for p in names
           if p.stem.endswith(("_extra", "_extras")) or p.stem.startswith("hot_")]
    assert bad == [], bad


def test_the_demo_loader_lives_in_the_demo_app():
    assert (REPO / "demo" / "management" / "commands" / "load_demo.py").exists()
    assert not (REPO / "generation" / "management" / "commands" / "load_demo.py").exists()

import ast
from pathlib import Path

PIPELINE = Path(__file__).resolve().parents[2] / "generation" / "pipeline"


def test_pipeline_never_imports_django():
    offenders = []
    files = sorted(PIPELINE.glob("*.py"))
    assert files, "pipeline package not found"
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders += [f"{path.name}:{node.lineno} {n}" for n in names
                          if n.split(".")[0] in ("django", "rest_framework", "celery")]
    assert offenders == []

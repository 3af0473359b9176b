"""(d) Management commands with `--project A` neither see nor touch project B.

The commands come from every app's management/commands folder: each that takes `--project` must be
covered in CASES (a new one fails test_every_project_command_is_covered until it is). For each,
B's ids and names are refused as unknown inside A (a CommandError, like an id that exists nowhere),
what the command prints or writes for A names nothing of B (MARK_B), and B's rows are unchanged
(every row of B compared field by field before and after).
"""
from __future__ import annotations

import json
from importlib import import_module
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command

from tests.projects.isolation.world import MARK_B, data_models

pytestmark = pytest.mark.django_db
APPS = ("generation", "curation", "evaluation", "webhooks", "demo", "projects")


def project_commands() -> set[str]:
    found = set()
    for label in APPS:
        folder = Path(apps.get_app_config(label).path) / "management" / "commands"
        for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
            if path.stem.startswith("_"):
                continue
            module = import_module(f"{apps.get_app_config(label).name}.management.commands.{path.stem}")
            parser = module.Command().create_parser("manage.py", path.stem)
            if any("--project" in action.option_strings for action in parser._actions):
                found.add(path.stem)
    return found


def rows_of_b(world) -> dict:
    """Every row made in B, every field: what a command must not touch."""
    out = {}
    for model in data_models():
        ids = world.b.ids.get(model._meta.label, [])
        out[model._meta.label] = sorted(map(repr, model._base_manager.filter(pk__in=ids).values()))
    return out


def run(name: str, *args, project: str = "alpha") -> str:
    out, err = StringIO(), StringIO()
    call_command(name, *args, "--project", project, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def refused(name: str, *args) -> None:
    with pytest.raises((CommandError, SystemExit)):
        run(name, *args)


def b(world, label: str) -> str:
    return str(world.b.ids[label][0])


def a(world, label: str) -> str:
    return str(world.a.ids[label][0])


def _export_release(world, tmp):
    refused("export_release", b(world, "curation.Release"), "--format", "jsonl", "--out", str(tmp / "b"))
    refused("export_release", f"{MARK_B} release", "--format", "jsonl", "--out", str(tmp / "b2"))
    out = tmp / "a"
    run("export_release", a(world, "curation.Release"), "--format", "jsonl", "--out", str(out))
    return "".join(p.read_text(errors="replace") for p in sorted(out.rglob("*")) if p.is_file())


def _audit_release(world, tmp):
    refused("audit_release", b(world, "curation.Release"))
    try:
        return run("audit_release", a(world, "curation.Release"), "--json", "--save")
    except SystemExit:  # status 1: a test fails the audit (the report was printed)
        return ""


def _export_portable(world, tmp):
    refused("export_portable", b(world, "curation.Release"), str(tmp / "b.jsonl"))
    run("export_portable", a(world, "curation.Release"), str(tmp / "a.jsonl"))
    return (tmp / "a.jsonl").read_text()


def _coverage(world, tmp):
    refused("coverage", "--release", b(world, "curation.Release"))
    refused("coverage", "--job", b(world, "generation.GenerationJob"))
    refused("coverage", "--graph", b(world, "generation.ConversationGraph"))
    return run("coverage", "--release", a(world, "curation.Release"), "--json")


def _fill_gaps(world, tmp):
    refused("fill_gaps", "--graph", b(world, "generation.ConversationGraph"))
    refused("fill_gaps", "--release", b(world, "curation.Release"))
    return run("fill_gaps", "--graph", a(world, "generation.ConversationGraph"))


def _regenerate(world, tmp):
    refused("regenerate", "--procedure", b(world, "generation.Procedure"))
    refused("regenerate", "--flowgraph", b(world, "generation.Flowgraph"))
    refused("regenerate", "--graph", b(world, "generation.ConversationGraph"))
    return ""


def _evaluate(world, tmp):
    refused("evaluate", "--release", b(world, "curation.Release"), "--agent", "gold")
    refused("evaluate", "--release", a(world, "curation.Release"), "--agent", b(world, "evaluation.Agent"))
    refused("evaluate", "--release", a(world, "curation.Release"), "--agent", f"{MARK_B} agent")
    refused("evaluate", "--rejudge", b(world, "evaluation.EvaluationRun"))
    return run("evaluate", "--release", a(world, "curation.Release"), "--agent", "gold")


def _evaluate_sessions(world, tmp):
    refused("evaluate_sessions", "--release", b(world, "curation.Release"), "--agent", "gold")
    refused("evaluate_sessions", "--release", a(world, "curation.Release"), "--agent", b(world, "evaluation.Agent"))
    return ""


def _import_items(world, tmp):
    from generation.models import Intent
    from tests.datasets.builders import document

    path = tmp / "doc.json"
    path.write_text(json.dumps(document(n_procedures=1, paths_per_graph=1)))
    out = run("import_items", str(path))
    made = Intent._base_manager.exclude(pk__in=world.a.ids["generation.Intent"] + world.b.ids["generation.Intent"])
    assert {i.project_id for i in made} == {world.a.project.pk}, "imported rows belong to A"
    return out


def _generate(world, tmp):
    from generation.models import GenerationJob
    from tests.generation.scripts import import_document

    path = tmp / "gen.json"
    path.write_text(json.dumps(import_document(1)))
    out = run("generate", "--from-file", str(path))  # queued after commit: never runs in this test
    job = GenerationJob._base_manager.order_by("-pk").first()
    assert job.project_id == world.a.project.pk
    return out


CASES = {"export_release": _export_release, "audit_release": _audit_release, "export_portable": _export_portable,
         "coverage": _coverage, "fill_gaps": _fill_gaps, "regenerate": _regenerate, "evaluate": _evaluate,
         "evaluate_sessions": _evaluate_sessions, "import_items": _import_items, "generate": _generate}


def test_every_project_command_is_covered():
    assert project_commands() == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_in_a_neither_sees_nor_touches_b(world, tmp_path, name):
    before = rows_of_b(world)
    output = CASES[name](world, tmp_path)
    assert MARK_B not in output
    assert rows_of_b(world) == before


def test_the_same_ids_work_inside_b(world, tmp_path):
    """Not vacuous: the refusals above are about the project, for in B the same ids are found."""
    release, agent = b(world, "curation.Release"), b(world, "evaluation.Agent")
    run("export_release", release, "--format", "jsonl", "--out", str(tmp_path / "b"), project="beta")
    run("export_portable", release, str(tmp_path / "b.jsonl"), project="beta")
    run("coverage", "--release", release, project="beta")
    run("coverage", "--graph", b(world, "generation.ConversationGraph"), project="beta")
    run("evaluate", "--release", release, "--agent", "gold", project="beta")
    run("evaluate", "--release", release, "--agent", agent, project="beta")
    run("fill_gaps", "--graph", b(world, "generation.ConversationGraph"), project="beta")
    assert MARK_B in (tmp_path / "b.jsonl").read_text()

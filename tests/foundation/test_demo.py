"""The demo loader: users per role, valid demo data, and idempotence."""
import pytest
from django.apps import apps
from django.contrib.auth import authenticate
from django.core.management import call_command

from almita_web.roles import user_roles
from demo.loader import DEMO_CASES, DEMO_USERS
from generation.models import Flowgraph, Intent, Procedure
from generation.pipeline.formats import graph_from_json
from generation.pipeline.validate import validate_flowgraph

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, int]:
    counts = {}
    for app_label in ("auth", "generation", "curation", "evaluation"):
        for model in apps.get_app_config(app_label).get_models():
            counts[model._meta.label] = model.objects.count()
    return counts


def test_load_demo_twice_creates_nothing_new(capsys):
    call_command("load_demo")
    first = row_counts()
    out = capsys.readouterr().out
    for username, _, password in DEMO_USERS:
        assert username in out and password in out
    call_command("load_demo")
    assert row_counts() == first
    assert "0 rows created" in capsys.readouterr().out


def test_demo_users_hold_their_roles_and_can_log_in():
    call_command("load_demo")
    for username, roles, password in DEMO_USERS:
        user = authenticate(username=username, password=password)
        assert user is not None, username
        assert set(roles) <= user_roles(user)


def test_demo_data_is_valid_and_linked():
    from projects.context import default_project, use_project

    call_command("load_demo")
    with use_project(default_project()):
        assert Intent.objects.count() == len(DEMO_CASES)
    assert Intent.objects.count() == len(DEMO_CASES) + 1  # the Shipping bot project's one case (#30)
    for flow in Flowgraph.objects.select_related("procedure__intent"):
        graph = graph_from_json(flow.data)
        api_names = list(flow.procedure.apis.values_list("name", flat=True))
        errors = [v for v in validate_flowgraph(graph, api_names) if v.severity == "error"]
        assert errors == [], errors
        # Every api node of the flowgraph names one of the procedure's APIs.
        used = {d["label"] for _, d in graph.nodes(data=True) if d["type"] == "api"}
        assert used <= set(api_names)
    assert Procedure.objects.filter(origin="imported").count() == len(DEMO_CASES) + 1


def test_demo_has_a_second_project_with_other_members(client):
    from demo.loader import SHIPPING_USERS

    call_command("load_demo")
    shipper = authenticate(username="shipper", password=SHIPPING_USERS[0][2])
    client.force_login(shipper)
    assert client.get("/p/shipping/curation/queue/").status_code == 200
    assert client.get("/p/default/curation/queue/").status_code == 404
    client.force_login(authenticate(username="annotator2", password="almita-annotator2"))
    page = client.get("/p/shipping/curation/queue/").content.decode()
    assert 'href="/p/default/"' in page and "Shipping bot" in page


def test_demo_has_an_evaluated_release():
    from curation.models import Release
    from evaluation.models import EvaluationRun, RunStatus

    call_command("load_demo")
    release = Release.objects.get(name="demo-automatic")
    assert release.kind == "automatic" and release.entries.count() > 0
    # issue #28: the demo's offline conversations pass the fidelity audit; none was left out
    assert release.audit["failed"] == 0 and release.audit["left_out"] == 0, release.audit
    runs = {r.agent.mode: r for r in EvaluationRun.objects.filter(release=release).select_related("agent")}
    assert set(runs) == {"gold", "always_reply", "first_api"}
    assert all(r.status == RunStatus.SUCCEEDED and r.done == release.entries.count() for r in runs.values())
    assert runs["gold"].metrics["metrics"]["conversation_correct"]["value"] == 1.0
    assert runs["always_reply"].metrics["metrics"]["api_recall"]["value"] == 0.0

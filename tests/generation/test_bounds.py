"""Bounded launch inputs on the form, the REST API and `generate`: a clear error, never a 500 (issue #12)."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from generation import services
from generation.forms import JobForm
from generation.models import GenerationJob
from generation.services.config import BOUNDS, SEED_MAX

pytestmark = pytest.mark.django_db

HUGE = "99999999999999999999999"
FORM = {"procedures_per_intent": 1, "paths": 2, "sampler": "algorithm1", "noise": 0, "seed": 0,
        "conversation_graph": "deterministic", "conversations": "offline", "intents": 2}
# Numbers of every kind a user or a client might send, well-formed or not.
numbers = st.one_of(
    st.integers(min_value=-10**30, max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([HUGE, "-1", "1e400", "nan", "inf", "", " 7 ", "0x10", "1.5", "١٢", "9" * 5000]),
    st.text(max_size=12),
    st.booleans(), st.none(),
)
FIELDS = ["seed", "paths", "intents", "procedures_per_intent", "noise", "cost_limit"]
OPTIONAL = {"cost_limit"}  # absent unless given


def in_bounds(cfg: dict) -> bool:
    return all(BOUNDS[k][0] <= cfg[k] <= BOUNDS[k][1] for k in BOUNDS if k not in OPTIONAL or k in cfg)


@pytest.fixture
def endpoint(settings):
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # never called: jobs are not enqueued here


def test_the_reported_seed_is_refused_everywhere(client, admin_user, endpoint, tmp_path):
    form = JobForm(data={**FORM, "seed": HUGE})
    assert not form.is_valid() and "seed" in form.errors
    client.force_login(admin_user)
    response = client.post(reverse("generation:launch"), {**FORM, "seed": HUGE})
    assert response.status_code == 400 and f"less than or equal to {SEED_MAX}" in response.content.decode()
    response = client.post("/api/jobs/", {"config": {"intents": 2, "seed": HUGE}}, content_type="application/json")
    assert response.status_code == 400 and "seed must be between 0 and 2147483647" in response.json()["detail"]
    with pytest.raises(CommandError) as exc:
        call_command("generate", "--intents", "2", "--seed", HUGE, stdout=StringIO(), stderr=StringIO())
    assert "seed" in str(exc.value)
    assert not GenerationJob.objects.exists()


def test_generate_exits_2_on_a_bad_number(endpoint):
    import subprocess
    import sys

    from tests.conftest import database_url_for_subprocess

    import os

    env = {**os.environ, "DATABASE_URL": database_url_for_subprocess(), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    done = subprocess.run([sys.executable, "manage.py", "generate", "--intents", "2", "--seed", HUGE],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "seed must be between 0 and 2147483647" in done.stderr and "Traceback" not in done.stderr


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=numbers, temperature=numbers)
def test_fuzz_launch_form(field, value, temperature, endpoint):
    data = {**FORM, field: value if value is not None else "", "temperature_procedures": temperature
            if temperature is not None else ""}
    form = JobForm(data={k: str(v) for k, v in data.items()})
    if form.is_valid():
        try:
            job = services.job_create(**form.job_arguments(), enqueue=False)
        except services.JobConfigError:
            return
        assert in_bounds(job.config) and 0 <= job.config["temperatures"].get("procedures", 0) <= 2


@hsettings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS + ["temperatures", "cache", "models"]), value=numbers)
def test_fuzz_job_api(field, value, client, admin_user, endpoint):
    client.force_login(admin_user)
    config = {"intents": 2, field: {"apis": value} if field == "temperatures" else value}
    response = client.post("/api/jobs/", {"config": config}, content_type="application/json")
    assert response.status_code in (201, 400), response.content[:500]
    if response.status_code == 201:
        assert in_bounds(response.json()["config"])
    else:
        assert response.json()


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(option=st.sampled_from(["--seed", "--paths", "--procedures-per-intent", "--noise", "--intents",
                               "--cost-limit"]),
       value=st.one_of(st.integers(min_value=-10**25, max_value=10**25).map(str),
                       st.sampled_from([HUGE, "nan", "inf", "-0", "1e9", "abc", "2147483648", "2147483647"])))
def test_fuzz_generate_command(option, value, endpoint):
    args = ["--intents", "1"] if option != "--intents" else []
    try:
        call_command("generate", *args, option, value, stdout=StringIO(), stderr=StringIO())
    except CommandError as exc:
        assert exc.returncode in (1, 2) and "Traceback" not in str(exc)
        return
    job = GenerationJob.objects.order_by("-pk").first()
    assert in_bounds(job.config)

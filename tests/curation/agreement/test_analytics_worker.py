"""The analytics figures with a real worker process (issue #31): the page asks for them and shows
"Computing…", the worker stores them, a committed verdict makes them stale and the worker brings
them up to date a few seconds later, without the page computing anything."""
from __future__ import annotations

import pytest
from django.urls import reverse

from curation.agreement import precompute
from tests.conftest import wait_for

from .test_analytics_precompute import stored_tables, verdict, world  # noqa: F401 (fixture)


@pytest.mark.worker
@pytest.mark.slow
def test_the_worker_computes_and_recomputes_after_a_change(celery_worker_factory, client, researcher, world):  # noqa: F811
    worker = celery_worker_factory(concurrency=2).wait_ready()
    client.force_login(researcher)
    status_url = reverse("curation:analytics_status")

    def current() -> bool:
        s = client.get(status_url).json()
        return s["stored"] and not s["stale"]

    assert "Computing…" in client.get(reverse("curation:analytics")).content.decode()
    wait_for(current, timeout=60, interval=0.2, message=f"the first figures\n{worker.log()[-2000:]}")
    first = precompute.status(ask=False).computed_at
    verdict(world["items"][0], world["annotators"][0])  # commits: the audit event queues a recompute
    html = client.get(reverse("curation:analytics")).content.decode()
    assert "Recomputing… (figures as of" in html
    wait_for(current, timeout=60, interval=0.2, message=f"the recompute\n{worker.log()[-2000:]}")
    assert precompute.status(ask=False).computed_at > first
    assert stored_tables() == precompute.compute()
    assert "Figures as of" in client.get(reverse("curation:analytics")).content.decode()

"""The state machine's invariants under real concurrency: 8 processes (7 annotators and an
adjudicator who resolves and reverses, so cascades run while others claim and submit)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.db import connection

from almita_web.roles import ADJUDICATOR, ANNOTATOR
from curation.models import Review
from curation.reviews import services
from tests.conftest import REPO, database_url_for_subprocess, make_user
from tests.curation.factories import build_lineage
from tests.curation.invariants import check_all

PROCESSES = 8
STEPS = 40


def _overfull() -> int:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM curation_reviewitem i WHERE i.review_count + (SELECT COUNT(*) FROM curation_claim c"
            " WHERE c.item_id = i.id AND c.expires_at > CURRENT_TIMESTAMP) > i.required_reviews")
        return cur.fetchone()[0]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_eight_processes_keep_every_invariant(tmp_path):
    for seed in range(4):
        build_lineage(conversations=3, seed=seed)
    services.items_sync()
    annotators = [make_user(f"proc{i}", ANNOTATOR) for i in range(PROCESSES - 1)]
    adjudicator = make_user("proc_adjudicator", ADJUDICATOR)
    env = dict(os.environ, DATABASE_URL=database_url_for_subprocess())
    env.pop("DJANGO_SETTINGS_MODULE", None)
    procs = [
        subprocess.Popen([sys.executable, "-m", "tests.curation.proc_worker", str(u.pk), str(i), str(STEPS)],
                         cwd=REPO, env=env, stdout=open(tmp_path / f"p{i}.log", "wb"), stderr=subprocess.STDOUT)
        for i, u in enumerate(annotators + [adjudicator])
    ]
    overfull_seen = 0
    while any(p.poll() is None for p in procs):
        overfull_seen += _overfull()
        for p in procs:
            try:
                p.wait(0.2)
            except subprocess.TimeoutExpired:
                pass
    logs = [(tmp_path / f"p{i}.log").read_text(errors="replace") for i in range(PROCESSES)]
    assert all(p.returncode == 0 for p in procs), "\n".join(log[-1500:] for log in logs)
    assert overfull_seen == 0
    assert Review.objects.count() > 20, logs  # the run did real work
    check_all(annotators)

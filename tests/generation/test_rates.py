"""The rate panel's series (generation/rates.py) against a brute-force count, and on the job page."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone as tz

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.models import GenerationJob, LLMCall
from generation.rates import bucket_width, series

T0 = datetime(2026, 1, 1, tzinfo=tz.utc)

call = st.tuples(st.integers(0, 120_000), st.integers(0, 20_000), st.sampled_from([200, 429, 500, None]),
                 st.sampled_from(["ok", "retried", "invalid", "error"]))


def brute(calls, width):
    """Per bucket of `width` s: requests sent, answered, 429s and the most in flight at once."""
    spans = [(T0 + timedelta(milliseconds=s), T0 + timedelta(milliseconds=s + lat), status, outcome)
             for s, lat, status, outcome in calls]
    t0 = min(s for s, *_ in spans)
    t1 = max(e for _, e, *_ in spans)
    n = max(1, math.ceil(max((t1 - t0).total_seconds(), 1e-3) / width))

    def bucket(t):
        return min(n - 1, int((t - t0).total_seconds() // width))

    rows = []
    for b in range(n):
        lo, hi = t0 + timedelta(seconds=b * width), t0 + timedelta(seconds=(b + 1) * width)
        moments = [lo] + [t for s, e, *_ in spans for t in (s, e) if lo <= t < hi or (b == n - 1 and t >= hi)]
        most = max(sum(1 for s, e, *_ in spans if s <= t < e) for t in moments)
        rows.append({"sent": sum(1 for s, *_ in spans if bucket(s) == b),
                     "answered": sum(1 for _, e, _, o in spans if o in ("ok", "invalid") and bucket(e) == b),
                     "rate_limited": sum(1 for _, e, st_, _ in spans if st_ == 429 and bucket(e) == b),
                     "in_flight": most})
    return rows


@settings(max_examples=150, deadline=None)
@given(st.lists(call, min_size=1, max_size=40))
def test_series_matches_a_brute_force_count(calls):
    rows = [(T0 + timedelta(milliseconds=s), lat, status, outcome, "") for s, lat, status, outcome in calls]
    data = series(rows, now=T0)
    expected = brute(calls, data["width"])
    got = [{k: p[k] for k in ("sent", "answered", "rate_limited", "in_flight")} for p in data["points"]]
    assert got == expected
    assert len(got) <= 60
    assert data["totals"]["requests"] == len(calls)
    assert data["totals"]["rate_limited"] == sum(1 for c in calls if c[2] == 429)
    assert data["totals"]["peak"] == max(r["in_flight"] for r in expected)


def test_bucket_width_keeps_at_most_sixty_points():
    assert bucket_width(30) == 1 and bucket_width(61) == 2 and bucket_width(3600) == 60
    assert bucket_width(10 ** 7) == 7200


def test_a_request_still_in_flight_lasts_until_now_and_old_rows_count_429_from_the_error():
    sent = T0
    data = series([(sent, 0, None, "in_flight", ""), (sent, 500, None, "retried", "HTTP 429 rate limited: x")],
                  now=T0 + timedelta(seconds=10))
    assert data["totals"]["rate_limited"] == 1
    assert data["points"][5]["in_flight"] == 1  # the first is still out at 5 s


@pytest.mark.django_db
def test_job_page_shows_the_rate_panel(client, admin_user):
    job = GenerationJob.objects.create(name="rates", config={"intents": 1})
    for i, status in enumerate([200, 429, 200, 200]):
        LLMCall.objects.create(job=job, stage="intents", model="m", prompt_hash="h", created_at=T0 + timedelta(seconds=i),
                               latency_ms=1500, status_code=status, outcome="ok" if status == 200 else "retried")
    client.force_login(admin_user)
    page = client.get(f"/generation/jobs/{job.pk}/").content.decode()
    assert 'class="chart rate-chart"' in page
    assert "1 of 4 requests answered 429" in page
    assert "at most 2 in flight" in page

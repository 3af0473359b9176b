"""The job page's rate panel: requests in flight, 429s and the effective rate over time.

Read from the job's LLMCall rows: each row is one request, sent at `created_at` (rows are written
once the request holds its limiter lease, right before it goes out), back `latency_ms` later with
its HTTP status. The series is bucketed so that a job of any length gives at most MAX_BUCKETS
points. Next to it, the shared limiter's state now (limiter.py) for each model the job called.
"""
from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from generation.models import GenerationJob, LLMCall, LLMOutcome
from generation.llm.config import endpoint_base_url

MAX_BUCKETS = 60
BUCKET_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200)
_ANSWERED = (LLMOutcome.OK, LLMOutcome.INVALID)


def _rate_limited(status: int | None, error: str) -> bool:
    return status == 429 or (status is None and error.startswith("HTTP 429"))


def bucket_width(span: float) -> int:
    return next((w for w in BUCKET_STEPS if span / w <= MAX_BUCKETS), BUCKET_STEPS[-1])


def series(calls: list[tuple[datetime, int, int | None, str, str]], now: datetime) -> dict[str, Any]:
    """Buckets of (sent, answered, 429s, most in flight) from (sent at, latency ms, status, outcome, error)."""
    spans = []
    for sent, latency, status, outcome, error in calls:
        end = now if outcome == LLMOutcome.IN_FLIGHT else sent + timedelta(milliseconds=latency)
        spans.append((sent, max(end, sent), status, outcome, error or ""))
    if not spans:
        return {"width": 1, "points": [], "totals": {"requests": 0, "rate_limited": 0, "share": 0.0, "peak": 0,
                                                       "per_minute": 0.0, "seconds": 0.0}}
    t0 = min(s for s, *_ in spans)
    t1 = max(e for _, e, *_ in spans)
    span = max((t1 - t0).total_seconds(), 1e-3)
    width = bucket_width(span)
    n = max(1, math.ceil(span / width))
    at = lambda t: min(n - 1, int((t - t0).total_seconds() // width))  # noqa: E731
    sent = [0] * n
    answered = [0] * n
    limited = [0] * n
    for start, end, status, outcome, error in spans:
        sent[at(start)] += 1
        if outcome in _ANSWERED:
            answered[at(end)] += 1
        if _rate_limited(status, error):
            limited[at(end)] += 1
    # Most requests in flight within each bucket: a sweep over starts (+1) and ends (−1), ends first
    # at equal times (one request ending as the next starts is not two at once).
    events = sorted([(s, 1) for s, *_ in spans] + [(e, -1) for _, e, *_ in spans], key=lambda p: (p[0], p[1]))
    peak = [0] * n
    current = i = 0
    for b in range(n):
        begins = t0 + timedelta(seconds=b * width)
        while i < len(events) and events[i][0] <= begins:  # what changed at the very start
            current += events[i][1]
            i += 1
        peak[b] = current  # what was in flight when the bucket began
        while i < len(events) and (b == n - 1 or at(events[i][0]) <= b):
            current += events[i][1]
            peak[b] = max(peak[b], current)
            i += 1
    points = [{"t": b * width, "sent": sent[b], "answered": answered[b], "rate_limited": limited[b],
               "in_flight": peak[b], "per_minute": answered[b] * 60.0 / width} for b in range(n)]
    total = len(spans)
    total_limited = sum(limited)
    return {"width": width, "points": points, "totals": {
        "requests": total, "rate_limited": total_limited, "share": total_limited / total if total else 0.0,
        "peak": max(peak), "per_minute": sum(answered) * 60.0 / span, "seconds": span}}


def limiter_states(job: GenerationJob, models: list[str]) -> list[dict[str, Any]]:
    """The shared limiter of each model the job called, as it is now (the configured endpoint)."""
    if not endpoint_base_url():
        return []
    from generation.llm.limiter import limiter_for

    out = []
    for model in models:
        try:
            state = limiter_for(endpoint_base_url(), model).snapshot()
        except Exception:  # noqa: BLE001 - the panel must not break the page when the store is down
            continue
        out.append({"model": model, **state})
    return out


def job_rates(job: GenerationJob, now: datetime | None = None) -> dict[str, Any]:
    now = now or timezone.now()
    calls = list(LLMCall.objects.filter(job=job).exclude(outcome=LLMOutcome.CACHED).order_by().values_list(
        "created_at", "latency_ms", "status_code", "outcome", "error"))
    data = series(calls, now)
    models = sorted(set(LLMCall.objects.filter(job=job).order_by().values_list("model", flat=True)))
    data["limiters"] = limiter_states(job, models) if not job.is_terminal else []
    data["chart"] = rates_svg(data) if data["points"] else ""
    return data


# --------------------------------------------------------------------------- the picture


def _polyline(values: list[float], top: float, height: float, left: float, step: float, vmax: float) -> str:
    pts = " ".join(f"{left + (i + 0.5) * step:.1f},{top + height - height * v / vmax:.1f}" for i, v in enumerate(values))
    return pts


def rates_svg(data: dict[str, Any]) -> SafeString:
    """Two panels over the job's time: requests in flight; answered requests per minute with the 429s as bars."""
    points = data["points"]
    width, left, right, panel_h, gap, top = 760, 52, 52, 90, 34, 18
    plot_w = width - left - right
    step = plot_w / max(1, len(points))
    in_flight = [p["in_flight"] for p in points]
    rate = [p["per_minute"] for p in points]
    limited = [p["rate_limited"] for p in points]
    f_max = max(1, max(in_flight))
    r_max = max(1.0, max(rate))
    l_max = max(1, max(limited))
    height = top + 2 * panel_h + gap + 30
    end = points[-1]["t"] + data["width"]
    desc = (f"Over {end} s in buckets of {data['width']} s: at most {max(in_flight)} requests in flight, "
            f"up to {max(rate):.0f} answered per minute, {sum(limited)} answered 429.")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart rate-chart" viewBox="0 0 {width} {height}" '
           f'width="100%" role="img" aria-labelledby="rate-title rate-desc">',
           '<title id="rate-title">Requests to the endpoint over time</title>',
           f'<desc id="rate-desc">{escape(desc)}</desc>']
    panels = [(top, "requests in flight", f_max, "#2563eb", in_flight),
              (top + panel_h + gap, "answered per minute", r_max, "#16a34a", rate)]
    for y0, label, vmax, colour, values in panels:
        out.append(f'<text x="{left}" y="{y0 - 5}" font-size="11" fill="{colour}">{escape(label)}</text>')
        for frac in (0, 0.5, 1):
            y = y0 + panel_h - panel_h * frac
            out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>')
            out.append(f'<text x="{left - 5}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{vmax * frac:.0f}</text>')
        if values is rate:
            for i, n in enumerate(limited):
                if n:
                    bh = panel_h * n / l_max
                    out.append(f'<rect x="{left + i * step + 1:.1f}" y="{y0 + panel_h - bh:.1f}" width="{max(1.0, step - 2):.1f}" '
                               f'height="{bh:.1f}" fill="#dc2626" opacity="0.55"><title>{n} answered 429 at '
                               f'{points[i]["t"]} s</title></rect>')
            out.append(f'<text x="{width - right + 5}" y="{y0 + 10}" font-size="10" fill="#dc2626">429s</text>')
            out.append(f'<text x="{width - right + 5}" y="{y0 + 24}" font-size="10" fill="#dc2626">max {l_max}</text>')
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                   f'points="{_polyline(values, y0, panel_h, left, step, vmax)}"/>')
    axis_y = top + 2 * panel_h + gap
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{axis_y}" y2="{axis_y}" stroke="#111"/>')
    for frac in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<text x="{left + plot_w * frac:.1f}" y="{axis_y + 14}" font-size="10" text-anchor="middle">'
                   f'{end * frac:.0f} s</text>')
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - numbers only, the one label text is escaped

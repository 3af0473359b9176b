"""Analytics by generator setting (i15): for each review stage, acceptance rate, agreement (percent,
Cohen's κ, Krippendorff's α), adjudication rate and the top rejection reasons, sliced by generator
model, prompt template version, temperature, sampler, mode (LLM / offline / deterministic /
procedure), noise kind, output form (free text, JSON by the prompt, JSON Schema as structured
outputs) and channel (online or Batch API), each with a 95 % interval and the item count.

Intervals: Wilson score intervals for the rates; for κ and α a percentile bootstrap over items, drawn
as counts of item types (curation.agreement.resample)
(400 resamples, fixed seed, so the page is stable). An item counts once per slice value it has
(a conversation with two noise kinds counts under both).
"""
from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Callable

from curation.agreement.measures import (
    cohen_kappa,
    cohen_kappa_table,
    composition,
    krippendorff_alpha_compositions,
    krippendorff_alpha_nominal,
)
from curation.agreement.resample import bootstrap_types
from curation.models import ItemState, Resolution, Review, ReviewItem, ReviewStage, Verdict
from curation.reviews.services import STAGE_MODELS
from generation.models import LLMCall

DIMENSIONS = [("model", "Generator model"), ("prompt", "Prompt template version"), ("temperature", "Temperature"),
              ("sampler", "Sampler"), ("mode", "Mode"), ("noise", "Noise kind"),
              ("output_form", "Output form (structured outputs)"), ("channel", "Sent online or in a batch")]
Z = 1.959964
BOOTSTRAP = 400


def wilson(k: int, n: int) -> tuple[float | None, float | None, float | None]:
    """(rate, low, high): the Wilson score interval at 95 %."""
    if n == 0:
        return None, None, None
    p = k / n
    denom = 1 + Z * Z / n
    centre = (p + Z * Z / (2 * n)) / denom
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / denom
    return p, max(0.0, centre - half), min(1.0, centre + half)


def bootstrap(units: list[list[str]], stat: Callable[[list[list[str]]], float | None], seed: int = 15
              ) -> tuple[float | None, float | None]:
    """95 % percentile interval of ``stat`` over items resampled one by one with replacement.

    The page uses ``type_bootstrap`` (the same distribution, at a cost independent of the item
    count); this plain version stays as the reference the tests compare it with."""
    if len(units) < 2:
        return None, None
    rng = random.Random(seed)
    values = []
    for _ in range(BOOTSTRAP):
        v = stat([units[rng.randrange(len(units))] for _ in units])
        if v is not None:
            values.append(v)
    if len(values) < BOOTSTRAP // 2:
        return None, None
    values.sort()
    return values[int(0.025 * (len(values) - 1))], values[int(0.975 * (len(values) - 1))]


def type_bootstrap(votes: list[list[str]], measure: str) -> tuple[float | None, float | None]:
    """``bootstrap(votes, _kappa or _alpha)``'s distribution, drawn over item types
    (curation.agreement.resample)."""
    if measure == "kappa":
        types = Counter((u[0], u[1]) for u in votes if len(u) >= 2)
        return bootstrap_types(types, lambda t: cohen_kappa_table(t).value, resamples=BOOTSTRAP, seed=15) \
            if len(votes) >= 2 else (None, None)
    types = Counter(composition(u) for u in votes)
    return bootstrap_types(types, lambda t: krippendorff_alpha_compositions(t).value, resamples=BOOTSTRAP,
                           seed=15) if len(votes) >= 2 else (None, None)


def _kappa(units):
    return cohen_kappa([(u[0], u[1]) for u in units if len(u) >= 2]).value


def _alpha(units):
    return krippendorff_alpha_nominal(units).value


@dataclass
class Unit:
    verdicts: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # codes cited in reject verdicts
    decision: str = ""
    adjudicated: bool = False


def slice_figures(units: list[Unit]) -> dict[str, Any]:
    decided = [u for u in units if u.decision]
    acc = wilson(sum(u.decision == Verdict.ACCEPT for u in decided), len(decided))
    pairs = [(a, b) for u in units for a, b in combinations(u.verdicts, 2)]
    pct = wilson(sum(a == b for a, b in pairs), len(pairs))
    votes = [u.verdicts for u in units if len(u.verdicts) >= 2]
    kappa, alpha = _kappa(votes), _alpha(votes)
    adj = wilson(sum(u.adjudicated for u in decided), len(decided))
    reasons = Counter(r for u in units for r in u.reasons)
    return {
        "items": len(units), "decided": len(decided),
        "acceptance": acc[0], "acceptance_ci": acc[1:],
        "percent_agreement": pct[0], "percent_agreement_ci": pct[1:], "pairs": len(pairs),
        "kappa": kappa, "kappa_ci": type_bootstrap(votes, "kappa") if kappa is not None else (None, None),
        "alpha": alpha, "alpha_ci": type_bootstrap(votes, "alpha") if alpha is not None else (None, None),
        "adjudication": adj[0], "adjudication_ci": adj[1:],
        "top_reasons": reasons.most_common(3),
    }


def _settings(stage: str, ids) -> dict[int, dict[str, list[str]]]:
    """Each artifact's setting per dimension (a list: noise kinds may be several)."""
    model = STAGE_MODELS[stage]
    extra = {ReviewStage.CONVERSATION: ["mode", "noise_kinds", "path__sampler"],
             ReviewStage.CONVERSATION_GRAPH: ["mode", "noise_kinds"]}.get(stage, [])
    rows = list(model.objects.filter(pk__in=ids).values("pk", "job_id", "key", "origin", *extra))
    calls: dict[tuple[int, str], dict] = {}
    for c in (LLMCall.objects.filter(job_id__in={r["job_id"] for r in rows if r["job_id"]}).order_by("id")
              .values("job_id", "key", "model", "template", "template_version", "request__temperature",
                      "output_form", "batch_id")):
        calls[(c["job_id"], c["key"])] = c  # the last call for the work item wins
    out = {}
    for r in rows:
        c = calls.get((r["job_id"], r["key"]))
        temp = c["request__temperature"] if c else None
        noise = r.get("noise_kinds")
        out[r["pk"]] = {
            "model": [c["model"] if c else "none (no LLM)"],
            "prompt": [f"{c['template']} {c['template_version']}".strip() if c else "none (no LLM)"],
            "temperature": [str(temp) if temp is not None else "none (no LLM)"],
            "sampler": [r.get("path__sampler") or "n/a"],
            "mode": [r.get("mode") or ("llm" if c else r["origin"])],
            "noise": (list(noise) or ["none"]) if noise is not None else ["n/a"],
            "output_form": [c["output_form"] if c else "none (no LLM)"],
            "channel": [("batch" if c["batch_id"] else "online") if c else "none (no LLM)"],
        }
    return out


def stage_analytics(stage: str, dims: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """{dimension: [{value, **figures}]} for one review stage, over items with at least one review
    (every dimension, or those in `dims`)."""
    reviewed = ReviewItem.objects.filter(stage=stage, review_count__gte=1)
    items = list(reviewed.values("pk", "object_id", "state", "decision"))
    units: dict[int, Unit] = {}
    for it in items:
        units[it["pk"]] = Unit(decision=it["decision"] if it["state"] == ItemState.DECIDED else "")
    # Joined on the item rather than `item_id IN (...)`: at 50,000 items the list of ids cost more
    # to build than the query to run. A row of an item reviewed since the first read is skipped.
    for item_id, verdict, codes in (Review.objects.filter(item__stage=stage, item__review_count__gte=1)
                                    .order_by("item_id", "id").values_list("item_id", "verdict", "reason_codes")):
        unit = units.get(item_id)
        if unit is None:
            continue
        unit.verdicts.append(verdict)
        if verdict == Verdict.REJECT:
            unit.reasons += list(codes or [])
    for item_id in Resolution.objects.filter(item__stage=stage, item__review_count__gte=1).values_list(
            "item_id", flat=True):
        if item_id in units:
            units[item_id].adjudicated = True
    settings = _settings(stage, reviewed.values("object_id"))
    out: dict[str, list[dict[str, Any]]] = {}
    for dim, _ in DIMENSIONS:
        if dims is not None and dim not in dims:
            continue
        groups: dict[str, list[Unit]] = defaultdict(list)
        for it in items:
            for value in settings.get(it["object_id"], {}).get(dim, ["unknown"]):
                groups[value].append(units[it["pk"]])
        out[dim] = [{"value": v, **slice_figures(us)} for v, us in sorted(groups.items())]
    return out


def analytics() -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {stage: stage_analytics(stage) for stage in ReviewStage.values}


CSV_HEADER = ["stage", "dimension", "value", "items", "decided", "acceptance", "acceptance_low", "acceptance_high",
              "percent_agreement", "percent_agreement_low", "percent_agreement_high", "pairs", "kappa", "kappa_low",
              "kappa_high", "alpha", "alpha_low", "alpha_high", "adjudication", "adjudication_low",
              "adjudication_high", "top_reasons"]


def csv_rows(data: dict[str, dict[str, list[dict[str, Any]]]]):
    def num(v):
        return "" if v is None else f"{v:.4f}"

    yield CSV_HEADER
    for stage, dims in data.items():
        for dim, rows in dims.items():
            for r in rows:
                yield [stage, dim, r["value"], r["items"], r["decided"],
                       num(r["acceptance"]), *map(num, r["acceptance_ci"]),
                       num(r["percent_agreement"]), *map(num, r["percent_agreement_ci"]), r["pairs"],
                       num(r["kappa"]), *map(num, r["kappa_ci"]), num(r["alpha"]), *map(num, r["alpha_ci"]),
                       num(r["adjudication"]), *map(num, r["adjudication_ci"]),
                       "; ".join(f"{c}={n}" for c, n in r["top_reasons"])]


def bar_chart(rows: list[dict[str, Any]], metric: str = "acceptance") -> str:
    """An SVG bar chart of one metric per slice value, with the 95 % interval as a whisker. Labels
    are escaped (slice values come from model names and other generated text)."""
    from django.utils.html import escape

    width, bar_h, gap, left = 560, 16, 6, 190
    scale = width - left - 60
    h = len(rows) * (bar_h + gap) + 24
    parts = [f'<svg class="bars" role="img" width="{width}" height="{h}" viewBox="0 0 {width} {h}" '
             f'aria-label="{escape(metric)} by slice">']
    for i, r in enumerate(rows):
        y = i * (bar_h + gap) + 4
        v = r.get(metric)
        lo, hi = r.get(f"{metric}_ci", (None, None))
        parts.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{escape(str(r["value"])[:32])}</text>')
        if v is None:
            parts.append(f'<text x="{left}" y="{y + 12}">no data (n={r["items"]})</text>')
            continue
        v = max(v, 0.0)
        parts.append(f'<rect x="{left}" y="{y}" width="{v * scale:.1f}" height="{bar_h}" fill="#4c78a8">'
                     f'<title>{escape(str(r["value"]))}: {v:.3f} (n={r["items"]})</title></rect>')
        if lo is not None and hi is not None:
            x1, x2, ym = left + max(lo, 0) * scale, left + max(hi, 0) * scale, y + bar_h / 2
            parts.append(f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{ym}" y2="{ym}" stroke="#222" stroke-width="1.5"/>')
        parts.append(f'<text x="{left + scale + 6}" y="{y + 12}">{v:.2f} n={r["items"]}</text>')
    parts.append(f'<line x1="{left}" x2="{left}" y1="0" y2="{h - 18}" stroke="#888"/>'
                 f'<text x="{left}" y="{h - 4}">0</text><text x="{left + scale}" y="{h - 4}" text-anchor="end">1</text>')
    parts.append("</svg>")
    return "".join(parts)

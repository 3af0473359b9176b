"""Server-rendered SVG charts: a grouped bar chart (runs × metrics) and a labelled scatter.

Plain SVG strings with every piece of text escaped; they need no JavaScript and carry a <title>
and <desc> so that screen readers and text browsers get the numbers too.
"""
from __future__ import annotations

import math
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"]


def _fmt(v: float) -> str:
    return f"{v:.1f}"


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap for axis labels (at most three lines)."""
    lines: list[str] = []
    for word in str(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return (lines or [""])[:3]


def bar_chart(categories: list[str], series: list[tuple[str, list[float | None]]], *,
              title: str = "", width: int = 760, height: int = 320, y_max: float = 100.0) -> SafeString:
    """Grouped bars: one group per category, one bar per series (values in 0..y_max; None = n/a)."""
    left, right, top, bottom = 44, 12, 28, 70
    legend_h = 18 * math.ceil(len(series) / 3) if series else 0
    h = height + legend_h
    plot_w, plot_h = width - left - right, height - top - bottom
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart bar-chart" viewBox="0 0 {width} {h}" '
           f'width="100%" role="img" aria-labelledby="bar-title">',
           f'<title id="bar-title">{escape(title or "Bar chart")}</title>']
    desc = "; ".join(f"{name}: " + ", ".join(f"{c} {'n/a' if v is None else _fmt(v)}" for c, v in zip(categories, values))
                     for name, values in series)
    out.append(f"<desc>{escape(desc)}</desc>")
    for tick in range(0, 101, 20):
        y = top + plot_h - plot_h * tick / 100
        out.append(f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                   f'{escape(_fmt(y_max * tick / 100).rstrip("0").rstrip("."))}</text>')
    n_cat, n_ser = max(1, len(categories)), max(1, len(series))
    group_w = plot_w / n_cat
    bar_w = max(2.0, (group_w - 10) / n_ser)
    for ci, cat in enumerate(categories):
        gx = left + ci * group_w + 5
        for si, (name, values) in enumerate(series):
            v = values[ci] if ci < len(values) else None
            x = gx + si * bar_w
            if v is None:
                out.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 3:.1f}" font-size="9" '
                           f'text-anchor="middle" fill="#6b7280">n/a</text>')
                continue
            bh = plot_h * max(0.0, min(v, y_max)) / y_max
            out.append(f'<rect x="{x:.1f}" y="{top + plot_h - bh:.1f}" width="{bar_w - 1:.1f}" height="{bh:.1f}" '
                       f'data-value="{escape(_fmt(v))}" fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(name)} · {escape(cat)}: '
                       f'{escape(_fmt(v))}</title></rect>')
        cx = left + ci * group_w + group_w / 2
        lines = _wrap(cat, max(6, int(group_w / 6.5)))
        spans = "".join(f'<tspan x="{cx:.1f}" dy="{0 if k == 0 else 13}">{escape(line)}</tspan>'
                        for k, line in enumerate(lines))
        out.append(f'<text x="{cx:.1f}" y="{top + plot_h + 14}" text-anchor="middle" font-size="11">{spans}</text>')
    out.append(f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#111"/>')
    for si, (name, _values) in enumerate(series):
        lx = left + (si % 3) * (plot_w / 3)
        ly = height - 20 + 18 * (si // 3)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 9}" width="10" height="10" fill="{PALETTE[si % len(PALETTE)]}"/>')
        out.append(f'<text x="{lx + 14:.1f}" y="{ly}" font-size="11">{escape(name)}</text>')
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every text node above goes through escape()


def _nice_range(values: list[float]) -> tuple[float, float]:
    if not values:
        return 0.0, 100.0
    lo, hi = min(values), max(values)
    pad = max(2.0, (hi - lo) * 0.1)
    lo, hi = max(0.0, math.floor((lo - pad) / 5) * 5), min(100.0, math.ceil((hi + pad) / 5) * 5)
    if hi - lo < 10:
        hi = min(100.0, lo + 10)
        lo = hi - 10
    return lo, hi


def scatter(points: list[dict[str, Any]], *, x_label: str, y_label: str, title: str = "",
            width: int = 560, height: int = 460) -> SafeString:
    """Labelled points (dicts with label, x, y in percent) and the y = x diagonal, like Figure 5."""
    left, right, top, bottom = 56, 20, 24, 52
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi = _nice_range([p["x"] for p in points] + [p["y"] for p in points])

    def sx(v: float) -> float:
        return left + plot_w * (v - lo) / (hi - lo)

    def sy(v: float) -> float:
        return top + plot_h - plot_h * (v - lo) / (hi - lo)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart scatter" viewBox="0 0 {width} {height}" '
           f'width="100%" role="img" aria-labelledby="scatter-title">',
           f'<title id="scatter-title">{escape(title or "Scatter plot")}</title>',
           "<desc>" + escape("; ".join(f"{p['label']}: {_fmt(p['x'])}, {_fmt(p['y'])}" for p in points)) + "</desc>"]
    step = 5 if hi - lo <= 40 else 10
    tick = lo
    while tick <= hi + 1e-9:
        out.append(f'<line x1="{sx(tick):.1f}" x2="{sx(tick):.1f}" y1="{top}" y2="{top + plot_h}" stroke="#f1f5f9"/>')
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(tick):.1f}" y2="{sy(tick):.1f}" stroke="#f1f5f9"/>')
        out.append(f'<text x="{sx(tick):.1f}" y="{top + plot_h + 16}" text-anchor="middle" font-size="11">{tick:g}</text>')
        out.append(f'<text x="{left - 6}" y="{sy(tick) + 4:.1f}" text-anchor="end" font-size="11">{tick:g}</text>')
        tick += step
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#111"/>')
    out.append(f'<line x1="{sx(lo):.1f}" y1="{sy(lo):.1f}" x2="{sx(hi):.1f}" y2="{sy(hi):.1f}" '
               f'stroke="#9ca3af" stroke-dasharray="4 4"><title>y = x</title></line>')
    placed: list[tuple[float, float]] = []
    for i, p in enumerate(points):
        x, y = sx(p["x"]), sy(p["y"])
        label_y = y - 6
        # Points that coincide get their labels stacked instead of printed on top of each other.
        while any(abs(px - x) < 40 and abs(py - label_y) < 12 for px, py in placed):
            label_y += 13
        placed.append((x, label_y))
        colour = PALETTE[i % len(PALETTE)]
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{colour}"><title>{escape(p["label"])}: '
                   f'{escape(_fmt(p["x"]))}, {escape(_fmt(p["y"]))}</title></circle>')
        anchor = "end" if x > left + plot_w * 0.7 else "start"
        dx = -8 if anchor == "end" else 8
        out.append(f'<text x="{x + dx:.1f}" y="{label_y:.1f}" text-anchor="{anchor}" font-size="11">{escape(p["label"])}</text>')
    out.append(f'<text x="{left + plot_w / 2:.1f}" y="{height - 12}" text-anchor="middle" font-size="12">{escape(x_label)}</text>')
    out.append(f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" '
               f'font-size="12">{escape(y_label)}</text>')
    out.append("</svg>")
    return mark_safe("".join(out))  # noqa: S308 - every text node above goes through escape()

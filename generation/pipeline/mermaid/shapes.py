"""Mermaid's flowchart node shapes: how each is opened and closed, its name, and writing a chart back.

The names are the reader's (:mod:`.syntax`): ``rectangle``, ``round``, ``stadium``,
``subroutine``, ``cylinder``, ``circle``, ``double-circle``, ``asymmetric``, ``rhombus``, ``hexagon``,
``parallelogram``, ``parallelogram-alt``, ``trapezoid``, ``trapezoid-alt``; a shape of the newer
``@{ shape: ... }`` syntax that is none of these keeps its own name (``doc``, ``bolt``, ...).
"""
from __future__ import annotations

from typing import Any

from .text import escape

# Openings, longest first, with the closings each may have and the shape's name.
OPENINGS: list[tuple[str, tuple[str, ...]]] = [
    ("(((", (")))",)), ("((", ("))",)), ("([", ("])",)), ("[[", ("]]",)), ("[(", (")]",)), ("{{", ("}}",)),
    ("[/", ("/]", "\\]")), ("[\\", ("\\]", "/]")), (">[", ("]",)), (">", ("]",)), ("[", ("]",)),
    ("(", (")",)), ("{", ("}",)),
]
SHAPE_NAMES = {
    ("(((", ")))"): "double-circle", ("((", "))"): "circle", ("([", "])"): "stadium", ("[[", "]]"): "subroutine",
    ("[(", ")]"): "cylinder", ("{{", "}}"): "hexagon", ("[/", "/]"): "parallelogram",
    ("[\\", "\\]"): "parallelogram-alt", ("[/", "\\]"): "trapezoid", ("[\\", "/]"): "trapezoid-alt",
    (">[", "]"): "asymmetric", (">", "]"): "asymmetric", ("[", "]"): "rectangle", ("(", ")"): "round",
    ("{", "}"): "rhombus",
}
WRITE_SHAPE = {name: pair for pair, name in SHAPE_NAMES.items() if pair != (">[", "]")}
# The names of the newer ``@{ shape: ... }`` syntax that are one of the classic shapes.
SHAPE_ALIASES = {
    "rect": "rectangle", "rectangle": "rectangle", "proc": "rectangle", "process": "rectangle",
    "rounded": "round", "event": "round", "stadium": "stadium", "pill": "stadium", "terminal": "stadium",
    "subproc": "subroutine", "subprocess": "subroutine", "subroutine": "subroutine", "fr-rect": "subroutine",
    "framed-rectangle": "subroutine", "cyl": "cylinder", "cylinder": "cylinder", "db": "cylinder",
    "database": "cylinder", "circle": "circle", "circ": "circle", "odd": "asymmetric", "diam": "rhombus",
    "diamond": "rhombus", "decision": "rhombus", "question": "rhombus", "hex": "hexagon", "hexagon": "hexagon",
    "prepare": "hexagon", "lean-r": "parallelogram", "lean-right": "parallelogram", "in-out": "parallelogram",
    "lean-l": "parallelogram-alt", "lean-left": "parallelogram-alt", "out-in": "parallelogram-alt",
    "trap-b": "trapezoid", "trapezoid": "trapezoid", "trapezoid-bottom": "trapezoid", "priority": "trapezoid",
    "trap-t": "trapezoid-alt", "trapezoid-top": "trapezoid-alt", "manual": "trapezoid-alt",
    "inv-trapezoid": "trapezoid-alt", "dbl-circ": "double-circle", "double-circle": "double-circle",
}
DECISION_SHAPES = ("rhombus", "hexagon")


def write_chart(chart: Any, direction: str = "TD") -> str:
    """A chart as Mermaid text in one canonical spelling (every label quoted and escaped, every
    shape kept), which :func:`read_mermaid` reads back to the same labels, shapes and edges."""
    out = [f"flowchart {direction}"]
    nodes = list(dict.fromkeys([*chart.labels, *(e[0] for e in chart.edges), *(e[1] for e in chart.edges)]))
    for n in nodes:
        label = escape(chart.labels.get(n, n))
        shape = chart.shapes.get(n, "rectangle")
        if shape in WRITE_SHAPE:
            opening, closing = WRITE_SHAPE[shape]
            out.append(f'    {n}{opening}"{label}"{closing}')
        else:
            out.append(f'    {n}@{{ shape: {shape}, label: "{label}" }}')
    for u, v, label in chart.edges:
        out.append(f'    {u} -->|"{escape(label)}"| {v}' if label else f"    {u} --> {v}")
    for n, cls in chart.classes.items():
        out.append(f"    class {n} {cls}")
    return "\n".join(out) + "\n"

"""A hypothesis strategy for FlowBench-style Mermaid charts, with the generator's own truth.

Each chart is written in a random spelling of everything Mermaid allows: every node shape (and
FlowBench's ``id>[text]``), plain, multi-line, ``<br>``, quoted and Markdown-string labels, entity
codes, every arrow spelling, ``&`` groups and chains, comments and layout lines, a line of prose
before the chart. Some states call tools in one of the call spellings, others only mention them.
The truth is what a reader must find: each state's text and shape, the edges with their labels, and
each state's calls in order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

TOOLS = ["findRoom", "holdRoom", "payBill", "check_in_guest"]
# Words that are neither call verbs, nor words that refer back to a result, nor tool names.
WORDS = ["ask", "the", "guest", "for", "dates", "kindly", "confirm", "room", "price", "tell", "offer", "wait",
         "thank", "them", "again", "name", "and", "then", "say", "sorry", "book", "desk", "late", "early", "card"]
CALLS = ["call {t}", "calls {t}", "call the {t} tool", "call API:{t}", "call API: {t}", "API:{t}", "API: {t}",
         "API：{t}", "call {t}(city, date)", "{t}(city)", "use the {t} API", "invoke {t}", "using {t}",
         "Action: {t}", "call functions.{t}", "call '{t}'", "calling {t}"]
MENTIONS = ["based on the returned values of {t}", "if {t} returns false", "the result of {t}",
            "the output from API:{t}", "when the {t} API fails"]
WHOLE = ["{t}", "API:{t}", "API: {t}", "call API:{t}", "{t}()", "call {t}"]
# (opening, closing, shape name as the reader names it)
SHAPES = [("[", "]", "rectangle"), ("(", ")", "round"), ("([", "])", "stadium"), ("[[", "]]", "subroutine"),
          ("[(", ")]", "cylinder"), ("((", "))", "circle"), (">", "]", "asymmetric"), (">[", "]", "asymmetric"),
          ("{", "}", "rhombus"), ("{{", "}}", "hexagon"), ("[/", "/]", "parallelogram"),
          ("[\\", "\\]", "parallelogram-alt"), ("[/", "\\]", "trapezoid"), ("[\\", "/]", "trapezoid-alt"),
          ("(((", ")))", "double-circle"), ("@hex", "", "hexagon"), ("@doc", "", "doc")]
LABELLED = ["-->|{L}|", '-->|"{L}"|', "-- {L} -->", "== {L} ==>", "-. {L} .->", "---|{L}|", "-- {L} ---",
            "==>|{L}|", "-.->|{L}|", " --> |{L}| ", " e{k}@-->|{L}|"]
PLAIN = ["-->", "--->", "---", "==>", "-.->", "~~~", "<-->", " o--o ", " x--x ", " e{k}@--> "]


@dataclass
class Chart:
    text: str
    labels: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    calls: dict[str, list[str]] = field(default_factory=dict)


def _spell_text(draw, words: list[str], shape: str) -> str:
    """The truth text ``words`` written in one of the spellings a label may take."""
    how = draw(st.sampled_from(["plain", "lines", "br", "quoted", "markdown", "entity"]))
    if how == "lines":
        return "".join(w + (draw(st.sampled_from([" ", "\n", " \n  "])) if i < len(words) - 1 else "")
                       for i, w in enumerate(words))
    if how == "br":
        return "".join(w + (draw(st.sampled_from([" ", "<br>", "<br/>", " <br /> "])) if i < len(words) - 1 else "")
                       for i, w in enumerate(words))
    if how == "quoted":
        return '"' + " ".join(words) + '"'
    if how == "markdown":
        marked = [draw(st.sampled_from(["{w}", "**{w}**", "*{w}*", "_{w}_", "__{w}__"])).format(w=w)
                  if w.isalpha() else w for w in words]
        return '"`' + draw(st.sampled_from([" ", "\n"])).join(marked) + '`"'
    if how == "entity":
        return '"' + " ".join(words).replace("the", "#116;he", 1) + '"'
    return " ".join(words)


def _words(draw, calls: list[str], mentions: list[str]) -> tuple[list[str], list[str]]:
    """The state's words with the call and mention phrases at random places, and the calls in the
    order they are written."""
    body: list = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
    for tool, phrase in [(t, draw(st.sampled_from(CALLS)).format(t=t)) for t in calls] + \
                        [(None, draw(st.sampled_from(MENTIONS)).format(t=t)) for t in mentions]:
        body.insert(draw(st.integers(0, len(body))), ",")
        body.insert(draw(st.integers(0, len(body))), (tool, phrase))
    order = [item[0] for item in body if isinstance(item, tuple) and item[0]]
    text = " ".join(item[1] if isinstance(item, tuple) else item for item in body)
    return [w for w in text.replace(" ,", ",").split(" ") if w], order


@st.composite
def charts(draw, max_states: int = 7) -> Chart:
    n = draw(st.integers(2, max_states))
    ids = [f"S{k:03d}" for k in range(n)]
    chart = Chart(text="")
    # Structure: every state after the first has a parent before it; a few edges go back (never to S000).
    edges: dict[tuple[str, str], str] = {}
    for k in range(1, n):
        edges[(ids[draw(st.integers(0, k - 1))], ids[k])] = ""
    for _ in range(draw(st.integers(0, n))):
        u, v = draw(st.sampled_from(ids)), draw(st.sampled_from(ids[1:]))
        edges.setdefault((u, v), "")
    for s in ids:
        whole = s != ids[0] and draw(st.booleans()) and draw(st.booleans())
        calls = [] if s == ids[0] else draw(st.lists(st.sampled_from(TOOLS), max_size=1 if whole else 2, unique=True))
        mentions = [t for t in draw(st.lists(st.sampled_from(TOOLS), max_size=1)) if t not in calls]
        if whole and calls:
            words = draw(st.sampled_from(WHOLE)).format(t=calls[0]).split(" ")
        elif s == ids[0]:
            words = ["Start"]
        else:
            words, calls = _words(draw, calls, mentions)
        chart.labels[s] = " ".join(words)
        chart.calls[s] = calls
        opening, closing, name = draw(st.sampled_from(SHAPES))
        chart.shapes[s] = name
        if opening.startswith("@"):
            label = '"' + " ".join(words).replace('"', "#quot;") + '"'
            chart.__dict__.setdefault("defs", {})[s] = f"{s}@{{ shape: {opening[1:]}, label: {label} }}"
        else:
            text = _spell_text(draw, words, name)
            chart.__dict__.setdefault("defs", {})[s] = f"{s}{opening}{text}{closing}"
    # Edges into decision shapes carry a label (an unlabelled one after a call would be folded).
    for (u, v) in edges:
        labelled = chart.shapes[v] in ("rhombus", "hexagon") or draw(st.booleans())
        edges[(u, v)] = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))) if labelled else ""
    defs: dict[str, str] = chart.__dict__.pop("defs")
    lines = [draw(st.sampled_from(["", "Below is the workflow as a flowchart.", "```mermaid"])),
             draw(st.sampled_from(["flowchart TD", "graph LR", "flowchart TB;"]))]
    defined: set[str] = set()

    def ref(s: str) -> str:
        if s in defined:
            return s
        defined.add(s)
        return defs[s]

    order = list(edges.items())
    k = 0
    while k < len(order):
        (u, v), label = order[k]
        spelling = draw(st.sampled_from(LABELLED if label else PLAIN)).format(L=label, k=k)
        # An "&" group: the next edge with the same target and label shares the statement.
        if k + 1 < len(order) and order[k + 1][0][1] == v and order[k + 1][1] == label and \
                order[k + 1][0][0] != u and draw(st.booleans()):
            u2 = order[k + 1][0][0]
            lines.append(f"{ref(u)} & {ref(u2)}{spelling}{ref(v)}")
            chart.edges += [(u, v, label), (u2, v, label)]
            k += 2
            continue
        lines.append(f"{ref(u)}{spelling}{ref(v)}")
        chart.edges.append((u, v, label))
        k += 1
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["%% a comment", "style S000 fill:#eee", "classDef hot fill:#f96",
                                               f"class {u} hot", "subgraph desk [Front desk]", "end", ""])))
    if lines[0] == "```mermaid":
        lines.append("```")
    chart.text = "\n".join(lines) + "\n"
    return chart

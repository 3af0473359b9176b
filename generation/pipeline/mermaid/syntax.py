"""Reading Mermaid flowchart text: nodes, edges, classes, and every problem with its line and column.

Every node shape of Mermaid's flowchart syntax is read: rectangle ``[..]``, round ``(..)``, stadium
``([..])``, subroutine ``[[..]]``, cylinder ``[(..)]``, circle ``((..))``, double circle
``(((..)))``, asymmetric ``>..]``, rhombus ``{..}``, hexagon ``{{..}}``, parallelogram ``[/../]``
and ``[\\..\\]``, trapezoid ``[/..\\]`` and ``[\\../]``, and the newer ``id@{ shape: .., label: ".." }``.
FlowBench's release writes the asymmetric shape ``id>[text]``; that spelling is read as the
asymmetric shape with the text inside the brackets, and said so in :attr:`MermaidChart.remarks`.
Label text (quotes, Markdown strings, ``<br>``, entity codes, text over several lines) is read by
:mod:`.text`.

Real charts come with a line of prose before ``flowchart TD``, ``A & B --> C`` groups, every arrow
spelling (``-->|label|``, ``-- label -->``, ``== label ==>``, ``-. label .->``, ``---``, ``~~~``,
``<-->``, ``o--o``, edge ids ``e1@-->``), ``subgraph``/``style``/``class`` lines, ``%%`` comments and
a paragraph after the chart ("auxiliary parameter information"). What Mermaid itself would refuse is
a :class:`MermaidProblem` (1-based line and column): node text that is never closed, an arrow with
no target, an unbalanced bracket, a file that ends in the middle of a statement, a line that is not
a statement. The caller decides whether problems refuse the chart (strict) or are reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .shapes import DECISION_SHAPES, OPENINGS, SHAPE_ALIASES, SHAPE_NAMES, write_chart  # noqa: F401
from .text import read_label

_PAIRS = {"[": "]", "(": ")", "{": "}"}
_ID = re.compile(r"[^\W][\w.]*")
_CLASS_SUFFIX = re.compile(r":::[\w-]+")
_H = r"[ \t]*"
_EDGE_ID = r"(?:[A-Za-z_][\w-]*@)?"
_START = r"(?:<|(?<=\s)[ox])?"
_ARROWS = [
    re.compile(_H + _EDGE_ID + _START + r"(?:-{2,}|={2,}|-\.+-)[>ox]?" + _H + r"\|(?P<label>[^|\n]*)\|" + _H),
    re.compile(_H + _EDGE_ID + r"<?--(?![->])" + _H + r"(?P<label>[^\n]*?)" + _H + r"(?:-{2,}[>ox]|-{3,})" + _H),
    re.compile(_H + _EDGE_ID + r"<?==(?![=>])" + _H + r"(?P<label>[^\n]*?)" + _H + r"(?:={2,}[>ox]|={3,})" + _H),
    re.compile(_H + _EDGE_ID + r"<?-\.(?![-.])" + _H + r"(?P<label>[^\n]*?)" + _H + r"\.+-[>ox]?" + _H),
    re.compile(_H + _EDGE_ID + _START + r"(?:-{2,}[>ox]|-{3,}|={2,}[>ox]|={3,}|-\.+-[>ox]?|~{3,})" + _H),
]
_PARTIAL_ARROW = re.compile(_H + r"(?:<)?(?:--|==|-\.)")
_DIRECTIVE = re.compile(r"(classDef|class|style|linkStyle|click|subgraph|end|direction|accTitle|accDescr)\b")
_HEADER = re.compile(r"^\s*(flowchart|graph)\b(\s+(TB|TD|BT|RL|LR))?\s*;?\s*$", re.IGNORECASE)
_STATEMENT_START = re.compile(r"^\s*[^\W][\w.]*(?:[\[({>@]|\s*(?:-->|---|--\s|--[^-\s]|==|-\.|~~~|&\s*\w))",
                              re.MULTILINE)
_NOTES_START = re.compile(r"auxiliary\s+parameter|parameter\s+information|^\s*(?:notes?|parameter notes?)\s*:",
                          re.IGNORECASE)


@dataclass
class MermaidProblem:
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


@dataclass
class MermaidChart:
    labels: dict[str, str] = field(default_factory=dict)
    shapes: dict[str, str] = field(default_factory=dict)   # node id -> shape name ("rectangle", ...)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    classes: dict[str, str] = field(default_factory=dict)
    problems: list[MermaidProblem] = field(default_factory=list)
    notes: str = ""          # the paragraph after the chart (parameter information)
    remarks: list[str] = field(default_factory=list)  # what was read as other than chart, as report lines
    header_line: int = 0     # 1-based line of ``flowchart``/``graph`` (0: none)


def _blank_outside(text: str, chart: MermaidChart) -> str:
    """The document with what is not chart (front matter, prose before it) blanked out, so that
    positions in what is left are positions in the file."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first_text = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.strip().startswith("```")), None)
    if first_text is not None and lines[first_text].strip() == "---":  # YAML front matter (title, config)
        close = next((i for i in range(first_text + 1, len(lines)) if lines[i].strip() == "---"), None)
        if close is not None:
            lines = [""] * (close + 1) + lines[close + 1:]
    header = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    first = header + 1 if header is not None else next(
        (i for i, ln in enumerate(lines) if _STATEMENT_START.match(ln)), len(lines))
    chart.header_line = header + 1 if header is not None else 0
    for i in range(first):
        if lines[i].strip() and not lines[i].strip().startswith(("```", "%%")) and i != header:
            chart.remarks.append(f"line {i + 1}: text before the chart is not part of it: {lines[i].strip()[:80]!r}")
    return "\n".join([""] * first + lines[first:])


class _Scanner:
    def __init__(self, text: str, chart: MermaidChart) -> None:
        self.text, self.i, self.chart = text, 0, chart
        self.last_good_line = 0

    def at(self, pos: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, pos) + 1
        return line, pos - (self.text.rfind("\n", 0, pos) + 1) + 1

    def problem(self, pos: int, message: str) -> None:
        self.chart.problems.append(MermaidProblem(*self.at(pos), message))

    def skip(self, newlines: bool) -> None:
        chars = " \t;\n" if newlines else " \t"
        while self.i < len(self.text) and self.text[self.i] in chars:
            self.i += 1

    def line_end(self, pos: int) -> int:
        end = self.text.find("\n", pos)
        return len(self.text) if end < 0 else end

    # -------------------------------------------------------------------------- node text

    def _close(self, start: int, opening: str, closing: str) -> int:
        """Index of ``closing`` for text starting at ``start``: after a quoted string when the text
        is quoted, else the first one outside nested brackets of the opening's kind; -1 if none."""
        j = start
        while j < len(self.text) and self.text[j] in " \t":
            j += 1
        if self.text.startswith('"', j):
            quote = self.text.find('"', j + 1)
            while quote > 0 and self.text[quote - 1] == "\\":  # \" inside quoted text
                quote = self.text.find('"', quote + 1)
            if quote > 0:
                k = quote + 1
                while k < len(self.text) and self.text[k] in " \t":
                    k += 1
                if self.text.startswith(closing, k):
                    return k
        bracket = "[" if opening[0] == ">" else (opening[-1] if opening[-1] in _PAIRS else "")
        depth, j = 0, start
        while j < len(self.text):
            if depth == 0 and self.text.startswith(closing, j):
                return j
            ch = self.text[j]
            if bracket and ch == bracket:
                depth += 1
            elif bracket and ch == _PAIRS[bracket] and depth:
                depth -= 1
            j += 1
        return -1

    def _spills(self, start: int, end: int) -> bool:
        """Whether the text between ``start`` and ``end`` runs over a line that is an edge statement
        of its own (the node's closing is missing and a later node's closing was found instead)."""
        nl = self.text.find("\n", start, end)
        while nl >= 0:
            line = self.text[nl + 1:self.line_end(nl + 1)]
            if _STATEMENT_START.match(line) and _is_edge_statement(line):
                return True
            nl = self.text.find("\n", nl + 1, end)
        return False

    def _shape(self, node_id: str, open_pos: int) -> None:
        tried: tuple[str, str] | None = None
        for opening, closings in OPENINGS:
            if not self.text.startswith(opening, self.i):
                continue
            start = self.i + len(opening)
            found = [(end, c) for c in closings if (end := self._close(start, opening, c)) >= 0]
            found = [(end, c) for end, c in found if not self._spills(start, end)]
            tried = (opening, closings[0])
            if not found:
                continue  # a shorter opening may fit: "[(optional) text]" is a rectangle
            end, closing = min(found)
            self.chart.labels[node_id] = read_label(self.text[start:end])
            self.chart.shapes[node_id] = SHAPE_NAMES[(opening, closing)]
            if opening == ">[":
                self.chart.remarks.append(f"line {self.at(open_pos)[0]}: node {node_id} is written "
                                          f"'{node_id}>[...]'; read as the asymmetric shape '>...]'")
            self.i = end + len(closing)
            return
        if tried is not None:
            opening, closing = tried
            self.problem(open_pos, f"unterminated text of node {node_id}: '{opening}' is never closed with '{closing}'")
            stop = self.line_end(self.i + len(opening))
            self.chart.labels[node_id] = read_label(self.text[self.i + len(opening):stop].rstrip(closing[-1]))
            self.chart.shapes[node_id] = SHAPE_NAMES[(opening, closing)]
            self.i = stop

    def _shape_data(self, node_id: str, open_pos: int) -> None:
        """``id@{ shape: name, label: "text" }`` (Mermaid 11)."""
        j, quoted = self.i + 2, False
        while j < len(self.text) and (quoted or self.text[j] != "}"):
            if self.text[j] == '"' and self.text[j - 1] != "\\":
                quoted = not quoted
            j += 1
        if j >= len(self.text):
            self.problem(open_pos, f"unterminated shape data of node {node_id}: '@{{' is never closed with '}}'")
            self.i = self.line_end(self.i)
            return
        body = self.text[self.i + 2:j]
        pairs = dict((m.group(1).lower(), m.group(2)) for m in
                     re.finditer(r'(\w+)\s*:\s*("(?:[^"\\]|\\.)*"|[^,\n]*)', body))
        if "label" in pairs:
            self.chart.labels[node_id] = read_label(pairs["label"])
        elif node_id not in self.chart.labels:
            self.chart.labels[node_id] = node_id
        shape = pairs.get("shape", "rect").strip().strip('"').lower()
        self.chart.shapes[node_id] = SHAPE_ALIASES.get(shape, shape)
        self.i = j + 1

    def node(self) -> str | None:
        m = _ID.match(self.text, self.i)
        if not m:
            return None
        node_id, open_pos = m.group(0), m.end()
        self.i = open_pos
        if self.text.startswith("@{", self.i):
            self._shape_data(node_id, open_pos)
        else:
            self._shape(node_id, open_pos)
        suffix = _CLASS_SUFFIX.match(self.text, self.i)
        if suffix:
            self.i = suffix.end()
        return node_id

    # -------------------------------------------------------------------------- statements

    def group(self) -> list[str]:
        first = self.node()
        if first is None:
            return []
        members = [first]
        while True:
            save = self.i
            self.skip(False)
            if self.text.startswith("&", self.i):
                self.i += 1
                self.skip(False)
                nxt = self.node()
                if nxt:
                    members.append(nxt)
                    continue
            self.i = save
            return members

    def arrow(self) -> str | None:
        for pattern in _ARROWS:
            m = pattern.match(self.text, self.i)
            if m:
                self.i = m.end()
                return read_label(m.groupdict().get("label") or "")
        return None

    def rest_of_statement(self) -> bool:
        """After a node group: only spaces, ';' or the line end may follow. Reports the rest."""
        self.skip(False)
        if self.i >= len(self.text) or self.text[self.i] in "\n;":
            return True
        ch = self.text[self.i]
        if ch in ")]}":
            self.problem(self.i, f"unbalanced bracket: {ch!r} closes nothing")
        elif _PARTIAL_ARROW.match(self.text, self.i):
            last_line = self.line_end(self.i) >= len(self.text.rstrip())
            if "|" in self.text[self.i:self.line_end(self.i)]:
                msg = "unterminated edge label: '|' is never closed"
            else:
                msg = "incomplete arrow"
            self.problem(self.i, msg + (" (the file ends in the middle of a statement)" if last_line else ""))
        else:
            self.problem(self.i, f"unexpected text {self.text[self.i:self.line_end(self.i)].strip()[:40]!r}")
        self.i = self.line_end(self.i)
        return False

    def statement(self) -> None:
        start = self.i
        sources = self.group()
        if not sources:
            end = self.line_end(self.i)
            self.problem(start, f"cannot read {self.text[start:end].strip()[:60]!r}: not a node or an edge")
            self.i = end
            return
        while True:
            arrow_pos = self.i
            label = self.arrow()
            if label is None:
                if self.rest_of_statement():
                    self.last_good_line = self.at(self.i)[0]
                return
            targets = self.group()
            if not targets:
                at_end = not self.text[self.line_end(self.i):].strip()
                ends = " (the file ends in the middle of a statement)" if at_end else ""
                if self.text.startswith("|", self.i):
                    self.problem(self.i, "unterminated edge label: '|' is never closed" + ends)
                else:
                    self.problem(arrow_pos, "arrow with no target" + ends)
                self.i = self.line_end(self.i)
                return
            for s in sources:
                for t in targets:
                    self.chart.edges.append((s, t, label))
            self.last_good_line = self.at(self.i)[0]
            sources = targets

    def directive(self) -> bool:
        """Layout lines, comments and fences at the start of a statement: read and skipped."""
        line = self.text[self.i:self.line_end(self.i)].strip()
        if line.startswith(("%%", "```")):
            self.i = self.line_end(self.i)
            return True
        m = _DIRECTIVE.match(line)
        if not m or (m.group(1) == "end" and line not in ("end", "end;")):
            return False
        classes = re.match(r"^class\s+([\w,\s]+?)\s+([\w-]+)\s*;?$", line)
        if classes:
            for node_id in classes.group(1).split(","):
                self.chart.classes[node_id.strip()] = classes.group(2)
        elif m.group(1) == "accDescr" and line.rstrip().endswith("{"):
            close = self.text.find("}", self.i)
            self.i = close + 1 if close >= 0 else len(self.text)
            return True
        self.i = self.line_end(self.i)
        return True


def looks_like_mermaid(text: str, name: str = "") -> bool:
    """Whether a file is a Mermaid chart: a ``.mmd``/``.mermaid`` name, a ``flowchart``/``graph``
    line anywhere (FlowBench puts a line of prose first) or a fenced ``mermaid`` block."""
    if name.lower().endswith((".mmd", ".mermaid")):
        return True
    return any(_HEADER.match(ln) or ln.strip().lower() == "```mermaid" for ln in text.splitlines())


def _is_edge_statement(line: str) -> bool:
    trial = MermaidChart()
    scanner = _Scanner(line, trial)
    scanner.skip(False)
    scanner.statement()
    return bool(trial.edges) and not trial.problems


def read_mermaid(text: str) -> MermaidChart:
    """Read a Mermaid flowchart; nothing is raised, problems are collected on the result."""
    chart = MermaidChart()
    scanner = _Scanner(_blank_outside(text, chart), chart)
    while True:
        scanner.skip(True)
        if scanner.i >= len(scanner.text):
            break
        if scanner.directive():
            continue
        line = scanner.text[scanner.i:scanner.line_end(scanner.i)]
        if _NOTES_START.search(line) and not _STATEMENT_START.match(line):
            notes = scanner.text[scanner.i:].split("\n")
            chart.notes = "\n".join(ln for ln in notes if not ln.strip().startswith("```")).strip()
            break
        scanner.statement()
    _trailing_prose(chart, scanner.text.split("\n"), scanner.last_good_line)
    return chart


def _trailing_prose(chart: MermaidChart, body: list[str], last_good_line: int) -> None:
    """Lines after the last statement that are not statements are a paragraph about the chart
    (parameter notes without a heading, a closing remark), not a broken chart."""
    tail = [p for p in chart.problems if p.line > last_good_line]
    if not tail or not all(p.message.startswith(("cannot read", "unexpected text")) for p in tail):
        return
    lines = [body[p.line - 1].strip() for p in tail]
    if not all(len(re.findall(r"[A-Za-z]{2,}", ln)) >= 3 for ln in lines):
        return  # not sentences: a broken chart
    chart.problems = [p for p in chart.problems if p.line <= last_good_line]
    chart.remarks.append(f"lines {tail[0].line}-{tail[-1].line}: text after the chart read as notes")
    chart.notes = "\n".join([*lines, chart.notes]).strip()

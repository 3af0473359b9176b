"""Reading Mermaid flowchart text: nodes, edges, classes, and every problem with its line and column.

Real charts (FlowBench's release among them) come with a line of prose before ``flowchart TD``,
node text spread over several lines, ``A & B --> C`` groups, ``-->|label|`` and ``--label-->``
edges, ``subgraph``/``style``/``class`` lines, ``%%`` comments, and an "auxiliary parameter
information" paragraph after the chart. All of that is read; what Mermaid itself would refuse is a
:class:`MermaidProblem` (1-based line and column): node text that is never closed, an arrow with no
target, an unbalanced bracket, a file that ends in the middle of a statement, a line that is not a
statement. The caller decides whether problems refuse the chart (strict, the default) or are
reported (lenient).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Openings, longest first, with their closing and the bracket counted for nesting.
_SHAPES = [("(((", ")))"), ("((", "))"), ("([", "])"), ("[[", "]]"), ("[(", ")]"), ("{{", "}}"),
           ("[/", "/]"), ("[\\", "\\]"), ("[/", "\\]"), ("[\\", "/]"), ("[", "]"), ("(", ")"),
           ("{", "}"), (">", "]")]
_PAIRS = {"[": "]", "(": ")", "{": "}"}
_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.]*")
_CLASS_SUFFIX = re.compile(r":::[\w-]+")
_H = r"[ \t]*"
_ARROWS = [
    re.compile(_H + r"(?:<)?(?:-{2,}|={2,}|-\.+-)[>ox]?" + _H + r"\|(?P<label>[^|\n]*)\|" + _H),
    re.compile(_H + r"--(?![->])" + _H + r"(?P<label>[^\n]*?)" + _H + r"-{2,}[>ox]" + _H),
    re.compile(_H + r"==(?![=>])" + _H + r"(?P<label>[^\n]*?)" + _H + r"={2,}>" + _H),
    re.compile(_H + r"-\.(?P<label>[^\n]*?)\.+->" + _H),
    re.compile(_H + r"(?:<)?(?:-{2,}>|-{3,}|={2,}>|={3,}|-\.+->|--[ox](?![\w])|<-->)" + _H),
]
_PARTIAL_ARROW = re.compile(_H + r"(?:<)?(?:--|==|-\.)")
_ENTITIES = {"#quot;": '"', "#lt;": "<", "#gt;": ">", "#124;": "|", "#amp;": "&", "#35;": "#"}
_DIRECTIVE = re.compile(r"^\s*(classDef|class|style|linkStyle|click|subgraph|end|direction|accTitle|accDescr)\b")
_HEADER = re.compile(r"^\s*(flowchart|graph)\b(\s+(TB|TD|BT|RL|LR))?\s*;?\s*$", re.IGNORECASE)
_STATEMENT_START = re.compile(r"^\s*[A-Za-z0-9_][A-Za-z0-9_.]*(?:[\[({>]|\s*(?:-->|---|--\s|--[^-\s]|==|-\.|&\s*\w))", re.MULTILINE)
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
    shapes: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    classes: dict[str, str] = field(default_factory=dict)
    problems: list[MermaidProblem] = field(default_factory=list)
    notes: str = ""          # the paragraph after the chart (parameter information)
    skipped: list[str] = field(default_factory=list)  # prose before the chart, as report lines


def unescape(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1]
    for k, v in _ENTITIES.items():
        text = text.replace(k, v)
    text = text.replace('\\"', '"')
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def _split_document(text: str, chart: MermaidChart) -> list[str]:
    """Blank out what is not chart (prose before it, fences, comments, directives, the notes)
    so that positions in what is left are positions in the file."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first_text = next((i for i, ln in enumerate(lines) if ln.strip() and not ln.strip().startswith("```")), None)
    if first_text is not None and lines[first_text].strip() == "---":  # YAML front matter (title, config)
        close = next((i for i in range(first_text + 1, len(lines)) if lines[i].strip() == "---"), None)
        if close is not None:
            lines = [""] * (close + 1) + lines[close + 1:]
    header = next((i for i, ln in enumerate(lines) if _HEADER.match(ln)), None)
    first = header + 1 if header is not None else next(
        (i for i, ln in enumerate(lines) if _STATEMENT_START.match(ln)), len(lines))
    body = [""] * len(lines)
    for i in range(first):
        if lines[i].strip() and not lines[i].strip().startswith(("```", "%%")) and i != header:
            chart.skipped.append(f"line {i + 1}: text before the chart is not part of it: {lines[i].strip()[:80]!r}")
    notes_at = next((i for i in range(first, len(lines)) if _NOTES_START.search(lines[i])
                     and not _STATEMENT_START.match(lines[i])), None)
    last = notes_at if notes_at is not None else len(lines)
    if notes_at is not None:
        chart.notes = "\n".join(ln for ln in lines[notes_at:] if not ln.strip().startswith("```")).strip()
    for i in range(first, last):
        ln = lines[i]
        stripped = ln.strip()
        if stripped.startswith("```") or stripped.startswith("%%"):
            continue
        m = re.match(r"^class\s+([\w,\s]+?)\s+([\w-]+)\s*;?$", stripped)
        if m:
            for node_id in m.group(1).split(","):
                chart.classes[node_id.strip()] = m.group(2)
            continue
        if _DIRECTIVE.match(stripped) and not re.match(r"^\s*end\s*[\[({>]", ln):
            continue
        cut = ln.find("%%")
        body[i] = ln if cut < 0 else ln[:cut]
    return body


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

    def _closing(self, start: int, opening: str, closing: str) -> int:
        """Index of the closing text of a node, honouring quotes and nested brackets; -1 if none."""
        if self.text.startswith('"', start):
            quote = self.text.find('"', start + 1)
            while quote > 0 and self.text[quote - 1] == "\\":  # \" inside quoted text
                quote = self.text.find('"', quote + 1)
            if quote < 0:
                return -1
            start = quote + 1
        bracket = opening[-1] if opening[-1] in _PAIRS else ("[" if opening == ">" else "")
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

    def node(self) -> str | None:
        m = _ID.match(self.text, self.i)
        if not m:
            return None
        node_id, open_pos = m.group(0), m.end()
        self.i = open_pos
        for opening, closing in _SHAPES:
            if not self.text.startswith(opening, self.i):
                continue
            start = self.i + len(opening)
            end = self._closing(start, opening, closing)
            spill = None
            if end >= 0:
                nl = self.text.find("\n", start, end)
                while nl >= 0 and spill is None:
                    if _STATEMENT_START.match(self.text, nl + 1):
                        spill = nl
                    nl = self.text.find("\n", nl + 1, end)
            if end < 0 or spill is not None:
                self.problem(open_pos, f"unterminated text of node {node_id}: '{opening}' is never closed "
                                       f"with '{closing}'")
                stop = self.line_end(start)
                self.chart.labels[node_id] = unescape(self.text[start:stop].rstrip(closing[-1]))
                self.chart.shapes[node_id] = opening
                self.i = stop
                return node_id
            self.chart.labels[node_id] = unescape(self.text[start:end])
            self.chart.shapes[node_id] = opening
            self.i = end + len(closing)
            break
        suffix = _CLASS_SUFFIX.match(self.text, self.i)
        if suffix:
            self.i = suffix.end()
        return node_id

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
                return unescape(m.groupdict().get("label") or "")
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


def read_mermaid(text: str) -> MermaidChart:
    """Read a Mermaid flowchart; nothing is raised, problems are collected on the result."""
    chart = MermaidChart()
    body = _split_document(text, chart)
    scanner = _Scanner("\n".join(body), chart)
    while True:
        scanner.skip(True)
        if scanner.i >= len(scanner.text):
            break
        scanner.statement()
    _trailing_prose(chart, body, scanner.last_good_line)
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
    chart.skipped.append(f"lines {tail[0].line}-{tail[-1].line}: text after the chart read as notes")
    chart.notes = "\n".join([*lines, chart.notes]).strip()

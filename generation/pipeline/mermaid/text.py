"""The text inside Mermaid node shapes and on edges: reading it as Mermaid renders it, writing it back.

What Mermaid's flowchart syntax allows in a label, and what a reader sees:

* ``"quoted text"``: the quotes delimit, they are not shown; inside, ``#quot;`` is a quote;
* Markdown strings, ``"`**bold** and *italic*`"``: the backticks delimit, the emphasis markers
  are formatting (not text), new lines are line breaks;
* entity codes ``#quot;``, ``#35;`` (decimal), ``#lt;``/``#gt;``/``#amp;`` and any HTML entity name;
* line breaks written ``<br>``, ``<br/>``, ``<br />``, or as a real new line inside the shape.

A label is kept on one line (line breaks become single spaces), because the flowgraph formats are
line-based. :func:`escape` writes any text so that :func:`read_label` gives it back exactly.
"""
from __future__ import annotations

import html
import re

_BR = re.compile(r"<br\s*/?>", re.IGNORECASE)
_ENTITY = re.compile(r"#(\d{1,7}|[A-Za-z][A-Za-z0-9]{1,31});")
# Emphasis as Markdown writes it: **x**, __x__, *x*, _x_ (underscores only at word edges, so that
# snake_case names such as check_availability stay as they are).
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EM_STAR = re.compile(r"(?<!\*)\*(?=\S)([^*]+?)(?<=\S)\*(?!\*)")
_EM_UNDER = re.compile(r"(?<![\w])_(?=\S)([^_]+?)(?<=\S)_(?![\w])")


def _entity(m: re.Match) -> str:
    code = m.group(1)
    if code.isdigit():
        n = int(code)
        # A control character is not something a chart means to show ("room #12;" stays as written).
        return chr(n) if 32 <= n < 0x110000 and not 127 <= n < 160 else m.group(0)
    text = html.unescape(f"&{code};")
    return m.group(0) if text == f"&{code};" else text


def decode_entities(text: str) -> str:
    """Mermaid's entity codes (``#quot;``, ``#35;``, ``#9829;``) as the characters they stand for."""
    return _ENTITY.sub(_entity, text)


def strip_markdown(text: str) -> str:
    """The words of a Markdown string without its emphasis markers."""
    for _ in range(3):  # nested emphasis: ***x*** and the like
        before = text
        text = _STRONG.sub(r"\2", text)
        text = _EM_STAR.sub(r"\1", text)
        text = _EM_UNDER.sub(r"\1", text)
        if text == before:
            break
    return text


def is_markdown_string(raw: str) -> bool:
    s = raw.strip()
    return len(s) >= 4 and s[0] == '"' and s[-1] == '"' and s[1] == "`" and s[-2] == "`"


def read_label(raw: str) -> str:
    """The text a reader sees for the raw text of a shape or an edge label, on one line."""
    text = raw.strip()
    markdown = False
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        text = text[1:-1]
        if len(text) >= 2 and text[0] == "`" and text[-1] == "`":
            text, markdown = text[1:-1], True
    text = text.replace('\\"', '"')
    text = _BR.sub("\n", text)
    if markdown:
        text = strip_markdown(text)
    text = decode_entities(text)
    return " ".join(text.split())


def escape(text: object) -> str:
    """Text for a quoted Mermaid label (``"..."``) that :func:`read_label` reads back unchanged.

    ``#`` is written first so that text which looks like an entity code stays text."""
    return (" ".join(str(text).split()).replace("#", "#35;").replace('"', "#quot;").replace("&", "#amp;")
            .replace("<", "#lt;").replace(">", "#gt;").replace("|", "#124;").replace("`", "#96;"))

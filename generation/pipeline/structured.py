"""A document as JSON, JSON Lines or YAML, told apart by parsing it (not by its first key).

YAML goes through :func:`load_yaml`: the safe loader (libyaml's when it is there), whose node graph is
measured before anything is built. An alias is a pointer to an earlier node, so a few hundred bytes
can stand for a billion nodes ("billion laughs"); the loader itself shares them cheaply, but every
later walk (a depth check, ``$ref`` resolution, writing JSON) would expand them. The expanded size is
counted once per distinct node (memoised), and a document past :data:`MAX_YAML_NODES` or with an
alias inside the node it names is refused: a 551-byte bomb is refused in milliseconds. Timestamps and
binary scalars stay strings, so everything read can be written back as JSON.
"""
from __future__ import annotations

import json
from typing import Any

import yaml

from .apis import ApiFormatError

MAX_YAML_NODES = 2_000_000
_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _BoundedLoader(_Base):  # type: ignore[misc, valid-type]
    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node)
        return node


def _as_text(loader: Any, node: Any) -> str:
    return loader.construct_scalar(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _as_text)
_BoundedLoader.add_constructor("tag:yaml.org,2002:binary", _as_text)


def _children(node: Any) -> list:
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: Any) -> None:
    """Refuse a node graph whose tree (aliases expanded) exceeds MAX_YAML_NODES or loops."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(c)] for c in _children(node))
            if size > MAX_YAML_NODES:
                mark = node.start_mark
                raise ApiFormatError(f"line {mark.line + 1}, column {mark.column + 1}: the YAML aliases expand to "
                                     f"more than {MAX_YAML_NODES:,} nodes; refused before expanding them")
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            mark = node.start_mark
            raise ApiFormatError(f"line {mark.line + 1}, column {mark.column + 1}: a YAML alias refers to a node "
                                 "that contains it")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node) if id(c) not in sizes)


def load_yaml(text: str, source: str = "") -> Any:
    where = f"{source}: " if source else ""
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 (a safe loader)
    except ApiFormatError as exc:
        raise ApiFormatError(f"{where}{exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = ""
        if mark:
            lines = text.split("\n")
            line, column = mark.line + 1, mark.column + 1
            if line > len(lines):  # libyaml marks the end of input one line past the last
                line, column = len(lines), len(lines[-1]) + 1
            at = f"line {line}, column {column}: "
        raise ApiFormatError(f"{where}{at}invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise ApiFormatError(f"{where}the YAML is nested too deeply") from None


def load_structured(text: str, source: str = "") -> Any:
    """JSON, JSON Lines (a list of the lines' values) or YAML; errors name line and column."""
    where = f"{source}: " if source else ""
    stripped = text.lstrip("\ufeff").strip()
    if not stripped:
        raise ApiFormatError(f"{where}the file is empty")
    if stripped[0] in "{[":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError as exc:
            first = stripped.split("\n", 1)[0]
            try:
                if exc.msg == "Extra data" or "\n" not in stripped or _parses(first):
                    return load_json_lines(text, source)
                raise ApiFormatError(f"{where}line {exc.lineno}, column {exc.colno}: invalid JSON: {exc.msg}") from None
            except ApiFormatError as json_error:
                try:  # a YAML flow mapping starts with "{" too
                    data = load_yaml(stripped, source)
                except ApiFormatError:
                    data = None
                if isinstance(data, (dict, list)):
                    return data
                raise json_error from None
    data = load_yaml(stripped, source)
    if not isinstance(data, (dict, list)):
        raise ApiFormatError(f"{where}not a JSON or YAML document: it reads as a single "
                             f"{type(data).__name__ if data is not None else 'empty value'}")
    return data


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def load_json_lines(text: str, source: str = "") -> list[Any]:
    """One JSON value per non-blank line; an error names the line (1-based) and the record."""
    where = f"{source}: " if source else ""
    out = []
    for lineno, line in enumerate(text.lstrip("\ufeff").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ApiFormatError(f"{where}line {lineno} (record {len(out) + 1}), column {exc.colno}: "
                                 f"invalid JSON: {exc.msg}") from None
    return out

"""A document as JSON, JSON Lines or YAML, told apart by parsing it (not by its first key).

YAML is built by :func:`load_yaml` straight from libyaml's event stream (PyYAML's ``parse`` with the
C parser), scalars typed by PyYAML's own resolver and constructors exactly as ``safe_load`` types
them, except that timestamps and binary scalars stay text (so everything read can be written back
as JSON). Two reasons for not calling ``yaml.safe_load``:

* aliases are bounded *before* anything is expanded. An alias is a pointer to an earlier node, so a
  few hundred bytes can stand for a billion nodes ("billion laughs"); the expanded size of every
  anchored node is known when it closes, each alias adds it, and a document past
  :data:`MAX_YAML_NODES` (or an alias inside the node it names) is refused at that point: the
  551-byte bomb of the tests is refused in milliseconds;
* speed: PyYAML's composer and SafeConstructor took 6.5-7.3 s of CPU for a 4 MB OpenAPI document
  on this machine (C parser included), this builder 0.9 s (``bench/import.py`` measures it).

A property test checks that it agrees with ``yaml.safe_load`` on generated documents.
"""
from __future__ import annotations

import json
from typing import Any

import yaml
from yaml import events as ev

from ..apis import ApiFormatError

MAX_YAML_NODES = 2_000_000
_Parser = getattr(yaml, "CBaseLoader", yaml.BaseLoader)
_TAG = "tag:yaml.org,2002:"
_RESOLVER = yaml.resolver.Resolver()
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_MERGE = object()  # the key slot of a mapping after a merge key (<<)
_TEXT_TAGS = {_TAG + "str", _TAG + "timestamp", _TAG + "binary", _TAG + "value"}
_CONVERT = {_TAG + "int": _CONSTRUCTOR.construct_yaml_int, _TAG + "float": _CONSTRUCTOR.construct_yaml_float,
            _TAG + "bool": _CONSTRUCTOR.construct_yaml_bool, _TAG + "null": _CONSTRUCTOR.construct_yaml_null}


class _Refused(Exception):
    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark, self.message = mark, message


def _scalar(event: Any) -> Any:
    tag = event.tag
    if tag is None or tag == "!":
        tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit) if tag is None else _TAG + "str"
    if tag in _TEXT_TAGS or tag == _TAG + "merge":
        return event.value
    convert = _CONVERT.get(tag)
    if convert is None:
        raise _Refused(event.start_mark, f"the YAML tag {tag[:60]} is not read")
    return convert(yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark))


def _close_mapping(frame: list) -> Any:
    """A mapping's pairs with merge keys (``<<``) applied the way PyYAML applies them."""
    _, pairs, merges, _, _ = frame
    if not merges:
        return dict(pairs)
    merged: dict = {}
    for source in merges:
        for part in (reversed(source) if isinstance(source, list) else [source]):
            merged.update(part)
    merged.update(pairs)
    return merged


def _build(events: Any) -> Any:
    """The value of a one-document YAML event stream (see the module docstring)."""
    stack: list[list] = []   # [kind, items, merges, size, (anchor, start mark)]; a mapping's items are pairs
    anchors: dict[str, tuple[Any, int]] = {}
    opened: set[str] = set()
    root, documents, key = None, 0, []
    for event in events:
        kind = type(event)
        if kind is ev.ScalarEvent:
            value, size = _scalar(event), 1
            if event.anchor:
                anchors[event.anchor] = (value, 1)
            merge = event.tag is None and event.implicit[0] and event.value == "<<"
        elif kind is ev.MappingStartEvent or kind is ev.SequenceStartEvent:
            if event.tag not in (None, "!", _TAG + "map", _TAG + "seq"):
                raise _Refused(event.start_mark, f"the YAML tag {event.tag[:60]} is not read")
            if event.anchor:
                opened.add(event.anchor)
            stack.append(["map" if kind is ev.MappingStartEvent else "seq", [], [], 1,
                          (event.anchor, event.start_mark)])
            key.append(None)
            continue
        elif kind is ev.MappingEndEvent or kind is ev.SequenceEndEvent:
            frame = stack.pop()
            key.pop()
            value = _close_mapping(frame) if frame[0] == "map" else frame[1]
            size, (anchor, mark) = frame[3], frame[4]
            if size > MAX_YAML_NODES:
                raise _Refused(mark, f"the YAML aliases expand to more than {MAX_YAML_NODES:,} nodes; refused "
                                     "before expanding them")
            if anchor:
                opened.discard(anchor)
                anchors[anchor] = (value, size)
            merge = False
        elif kind is ev.AliasEvent:
            if event.anchor in anchors:
                value, size = anchors[event.anchor]
            elif event.anchor in opened:
                raise _Refused(event.start_mark, "a YAML alias refers to a node that contains it")
            else:
                raise _Refused(event.start_mark, f"the YAML alias *{event.anchor} names no anchor before it")
            merge = False
        else:
            if kind is ev.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Refused(event.start_mark, "expected one YAML document, found a second one")
            continue
        if not stack:
            root = value
            continue
        top = stack[-1]
        top[3] += size
        if top[3] > MAX_YAML_NODES:
            raise _Refused(event.start_mark, f"the YAML aliases expand to more than {MAX_YAML_NODES:,} nodes; "
                                             "refused before expanding them")
        if top[0] == "seq":
            top[1].append(value)
        elif key[-1] is None:
            if isinstance(value, (dict, list)) and not merge:
                raise _Refused(event.start_mark, "a YAML mapping key must be a scalar")
            key[-1] = _MERGE if merge else (value,)
        elif key[-1] is _MERGE:
            if not isinstance(value, dict) and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
                raise _Refused(event.start_mark, "a YAML merge key (<<) needs a mapping or a list of mappings")
            top[2].append(value)
            key[-1] = None
        else:
            top[1].append((key[-1][0], value))
            key[-1] = None
    return root


def load_yaml(text: str, source: str = "") -> Any:
    where = f"{source}: " if source else ""
    try:
        return _build(yaml.parse(text, Loader=_Parser))
    except _Refused as exc:
        raise ApiFormatError(f"{where}{_at(text, exc.mark)}{exc.message}") from None
    except yaml.YAMLError as exc:
        raise ApiFormatError(f"{where}{_at(text, getattr(exc, 'problem_mark', None))}invalid YAML: "
                             f"{getattr(exc, 'problem', None) or exc}") from None


def _at(text: str, mark: Any) -> str:
    if mark is None:
        return ""
    lines = text.split("\n")
    line, column = mark.line + 1, mark.column + 1
    if line > len(lines):  # libyaml marks the end of input one line past the last
        line, column = len(lines), len(lines[-1]) + 1
    return f"line {line}, column {column}: "


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

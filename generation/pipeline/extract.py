"""Test extraction (paper §3.9) and the api-message call syntax.

A conversation is cut before every agent action (an ``assistant`` or ``api`` message) that follows a
``user`` or an ``api_output`` message. The context is everything before the cut; the expected output
is that agent action: a reply text, or an API name with its parameters.
"""
from __future__ import annotations

import ast
from typing import Any

AGENT_ROLES = ("assistant", "api")
TRIGGER_ROLES = ("user", "api_output")


class ApiCallParseError(ValueError):
    pass


_NAME_CONSTANTS = {"true": True, "false": False, "null": None, "none": None}


def _literal(node: ast.AST, source: str) -> Any:
    if isinstance(node, ast.Name):
        # get_order(order_id=abc) — an unquoted word is the string the model meant.
        return _NAME_CONSTANTS.get(node.id.lower(), node.id)
    try:
        return ast.literal_eval(node)
    except ValueError as exc:
        raise ApiCallParseError(f"value {ast.get_source_segment(source, node)!r} is not a literal") from exc


def parse_api_call(text: str) -> tuple[str, dict[str, Any]]:
    """``"get_order(order_id=812)" -> ("get_order", {"order_id": 812})``.

    Accepts keyword arguments, or a single dict positional argument (``f({"a": 1})``), as LLMs
    write both. Raises :class:`ApiCallParseError` for anything else.
    """
    source = text.strip()
    if source.endswith(";"):
        source = source[:-1].rstrip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ApiCallParseError(f"not a call expression: {text[:80]!r}") from exc
    call = tree.body
    if not isinstance(call, ast.Call):
        if isinstance(call, ast.Name):  # a bare name is a call without parameters
            return call.id, {}
        raise ApiCallParseError(f"not a call expression: {text[:80]!r}")
    if isinstance(call.func, ast.Name):
        name = call.func.id
    elif isinstance(call.func, ast.Attribute):
        name = call.func.attr
    else:
        raise ApiCallParseError("the called object must be a name")
    params: dict[str, Any] = {}
    if call.args:
        if len(call.args) == 1 and isinstance(call.args[0], ast.Dict) and not call.keywords:
            value = _literal(call.args[0], source)
            return name, {str(k): v for k, v in value.items()}
        raise ApiCallParseError(f"{name}: positional arguments are not allowed, use name=value")
    for kw in call.keywords:
        if kw.arg is None:
            raise ApiCallParseError(f"{name}: **kwargs are not allowed")
        params[kw.arg] = _literal(kw.value, source)
    return name, params


def format_value(value: Any) -> str:
    """A Python literal that :func:`parse_api_call` reads back to the same value."""
    return repr(value)


def format_api_call(name: str, params: dict[str, Any]) -> str:
    return f"{name}(" + ", ".join(f"{k}={format_value(v)}" for k, v in params.items()) + ")"


def extract_tests(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One test per agent action that follows a user message or an api_output.

    ``position`` is the index of the expected message in the conversation, so that tests of one
    conversation can be regrouped for conversation-level accuracy.
    """
    tests = []
    for i in range(1, len(messages)):
        msg, prev = messages[i], messages[i - 1]
        if msg.get("role") not in AGENT_ROLES or prev.get("role") not in TRIGGER_ROLES:
            continue
        if msg["role"] == "assistant":
            expected: dict[str, Any] = {"type": "reply", "content": msg.get("content", "")}
        else:
            try:
                name, params = parse_api_call(msg.get("content", ""))
            except ApiCallParseError as exc:
                raise ApiCallParseError(f"message {i}: {exc}") from exc
            expected = {"type": "api_call", "name": name, "parameters": params}
        tests.append({
            "position": i,
            "context": [dict(m) for m in messages[:i]],
            "expected": expected,
        })
    return tests

"""JSON Schema (OpenAPI 3.0/3.1, MCP ``inputSchema``/``outputSchema``, OpenAI tools) -> fields.

:class:`Fields` reads a schema fragment into :class:`..schema.ParamSpec` objects with the paper's
type strings and keeps every field a schema declares:

* ``allOf`` members are merged into one schema (properties, ``required``, type);
* ``oneOf``/``anyOf`` are unions: the type lists the members (``Union[str, dict]``,
  ``Optional[int]``), the fields of every object member are kept (required only when every member
  requires them) and ``variants`` names each member with its fields;
* a ``type`` (or ``format``) written beside ``anyOf`` applies to members that do not say theirs;
* an array keeps its items' fields; a map (``additionalProperties`` alone) keeps its values' fields;
* ``$ref`` is followed lazily through JSON pointers into the document, so a 3 MB specification is
  not inlined whole; a pointer that leads nowhere is refused naming the pointer and where it was met.

Whatever is not kept is said, one line per cause, in ``report``: a read-only field of a request,
a write-only field of a response, a schema that contains itself (its fields are kept where it first
appears), fields nested deeper than :data:`MAX_DEPTH`, a reference into another document, extra keys
described beside named properties. A document that expands to more than :data:`MAX_FIELDS` fields
through its references is refused instead of being expanded.
"""
from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from ..apis import ApiFormatError
from ..schema import ParamSpec, param_from_schema

MAX_DEPTH = 16
MAX_FIELDS = 300_000
_SCALAR = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_STRUCTURE = ("properties", "items", "allOf", "anyOf", "oneOf", "additionalProperties", "patternProperties",
              "required", "$ref", "prefixItems", "not")
_INHERITED = ("type", "format", "nullable", "items")
_COMPOSITE = frozenset(("anyOf", "oneOf", "allOf", "$ref", "properties", "items", "additionalProperties",
                        "patternProperties"))
_NAMED = {**_SCALAR, "array": "list", "object": "dict"}
_EXTRA_KEYS = frozenset(("then", "else", "dependentSchemas", "dependencies"))


def pointer_escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def union_type(types: list[str]) -> str:
    non_null = list(dict.fromkeys(t for t in types if t != "None"))
    if not non_null:
        return "None"
    inner = non_null[0] if len(non_null) == 1 else f"Union[{', '.join(non_null)}]"
    return f"Optional[{inner}]" if "None" in types else inner


class Fields:
    """Reads schemas of one document; ``report`` collects every field not kept, once per cause."""

    def __init__(self, root: Any = None, report: list[str] | None = None) -> None:
        self.root = root if isinstance(root, dict) else {}
        self.report = report if report is not None else []
        self.api = ""            # the API whose schemas are read, in front of every report line
        self.operation = ""      # how the document names it ("GET /pets"), for refusals
        self.mode = "request"    # "request": read-only fields are left out; "response": write-only ones
        self.count = 0
        self._said: set[str] = set()

    def note(self, where: str, text: str) -> None:
        line = f"{self.api}: {where}: {text}" if self.api else f"{where}: {text}"
        if line not in self._said:
            self._said.add(line)
            self.report.append(line)

    # ------------------------------------------------------------------------------ references

    def lookup(self, ref: str, met_at: str) -> Any:
        node: Any = self.root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                who = f"{self.operation} ({self.api})" if self.operation else self.api
                raise ApiFormatError(f"{who + ': ' if who else ''}$ref {ref[:120]!r} at #{met_at[:160]} does not "
                                     "resolve")
        return node

    def deref(self, schema: Any, pointer: str, trail: tuple[str, ...], where: str):
        """(schema, pointer, trail) with ``$ref`` chains followed; None when the schema contains itself."""
        hops = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            ref = schema["$ref"]
            siblings = {k: v for k, v in schema.items() if k != "$ref"} if len(schema) > 1 else None
            if not ref.startswith("#"):
                self.note(where, f"$ref {ref[:80]!r} points into another document; its fields are not read")
                return siblings or {}, pointer, trail
            if ref in trail or hops > 50:
                return None
            target = self.lookup(ref, pointer)
            schema = {**target, **siblings} if siblings and isinstance(target, dict) else target
            pointer, trail, hops = ref[1:], trail + (ref,), hops + 1
        return (schema if isinstance(schema, dict) else {}), pointer, trail

    def flatten(self, schema: dict, pointer: str, trail: tuple[str, ...], where: str) -> dict:
        """``allOf`` merged into one schema: properties and ``required`` joined, the schema's own
        keys first, then each member's (a property in two members gets both, merged the same way)."""
        members = schema.get("allOf")
        if not isinstance(members, list):
            return _extras(schema)
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        props = dict(merged.get("properties") or {}) if isinstance(merged.get("properties"), dict) else {}
        required = list(merged.get("required") or []) if isinstance(merged.get("required"), list) else []
        unions: list[tuple[str, list]] = []
        for i, member in enumerate(members):
            got = self.deref(member, f"{pointer}/allOf/{i}", trail, where)
            if got is None:
                self.note(where, f"allOf member {i + 1} ({member.get('$ref')}) contains this schema; "
                                 "its fields are listed where it first appears")
                continue
            m = self.flatten(*got, where)
            for name, sub in (m.get("properties") or {}).items():
                props[name] = {"allOf": [props[name], sub]} if name in props and props[name] != sub else sub
            required += [r for r in m.get("required") or [] if r not in required]
            for key in ("anyOf", "oneOf"):
                if isinstance(m.get(key), list):
                    unions.append((key, m[key]))
            for key, value in m.items():
                if key not in ("properties", "required", "anyOf", "oneOf", "allOf"):
                    merged.setdefault(key, value)
        if props:
            merged["properties"] = props
        if required:
            merged["required"] = required
        for key, options in unions:
            if not isinstance(merged.get("anyOf" if key == "anyOf" else "oneOf"), list) and \
                    not isinstance(merged.get("oneOf" if key == "anyOf" else "anyOf"), list):
                merged[key] = options
            else:  # a second union in the same allOf: its members' fields join as optional fields
                merged.setdefault("x-more-unions", []).extend(options)
        return _extras(merged)

    # ------------------------------------------------------------------------------ fields

    def param(self, name: str, schema: Any, required: bool, pointer: str, where: str,
              trail: tuple[str, ...] = (), depth: int = 0) -> ParamSpec:
        self.count += 1
        if self.count > MAX_FIELDS:
            raise ApiFormatError(f"the document expands to more than {MAX_FIELDS} fields through its $refs "
                                 f"(last at #{pointer[:120]}); refused instead of expanded")
        got = self.deref(schema, pointer, trail, where)
        if got is None:
            ref = schema.get("$ref", "") if isinstance(schema, dict) else ""
            self.note(where, f"{ref} contains itself; here it is a dict whose fields are listed where it first appears")
            return ParamSpec(name=name, type="dict", required=required)
        s, pointer, trail = got
        s = self.flatten(s, pointer, trail, where)
        ptype, fields, variants = self.shape(s, pointer, where, trail, depth)
        base = {k: v for k, v in s.items() if k not in _STRUCTURE and not k.startswith("x-more")}
        p = param_from_schema(name, base, required)
        p.type, p.properties, p.variants = ptype, fields, variants
        return p

    def fields(self, schema: Any, pointer: str, where: str, trail: tuple[str, ...] = (),
               depth: int = 0) -> tuple[str, list[ParamSpec]]:
        """(type, fields) of a whole schema: an object's properties, an array's items' fields."""
        got = self.deref(schema, pointer, trail, where)
        if got is None:
            ref = schema.get("$ref", "") if isinstance(schema, dict) else ""
            self.note(where, f"{ref} contains itself; its fields are listed where it first appears")
            return "dict", []
        s, pointer, trail = got
        s = self.flatten(s, pointer, trail, where)
        ptype, fields, _ = self.shape(s, pointer, where, trail, depth)
        return ptype, fields

    def shape(self, s: dict, pointer: str, where: str, trail: tuple[str, ...],
              depth: int) -> tuple[str, list[ParamSpec], list[dict[str, Any]]]:
        """(type string, fields, union variants) of a dereferenced, flattened schema."""
        key = "anyOf" if isinstance(s.get("anyOf"), list) else ("oneOf" if isinstance(s.get("oneOf"), list) else "")
        if key:
            return self._union(s, key, pointer, where, trail, depth)
        t = s.get("type")
        if isinstance(t, list) and len([x for x in t if x != "null"]) == 1:  # 3.1: ["string", "null"]
            inner, fields, variants = self.shape({**s, "type": next(x for x in t if x != "null")}, pointer, where,
                                                 trail, depth)
            return union_type([inner] + (["None"] if "null" in t else [])), fields, variants
        if isinstance(t, list):
            shapes = [self.shape({**s, "type": x}, pointer, where, trail, depth) for x in t]
            fields = _merge([f for _, f, _ in shapes], required_in_all=True)
            return union_type([x for x, _, _ in shapes]), fields, []
        if s.get("nullable") is True:
            inner, fields, variants = self.shape({k: v for k, v in s.items() if k != "nullable"}, pointer, where,
                                                 trail, depth)
            return union_type([inner, "None"]), fields, variants
        if t is None:
            t = "object" if "properties" in s or "x-more-unions" in s else "array" if "items" in s else _enum_type(
                s.get("enum") if "enum" in s else [s["const"]] if "const" in s else None)
        if t == "array":
            items = s.get("items")
            if isinstance(s.get("prefixItems"), list):
                self.note(where, "a tuple (prefixItems): its positions are not kept as fields")
            if isinstance(items, dict) and items:
                item = self.param("items", items, True, f"{pointer}/items", where, trail, depth)
                return f"list[{item.type}]", item.properties, item.variants
            return "list", [], []
        if t == "object":
            fields = self._object_fields(s, pointer, where, trail, depth)
            maps = [("extra keys", f"{pointer}/additionalProperties", s["additionalProperties"])] \
                if isinstance(s.get("additionalProperties"), dict) and s["additionalProperties"] else []
            patterns = s.get("patternProperties") if isinstance(s.get("patternProperties"), dict) else {}
            maps += [(f"keys matching {k[:40]!r}", f"{pointer}/patternProperties/{pointer_escape(k)}", v)
                     for k, v in patterns.items() if isinstance(v, dict)]
            if len(maps) == 1 and not fields:
                value = self.param("value", maps[0][2], True, maps[0][1], where, trail, depth)
                return f"dict[str, {value.type}]", value.properties, value.variants
            for what, at, schema in maps:
                _, more = self.fields(schema, at, where, trail, depth + 1)
                if more:
                    self.note(where, f"its {what} follow a schema with fields {', '.join(f.name for f in more[:8])}; "
                                     "those are not kept as named fields")
            return "dict", fields, []
        return _SCALAR.get(str(t), "Any") if t is not None else "Any", [], []

    def _object_fields(self, s: dict, pointer: str, where: str, trail: tuple[str, ...],
                       depth: int) -> list[ParamSpec]:
        props = s.get("properties")
        if not isinstance(props, dict) or not props:
            props = {}
        more = s.get("x-more-unions") or []
        if depth >= MAX_DEPTH and (props or more):
            self.note(where, f"{len(props)} fields nested deeper than {MAX_DEPTH} levels are not kept "
                             f"({', '.join(list(props)[:6])})")
            return []
        required = set(s.get("required") or []) if isinstance(s.get("required"), list) else set()
        out: list[ParamSpec] = []
        for name, sub in props.items():
            sub_pointer = f"{pointer}/properties/{pointer_escape(name)}"
            peek = self.deref(sub, sub_pointer, trail, f"{where}.{name}")
            flag = "readOnly" if self.mode == "request" else "writeOnly"
            if peek is not None and peek[0].get(flag) is True:
                self.note(f"{where}.{name}".lstrip("."), f"left out: {flag} (the "
                          f"{'server sets it' if flag == 'readOnly' else 'server never returns it'})")
                continue
            out.append(self.param(str(name), sub, name in required, sub_pointer, f"{where}.{name}".lstrip("."),
                                  trail, depth + 1))
        for i, option in enumerate(more):
            _, extra = self.fields(option, f"{pointer}/allOf", where, trail, depth + 1)
            out = _merge([out, [_optional(f) for f in extra]], required_in_all=False)
        return out

    def _union(self, s: dict, key: str, pointer: str, where: str, trail: tuple[str, ...],
               depth: int) -> tuple[str, list[ParamSpec], list[dict[str, Any]]]:
        inherited = {k: s[k] for k in _INHERITED if k in s}
        own = {k: v for k, v in s.items() if k not in (key, "nullable")}
        own_fields = self._object_fields(own, pointer, where, trail, depth) \
            if own.get("properties") or own.get("x-more-unions") else []
        types, member_fields, variants = [], [], []
        for i, member in enumerate(s[key]):
            got = self.deref(member, f"{pointer}/{key}/{i}", trail, where)
            name = str(member.get("$ref", "")).rsplit("/", 1)[-1] if isinstance(member, dict) else ""
            if got is None:
                self.note(where, f"{key} member {name or i + 1} contains this schema; its fields are listed "
                                 "where it first appears")
                types.append("dict")
                variants.append({"name": name or f"option {i + 1}", "type": "dict", "fields": []})
                continue
            m, mp, mt = got
            m = self.flatten(m, mp, mt, where)
            eff = {**{k: v for k, v in inherited.items() if k not in m}, **m}
            if "type" not in m and ("properties" in m) and inherited.get("type") not in (None, "object"):
                eff.pop("type", None)
            mtype, fields, _ = self.shape(eff, mp, where, mt, depth)
            types.append(mtype)
            member_fields.append(fields)
            variant = {"name": str(m.get("title") or name or f"option {i + 1}"), "type": mtype,
                       "fields": [f.name for f in fields]}
            if isinstance(m.get("enum"), list):
                variant["enum"] = [v for v in m["enum"] if v is not None]
            variants.append(variant)
        if s.get("nullable") is True:
            types.append("None")
        if len([v for v in variants if v["type"] != "None"]) < 2 or not any(v["fields"] or v.get("enum")
                                                                             for v in variants):
            variants = []  # Optional[X], or constraints on one type: the type says it all
        fields = _merge([own_fields, _merge(member_fields, required_in_all=True)], required_in_all=False)
        if own_fields:
            own_names = {f.name for f in own_fields}
            fields = own_fields + [f for f in fields if f.name not in own_names]
        return union_type(types), fields, variants


def _extras(schema: dict) -> dict:
    """A second union beside ``anyOf`` (``oneOf`` too), ``then``/``else`` and ``dependentSchemas``:
    their members' fields join the schema's as optional fields (``x-more-unions``)."""
    if _EXTRA_KEYS.isdisjoint(schema) and not ("anyOf" in schema and "oneOf" in schema):
        return schema
    more = [schema["oneOf"]] if isinstance(schema.get("anyOf"), list) and isinstance(schema.get("oneOf"), list) else []
    more += [[schema[k]] for k in ("then", "else") if isinstance(schema.get(k), dict)]
    for key in ("dependentSchemas", "dependencies"):
        if isinstance(schema.get(key), dict):
            more.append([v for v in schema[key].values() if isinstance(v, dict)])
    if not more:
        return schema
    out = {k: v for k, v in schema.items() if k not in ("then", "else", "dependentSchemas", "dependencies")}
    if more and isinstance(schema.get("anyOf"), list) and isinstance(schema.get("oneOf"), list):
        out.pop("oneOf")
    out["x-more-unions"] = list(schema.get("x-more-unions") or []) + [m for group in more for m in group]
    return out


def _enum_type(values: Any) -> str | None:
    if not isinstance(values, list) or not values:
        return None
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {bool}:
        return "boolean"
    if kinds <= {int}:
        return "integer"
    if kinds <= {int, float}:
        return "number"
    return "string"


def _optional(p: ParamSpec) -> ParamSpec:
    p.required = False
    return p


def _merge(groups: list[list[ParamSpec]], *, required_in_all: bool) -> list[ParamSpec]:
    """Fields of several schemas as one list, each name once (the first spelling kept). With
    ``required_in_all`` a field is required only when every non-empty group has it required."""
    out: dict[str, ParamSpec] = {}
    present = [g for g in groups if g]
    for group in present:
        for f in group:
            if f.name not in out:
                out[f.name] = f
    if required_in_all and len(present) > 1:
        for name, f in out.items():
            f.required = all(any(g.name == name and g.required for g in group) for group in present)
    return list(out.values())


def type_of(schema: Any) -> str:
    """The type string of a schema without references (see :class:`Fields`)."""
    if not isinstance(schema, dict) or not schema:
        return "Any"
    if _COMPOSITE.isdisjoint(schema):  # the common case, without building a reader
        t = schema.get("type")
        if t.__class__ is str and "nullable" not in schema:
            return _NAMED.get(t, "Any")
        if t is None:
            t = _enum_type(schema.get("enum") if "enum" in schema else [schema["const"]] if "const" in schema else None)
        names = [_NAMED.get(x, "Any") for x in (t if isinstance(t, list) else [t])]
        return union_type(names + (["None"] if schema.get("nullable") is True else []))
    reader = Fields()
    try:
        return reader.shape(reader.flatten(schema, "", (), ""), "", "", (), 0)[0]
    except ApiFormatError:  # a $ref with no document to look in
        return "Any"

"""A server-rendered API reference built from the OpenAPI schema (no CDN assets needed)."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView

from almita_web.api.common import role_permission
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, role_required

ANY_ROLE = (ADMIN, ANNOTATOR, ADJUDICATOR, RESEARCHER)
METHODS = ("get", "post", "put", "patch", "delete")


class SchemaView(SpectacularAPIView):
    permission_classes = [role_permission(*ANY_ROLE)]


def _type(schema: dict[str, Any]) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    if schema.get("enum"):
        return " | ".join(map(str, schema["enum"]))
    return str(schema.get("type", ""))


def _operations(schema: dict[str, Any]) -> list[dict[str, Any]]:
    ops = []
    for path, item in sorted(schema.get("paths", {}).items()):
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            body = op.get("requestBody", {}).get("content", {})
            ops.append({
                "method": method.upper(), "path": path, "summary": op.get("summary", ""),
                "description": op.get("description", ""), "tag": (op.get("tags") or [""])[0],
                "parameters": [{"name": p["name"], "in": p["in"], "type": _type(p.get("schema", {})),
                                "required": p.get("required", False), "description": p.get("description", "")}
                               for p in op.get("parameters", [])],
                "body": ", ".join(sorted({_type(v.get("schema", {})) for v in body.values()})),
                "responses": ", ".join(sorted(op.get("responses", {}))),
            })
    return ops


@role_required(*ANY_ROLE)
def api_docs(request: HttpRequest) -> HttpResponse:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    models = [{"name": name, "fields": [{"name": f, "type": _type(s), "read_only": s.get("readOnly", False)}
                                        for f, s in spec.get("properties", {}).items()]}
              for name, spec in sorted(components.items())]
    return render(request, "api/docs.html", {"info": schema.get("info", {}), "operations": _operations(schema),
                                             "models": models})

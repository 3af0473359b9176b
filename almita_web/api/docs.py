"""A server-rendered API reference built from the OpenAPI schema (no CDN assets needed)."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from almita_web.api.common import role_permission
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, role_required

ANY_ROLE = (ADMIN, ANNOTATOR, ADJUDICATOR, RESEARCHER)
METHODS = ("get", "post", "put", "patch", "delete")


class SchemaView(SpectacularAPIView):
    permission_classes = [role_permission(*ANY_ROLE)]

    def handle_exception(self, exc):
        # The schema renders as YAML by default; an error must not download as a YAML file.
        response = super().handle_exception(exc)
        if response.status_code >= 400:
            json_response = JsonResponse(response.data, status=response.status_code)
            if response.has_header("WWW-Authenticate"):
                json_response["WWW-Authenticate"] = response["WWW-Authenticate"]
            return json_response
        return response


def _wants_html(request: HttpRequest) -> bool:
    return "text/html" in request.headers.get("Accept", "")


def _token_user(request: HttpRequest):
    """The user of an `Authorization: Token …` header (None when absent or invalid)."""
    try:
        result = TokenAuthentication().authenticate(request)
    except AuthenticationFailed:
        return None
    return result[0] if result else None


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


def api_docs(request: HttpRequest) -> HttpResponse:
    """The reference page: a session (browser) or an API token; without either, a browser goes to
    the login page and any other client gets a 401 in JSON like the rest of the API."""
    if not request.user.is_authenticated:
        user = _token_user(request)
        if user is None:
            if _wants_html(request) and "HTTP_AUTHORIZATION" not in request.META:
                return redirect_to_login(request.get_full_path())
            return JsonResponse({"detail": "Authentication credentials were not provided or are invalid."},
                                status=401, headers={"WWW-Authenticate": "Token"})
        request.user = user
    return _api_docs(request)


@role_required(*ANY_ROLE)
def _api_docs(request: HttpRequest) -> HttpResponse:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema.get("components", {}).get("schemas", {})
    models = [{"name": name, "fields": [{"name": f, "type": _type(s), "read_only": s.get("readOnly", False)}
                                        for f, s in spec.get("properties", {}).items()]}
              for name, spec in sorted(components.items())]
    return render(request, "api/docs.html", {"info": schema.get("info", {}), "operations": _operations(schema),
                                             "models": models})

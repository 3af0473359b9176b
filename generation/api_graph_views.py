"""The API compatibility graph page (researchers, admins): one procedure's APIs or every API in
the database, drawn with Graphviz by the worker (generation.drawing_cache), edges labelled with
the matched fields; and the small JSON URL pages poll for a drawing the worker is making."""
from __future__ import annotations

from django import forms
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from almita_web.bounds import BoundedModelChoiceField
from almita_web.roles import ADMIN, RESEARCHER, has_role, request_roles, role_required
from generation import api_graphs as AG
from generation import drawing_cache
from generation.models import Procedure
from generation.pipeline import api_graph as G


class ApiGraphForm(forms.Form):
    procedure = BoundedModelChoiceField(queryset=Procedure.objects.order_by("-id"), required=False,
                                       empty_label="Every API in the database")
    min_score = forms.FloatField(min_value=0.0, max_value=1.0, initial=G.DEFAULT_MIN_SCORE, required=False)


@require_GET
@role_required(RESEARCHER, ADMIN)
def api_graph(request: HttpRequest) -> HttpResponse:
    form = ApiGraphForm(request.GET or None)
    ctx: dict = {"form": form, "edges": [], "svg": "", "error": ""}
    if not request.GET or form.is_valid():
        data = form.cleaned_data if request.GET else {}
        procedure = data.get("procedure")
        min_score = data.get("min_score")
        min_score = G.DEFAULT_MIN_SCORE if min_score is None else min_score
        apis = AG.nodes_from_db(procedure.pk if procedure else None)
        edges, similarity = AG.build(apis, min_score=min_score)
        ctx.update(apis=apis, edges=edges, similarity=similarity, min_score=min_score,
                   chains=G.chains(edges, length=2, limit=20))
        if apis:
            drawing = drawing_cache.drawing_for("api_graph", G.graph_to_dot(apis, edges), len(apis), len(edges))
            # Graphviz writes the labels as escaped XML text; the SVG is inlined as it comes.
            ctx.update(drawing=drawing, svg=mark_safe(drawing["svg"]), error="" if drawing["svg"] else drawing["error"])  # noqa: S308
    return render(request, "generation/api_graph.html", ctx)


@require_GET
def drawing_poll(request: HttpRequest, kind: str, key: str) -> JsonResponse:
    """{"ready", "svg", "error"} of a drawing the worker is making (generation.drawing_cache);
    only for the roles of the page that shows that kind."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    roles = drawing_cache.KINDS.get(kind)
    if roles is None or len(key) != 40 or any(c not in "0123456789abcdef" for c in key):
        raise Http404("no such drawing")
    request_roles(request)
    if not has_role(request.user, *roles):
        raise PermissionDenied(f"This drawing needs the role: {' or '.join(roles)}")
    got = drawing_cache.stored(kind, key)
    resp = JsonResponse({"ready": got is not None, "svg": (got or {}).get("svg", ""), "error": (got or {}).get("error", "")})
    resp["Cache-Control"] = "no-store"
    return resp

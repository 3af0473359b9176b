"""The API compatibility graph page (researchers, admins): one procedure's APIs or every API in
the database, drawn with Graphviz, edges labelled with the matched fields."""
from __future__ import annotations

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from almita_web.bounds import BoundedModelChoiceField
from almita_web.roles import ADMIN, RESEARCHER, role_required
from generation import api_graphs as AG
from generation.models import Procedure
from generation.pipeline import api_graph as G
from generation.pipeline.render import GraphvizMissing


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
            try:
                # Graphviz writes the labels as escaped XML text; the SVG is inlined as it comes.
                ctx["svg"] = mark_safe(AG.dot_to_svg(G.graph_to_dot(apis, edges), nodes=len(apis), edges=len(edges)))  # noqa: S308
            except (GraphvizMissing, RuntimeError) as exc:
                ctx["error"] = str(exc)
    return render(request, "generation/api_graph.html", ctx)

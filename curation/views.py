from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from almita_web.roles import ADJUDICATOR, ANNOTATOR, role_required


@role_required(ANNOTATOR)
def queue(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/queue.html", {})


@role_required(ADJUDICATOR)
def adjudication(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/adjudication.html", {})

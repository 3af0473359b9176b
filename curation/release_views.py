from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from almita_web.roles import RESEARCHER, role_required
from curation.models import Release


@role_required(RESEARCHER)
def releases(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/releases.html", {"releases": Release.objects.all()[:100]})

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from almita_web.roles import ADMIN, role_required
from generation.models import GenerationJob


@role_required(ADMIN)
def dashboard(request: HttpRequest) -> HttpResponse:
    jobs = GenerationJob.objects.all()[:50]
    return render(request, "generation/dashboard.html", {"jobs": jobs})

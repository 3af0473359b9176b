from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from almita_web.home import home_context
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, request_roles

# Where each role's work starts, in the order the home page lists them.
ROLE_DESTINATIONS = [
    (ADMIN, "generation:dashboard", "Generation jobs", "Launch and watch generation jobs, their yield and cost."),
    (ANNOTATOR, "curation:queue", "Review queue", "Accept or reject generated items, blind to other annotators."),
    (ADJUDICATOR, "curation:adjudication", "Adjudication", "Resolve the items two annotators disagreed on."),
    (RESEARCHER, "datasets:releases", "Datasets", "Create curated, versioned releases and download them."),
    (RESEARCHER, "evaluation:runs", "Evaluation", "Evaluate agents on releases and compare runs."),
]


@login_required
def home(request: HttpRequest) -> HttpResponse:
    roles = request_roles(request)
    cards = [
        {"role": role, "url": reverse(name), "title": title, "text": text}
        for role, name, title, text in ROLE_DESTINATIONS
        if role in roles or ADMIN in roles
    ]
    # Every role has a home (issue #31): what waits for the user, their progress, and the
    # releases, runs and jobs they follow. It used to send one-destination roles straight on.
    return render(request, "home.html", {"cards": cards, **home_context(request.user, roles)})


def healthz(request: HttpRequest) -> HttpResponse:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")

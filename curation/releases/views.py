"""Researchers' dataset pages: releases with their cards, the create form, streaming downloads."""
from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import RESEARCHER, role_required
from curation.models import Release
from curation.releases.exports import BUNDLES, download_name, file_sources, zip_chunks
from curation.releases.forms import ReleaseForm
from curation.releases.services import ReleaseError, release_create, release_preview

CONTENT_TYPES = {
    ".csv": "text/csv; charset=utf-8", ".jsonl": "application/jsonl; charset=utf-8",
    ".md": "text/markdown; charset=utf-8", ".json": "application/json", ".zip": "application/zip",
}
DOWNLOADS = ["tests.csv", "tests.jsonl", "conversations.jsonl", "graphs.jsonl", "procedures.jsonl",
             "jsonl.zip", "hf.zip", "README.md", "manifest.json"]


@role_required(RESEARCHER)
@require_GET
def releases(request: HttpRequest) -> HttpResponse:
    return render(request, "curation/releases.html", {
        "releases": Release.objects.select_related("created_by")[:100],
        "form": ReleaseForm(),
        "downloads": DOWNLOADS,
    })


@role_required(RESEARCHER)
@require_POST
def release_new(request: HttpRequest) -> HttpResponse:
    form = ReleaseForm(request.POST)
    preview = None
    if form.is_valid():
        try:
            preview = release_preview(kind=form.cleaned_data["kind"], filters=form.filters())
        except ReleaseError as exc:
            form.add_error(None, str(exc))
    if preview is not None and request.POST.get("preview"):
        return render(request, "curation/releases.html", {
            "releases": Release.objects.select_related("created_by")[:100], "form": form, "downloads": DOWNLOADS,
            "preview": preview,
        })
    if preview is not None:
        try:
            release = release_create(
                name=form.cleaned_data["name"], kind=form.cleaned_data["kind"], filters=form.filters(),
                created_by=request.user, licence=form.cleaned_data["licence"],
            )
        except ReleaseError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Created {release} with {release.manifest['counts'].get('tests', 0)} tests.")
            return redirect("datasets:release", pk=release.pk)
    return render(request, "curation/releases.html", {
        "releases": Release.objects.select_related("created_by")[:100], "form": form, "downloads": DOWNLOADS,
        "preview": preview,
    }, status=400)


@role_required(RESEARCHER)
@require_GET
def release_detail(request: HttpRequest, pk: int) -> HttpResponse:
    release = get_object_or_404(Release.objects.select_related("created_by"), pk=pk)
    from curation.loop.services import release_loop_context  # i15
    from curation.releases.preview import release_preview  # issue #16: first tests as a table

    return render(request, "curation/release_detail.html", {"release": release, "downloads": DOWNLOADS,
                                                            "preview": release_preview(release),
                                                            **release_loop_context(release, request.user)})


def stream_release_file(release: Release, file: str) -> StreamingHttpResponse:
    """The streaming response both the page and the REST API use."""
    if file in BUNDLES:
        chunks = zip_chunks(BUNDLES[file](release))
    else:
        sources = file_sources(release)
        if file not in sources:
            raise Http404("no such file")
        chunks = sources[file]()
    ext = "." + file.rsplit(".", 1)[-1]
    response = StreamingHttpResponse(chunks, content_type=CONTENT_TYPES.get(ext, "application/octet-stream"))
    response["Content-Disposition"] = f'attachment; filename="{download_name(release, file)}"'
    response["X-Content-Hash"] = release.content_hash
    return response


@role_required(RESEARCHER)
@require_GET
def release_download(request: HttpRequest, pk: int, file: str) -> StreamingHttpResponse:
    release = get_object_or_404(Release, pk=pk)
    if file not in DOWNLOADS:
        raise Http404("no such file")
    return stream_release_file(release, file)

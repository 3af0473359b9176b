"""The admins' upload page for imports (see generation.imports and docs/import-format.md)."""
from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from almita_web.roles import ADMIN, role_required
from generation.imports import FORMATS, MAX_BYTES, ImportFormatError, items_import


class ImportForm(forms.Form):
    file = forms.FileField(help_text="JSON, JSON Lines or YAML")
    format = forms.ChoiceField(choices=list(FORMATS.items()), initial="auto")
    name = forms.CharField(required=False, max_length=200,
                           help_text="API lists: the name of the intent and procedure created for them")
    procedure_file = forms.FileField(required=False, help_text="API lists: the procedure (policy) text, e.g. a wiki.md")
    lenient = forms.BooleanField(required=False, label="Lenient Mermaid",
                                 help_text="Import malformed flowcharts as far as they can be read, with a report "
                                           "(by default they are refused with the line and column of each problem)")

    def clean_file(self):
        f = self.cleaned_data["file"]
        if f.size > MAX_BYTES:
            raise forms.ValidationError(f"The file is larger than {MAX_BYTES // (1024 * 1024)} MB.")
        return f

    def clean_procedure_file(self):
        f = self.cleaned_data.get("procedure_file")
        if not f:
            return ""
        if f.size > MAX_BYTES:
            raise forms.ValidationError("The procedure file is too large.")
        try:
            return f.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The procedure file is not UTF-8 text.") from None


@role_required(ADMIN)
@require_http_methods(["GET", "POST"])
def import_upload(request: HttpRequest) -> HttpResponse:
    form = ImportForm(request.POST or None, request.FILES or None)
    refusal = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        stem = upload.name.rsplit(".", 1)[0] or "imported"
        try:
            result = items_import(
                raw=upload.read(), fmt=form.cleaned_data["format"],
                name=form.cleaned_data["name"] or stem, procedure_text=form.cleaned_data["procedure_file"],
                lenient=form.cleaned_data["lenient"], source=upload.name,
            )
        except ImportFormatError as exc:
            refusal = str(exc)
        else:
            messages.success(request, f"{upload.name}: {result.summary()}")
            # The whole report is shown once on the next page (a message per line would be capped
            # by the cookie; the session holds any length).
            request.session[REPORT_KEY] = {"file": upload.name, "notes": result.notes}
            return redirect("imports:upload")
    status = 400 if request.method == "POST" else 200
    report = request.session.pop(REPORT_KEY, None) if request.method == "GET" else None
    if report:
        notes = report.get("notes") or []
        report = {"file": report.get("file", ""), "dropped": [n for n in notes if n.startswith(_DROPPED)],
                  "notes": [n for n in notes if not n.startswith(_DROPPED)]}
    return render(request, "generation/import.html",
                  {"form": form, "refusal": refusal, "formats": FORMATS, "report": report}, status=status)


REPORT_KEY = "import_report"
_DROPPED = "not kept: "

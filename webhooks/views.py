"""Webhook pages, for admins: access check → form → service → redirect (or the one page that
shows a new secret, once, never cached)."""
from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from almita_web.roles import ADMIN, role_required
from webhooks import services
from webhooks.forms import WebhookForm
from webhooks.models import EVENTS, Webhook


def _list(request: HttpRequest, form: WebhookForm, status: int = 200) -> HttpResponse:
    return render(request, "webhooks/list.html", {"webhooks": Webhook.objects.all(), "form": form, "events": EVENTS},
                  status=status)


@require_GET
@role_required(ADMIN)
def webhook_list(request: HttpRequest) -> HttpResponse:
    return _list(request, WebhookForm())


@never_cache
@require_POST
@role_required(ADMIN)
def webhook_create(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST)
    if not form.is_valid():
        return _list(request, form, status=400)
    try:
        hook, secret = services.webhook_create(**form.cleaned_data, created_by=request.user)
    except services.WebhookError as exc:
        form.add_error(None, str(exc))
        return _list(request, form, status=400)
    shown = None if form.cleaned_data.get("secret") else secret
    return render(request, "webhooks/secret.html", {"webhook": hook, "secret": shown, "created": True})


@require_GET
@role_required(ADMIN)
def webhook_detail(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = get_object_or_404(Webhook, pk=webhook_id)
    page = Paginator(hook.deliveries.all(), 50).get_page(request.GET.get("page"))
    return render(request, "webhooks/detail.html", {"webhook": hook, "page": page, "event_labels": dict(EVENTS)})


@require_POST
@role_required(ADMIN)
def webhook_test(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = get_object_or_404(Webhook, pk=webhook_id)
    delivery = services.send_test_event(webhook=hook, user=request.user)
    messages.success(request, f"Test event queued (delivery {delivery.uuid}); refresh to see the outcome.")
    return redirect("webhooks:detail", webhook_id=hook.pk)


@require_POST
@role_required(ADMIN)
def webhook_active(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = get_object_or_404(Webhook, pk=webhook_id)
    services.webhook_set_active(webhook=hook, active=request.POST.get("active") == "1")
    return redirect("webhooks:detail", webhook_id=hook.pk)


@never_cache
@require_POST
@role_required(ADMIN)
def webhook_rotate(request: HttpRequest, webhook_id: int) -> HttpResponse:
    hook = get_object_or_404(Webhook, pk=webhook_id)
    secret = services.webhook_rotate_secret(webhook=hook)
    hook.refresh_from_db()
    return render(request, "webhooks/secret.html", {"webhook": hook, "secret": secret, "created": False})

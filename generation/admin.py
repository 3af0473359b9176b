from django.contrib import admin
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User

from almita_web.admin_site import RoleModelAdmin, site
from generation import models as m

ARTIFACT_FILTERS = ("status", "origin", "job")


class UserRoleAdmin(UserAdmin, RoleModelAdmin):
    pass


class GroupRoleAdmin(GroupAdmin, RoleModelAdmin):
    pass


site.register(User, UserRoleAdmin)
site.register(Group, GroupRoleAdmin)


@admin.register(m.GenerationJob, site=site)
class GenerationJobAdmin(RoleModelAdmin):
    list_display = ("id", "name", "status", "created_by", "created_at", "finished_at", "cost_usd")
    list_filter = ("status", "created_at")
    search_fields = ("name",)


@admin.register(m.Intent, site=site)
class IntentAdmin(RoleModelAdmin):
    list_display = ("id", "name", "client", "status", "origin", "job")
    list_filter = ARTIFACT_FILTERS
    search_fields = ("name", "client", "issue")


@admin.register(m.Procedure, site=site)
class ProcedureAdmin(RoleModelAdmin):
    list_display = ("id", "__str__", "intent", "status", "origin", "job")
    list_filter = ARTIFACT_FILTERS
    search_fields = ("title", "text")


@admin.register(m.Api, site=site)
class ApiAdmin(RoleModelAdmin):
    list_display = ("id", "name", "procedure", "output_type", "status", "origin")
    list_filter = ARTIFACT_FILTERS
    search_fields = ("name", "description")


@admin.register(m.Flowgraph, site=site)
class FlowgraphAdmin(RoleModelAdmin):
    list_display = ("id", "procedure", "status", "origin", "job")
    list_filter = ARTIFACT_FILTERS


@admin.register(m.ConversationGraph, site=site)
class ConversationGraphAdmin(RoleModelAdmin):
    list_display = ("id", "flowgraph", "mode", "noise_rate", "status", "origin", "job")
    list_filter = ARTIFACT_FILTERS + ("mode",)


@admin.register(m.SampledPath, site=site)
class SampledPathAdmin(RoleModelAdmin):
    list_display = ("id", "conversation_graph", "sampler", "seed", "index", "status")
    list_filter = ARTIFACT_FILTERS + ("sampler",)


@admin.register(m.Conversation, site=site)
class ConversationAdmin(RoleModelAdmin):
    list_display = ("id", "procedure", "path", "mode", "status", "origin", "job")
    list_filter = ARTIFACT_FILTERS + ("mode",)


@admin.register(m.Test, site=site)
class TestAdmin(RoleModelAdmin):
    list_display = ("id", "conversation", "position", "expected_type", "expected_api_name", "status")
    list_filter = ARTIFACT_FILTERS + ("expected_type",)


@admin.register(m.StageProgress, site=site)
class StageProgressAdmin(RoleModelAdmin):
    list_display = ("job", "stage", "total", "done", "passed", "discarded", "failed")
    list_filter = ("stage", "job")


@admin.register(m.Discard, site=site)
class DiscardAdmin(RoleModelAdmin):
    list_display = ("job", "stage", "key", "reason", "created_at")
    list_filter = ("stage", "reason", "job")


@admin.register(m.LLMCall, site=site)
class LLMCallAdmin(RoleModelAdmin):
    list_display = ("id", "job", "stage", "key", "model", "template", "repair", "attempt", "outcome", "validated",
                    "prompt_tokens", "tokens_estimated", "latency_ms")
    list_filter = ("stage", "outcome", "validated", "tokens_estimated", "output_form", "model", "job")
    search_fields = ("prompt_hash", "key")


@admin.register(m.EndpointCapability, site=site)
class EndpointCapabilityAdmin(RoleModelAdmin):
    list_display = ("endpoint", "model", "provider", "structured_outputs", "batches", "checked_at")


@admin.register(m.LLMBatch, site=site)
class LLMBatchAdmin(RoleModelAdmin):
    list_display = ("id", "job", "remote_id", "status", "remote_status", "requests", "succeeded", "failed", "expired",
                    "created_at", "finished_at")
    list_filter = ("status", "job")


@admin.register(m.BatchRequest, site=site)
class BatchRequestAdmin(RoleModelAdmin):
    list_display = ("id", "job", "stage", "key", "state", "attempts", "batch", "created_at")
    list_filter = ("state", "stage", "job")
    search_fields = ("key", "digest")


@admin.register(m.ItemClaim, site=site)
class ItemClaimAdmin(RoleModelAdmin):
    list_display = ("job", "stage", "key", "owner", "delivery", "claimed_at")
    list_filter = ("stage", "job")
    search_fields = ("key", "owner")


@admin.register(m.WorkerHeartbeat, site=site)
class WorkerHeartbeatAdmin(RoleModelAdmin):
    list_display = ("created_at", "hostname", "pid", "broker")


@admin.register(m.GapFill, site=site)
class GapFillAdmin(RoleModelAdmin):
    list_display = ("id", "job", "conversation_graph", "index", "attempt", "created_at")
    list_filter = ("attempt",)

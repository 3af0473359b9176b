from django.contrib import admin

from almita_web.admin_site import RoleModelAdmin, site
from evaluation import models as m


@admin.register(m.Agent, site=site)
class AgentAdmin(RoleModelAdmin):
    list_display = ("name", "mode", "knowledge", "model", "temperature")
    list_filter = ("mode", "knowledge")


@admin.register(m.EvaluationRun, site=site)
class EvaluationRunAdmin(RoleModelAdmin):
    list_display = ("id", "agent", "release", "status", "similarity", "done", "total", "created_at")
    list_filter = ("status", "agent", "release")


@admin.register(m.TestResult, site=site)
class TestResultAdmin(RoleModelAdmin):
    list_display = ("run", "entry", "state", "predicted_type", "correct", "similarity", "error")
    list_filter = ("state", "correct", "predicted_type", "run")
    raw_id_fields = ("entry", "llm_call")


@admin.register(m.SessionRun, site=site)
class SessionRunAdmin(RoleModelAdmin):
    list_display = ("id", "agent", "release", "status", "max_turns", "done", "total", "created_at")
    list_filter = ("status", "agent", "release")


@admin.register(m.SessionResult, site=site)
class SessionResultAdmin(RoleModelAdmin):
    list_display = ("run", "conversation_id", "state", "success", "accomplished", "total_goals", "turns", "ended_by")
    list_filter = ("state", "success", "run")

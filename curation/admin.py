from django.contrib import admin

from almita_web.admin_site import RoleModelAdmin, site
from curation import models as m


@admin.register(m.ReviewItem, site=site)
class ReviewItemAdmin(RoleModelAdmin):
    list_display = ("id", "stage", "object_id", "state", "decision", "required_reviews", "has_warnings")
    list_filter = ("stage", "state", "decision", "has_warnings")


@admin.register(m.Claim, site=site)
class ClaimAdmin(RoleModelAdmin):
    list_display = ("item", "annotator", "claimed_at", "expires_at")
    list_filter = ("annotator",)


@admin.register(m.Skip, site=site)
class SkipAdmin(RoleModelAdmin):
    list_display = ("item", "annotator", "reason", "created_at")
    list_filter = ("annotator",)


@admin.register(m.Review, site=site)
class ReviewAdmin(RoleModelAdmin):
    list_display = ("item", "annotator", "verdict", "created_at")
    list_filter = ("verdict", "item__stage", "annotator")


@admin.register(m.Resolution, site=site)
class ResolutionAdmin(RoleModelAdmin):
    list_display = ("item", "adjudicator", "decision", "created_at")
    list_filter = ("decision", "item__stage")


@admin.register(m.AuditEvent, site=site)
class AuditEventAdmin(RoleModelAdmin):
    list_display = ("at", "actor", "action", "item")
    list_filter = ("action", "actor")


@admin.register(m.Release, site=site)
class ReleaseAdmin(RoleModelAdmin):
    list_display = ("name", "version", "kind", "created_by", "created_at", "content_hash")
    list_filter = ("kind", "created_at")


@admin.register(m.ReleaseTest, site=site)
class ReleaseTestAdmin(RoleModelAdmin):
    list_display = ("release", "test_id", "conversation_id", "position")
    list_filter = ("release",)

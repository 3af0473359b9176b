"""The admin site is open to the admin role only (almita_web.admin_site), so verdicts shown here
are never seen by an annotator: admins are the one role allowed past the blind rule."""
from django.contrib import admin

from almita_web.admin_site import RoleModelAdmin, site
from curation import models as m


@admin.register(m.ReviewItem, site=site)
class ReviewItemAdmin(RoleModelAdmin):
    list_display = ("id", "stage", "object_id", "state", "decision", "review_count", "required_reviews",
                    "has_warnings", "excluded")
    list_filter = ("stage", "state", "decision", "has_warnings", "excluded")
    # Counters and decisions move only through curation.reviews.services, which keep them consistent.
    readonly_fields = ("review_count", "state", "decision", "decided_at", "excluded")


@admin.register(m.Claim, site=site)
class ClaimAdmin(RoleModelAdmin):
    list_display = ("item", "annotator", "claimed_at", "expires_at")
    list_filter = ("annotator",)


@admin.register(m.Assignment, site=site)
class AssignmentAdmin(RoleModelAdmin):
    list_display = ("item", "annotator", "assigned_by", "created_at", "active", "released_at")
    list_filter = ("active", "annotator")
    # Assign and release through the explorer or the API (curation.reviews.assignment): they check
    # the item's places under its lock and write the audit log.
    readonly_fields = ("item", "annotator", "assigned_by", "created_at", "active", "released_at")


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
    list_display = ("at", "actor", "action", "item", "before", "after")
    list_filter = ("action", "actor")
    readonly_fields = ("actor", "action", "item", "before", "after", "at")

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # the audit log is append-only

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(m.Release, site=site)
class ReleaseAdmin(RoleModelAdmin):
    list_display = ("name", "version", "kind", "created_by", "created_at", "content_hash")
    list_filter = ("kind", "created_at")


@admin.register(m.ReleaseTest, site=site)
class ReleaseTestAdmin(RoleModelAdmin):
    list_display = ("release", "test_id", "conversation_id", "position")
    list_filter = ("release",)


@admin.register(m.ReleaseRecord, site=site)
class ReleaseRecordAdmin(RoleModelAdmin):
    list_display = ("release", "kind", "object_id")
    list_filter = ("release", "kind")


# Issue #16's rows: flags, review metadata, gold items, guideline versions.
@admin.register(m.Flag, site=site)
class FlagAdmin(RoleModelAdmin):
    list_display = ("review", "kind", "target", "reason")
    list_filter = ("kind", "reason")


@admin.register(m.ReviewMeta, site=site)
class ReviewMetaAdmin(RoleModelAdmin):
    list_display = ("review", "seconds", "guideline_version")


@admin.register(m.GoldItem, site=site)
class GoldItemAdmin(RoleModelAdmin):
    list_display = ("item", "expected", "origin", "mutation", "created_at")
    list_filter = ("origin", "expected")


@admin.register(m.GuidelineVersion, site=site)
class GuidelineVersionAdmin(RoleModelAdmin):
    list_display = ("stage", "version", "created_by", "created_at")
    list_filter = ("stage",)


@admin.register(m.Comment, site=site)
class CommentAdmin(RoleModelAdmin):
    list_display = ("item", "author", "created_at")
    list_filter = ("item__stage",)


@admin.register(m.Notification, site=site)
class NotificationAdmin(RoleModelAdmin):
    list_display = ("user", "kind", "item", "created_at", "read_at", "emailed_at")
    list_filter = ("kind",)


@admin.register(m.ArtifactVersion, site=site)
class ArtifactVersionAdmin(RoleModelAdmin):
    list_display = ("stage", "object_id", "number", "change", "editor", "created_at")
    list_filter = ("stage", "change")


@admin.register(m.CorrectionMark, site=site)
class CorrectionMarkAdmin(RoleModelAdmin):
    list_display = ("stage", "object_id", "kind", "version", "created_at")
    list_filter = ("stage", "kind")

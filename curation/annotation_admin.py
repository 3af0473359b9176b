"""Admin views of issue #16's rows (flags, review metadata, gold items, guideline versions)."""
from django.contrib import admin

from almita_web.admin_site import RoleModelAdmin, site
from curation.annotation_models import Flag, GoldItem, GuidelineVersion, ReviewMeta


@admin.register(Flag, site=site)
class FlagAdmin(RoleModelAdmin):
    list_display = ("review", "kind", "target", "reason")
    list_filter = ("kind", "reason")


@admin.register(ReviewMeta, site=site)
class ReviewMetaAdmin(RoleModelAdmin):
    list_display = ("review", "seconds", "guideline_version")


@admin.register(GoldItem, site=site)
class GoldItemAdmin(RoleModelAdmin):
    list_display = ("item", "expected", "origin", "mutation", "created_at")
    list_filter = ("origin", "expected")


@admin.register(GuidelineVersion, site=site)
class GuidelineVersionAdmin(RoleModelAdmin):
    list_display = ("stage", "version", "created_by", "created_at")
    list_filter = ("stage",)

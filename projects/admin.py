from django.contrib import admin

from almita_web.admin_site import RoleModelAdmin, site
from projects.models import Membership, Project


@admin.register(Project, site=site)
class ProjectAdmin(RoleModelAdmin):
    list_display = ("name", "slug", "reviews_per_item", "claim_minutes", "llm_base_url", "llm_key_env")


@admin.register(Membership, site=site)
class MembershipAdmin(RoleModelAdmin):
    list_display = ("user", "project", "role")
    list_filter = ("project", "role")

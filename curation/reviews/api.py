"""REST API for the caller's own reviews (blind-safe)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, viewsets

from almita_web.api.common import FilterMixin, Pagination, filter_parameters, role_permission
from almita_web.roles import ADJUDICATOR, ADMIN, ANNOTATOR, RESEARCHER, has_role
from curation.models import Flag, Review


class FlagSerializer(serializers.ModelSerializer):
    class Meta:
        model = Flag
        fields = ["kind", "target", "reason", "comment"]


class ReviewSerializer(serializers.ModelSerializer):
    stage = serializers.CharField(source="item.stage", read_only=True)
    object_id = serializers.IntegerField(source="item.object_id", read_only=True)
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    flags = FlagSerializer(many=True, read_only=True)  # issue #16

    class Meta:
        model = Review
        fields = ["id", "item", "stage", "object_id", "annotator", "verdict", "reason_codes", "comment",
                  "flags", "created_at", "updated_at"]


REVIEW_FILTERS = {"stage": ("item__stage", "str"), "verdict": ("verdict", "str"), "item": ("item_id", "int")}


@extend_schema_view(list=extend_schema(parameters=filter_parameters(REVIEW_FILTERS)))
class ReviewViewSet(FilterMixin, viewsets.ReadOnlyModelViewSet):
    """The caller's own reviews. Nobody sees another annotator's verdict here; admins see all."""

    permission_classes = [role_permission(ANNOTATOR, ADJUDICATOR, RESEARCHER, ADMIN)]
    serializer_class = ReviewSerializer
    pagination_class = Pagination
    filters = REVIEW_FILTERS

    def get_queryset(self):
        qs = Review.objects.select_related("item", "annotator").prefetch_related("flags").order_by("id")
        if getattr(self, "swagger_fake_view", False):  # schema generation has no caller
            return qs.none()
        if has_role(self.request.user, ADMIN):
            return qs
        return qs.filter(annotator=self.request.user)

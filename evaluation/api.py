"""REST API for evaluation runs (read only, researchers)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, viewsets

from almita_web.api.common import FilterMixin, Pagination, filter_parameters, role_permission
from almita_web.roles import ADMIN, RESEARCHER
from evaluation.models import EvaluationRun


class EvaluationRunSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = EvaluationRun
        fields = ["id", "agent", "release", "status", "similarity", "threshold", "metrics", "total", "done",
                  "error", "created_by", "created_at", "finished_at", "rejudged_from"]


RUN_FILTERS = {"release": ("release_id", "int"), "status": ("status", "str")}


@extend_schema_view(list=extend_schema(parameters=filter_parameters(RUN_FILTERS)))
class EvaluationRunViewSet(FilterMixin, viewsets.ReadOnlyModelViewSet):
    """Evaluation runs with their metrics."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]
    serializer_class = EvaluationRunSerializer
    pagination_class = Pagination
    filters = RUN_FILTERS

    def get_queryset(self):
        return EvaluationRun.objects.select_related("agent", "created_by").order_by("-created_at", "-id")

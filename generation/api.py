"""REST API for pipeline artifacts and generation jobs (read with filters; admins launch jobs)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response

from almita_web.api.common import FilterMixin, Pagination, filter_parameters, role_permission
from almita_web.roles import ADMIN, RESEARCHER
from generation.models import (
    Api, Conversation, ConversationGraph, Flowgraph, GenerationJob, Intent, Procedure, SampledPath, StageProgress,
    Test,
)

ARTIFACT_FIELDS = ["id", "origin", "job", "key", "status", "validation", "created_at"]
COMMON_FILTERS = {"job": ("job_id", "int"), "status": ("status", "str"), "origin": ("origin", "str")}
ReadArtifacts = role_permission(RESEARCHER, ADMIN)


class IntentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Intent
        fields = ARTIFACT_FIELDS + ["client", "issue", "name"]


class ApiSerializer(serializers.ModelSerializer):
    class Meta:
        model = Api
        fields = ARTIFACT_FIELDS + ["procedure", "name", "description", "parameters", "output_name", "output_type",
                                   "outputs"]


class ProcedureSerializer(serializers.ModelSerializer):
    apis = ApiSerializer(many=True, read_only=True)

    class Meta:
        model = Procedure
        fields = ARTIFACT_FIELDS + ["intent", "title", "text", "apis"]


class FlowgraphSerializer(serializers.ModelSerializer):
    class Meta:
        model = Flowgraph
        fields = ARTIFACT_FIELDS + ["procedure", "data", "text"]


class ConversationGraphSerializer(serializers.ModelSerializer):
    class Meta:
        model = ConversationGraph
        fields = ARTIFACT_FIELDS + ["flowgraph", "mode", "data", "text", "noise_rate", "noise_kinds"]


class SampledPathSerializer(serializers.ModelSerializer):
    class Meta:
        model = SampledPath
        fields = ARTIFACT_FIELDS + ["conversation_graph", "node_ids", "sampler", "seed", "index"]


class ConversationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Conversation
        fields = ARTIFACT_FIELDS + ["path", "procedure", "mode", "messages", "noise_kinds"]


class TestSerializer(serializers.ModelSerializer):
    expected = serializers.JSONField(read_only=True)

    class Meta:
        model = Test
        fields = ARTIFACT_FIELDS + ["conversation", "position", "context", "expected"]


def _artifact_viewset(model, serializer, extra_filters, select=(), prefetch=()):
    filters = {**COMMON_FILTERS, **extra_filters}

    @extend_schema_view(list=extend_schema(parameters=filter_parameters(filters)))
    class ViewSet(FilterMixin, viewsets.ReadOnlyModelViewSet):
        permission_classes = [ReadArtifacts]
        serializer_class = serializer
        pagination_class = Pagination

        def get_queryset(self):
            return model.objects.select_related(*select).prefetch_related(*prefetch).order_by("id")

    ViewSet.filters = filters
    ViewSet.__name__ = f"{model.__name__}ViewSet"
    ViewSet.__qualname__ = ViewSet.__name__
    ViewSet.__doc__ = f"{model._meta.verbose_name_plural.capitalize()}: read only, filtered by query parameters."
    return ViewSet


IntentViewSet = _artifact_viewset(Intent, IntentSerializer, {"name": ("name__icontains", "str")})
ProcedureViewSet = _artifact_viewset(Procedure, ProcedureSerializer, {"intent": ("intent_id", "int")},
                                     prefetch=("apis",))
ApiViewSet = _artifact_viewset(Api, ApiSerializer, {"procedure": ("procedure_id", "int"), "name": ("name", "str")})
FlowgraphViewSet = _artifact_viewset(Flowgraph, FlowgraphSerializer, {"procedure": ("procedure_id", "int")})
ConversationGraphViewSet = _artifact_viewset(ConversationGraph, ConversationGraphSerializer, {
    "flowgraph": ("flowgraph_id", "int"), "mode": ("mode", "str")})
SampledPathViewSet = _artifact_viewset(SampledPath, SampledPathSerializer, {
    "conversation_graph": ("conversation_graph_id", "int")})
ConversationViewSet = _artifact_viewset(Conversation, ConversationSerializer, {
    "procedure": ("procedure_id", "int"), "path": ("path_id", "int"), "mode": ("mode", "str"),
    "intent": ("procedure__intent_id", "int")})
TestViewSet = _artifact_viewset(Test, TestSerializer, {
    "conversation": ("conversation_id", "int"), "expected_type": ("expected_type", "str"),
    "intent": ("conversation__procedure__intent_id", "int")})


class StageProgressSerializer(serializers.ModelSerializer):
    class Meta:
        model = StageProgress
        exclude = ["id", "job"]


class JobSerializer(serializers.ModelSerializer):
    progress = StageProgressSerializer(many=True, read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = GenerationJob
        fields = ["id", "name", "status", "config", "counters", "prompt_tokens", "completion_tokens", "cost_usd",
                  "error", "created_by", "created_at", "started_at", "finished_at", "progress"]


class JobLaunchSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    config = serializers.DictField(help_text="Job settings (intents, procedures_per_intent, paths, noise, ...)")


JOB_FILTERS = {"status": ("status", "str")}


@extend_schema_view(list=extend_schema(parameters=filter_parameters(JOB_FILTERS)))
class JobViewSet(FilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Generation jobs and their live status. POST launches a job (admins)."""

    serializer_class = JobSerializer
    pagination_class = Pagination
    filters = JOB_FILTERS

    def get_queryset(self):
        return GenerationJob.objects.select_related("created_by").prefetch_related("progress").order_by(
            "-created_at", "-id")

    def get_permissions(self):
        if self.action == "create":
            return [role_permission(ADMIN)()]
        return [ReadArtifacts()]

    @extend_schema(request=JobLaunchSerializer, responses={201: JobSerializer})
    def create(self, request, *args, **kwargs):
        data = JobLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            from generation.services import JobConfigError, job_create
        except ImportError:  # the generation services are not installed in this build
            return Response({"detail": "Launching jobs is not available: generation.services.job_create is missing."},
                            status=status.HTTP_503_SERVICE_UNAVAILABLE)
        try:
            job = job_create(config=data.validated_data["config"], created_by=request.user,
                             name=data.validated_data["name"])
        except JobConfigError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)

"""REST API for evaluation (researchers and admins): read runs and agents, launch a run, re-judge,
cancel and resume. The same services as the pages; the same role rule."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from almita_web.api.common import FilterMixin, Pagination, filter_parameters, role_permission
from almita_web.roles import ADMIN, RESEARCHER
from curation.models import Release
from evaluation import metrics as M
from evaluation import services
from evaluation import similarity as S
from evaluation import session_services as SV
from evaluation.models import Agent, AgentMode, EvaluationRun, IllegalRunTransition, SessionRun


class AgentSerializer(serializers.ModelSerializer):
    class Meta:
        model = Agent
        # api_key_env is the NAME of a variable; the key itself is never stored anywhere.
        fields = ["id", "name", "mode", "knowledge", "base_url", "api_key_env", "model", "temperature",
                  "description", "created_at"]


class EvaluationRunSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = EvaluationRun
        fields = ["id", "agent", "release", "status", "similarity", "threshold", "comparison", "trials", "dst",
                  "action_labels", "max_error_share", "concurrency", "metrics", "total", "done", "error", "created_by", "created_at",
                  "started_at", "finished_at", "rejudged_from"]


class RunLaunchSerializer(serializers.Serializer):
    agent = serializers.PrimaryKeyRelatedField(queryset=Agent.objects.all())
    release = serializers.PrimaryKeyRelatedField(queryset=Release.objects.all())
    similarity = serializers.ChoiceField(choices=S.CHOICES, default=S.AUTO)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None)
    concurrency = serializers.IntegerField(min_value=1, max_value=64, required=False, allow_null=True, default=None)
    comparison = serializers.ChoiceField(choices=list(M.COMPARISONS), default=M.EXACT)
    trials = serializers.IntegerField(min_value=1, max_value=20, default=1)
    dst = serializers.BooleanField(default=False)
    action_labels = serializers.ChoiceField(choices=["rules", "model"], default="rules")
    max_error_share = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.1)


class ResultSerializer(serializers.Serializer):
    """One test (and trial) of a run: the columns of the CSV download (services.RESULT_COLUMNS)."""

    test_id = serializers.IntegerField()
    conversation_id = serializers.IntegerField()
    position = serializers.IntegerField()
    trial = serializers.IntegerField(help_text="0-based index of the trial (repeated runs ask each test n times)")
    noise_kinds = serializers.CharField()
    expected_type = serializers.CharField()
    expected = serializers.CharField()
    predicted_type = serializers.CharField(help_text="reply, api_call, invalid (unreadable) or empty (no answer)")
    answer = serializers.CharField()
    similarity = serializers.CharField()
    reply_recalled = serializers.IntegerField()
    reply_correct = serializers.IntegerField()
    api_recalled = serializers.IntegerField()
    api_correct = serializers.IntegerField()
    params_correct = serializers.IntegerField()
    correct = serializers.IntegerField()
    reason = serializers.CharField(help_text="why the test is wrong: which parameters differ, the API called instead")
    state = serializers.CharField()
    latency_ms = serializers.IntegerField()
    raw_reply = serializers.CharField()
    similarity_method = serializers.CharField()
    threshold = serializers.FloatField()
    comparison = serializers.CharField()


class RejudgeSerializer(serializers.Serializer):
    similarity = serializers.ChoiceField(choices=S.CHOICES, default=S.AUTO)
    threshold = serializers.FloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True, default=None)


RUN_FILTERS = {"release": ("release_id", "int"), "status": ("status", "str"), "agent": ("agent_id", "int"),
               "rejudged_from": ("rejudged_from_id", "int")}


def _refused(exc: Exception) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


@extend_schema_view(list=extend_schema(parameters=filter_parameters(RUN_FILTERS)))
class EvaluationRunViewSet(FilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Evaluation runs with their metrics. POST starts a run on the Celery worker."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]
    serializer_class = EvaluationRunSerializer
    pagination_class = Pagination
    filters = RUN_FILTERS

    def get_queryset(self):
        return EvaluationRun.objects.select_related("agent", "created_by").order_by("-created_at", "-id")

    @extend_schema(request=RunLaunchSerializer, responses={201: EvaluationRunSerializer})
    def create(self, request, *args, **kwargs):
        data = RunLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = services.run_create(created_by=request.user, **data.validated_data)
        except (services.EvaluationError, S.SimilarityUnavailable) as exc:
            return _refused(exc)
        return Response(EvaluationRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: ResultSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """Every test and trial of the run, as in the CSV download, paginated."""
        run = self.get_object()
        page = self.paginate_queryset(services.result_rows_query(run))
        return self.get_paginated_response([services.result_row(run, values) for values in page])

    @extend_schema(request=RejudgeSerializer, responses={201: EvaluationRunSerializer})
    @action(detail=True, methods=["post"])
    def rejudge(self, request, pk=None):
        """A new run scoring this succeeded run's stored answers again (no agent calls)."""
        data = RejudgeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = services.run_rejudge(run=self.get_object(), created_by=request.user, **data.validated_data)
        except (services.EvaluationError, S.SimilarityUnavailable) as exc:
            return _refused(exc)
        return Response(EvaluationRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: EvaluationRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        try:
            run = services.run_cancel(run=self.get_object())
        except IllegalRunTransition as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(EvaluationRunSerializer(run).data)

    @extend_schema(request=None, responses={200: EvaluationRunSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        try:
            run, _lanes = services.run_resume(run=self.get_object())
        except IllegalRunTransition as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(EvaluationRunSerializer(run).data)


class AgentViewSet(viewsets.ReadOnlyModelViewSet):
    """Agents under test, with the built-in reference agents."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]
    serializer_class = AgentSerializer
    pagination_class = Pagination

    def get_queryset(self):
        services.reference_agents_ensure()
        return Agent.objects.order_by("name")


class SessionRunSerializer(serializers.ModelSerializer):
    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = SessionRun
        fields = ["id", "agent", "release", "status", "max_turns", "user_model", "judge_model", "concurrency",
                  "metrics", "total", "done", "error", "created_by", "created_at", "started_at", "finished_at"]


class SessionLaunchSerializer(serializers.Serializer):
    agent = serializers.PrimaryKeyRelatedField(queryset=Agent.objects.filter(mode__in=[AgentMode.PROMPT,
                                                                                        AgentMode.FUNCTIONS,
                                                                                        AgentMode.HTTP,
                                                                                        AgentMode.OWN_PROMPT]))
    release = serializers.PrimaryKeyRelatedField(queryset=Release.objects.all())
    max_turns = serializers.IntegerField(min_value=1, max_value=50, default=15)
    limit = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False, allow_null=True, default=None)
    concurrency = serializers.IntegerField(min_value=1, max_value=64, required=False, allow_null=True, default=None)
    user_model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    judge_model = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")


SESSION_FILTERS = {"release": ("release_id", "int"), "status": ("status", "str"), "agent": ("agent_id", "int")}


@extend_schema_view(list=extend_schema(parameters=filter_parameters(SESSION_FILTERS)))
class SessionRunViewSet(FilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Session runs (FlowBench's simulated sessions) with their metrics. POST starts one."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]
    serializer_class = SessionRunSerializer
    pagination_class = Pagination
    filters = SESSION_FILTERS

    def get_queryset(self):
        return SessionRun.objects.select_related("agent", "created_by").order_by("-created_at", "-id")

    @extend_schema(request=SessionLaunchSerializer, responses={201: SessionRunSerializer})
    def create(self, request, *args, **kwargs):
        data = SessionLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = SV.session_run_create(created_by=request.user, **data.validated_data)
        except services.EvaluationError as exc:
            return _refused(exc)
        return Response(SessionRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: SessionRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        try:
            run = SV.session_run_cancel(run=self.get_object())
        except IllegalRunTransition as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(SessionRunSerializer(run).data)

    @extend_schema(request=None, responses={200: SessionRunSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, pk=None):
        try:
            run, _lanes = SV.session_run_resume(run=self.get_object())
        except IllegalRunTransition as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(SessionRunSerializer(run).data)

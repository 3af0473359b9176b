"""REST API of the closed loop (i15): coverage, gap filling, economics, feedback regeneration."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from almita_web.api.common import role_permission
from almita_web.bounds import MAX_ID
from almita_web.roles import ADMIN, RESEARCHER
from curation.agreement.services import job_economics, release_economics
from curation.loop.services import ScopeError, resolve_scope, scope_report
from generation import gaps
from generation.models import GenerationJob

SCOPE_PARAMS = [
    OpenApiParameter("release", OpenApiTypes.STR, description="release id, name or name@version"),
    OpenApiParameter("job", OpenApiTypes.INT), OpenApiParameter("graph", OpenApiTypes.INT),
]


def _scope(data) -> dict:
    return {k: data.get(k) for k in ("release", "job", "graph")}


class CoverageView(APIView):
    """Per-graph node and edge coverage by accepted conversations (a release: by its own
    conversations), the uncovered edges and noise branches; exactly one of release, job, graph."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]

    @extend_schema(parameters=SCOPE_PARAMS, responses=OpenApiTypes.OBJECT)
    def get(self, request):
        try:
            return Response(scope_report(**_scope(request.query_params)))
        except ScopeError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class FillInput(serializers.Serializer):
    release = serializers.CharField(required=False, allow_blank=True)
    job = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    graph = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    conversations = serializers.ChoiceField(choices=gaps.CONVERSATION_MODES, default="offline")


class FillGapsView(APIView):
    """Launch a gap-filling job for the accepted graphs in scope (admins)."""

    permission_classes = [role_permission(ADMIN)]

    @extend_schema(request=FillInput, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        from generation.services import JobConfigError

        data = FillInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            label, graphs, _ = resolve_scope(**_scope(data.validated_data))
            job, plans = gaps.gaps_fill(graphs=graphs, conversations=data.validated_data["conversations"],
                                        created_by=request.user, name=f"Fill the gaps of {label}")
        except (ScopeError, gaps.NothingToFill, JobConfigError) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"job": job.pk, "retry_limit": gaps.retry_limit(),
                         "plans": [p.as_dict() for p in plans]}, status=status.HTTP_201_CREATED)


class EconomicsView(APIView):
    """LLM cost, annotator and adjudication minutes, cost and minutes per accepted test (job or release)."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]

    @extend_schema(parameters=SCOPE_PARAMS[:2], responses=OpenApiTypes.OBJECT)
    def get(self, request):
        q = request.query_params
        try:
            if q.get("job") and not q.get("release"):
                job = GenerationJob.objects.filter(pk=int(q["job"])).first()
                if job is None:
                    raise ScopeError(f"job {q['job']} not found")
                return Response(job_economics(job))
            _, _, rel = resolve_scope(release=q.get("release"))
            return Response(release_economics(rel))
        except (ScopeError, ValueError) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class RegenerateInput(serializers.Serializer):
    parent = serializers.ChoiceField(choices=["procedure", "flowgraph", "conversation_graph"])
    id = serializers.IntegerField(min_value=1, max_value=MAX_ID)


class RegenerateView(APIView):
    """Regenerate the rejected children of a parent with the reviewers' reasons in the prompt (admins)."""

    permission_classes = [role_permission(ADMIN)]

    @extend_schema(request=RegenerateInput, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        from curation.loop.feedback import FeedbackError, regenerate_with_feedback
        from generation.services import JobConfigError

        data = RegenerateInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job, fb = regenerate_with_feedback(parent=data.validated_data["parent"],
                                               parent_id=data.validated_data["id"], created_by=request.user)
        except (FeedbackError, JobConfigError) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response({"job": job.pk, "feedback": fb.as_dict()}, status=status.HTTP_201_CREATED)

"""REST API for assignment (issue #30 item 4): assign items to annotators, release them, and list
the active assignments. Adjudicators and admins only (annotators and researchers: 403)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from almita_web.api.common import role_permission
from almita_web.bounds import MAX_ID, bounded_id
from almita_web.roles import ADJUDICATOR, ADMIN
from curation.models import Assignment, ReviewStage
from curation.reviews import assignment
from curation.reviews.explorer_panel import BULK_FILTER_MAX


class AssignInput(serializers.Serializer):
    action = serializers.ChoiceField(choices=["assign", "release"])
    items = serializers.ListField(child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
                                  min_length=1, max_length=BULK_FILTER_MAX)
    stage = serializers.ChoiceField(choices=ReviewStage.values, required=False)
    mode = serializers.ChoiceField(choices=list(assignment.MODES), required=False)
    annotators = serializers.ListField(child=serializers.CharField(max_length=150), required=False,
                                       max_length=assignment.MAX_ANNOTATORS)
    shares = serializers.DictField(child=serializers.IntegerField(min_value=0, max_value=100), required=False)


class AssignmentsView(APIView):
    """GET: active assignments (filters: annotator, item). POST: assign or release items."""

    permission_classes = [role_permission(ADJUDICATOR, ADMIN)]

    @extend_schema(parameters=[OpenApiParameter("annotator", OpenApiTypes.STR), OpenApiParameter("item", OpenApiTypes.INT)],
                   responses=OpenApiTypes.OBJECT)
    def get(self, request):
        qs = Assignment.objects.filter(active=True).select_related("item", "annotator", "assigned_by").order_by("id")
        if request.query_params.get("annotator"):
            qs = qs.filter(annotator__username=request.query_params["annotator"][:150])
        if request.query_params.get("item"):
            try:
                qs = qs.filter(item_id=bounded_id(request.query_params["item"]))
            except ValueError:
                return Response({"detail": "item: give a whole number."}, status=status.HTTP_400_BAD_REQUEST)
        rows = [{"id": a.pk, "item": a.item_id, "stage": a.item.stage, "object_id": a.item.object_id,
                 "annotator": a.annotator.username, "assigned_by": getattr(a.assigned_by, "username", None),
                 "created_at": a.created_at.isoformat()} for a in qs[:1000]]
        return Response({"count": qs.count(), "results": rows})

    @extend_schema(request=AssignInput, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request):
        data = AssignInput(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            if v["action"] == "release":
                result = assignment.release(actor=request.user, item_ids=v["items"], annotators=v.get("annotators") or (),
                                            stage=v.get("stage"))
            else:
                if "mode" not in v:
                    raise assignment.AssignError("Give the mode: named, even or percent.")
                result = assignment.assign(actor=request.user, item_ids=v["items"], mode=v["mode"],
                                           annotators=v.get("annotators") or (),
                                           shares=list((v.get("shares") or {}).items()), stage=v.get("stage"))
        except assignment.AssignError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(result)

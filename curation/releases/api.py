"""REST API for releases (create, list, download)."""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.reverse import reverse

from almita_web.api.common import FilterMixin, Pagination, filter_parameters, role_permission
from almita_web.roles import ADMIN, RESEARCHER
from curation.models import Release, ReleaseKind, ReviewStage
from curation.releases.services import LICENCES, ReleaseError, release_create
from curation.releases.views import DOWNLOADS, stream_release_file


class ReleaseSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    downloads = serializers.SerializerMethodField()

    class Meta:
        model = Release
        fields = ["id", "name", "version", "kind", "filters", "licence", "created_by", "created_at",
                  "content_hash", "manifest", "card", "downloads"]

    def get_downloads(self, obj: Release) -> dict[str, str]:
        request = self.context.get("request")
        return {f: reverse("api:release-download", kwargs={"pk": obj.pk, "file": f}, request=request)
                for f in DOWNLOADS}


class ReleaseFiltersInput(serializers.Serializer):
    """The filters' shape, for the schema (and the fuzz test that reads it); the values are checked
    by curation.releases.services.clean_filters, the one place for both the form and the API."""

    jobs = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False)
    intents = serializers.ListField(child=serializers.IntegerField(min_value=1), required=False)
    stages = serializers.ListField(child=serializers.ChoiceField(choices=ReviewStage.choices), required=False)
    noise_kinds = serializers.ListField(child=serializers.CharField(), required=False,
                                        help_text='noise kinds, or "none" for conversations without noise')

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("filters must be an object")
        return dict(data)


class ReleaseCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    kind = serializers.ChoiceField(choices=ReleaseKind.choices, default=ReleaseKind.CURATED)
    licence = serializers.ChoiceField(choices=[(x, x) for x in LICENCES], default="CC-BY-4.0")
    filters = ReleaseFiltersInput(required=False, default=dict)


RELEASE_FILTERS = {"name": ("name", "str"), "kind": ("kind", "str")}


@extend_schema_view(list=extend_schema(parameters=filter_parameters(RELEASE_FILTERS)))
class ReleaseViewSet(FilterMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Immutable dataset releases (researchers): list, create, and stream their files."""

    permission_classes = [role_permission(RESEARCHER, ADMIN)]
    serializer_class = ReleaseSerializer
    pagination_class = Pagination
    filters = RELEASE_FILTERS

    def get_queryset(self):
        return Release.objects.select_related("created_by").order_by("-created_at", "-id")

    @extend_schema(request=ReleaseCreateSerializer, responses={201: ReleaseSerializer})
    def create(self, request, *args, **kwargs):
        data = ReleaseCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            release = release_create(created_by=request.user, **data.validated_data)
        except ReleaseError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(ReleaseSerializer(release, context={"request": request}).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("file", OpenApiTypes.STR, OpenApiParameter.PATH, enum=DOWNLOADS)],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"], url_path=r"download/(?P<file>[\w.]+)", url_name="download")
    def download(self, request, pk=None, file=None):
        """Stream one file of the release (CSV, JSONL, zip bundles, card, manifest)."""
        release = get_object_or_404(Release, pk=pk)
        if file not in DOWNLOADS:
            return Response({"detail": f"unknown file; use one of {', '.join(DOWNLOADS)}"},
                            status=status.HTTP_404_NOT_FOUND)
        return stream_release_file(release, file)

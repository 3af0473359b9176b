"""REST import: ``POST /api/imports/`` (multipart: file, format, name, procedure_file, lenient). Admins only.

The same checks as the upload page and ``import_items``: a refused file answers 400 with the
message naming the file, the record, the key and (for Mermaid) the line and column.
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from almita_web.api.common import role_permission
from almita_web.roles import ADMIN
from generation.imports import FORMATS, MAX_BYTES, ImportFormatError, items_import


class ImportRequestSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.ChoiceField(choices=sorted(FORMATS), default="auto")
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    procedure_file = serializers.FileField(required=False)
    lenient = serializers.BooleanField(default=False, help_text="Import malformed Mermaid with a report")

    def validate_file(self, f):
        if f.size > MAX_BYTES:
            raise serializers.ValidationError(f"The file is larger than {MAX_BYTES // (1024 * 1024)} MB.")
        return f


class ImportResultSerializer(serializers.Serializer):
    format = serializers.CharField()
    created = serializers.DictField(child=serializers.IntegerField())
    existing = serializers.DictField(child=serializers.IntegerField())
    notes = serializers.ListField(child=serializers.CharField())


class ImportView(APIView):
    """Import one file atomically (see docs/import-format.md)."""

    permission_classes = [role_permission(ADMIN)]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(request={"multipart/form-data": ImportRequestSerializer},
                   responses={201: ImportResultSerializer, 400: None})
    def post(self, request):
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        procedure_text = ""
        if data.validated_data.get("procedure_file"):
            try:
                procedure_text = data.validated_data["procedure_file"].read().decode("utf-8-sig")
            except UnicodeDecodeError:
                return Response({"detail": "procedure_file is not UTF-8 text."}, status=status.HTTP_400_BAD_REQUEST)
        stem = upload.name.rsplit(".", 1)[0] or "imported"
        try:
            result = items_import(raw=upload.read(), fmt=data.validated_data["format"],
                                  name=data.validated_data["name"] or stem, procedure_text=procedure_text,
                                  lenient=data.validated_data["lenient"], source=upload.name)
        except ImportFormatError as exc:
            return Response({"detail": f"Refused, nothing imported: {exc}"}, status=status.HTTP_400_BAD_REQUEST)
        body = {"format": result.format, "created": result.created, "existing": result.existing, "notes": result.notes}
        return Response(body, status=status.HTTP_201_CREATED)

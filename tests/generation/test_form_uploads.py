"""The launch form's two JSON uploads (the import file and the chain APIs file) read the same way."""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from generation.forms import JobForm


@pytest.mark.parametrize("field", ["import_file", "chain_apis_file"])
def test_json_upload_is_parsed_or_refused_with_a_reason(db, field):
    good = JobForm(data={}, files={field: SimpleUploadedFile("x.json", "\ufeff{\"a\": [1]}".encode())})
    good.is_valid()
    assert field not in good.errors and good.cleaned_data[field] == {"a": [1]}
    bad = JobForm(data={}, files={field: SimpleUploadedFile("x.json", b"{not json")})
    bad.is_valid()
    assert "The file is not JSON" in str(bad.errors[field])

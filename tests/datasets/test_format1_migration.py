"""Migration 0012 rewrites format 1 releases into the one storage format without changing a byte
of any download: releases frozen by the format 1 code (fixtures/format1/<vendor>/: stored rows and
every download, saved before format 1's readers were deleted) are loaded into a fresh database at
0007, migrated, and every file, zip member and the content hash compared (format1_replay).
The downloads were rendered again by the format 1 code after the released columns became one schema
(issue #31: `expected_content`, the Hugging Face folder's ids), so they are what a format 1 release
served just before this migration."""
from __future__ import annotations

import pytest
from django.db import connection

from tests.migration_replay import replay_in_fresh_database


@pytest.mark.slow
def test_format1_releases_migrate_and_every_download_keeps_its_bytes(tmp_path):
    result = replay_in_fresh_database("tests.datasets.format1_replay", tmp_path, "almita_f1replay", ok_codes=(0, 1))
    assert result["vendor"] == connection.vendor
    assert result["releases"] == 5 and result["problems"] == [], result

"""The projects migrations move every existing row to Default, keeping ids and relations, and
turn role groups into Default memberships (a populated database at the previous migrations)."""
from __future__ import annotations

import pytest
from django.db import connection

from tests.migration_replay import replay_in_fresh_database


@pytest.mark.slow
def test_existing_rows_move_to_default_with_their_ids(tmp_path):
    result = replay_in_fresh_database("tests.projects.migration_replay", tmp_path, "almita_p30mig")
    assert result["vendor"] == connection.vendor
    assert result["projects"] == ["default"]
    assert result["found"] == {name: "default" for name in result["found"]}, result["found"]
    assert result["relations_kept"]
    assert result["roles"] == [["ann", "default", "annotator"], ["boss", "default", "admin"],
                               ["boss", "default", "researcher"]]

from __future__ import annotations

import json

import pytest

from generation.imports import items_import
from generation.models import Conversation, CurationStatus, Test
from tests.datasets.builders import document


@pytest.fixture
def imported(db):
    """Two procedures' worth of imported material, all conversations accepted."""
    result = items_import(raw=json.dumps(document()), fmt="almita")
    return result


def accept_all() -> None:
    Conversation.objects.update(status=CurationStatus.ACCEPTED)
    Test.objects.update(status=CurationStatus.ACCEPTED)

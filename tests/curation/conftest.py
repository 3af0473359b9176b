from __future__ import annotations

import pytest
from django.core.cache import cache

from almita_web.roles import ANNOTATOR
from curation.guidance.guidelines import reset_guide_cache
from curation.reviews.lineage import reset_sync_throttle
from tests.conftest import make_user
from tests.curation.factories import build_lineage


@pytest.fixture(autouse=True)
def _fresh_curation_state():
    # SQLite reuses primary keys after a rollback, so a cached SVG could belong to an older row.
    cache.clear()
    reset_sync_throttle()
    reset_guide_cache()
    yield
    cache.clear()
    reset_guide_cache()


@pytest.fixture
def lineage(db):
    return build_lineage(conversations=2)


@pytest.fixture
def annotator_c(db):
    return make_user("annotator_c", ANNOTATOR)

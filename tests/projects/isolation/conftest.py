from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.projects.isolation.world import World, build_world


@pytest.fixture
def world(db) -> World:
    cache.clear()
    from curation.guidance.guidelines import reset_guide_cache
    from curation.reviews.lineage import reset_sync_throttle

    reset_sync_throttle()
    reset_guide_cache()
    yield build_world()
    cache.clear()
    reset_guide_cache()

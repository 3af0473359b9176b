"""curation.reviews.present: a first view stores the drawing on the row once. A second viewer in the same
process whose row was read before that takes the stored drawing as it is; a drawing stored
meanwhile by another process is not overwritten."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from curation.reviews import present
from generation.pipeline import graphviz_lib
from tests.curation.factories import build_lineage

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_memory():
    present._stored_here.clear()
    yield
    present._stored_here.clear()


@pytest.fixture
def undrawn():
    """A flowgraph without a drawing, and a loader of fresh instances of it (as each request reads its row)."""
    if not graphviz_lib.available():
        pytest.skip("Graphviz's library is not installed")
    fg = build_lineage(conversations=1).flowgraph
    type(fg).objects.filter(pk=fg.pk).update(svg="")
    return lambda: type(fg).objects.get(pk=fg.pk)


def _writes(ctx) -> list[str]:
    return [q["sql"] for q in ctx.captured_queries if q["sql"].lstrip().upper().startswith("UPDATE")]


def test_a_second_viewer_in_this_process_takes_the_drawing_stored_here(undrawn, monkeypatch):
    first, second = undrawn(), undrawn()  # both read before either drew it
    assert not present._drawn(second.svg)
    out1 = present.cached_svg(first)
    assert "data-nodes=" in out1["svg"]
    monkeypatch.setattr(present, "_render", lambda *a, **k: pytest.fail("drew it a second time"))
    with CaptureQueriesContext(connection) as ctx:
        out2 = present.cached_svg(second)
    assert out2 == out1 and _writes(ctx) == []
    assert present._drawn(undrawn().svg)


def test_a_drawing_stored_meanwhile_by_another_process_stays(undrawn):
    mine = undrawn()
    theirs = present._render(mine.data)[0] + "<!-- stored by the other process -->"
    type(mine).objects.filter(pk=mine.pk).update(svg=theirs)  # the other viewer's process, meanwhile
    with CaptureQueriesContext(connection) as ctx:
        out = present.cached_svg(mine)  # not in this process's memory: drawn here too
    assert "data-nodes=" in out["svg"] and len(_writes(ctx)) == 1
    assert undrawn().svg == theirs  # the conditional write changed nothing


def test_a_stale_drawing_is_replaced(undrawn):
    row = undrawn()
    old = "<svg><g/></svg>"  # made before the node map: redrawn
    type(row).objects.filter(pk=row.pk).update(svg=old)
    row = undrawn()
    present.cached_svg(row)
    assert present._drawn(undrawn().svg)


def test_the_memory_of_stored_drawings_is_bounded(undrawn, monkeypatch):
    monkeypatch.setattr(present, "_STORED_HERE", 3)
    rows = [undrawn()]
    for _ in range(4):
        fg = build_lineage(conversations=1).flowgraph
        type(fg).objects.filter(pk=fg.pk).update(svg="")
        rows.append(type(fg).objects.get(pk=fg.pk))
    for row in rows:
        present.cached_svg(row)
    assert list(present._stored_here) == [present._stored_key(r) for r in rows[-3:]]

"""generation.pipeline.svg_ids.scope_svg_ids: the same result as its regular expression, found faster."""
import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.formats import parse_graph_text
from generation.pipeline.render import to_svg
from generation.pipeline.svg_ids import scope_svg_ids
from tests.curation.factories import FLOWGRAPH_TEXT

# The rule, as the regular expression the function replaced.
_SVG_ID = re.compile(r'(\bid="|\bhref="#|xlink:href="#|url\(#)([^")]+)')

_PIECES = ['id="', 'href="#', 'xlink:href="#', "url(#", '"', ")", "(", "#", "=", "a", "_", "-", " ", "é", "x",
           "i", "d", "h", "ref", "u", "rl", "\n"]


def _by_regex(svg: str, prefix: str) -> str:
    return _SVG_ID.sub(lambda m: m.group(1) + prefix + m.group(2), svg)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join), st.sampled_from(["fg1-", "cg22c3-", ""]))
def test_scoping_ids_equals_the_regular_expression_on_any_text(text, prefix):
    assert scope_svg_ids(text, prefix) == _by_regex(text, prefix)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_scoping_a_drawing_prefixes_every_id_and_reference():
    g = parse_graph_text(FLOWGRAPH_TEXT, kind="flowgraph")
    svg = to_svg(g)
    scoped = scope_svg_ids(svg, "fg9-")
    assert scoped == _by_regex(svg, "fg9-")
    assert 'id="node1"' in svg and 'id="node1"' not in scoped and 'id="fg9-node1"' in scoped
    assert scoped.count('id="fg9-') == svg.count(' id="')

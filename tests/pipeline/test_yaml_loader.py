"""The event-stream YAML builder of generation.pipeline.toolspecs.documents agrees with yaml.safe_load."""
from __future__ import annotations

import math

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generation.pipeline.apis import ApiFormatError
from generation.pipeline.toolspecs.documents import MAX_YAML_NODES, load_yaml

_scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
            | st.floats(allow_nan=False, allow_infinity=True)
            | st.text(alphabet="ab yes no 0123:-.#&*!|>'\"%@`~\n\t_{}[],?=<", max_size=12))
_keys = st.text(alphabet="abc_12 -:.", min_size=1, max_size=8) | st.integers(0, 600)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_keys, inner, max_size=4), max_leaves=25)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@settings(max_examples=300, deadline=None)
@given(_values, st.booleans(), st.sampled_from([None, "'", '"']), st.booleans())
def test_same_values_as_safe_load(value, flow, style, share):
    if share and isinstance(value, (dict, list)):
        value = {"first": value, "again": value, "list": [value, value]}  # the dumper writes anchors and aliases
    text = yaml.safe_dump(value, default_flow_style=flow, default_style=style, allow_unicode=True)
    assert _same(load_yaml(text), yaml.safe_load(text)), text


@pytest.mark.parametrize("text", [
    "base: &b {x: 1, y: 2}\nmore:\n  <<: *b\n  y: 3\n",
    "a: &a {k: 1, j: 1}\nb: &b {k: 2, m: 2}\nc:\n  <<: [*a, *b]\n  n: 3\n",
    "a: &a {k: 1}\nb: &b {k: 2}\nc:\n  <<: *a\n  <<: *b\n",
    "n: ~\nb: yes\no: 0o17\nh: 0x1f\nf: 1.5e3\ninf: .inf\ns: '12'\nlist: [1, two, 3.0]\n",
    "key with spaces: value\n'quoted key': !!str 123\nempty:\n",
])
def test_merge_keys_and_resolution_agree(text):
    assert _same(load_yaml(text), yaml.safe_load(text))


def test_dates_stay_text_and_strange_tags_are_refused():
    assert load_yaml("day: 2031-05-03\nat: 2031-05-03T06:30:00Z\n") == {"day": "2031-05-03",
                                                                       "at": "2031-05-03T06:30:00Z"}
    with pytest.raises(ApiFormatError, match="line 1, column 4: the YAML tag tag:yaml.org,2002:python/object"):
        load_yaml("x: !!python/object:os.system {}\n")
    with pytest.raises(ApiFormatError, match="names no anchor"):
        load_yaml("a: *nowhere\n")
    with pytest.raises(ApiFormatError, match="expected one YAML document"):
        load_yaml("a: 1\n---\nb: 2\n")


def test_the_bound_counts_expanded_nodes():
    laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"] + [
        f"{c}: &{c} [" + ", ".join([f"*{p}"] * 10) + "]" for p, c in zip("abcdef", "bcdefg")]
    text = "\n".join(laughs) + "\n"  # 10**7 nodes expanded
    with pytest.raises(ApiFormatError, match=f"more than {MAX_YAML_NODES:,} nodes"):
        load_yaml(text)
    assert len(load_yaml("\n".join(laughs[:5]) + "\n")["e"]) == 10  # 10**5: read, shared like safe_load

"""The api_fields filter: every key the field template reads, nested properties included."""
from django.template.loader import render_to_string

from generation.templatetags.api_display import api_fields


def test_api_fields_fills_every_key_and_recurses_into_properties():
    fields = [{"name": "order", "type": "object", "required": True,
               "properties": [{"name": "id", "type": "string", "enum": ["a", "b"]}]},
              "not a dict", {"name": "n", "type": "integer", "default": 0, "description": "<b>count</b>"}]
    out = api_fields(fields)
    assert [set(f) for f in out] == [{"name", "type", "required", "enum", "default", "description", "properties"}] * 3
    assert out[0]["properties"][0]["enum"] == ["a", "b"] and out[0]["properties"][0]["properties"] is None
    assert out[1]["name"] is None and out[2]["default"] == 0
    assert api_fields(None) == [] and api_fields({"name": "x"}) == []


def test_the_field_template_renders_the_same_with_and_without_missing_keys_escaped():
    fields = [{"name": "id", "type": "string", "required": True, "description": "<script>x</script>"},
              {"name": "mode", "type": "string", "enum": ["fast", "slow"], "default": "fast",
               "properties": [{"name": "inner", "type": "int"}]}]
    html = render_to_string("generation/_api_fields.html", {"fields": api_fields(fields)})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "required" in html and "one of" in html and "<code>fast</code>" in html and "<code>inner</code>" in html
    assert html.count('class="api-fields"') == 2  # the nested list
    raw = render_to_string("generation/_api_fields.html", {"fields": fields})
    assert " ".join(raw.split()) == " ".join(html.split())  # same page as before the filter

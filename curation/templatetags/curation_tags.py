"""Template filters of the review pages: ``markdown`` (sanitised, see curation.guidance.markdown)."""
from __future__ import annotations

from django import template

from curation.guidance.services import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text):
    return render_markdown(text)

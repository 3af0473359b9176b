"""Markdown to safe HTML for procedures, guidelines and dataset cards.

markdown-it-py renders CommonMark plus tables with raw HTML switched off (so ``<script>`` in the
source stays text); nh3 (the Rust ammonia sanitiser) then keeps only the tags and attributes
listed here and only http, https and mailto links, which removes ``javascript:`` URLs and event
attributes even if the renderer ever let one through.
"""
from __future__ import annotations

from functools import lru_cache

import nh3
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre",
        "blockquote", "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "img"}
ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"},
              "ol": {"start"}}
URL_SCHEMES = {"http", "https", "mailto"}


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table").enable(
        "strikethrough")


def render_markdown(text: str | None) -> SafeString:
    """Sanitised HTML for `text`; empty input gives an empty string."""
    if not text:
        return mark_safe("")
    return mark_safe(_render(str(text)))  # noqa: S308 - sanitised by nh3 in _render


@lru_cache(maxsize=1024)
def _render(text: str) -> str:
    # Memoised: a procedure is shown on every review page of its lineage, and parsing plus
    # sanitising cost several milliseconds a page.
    html = _renderer().render(text)
    return nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, url_schemes=URL_SCHEMES,
                     link_rel="noopener noreferrer nofollow")

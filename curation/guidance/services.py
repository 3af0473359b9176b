"""The guidance package's one door (guidelines and reason codes, gold items, flags, Markdown): the
other curation packages and other apps import these names from here, never the modules behind it.
"""
from curation.guidance.flags import align_turns, combined_for_page, review_page_extras, review_submit_flagged
from curation.guidance.gold import GoldError, gold_accuracy, gold_mark, gold_tests_q, gold_unmark
from curation.guidance.guidelines import (
    OTHER,
    SKIP_REASONS,
    GuidelineError,
    current_guide,
    guideline_save,
    human_codes,
    reason_code_set,
    reason_codes,
    reset_guide_cache,
    rule_codes,
)
from curation.guidance.markdown import render_markdown

__all__ = [
    "OTHER", "SKIP_REASONS", "GoldError", "GuidelineError", "gold_mark", "gold_unmark", "align_turns", "combined_for_page", "current_guide",
    "gold_accuracy", "gold_tests_q", "guideline_save", "human_codes", "reason_code_set", "reason_codes",
    "render_markdown", "reset_guide_cache", "review_page_extras", "review_submit_flagged", "rule_codes",
]

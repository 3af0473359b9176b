"""The prompt templates of the paper's Appendix A.1–A.7, written for this project and versioned.

A template file `<name>.<version>.txt` has a `### system` section and a `### user` section;
`{{ variable }}` placeholders are filled by :func:`render`. Changing a prompt means adding a new
version file and bumping CURRENT, so LLMCall rows keep naming the exact text they were sent.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Template id (the paper's appendix number) → (file stem, current version).
CURRENT: dict[str, tuple[str, str]] = {
    "A.1": ("a1_intents", "v1"),
    "A.2": ("a2_procedure", "v1"),
    "A.3": ("a3_apis", "v1"),
    "A.4": ("a4_flowgraph", "v1"),
    "A.5": ("a5_conversation_graph", "v1"),
    "A.6": ("a6_conversation", "v1"),
    "A.7": ("a7_conversation_from_procedure", "v1"),
    "OC.1": ("oc1_outcome_check", "v1"),  # optional LLM outcome-consistency check (generation.outcome_check)
}

_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


class PromptError(KeyError):
    pass


@lru_cache(maxsize=None)
def load(template_id: str, version: str | None = None) -> dict[str, str]:
    stem, current = CURRENT[template_id]
    text = (HERE / f"{stem}.{version or current}.txt").read_text(encoding="utf-8")
    sections: dict[str, list[str]] = {}
    name = None
    for line in text.splitlines():
        header = re.match(r"^### (system|user)\s*$", line)
        if header:
            name = header.group(1)
            sections[name] = []
        elif name is not None:
            sections[name].append(line)
    return {k: "\n".join(v).strip("\n") for k, v in sections.items()}


def version_of(template_id: str) -> str:
    return CURRENT[template_id][1]


def render(template_id: str, version: str | None = None, **variables: object) -> list[dict[str, str]]:
    """Chat messages for a template; every placeholder must be given."""

    def fill(text: str) -> str:
        def sub(m: re.Match) -> str:
            if m.group(1) not in variables:
                raise PromptError(f"template {template_id} needs {{{{ {m.group(1)} }}}}")
            return str(variables[m.group(1)])

        return _PLACEHOLDER.sub(sub, text)

    sections = load(template_id, version)
    messages = []
    if sections.get("system"):
        messages.append({"role": "system", "content": fill(sections["system"])})
    messages.append({"role": "user", "content": fill(sections.get("user", ""))})
    return messages

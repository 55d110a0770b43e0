"""Derived rules as text for each agent's instruction file (SPEC §5.3). Pure.

Formats: ``cursor`` (a ``.cursor/rules/*.mdc`` rule), ``copilot``
(``.github/copilot-instructions.md``), ``claude`` (``CLAUDE.md``), ``gemini`` (``GEMINI.md``)
and ``markdown`` (a review table with confidence, category and occurrences).
"""

from __future__ import annotations

from typing import Any

FORMATS = ("cursor", "copilot", "claude", "gemini", "markdown")

_TITLES = {
    "cursor": "Rules derived from your prompts",
    "copilot": "Rules derived from the team's prompts",
    "claude": "Rules derived from your prompts",
    "gemini": "Rules derived from your prompts",
}
#: The front matter a new Cursor rule file starts with (outside the managed block).
CURSOR_FRONT_MATTER = (
    "---\ndescription: Rules derived by memo from instructions repeated to agents\nglobs:\nalwaysApply: true\n---\n"
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def rules_body(candidates: list[dict[str, Any]], fmt: str) -> str:
    """The rules in ``fmt`` (one of :data:`FORMATS`), from wire candidates.

    Raises
    ------
    ValueError
        Unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format: one of {', '.join(FORMATS)}")
    if fmt == "markdown":
        lines = ["# Derived rules", "", "| Rule | Category | Confidence | Occurrences |", "|---|---|---|---|"]
        lines += [f"| {_one_line(c['text']).replace('|', chr(92) + '|')} | {c['category']} | {c['confidence']:.2f} "
                  f"| {c['occurrences']} |" for c in candidates]
        return "\n".join(lines) + "\n"
    lines = [f"## {_TITLES[fmt]}", ""]
    by_category: dict[str, list[dict[str, Any]]] = {}
    for candidate in candidates:
        by_category.setdefault(candidate["category"], []).append(candidate)
    for category in sorted(by_category):
        lines += [f"### {category.capitalize()}", ""]
        lines += [f"- {_one_line(c['text'])}" for c in by_category[category]]
        lines.append("")
    if not candidates:
        lines += ["No rule reached the threshold yet.", ""]
    return "\n".join(lines)

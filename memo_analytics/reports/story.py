"""An intent story (SPEC §5.2) as PDF or HTML: the Markdown rendered with markdown-it-py and
passed through the nh3 allow-list sanitizer (a turn's text can hold any HTML)."""

from __future__ import annotations

from pathlib import Path

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from ..services.stories import story_destination
from ..services.store import VaultStore
from ..vault.io import atomic_write_bytes
from .render import render_html, templates_dir, write_pdf


def story_html_fragment(markdown: str) -> str:
    """Markdown → sanitized HTML (raw HTML in the text is escaped, then an allow-list
    sanitizer removes anything that could run: scripts, event handlers, ``javascript:``)."""
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(markdown)
    return nh3.clean(html)


def write_story(markdown: str, output: Path, store: VaultStore, cwd: str | None,
                user_templates: Path | None = None) -> Path:
    """Write the story to ``output`` (``.pdf``, ``.html`` or ``.md``) under the same rules
    as ``export_story``: from a product repository, outside it and outside the vault.

    Raises
    ------
    InvalidFieldError, ReportError
        A refused destination; a broken template.
    """
    target = story_destination(store, str(output), cwd)
    suffix = target.suffix.lower()
    if suffix == ".md":
        atomic_write_bytes(target, markdown.encode("utf-8"))
        return target
    title = markdown.splitlines()[0].lstrip("# ").strip() if markdown else "Intent story"
    html = render_html("story.html.j2", {"title": title, "content": Markup(story_html_fragment(markdown))},
                       user_templates)
    if suffix == ".pdf":
        return write_pdf(html, target, forbidden=(store.root,))
    css = (templates_dir() / "report.css").read_text(encoding="utf-8")
    atomic_write_bytes(target, html.replace('<link rel="stylesheet" href="report.css">', f"<style>{css}</style>")
                       .encode("utf-8"))
    return target

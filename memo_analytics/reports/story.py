"""An intent story (SPEC §5.2) as PDF or HTML: the Markdown rendered with markdown-it-py and
passed through the nh3 allow-list sanitizer (a turn's text can hold any HTML)."""

from __future__ import annotations

import json

from pathlib import Path

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

from ..domain.errors import InvalidFieldError
from ..services.stories import render_story, story_data, story_destination
from ..vault.redact import REDACTED_MARKER, redact_secrets
from ..services.prompts import get_record
from ..services.requests import GetRequest
from ..domain.wire import without_direction_controls
from ..services.store import VaultStore
from ..vault.io import atomic_write_bytes
from .render import render_html, templates_dir, write_pdf


#: Tags a rendered turn may keep: nh3's allow-list without images (an image in a turn would
#: be fetched by the PDF renderer or the browser: a tracking pixel, a request to any host).
SAFE_TAGS = set(nh3.ALLOWED_TAGS) - {"img"}
#: Characters of one turn printed in a PDF or HTML story (the Markdown export keeps all).
MAX_PRINTED_TURN_CHARS = 20_000


def story_html_fragment(markdown: str) -> str:
    """Markdown → sanitized HTML (raw HTML in the text is escaped, then an allow-list
    sanitizer removes anything that could run or fetch: scripts, event handlers,
    ``javascript:`` links, images), without link reference definitions (``[x]: url`` in a turn
    would make every ``[x]`` of the page a link), and without direction controls
    (:func:`~memo_analytics.domain.wire.without_direction_controls`)."""
    # no link reference definitions: one in a turn would turn every "[label]" of the page into its link
    html = MarkdownIt("commonmark", {"html": False}).enable("table").disable("reference").render(
        without_direction_controls(markdown))
    return nh3.clean(html, tags=SAFE_TAGS)


def write_story(session_id: str, output: Path, store: VaultStore, cwd: str | None,
                user_templates: Path | None = None, overwrite: bool = False, project: str | None = None) -> dict:
    """Write a session's story to ``output`` (``.pdf``, ``.html`` or ``.md``) under the rules of
    ``export_story`` but from any folder (an imported session often has no repository here):
    outside the vault and outside every git work tree.
    Printed forms clip each turn to :data:`MAX_PRINTED_TURN_CHARS`.

    Returns
    -------
    dict
        ``{sessionId, project, turns, path}``.

    Raises
    ------
    InvalidFieldError, ReportError
        A refused destination or suffix; an unknown session; a broken template.
    """
    if Path(output).suffix.lower() not in (".pdf", ".html", ".md"):
        raise InvalidFieldError("output", f"{output} must end with .pdf, .html or .md")
    data = story_data(store, session_id, project, cwd)
    target = story_destination(store, str(output), cwd, (".pdf", ".html", ".md"), overwrite, from_repository=False)
    suffix = target.suffix.lower()
    session = data["session"] or data["turns"][0]
    result = {"sessionId": session["sessionId"], "project": session["project"], "turns": len(data["turns"]),
              "path": str(target)}
    if suffix == ".md":
        atomic_write_bytes(target, redact_secrets(render_story(data, store.zone))[0].encode("utf-8"))
        return result
    markdown = redact_secrets(render_story(data, store.zone, MAX_PRINTED_TURN_CHARS))[0]
    title = markdown.splitlines()[0].lstrip("# ").strip() if markdown else "Intent story"
    html = render_html("story.html.j2", {"title": title, "content": Markup(story_html_fragment(markdown))},
                       user_templates)
    if suffix == ".pdf":
        write_pdf(html, target, forbidden=(store.root,), overwrite=overwrite)
        return result
    css = (templates_dir() / "report.css").read_text(encoding="utf-8")
    atomic_write_bytes(target, html.replace('<link rel="stylesheet" href="report.css">', f"<style>{css}</style>")
                       .encode("utf-8"))
    return result


def prompt_detail(store: VaultStore, request: GetRequest) -> dict:
    """``prompt_detail``: the record ``get`` answers plus ``renderedHtml`` (its body as
    sanitized HTML, as the story shows it) and ``secretsRedacted`` (how many secrets the
    stored record has hidden).

    Raises
    ------
    RecordNotFoundError
        No record has this id.
    """
    record = get_record(store, request.id, request.project, request.cwd)
    return {**record, "renderedHtml": story_html_fragment(record.get("body") or ""),
            "secretsRedacted": len(REDACTED_MARKER.findall(json.dumps(record, ensure_ascii=False)))}

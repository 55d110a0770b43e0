"""The derived-rule review report (SPEC §5.3): each candidate with its confidence and the
turns that said it, as HTML or PDF."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..domain.clock import resolve_zone, utcnow, zone_name
from ..index import store as index
from ..services.store import VaultStore
from ..domain.errors import InvalidFieldError, ReportError
from ..vault.io import output_target
from .render import check_output_path, render_html, templates_dir, write_pdf

#: Characters of a turn shown as evidence around the instruction.
EXCERPT_CHARS = 400


def _excerpt(body: str, text: str) -> str:
    at = body.find(text)
    if at < 0 or len(body) <= EXCERPT_CHARS:
        return body[:EXCERPT_CHARS] + ("…" if len(body) > EXCERPT_CHARS else "")
    start = max(0, at - (EXCERPT_CHARS - len(text)) // 2)
    end = min(len(body), start + EXCERPT_CHARS)
    return ("…" if start else "") + body[start:end] + ("…" if end < len(body) else "")


def review_context(store: VaultStore, result: dict[str, Any], scope: str, threshold: float) -> dict[str, Any]:
    """Template context from a ``derive_rules`` result: every candidate with an excerpt of
    each evidence turn (from the index: redacted text)."""
    zone = resolve_zone(store.settings.timezone)
    candidates = []
    for item in result["items"]:
        evidence = []
        for e in item["evidence"]:
            row = index.get_row(store.conn, e["project"], e["id"], "prompt")
            evidence.append({**e, "excerpt": _excerpt(row["body"] if row is not None else "", item["text"])})
        candidates.append({**item, "evidence": evidence})
    return {
        "title": "Derived rules — review", "scope": scope, "total": result["total"], "threshold": threshold,
        "confident": result.get("confident", sum(1 for c in result["items"] if c["confidence"] >= threshold)),
        "shown": len(result["items"]),
        # as the timesheet says it: in the configured zone (else the machine's), to the minute
        "generated": f"{utcnow().astimezone(zone):%Y-%m-%d %H:%M} ({zone_name(zone)})", "candidates": candidates,
    }


def write_review(context: dict[str, Any], output: Path, vault_root: Path | None = None,
                 user_templates: Path | None = None, overwrite: bool = False) -> Path:
    """Write the review as PDF (``.pdf``) or HTML (any other suffix), atomically.

    Raises
    ------
    ReportError
        Bad output path or template.
    """
    forbidden = (vault_root,) if vault_root else ()
    try:
        output_target(output, forbidden, (".pdf", ".html"), overwrite, make_folders=True, only_check=True)
    except InvalidFieldError as exc:
        raise ReportError(str(exc)) from None
    html = render_html("rules_review.html.j2", context, user_templates)
    if Path(output).suffix.lower() == ".pdf":
        return write_pdf(html, output, forbidden=forbidden, overwrite=overwrite)
    target = check_output_path(output, forbidden, (".html",), overwrite, make_folders=True)
    css = (templates_dir() / "report.css").read_text(encoding="utf-8")
    from ..vault.io import atomic_write_bytes

    atomic_write_bytes(target, html.replace('<link rel="stylesheet" href="report.css">', f"<style>{css}</style>")
                       .encode("utf-8"))
    return target

"""``memo report rules`` (derived rules: review, traps, formats, promotion) and
``memo report story`` (a session's intent story as PDF, HTML or Markdown)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ...services.requests import DeriveRulesRequest
from ...services.rules import TRAP_THRESHOLD, derive_rules
from ...services.rules.formats import CURSOR_FRONT_MATTER, FORMATS
from ...vault.io import output_target
from ...services.store import shell_cwd
from .common import _build, _check_scope, _emit, _safe, _scope_line, _short, err, out, report_app, state


@report_app.command("rules")
def report_rules(
    project: Optional[str] = typer.Option(None, "--project", help="One project (default: the cwd's repository)."),
    all_projects: bool = typer.Option(False, "--all", "--cross-project", help="Every project of the vault."),
    session_id: Optional[str] = typer.Option(None, "--session-id", help="Only this session's turns."),
    since: Optional[str] = typer.Option(None, "--since", help="Turns created at or after (ISO date or time)."),
    until: Optional[str] = typer.Option(None, "--until", help="Turns created at or before (a date covers the day)."),
    min_confidence: float = typer.Option(0.0, "--min-confidence", help="Leave out candidates below (0–1)."),
    limit: int = typer.Option(20, "--limit", help="Candidates shown, 1–100."),
    save_traps: bool = typer.Option(False, "--save-traps", help=f"Save candidates with confidence ≥ {TRAP_THRESHOLD} "
                                                                "as traps in the vault."),
    fmt: Optional[str] = typer.Option(None, "--format", help=f"Print the rules as {', '.join(FORMATS)}."),
    promote: Optional[str] = typer.Option(None, "--promote", help="Write the rules into this file of the product "
                                          "repository (run from it): CLAUDE.md, AGENTS.md, GEMINI.md, "
                                          ".github/copilot-instructions.md or .cursor/rules/<name>.mdc."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write a review report: .pdf or .html."),
    force: bool = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link)."),
) -> None:
    """Derive rules from what people keep telling their agents; review, save as traps, promote."""
    from ...reports.rules_review import review_context, write_review

    _check_scope(project, all_projects)
    if output is not None:  # refuse a bad review path before any trap is saved or file promoted
        output_target(output, (state.settings.vault_root,), (".pdf", ".html"), force, make_folders=True, only_check=True)
    request = _build(DeriveRulesRequest, project=project, cross_project=all_projects, cwd=shell_cwd(),
                     session_id=session_id, since=since, until=until, min_confidence=min_confidence, limit=limit,
                     save_traps=save_traps, format=fmt, promote=promote)
    result = derive_rules(state.store, request)
    if output is not None:
        scope = _scope_line(state.store.scope(project, all_projects, Path.cwd()), bool(project or all_projects))
        written = write_review(review_context(state.store, result, scope, TRAP_THRESHOLD), output,
                               state.settings.vault_root, state.settings.templates_dir, force)
        result = {**result, "review": str(written)}

    def human(r: dict[str, Any]) -> None:
        # with --format, stdout is the rules alone (`> .cursor/rules/derived.mdc` makes a whole file);
        # what memo says about them goes to stderr
        said = err if "formatted" in r else out
        candidates = f"{r['total']} rule candidate{'s' if r['total'] != 1 else ''}"
        if "review" in r:  # the candidates are in the report written: one line says where
            said.print(_safe(f"wrote {r['review']}: {candidates}"))
        elif "formatted" in r:
            said.print(f"{candidates}; the rules as {fmt} on stdout")
        else:
            table = Table(title=candidates)
            for column in ("confidence", "category", "times", "rule"):
                table.add_column(column, overflow="fold")
            for item in r["items"]:
                table.add_row(f"{item['confidence']:.2f}", item["category"], str(item["occurrences"]),
                              _short(item["text"], 90))
            out.print(table)
            if r["total"] > len(r["items"]):  # 21 candidates, 20 rows: the rest said, as listings say it
                out.print(f"… and {r['total'] - len(r['items'])} more: --limit {min(r['total'], 100)}")
            elif not r["total"] and not project and not all_projects:
                out.print(_safe(_scope_line(state.store.scope(None, False, Path.cwd()), False)))
        if "formatted" in r:
            sys.stdout.write(_safe((CURSOR_FRONT_MATTER + "\n" if fmt == "cursor" else "") + r["formatted"]))
        if "savedTraps" in r:
            said.print(f"saved {len(r['savedTraps'])} trap{'s' if len(r['savedTraps']) != 1 else ''}")
        if "promoted" in r:
            said.print(_safe(f"promoted {r['promoted']['rules']} rules into {r['promoted']['path']}"))

    _emit(result, human)


@report_app.command("story")
def report_story(
    session_id: str = typer.Argument(..., help="Session id."),
    output: Path = typer.Option(..., "--output", "-o", help="The file: .pdf, .html or .md (outside the product "
                                                            "repository and the vault)."),
    force: bool = typer.Option(False, "--force", help="Replace the output file if it exists (never a symbolic link)."),
    project: Optional[str] = typer.Option(None, "--project", help="Project id (needed when several projects hold the id; default: the one that does, or this repository's)."),
) -> None:
    """A session's intent story as a printable PDF (or HTML / Markdown)."""
    from ...reports.story import write_story

    result = write_story(session_id, output, state.store, shell_cwd(), state.settings.templates_dir, force,
                         project=project)
    _emit(result, lambda r: out.print(_safe(f"wrote {r['path']} ({r['turns']} turn{'' if r['turns'] == 1 else 's'})")))

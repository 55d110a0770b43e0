"""``memo project rename|merge``: correct a project's name (SPEC §9)."""

from __future__ import annotations

import typer

from .common import _emit, app, out, state

project_app = typer.Typer(help="Rename a project, or merge one into another (imports name projects after folders).",
                          no_args_is_help=True)
app.add_typer(project_app, name="project")


def _said(result: dict) -> str:
    moved = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(result["moved"].items())) or "nothing"
    return (f"{result['source']} → {result['target']}: moved {moved}"
            + (f"; {result['alreadyThere']} already there" if result["alreadyThere"] else ""))


@project_app.command("rename")
def project_rename(
    old: str = typer.Argument(..., help="The project's id now."),
    new: str = typer.Argument(..., help="Its new id (a project that does not exist yet)."),
) -> None:
    """Rename a project: every turn, session, trap, decision and hand-off moves to the new id."""
    from ...services.project_move import move_project

    _emit(move_project(state.store, old, new), lambda r: out.print(_said(r)))


@project_app.command("merge")
def project_merge(
    source: str = typer.Argument(..., help="The project to fold in (it disappears)."),
    into: str = typer.Argument(..., help="The project that takes its records."),
) -> None:
    """Merge a project into another; refused before anything moves when the two hold different records of one id."""
    from ...services.project_move import move_project

    _emit(move_project(state.store, source, into, merge=True), lambda r: out.print(_said(r)))

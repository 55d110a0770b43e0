"""``memo export parquet DIR``: the vault's records as Hive-partitioned Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ...domain.ids import validate_slug
from .common import _emit, _refuse_missing_vault, app, out, state

export_app = typer.Typer(help="Export the vault's records for other tools.", no_args_is_help=True)
app.add_typer(export_app, name="export")


@export_app.command("parquet")
def export_parquet_command(
    directory: Path = typer.Argument(..., help="Folder to write (new, empty, or a previous export: replaced)."),
    project: Optional[list[str]] = typer.Option(None, "--project", help="Only this project (repeatable)."),
    body: bool = typer.Option(True, "--body/--no-body", help="Include the prompts' text (redacted as stored)."),
) -> None:
    """Prompts, sessions and deliverables as Parquet partitioned by project and month, for
    DuckDB, Spark or Trino; every project of the vault and of every further configured vault."""
    from ...analytics.parquet import export_parquet

    _refuse_missing_vault()
    projects = [validate_slug(p, "project") for p in project] if project else None
    result = export_parquet(state.store, directory, projects=projects, body=body).wire()

    def human(r: dict) -> None:
        counts = ", ".join(f"{t['rows']} {name}" for name, t in r["tables"].items())
        out.print(f"wrote {r['output']}: {counts} (partitioned by project and month)")

    _emit(result, human)

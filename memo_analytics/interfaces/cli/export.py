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


@export_app.command("iceberg")
def export_iceberg_command(
    catalog: Optional[str] = typer.Option(None, "--catalog", help="The SQL catalog: an SQLite file (PATH.db, "
                                          "sqlite:////PATH.db) or postgresql://USER@HOST:PORT/DB (default: "
                                          "lake.catalog)."),
    warehouse: Optional[str] = typer.Option(None, "--warehouse", help="Where the data files go: a folder or "
                                            "s3://BUCKET/PREFIX (default: lake.warehouse; an S3-compatible "
                                            "server's address in lake.s3Endpoint, its keys in AWS_ACCESS_KEY_ID "
                                            "and AWS_SECRET_ACCESS_KEY)."),
    body: bool = typer.Option(True, "--body/--no-body", help="Include the prompts' text (redacted as stored)."),
) -> None:
    """This vault's sessions, prompts, deliverables and invoices into the team's Apache Iceberg tables
    (namespace memo), beside every other machine's: only what changed since the last export is written."""
    from ...analytics.lake import export_lake, lake_target

    _refuse_missing_vault()
    target = lake_target(state.settings, catalog, warehouse, [state.store.root])
    result = export_lake(state.store, target, body=body).wire()

    def human(r: dict) -> None:
        if not r["changed"]:
            out.print(f"unchanged: {r['catalog']} already holds this vault as it is ({r['vaultId']} on {r['machine']})")
            return
        counts = ", ".join(f"{name} {t['written']} written, {t['deleted']} deleted" for name, t in r["tables"].items()
                           if t["written"] or t["deleted"])
        out.print(f"exported to {r['catalog']} ({r['warehouse']}): {counts} (vault {r['vaultId']} on {r['machine']})")

    _emit(result, human)

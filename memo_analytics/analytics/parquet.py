"""Parquet export for teams that outgrow one machine (issue 4 point 7, SPEC §4).

``memo export parquet DIR`` writes three Hive-partitioned datasets that DuckDB, Spark and
Trino read as they are::

    DIR/_memo_export.json                               what was written (tables, rows, vaults)
    DIR/prompts/project=<id>/month=YYYY-MM/part-0.parquet
    DIR/sessions/project=<id>/month=YYYY-MM/part-0.parquet
    DIR/deliverables/project=<id>/month=YYYY-MM/part-0.parquet

The columns are those of the frames (:mod:`memo_analytics.analytics.frames`) minus the two
partition keys, which readers take from the paths: ``project`` and ``month`` (the UTC month of
a prompt's ``created``, of a session's ``start_time``, of a deliverable's
``session_start``). Times are Parquet ``TIMESTAMP(MICROS, UTC)``; strings UTF-8. A project id
that looks like a number is read as a number by readers that infer partition types: give
them the type (DuckDB ``hive_types={'project': 'VARCHAR', 'month': 'VARCHAR'}``).

A table without rows is one file of no rows at the top of its folder, with every column (the
partition keys too): ``read_parquet('DIR/deliverables/**/*.parquet', hive_partitioning=true)``
gives its columns and no row rather than failing on no file.

The export is atomic: it is written to a hidden folder beside ``DIR`` and renamed into place;
a previous export at ``DIR`` is replaced, any other content is refused, and so is a ``DIR``
inside a vault, containing one, or inside a git repository.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads

from ..domain.clock import to_iso, utcnow
from ..domain.errors import InvalidFieldError
from ..services.store import VaultStore
from .frames import deliverables_frame, prompts_frame, sessions_frame, vault_sources

#: The manifest file that marks a folder as written by this exporter.
MANIFEST = "_memo_export.json"
FORMAT = "memo-parquet/1"
PARTITIONS = ("project", "month")
#: The table folders of an export (with the manifest, all an export folder holds).
EXPORT_TABLES = ("prompts", "sessions", "deliverables")

_MONTH_OF = {"prompts": "created", "sessions": "start_time", "deliverables": "session_start"}


@dataclass
class ParquetExport:
    """What an export wrote: ``output`` folder, rows and files per table, vaults read."""

    output: Path
    rows: dict[str, int]
    files: dict[str, int]
    vaults: list[str]

    def wire(self) -> dict[str, Any]:
        return {"output": str(self.output), "format": FORMAT, "partitioning": list(PARTITIONS),
                "tables": {name: {"rows": self.rows[name], "files": self.files[name]} for name in self.rows},
                "vaults": self.vaults}


def check_export_dir(directory: Path, vault_roots: list[Path]) -> Path:
    """The absolute export folder, or a one-line refusal.

    Raises
    ------
    InvalidFieldError
        ``Invalid dir: …`` — inside a vault (records and exports must not mix), containing
        a vault (replacing it would delete the vault), inside a git repository (turns must
        never land in a product's tree), a symbolic link, a missing parent folder, an
        existing file, or a folder with content that no export made (a previous export
        holding anything else is refused too: replacing it would delete that).
    """
    target = Path(directory).expanduser().absolute()
    if target.is_symlink():
        raise InvalidFieldError("dir", f"{directory} is a symbolic link; give the real folder")
    resolved = target.resolve()
    for root in vault_roots:
        root = Path(root).resolve()
        if resolved.is_relative_to(root):
            raise InvalidFieldError("dir", f"{directory} is inside the vault {root}; export elsewhere")
        if root.is_relative_to(resolved):
            raise InvalidFieldError("dir", f"{directory} contains the vault {root}; export elsewhere")
    for folder in (resolved, *resolved.parents):
        if (folder / ".git").exists():
            raise InvalidFieldError("dir", f"{directory} is inside the git repository {folder}; keep the vault's "
                                           "records out of product repositories (SPEC §1)")
    if not resolved.parent.is_dir():
        raise InvalidFieldError("dir", f"folder {resolved.parent} does not exist")
    if resolved.exists():
        if not resolved.is_dir():
            raise InvalidFieldError("dir", f"{directory} exists and is not a folder")
        entries = sorted(p.name for p in resolved.iterdir())
        if entries and not (resolved / MANIFEST).is_file():
            raise InvalidFieldError("dir", f"{directory} is not empty and was not written by memo export parquet; "
                                           "choose an empty or new folder")
        foreign = [name for name in entries if name != MANIFEST and name not in EXPORT_TABLES]
        if foreign:  # replacing the export would delete them
            raise InvalidFieldError("dir", f"{directory} holds {foreign[0]!r}, which no export wrote; move it away "
                                           "or choose another folder")
    return resolved


def _arrow(frame: pl.DataFrame, month_of: str) -> pa.Table:
    frame = frame.with_columns(pl.col(month_of).dt.strftime("%Y-%m").alias("month"))
    table = frame.to_arrow()
    plain = pa.schema([
        pa.field(f.name, _plain_type(f.type), nullable=True) for f in table.schema
    ])
    return table.cast(plain)


def _plain_type(kind: pa.DataType) -> pa.DataType:
    """Types every Parquet reader knows: no large or view strings."""
    if pa.types.is_large_string(kind) or pa.types.is_string_view(kind):
        return pa.string()
    if pa.types.is_large_list(kind) or pa.types.is_list_view(kind) or pa.types.is_list(kind):
        return pa.list_(_plain_type(kind.value_type))
    return kind


def _write(table: pa.Table, folder: Path) -> int:
    partitioning = pads.partitioning(pa.schema([table.schema.field(p) for p in PARTITIONS]), flavor="hive")
    written: list[str] = []
    pads.write_dataset(table, folder, format="parquet", partitioning=partitioning,
                       basename_template="part-{i}.parquet", existing_data_behavior="error",
                       file_visitor=lambda f: written.append(f.path), max_rows_per_group=128 * 1024)
    if not written:  # an empty table: one file of no rows with every column, partition keys too, so a
        import pyarrow.parquet as pq  # reader's glob (DIR/deliverables/**/*.parquet) finds its schema

        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, folder / "part-0.parquet")
        return 1
    return len(written)


def export_parquet(store: VaultStore, directory: Path, *, projects: list[str] | None = None,
                   cross_project: bool = True, body: bool = True) -> ParquetExport:
    """Write prompts, sessions and deliverables as Hive-partitioned Parquet under ``directory``.

    Parameters
    ----------
    store : VaultStore
        The vault; with ``cross_project`` also every further vault of its settings
        (read-only; a ``vault`` column tells the rows apart, an id in several vaults is
        written once).
    directory : Path
        The export folder (created; a previous export there is replaced atomically).
    projects : list[str] | None
        Only these projects; None: every project.
    body : bool
        Include the prompts' (redacted) ``body`` column.

    Returns
    -------
    ParquetExport

    Raises
    ------
    InvalidFieldError
        ``Invalid dir: …`` (see :func:`check_export_dir`); ``Invalid vaults: …`` for a
        further vault without an index.
    """
    with vault_sources(store, further=cross_project) as sources:
        roots = [Path(s.vault) for s in sources]
        target = check_export_dir(directory, roots)
        sessions = sessions_frame(sources, projects)
        frames = {"prompts": prompts_frame(sources, projects, body=body), "sessions": sessions,
                  "deliverables": deliverables_frame(sessions)}
    if projects:  # a misspelt project wrote an empty export, exit 0 (found by an analyst); every read refuses it
        held = set(frames["sessions"]["project"].to_list()) | set(frames["prompts"]["project"].to_list())
        missing = [project for project in projects if project not in held]
        if missing:
            from ..services.sessions import check_projects

            check_projects(store, missing)  # names the projects the vault holds
            raise InvalidFieldError("project", f"no vault read holds anything of project {missing[0]!r}")
    staging = target.parent / f".{target.name}.memo-export-{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        rows, files = {}, {}
        for name, frame in frames.items():
            rows[name] = frame.height
            files[name] = _write(_arrow(frame, _MONTH_OF[name]), staging / name)
        result = ParquetExport(target, rows, files, [str(r) for r in roots])
        manifest = {**result.wire(), "generated": to_iso(utcnow())}
        manifest.pop("output")
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        _swap_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return result


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename ``staging`` to ``target``; an existing ``target`` (a previous export or an
    empty folder) is moved aside first and removed after the rename."""
    old = None
    if target.exists():
        old = target.parent / f".{target.name}.memo-export-old-{secrets.token_hex(4)}"
        os.replace(target, old)
    try:
        os.replace(staging, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)

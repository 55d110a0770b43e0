"""Apache Iceberg tables of a team's vaults (SPEC §10): ``memo export iceberg``, ``memo activity
--lake`` and :func:`memo_analytics.open_lake`.

Every machine exports its own vault into one set of tables (namespace ``memo``) of one catalog —
an SQL catalog on SQLite (a file) or PostgreSQL — whose data files lie in a warehouse folder or an
S3-compatible bucket::

    memo.sessions       one row per session record: SESSION_SCHEMA's columns (no ``vault``) and
                        ``billed_minutes`` (Int64, what the session bills under its vault's
                        rules: rounding terms, overlap policy, the minutes its invoice billed;
                        0 when it bills nothing: open, not billable), ``cost_usd`` (Decimal(18, 4), the
                        API-equivalent AI cost of its turns; null when none could be priced),
                        its turns' ``input_tokens, cache_read_tokens, cache_write_tokens,
                        output_tokens, reasoning_tokens`` and ``unpriced_turns`` (Int64),
                        ``invoice`` (the number of the issued, uncredited invoice billing it),
                        ``record_created`` (Datetime(us, UTC): when its record was made)
    memo.prompts        one row per turn: PROMPT_SCHEMA's columns (no ``vault``), ``body`` unless
                        ``--no-body``, ``body_sha256`` (the SHA-256 of the text as stored, always)
    memo.deliverables   one row per deliverable: DELIVERABLE_SCHEMA's columns (no ``vault``)
    memo.invoices       one row per issued document (invoice or credit note): ``ref, number,
                        kind, status, client, issued, due, period_start, period_end, currency,
                        net, tax, gross`` (Decimal(18, 3); a credit note's negative: what it
                        takes back, so an invoice and its credit note sum to 0), ``billable_hours``
                        (Float64, negative too), ``sessions`` (Int64), ``credits`` (the invoice a
                        credit note cancels), ``pdf_sha256``; ``status`` ``issued`` or
                        ``credited`` for an invoice, null for a credit note

Each row also carries who wrote it: ``vault_id`` (the vault's id, ``.memo/sync/daemon-id``: it
travels with the vault), ``machine`` (the host name of the export), ``exported_at`` (UTC, the
export that last wrote the row) and ``exported_by_laptop`` (Boolean: a hybrid laptop's export). An export is incremental and idempotent: it reads the rows of
its own vault id, writes those that changed or are new, deletes those its vault no longer holds
(one Iceberg commit per table: a delete and an append), and commits nothing when nothing changed.
A vault copied to a second machine is the same vault: the later export of the two replaces the
earlier's rows.

Readers (:func:`lake_frames`) see a record once: a record exported by several vaults — a laptop's
and the team daemon's that holds its pushes — is the team daemon's row (any vault's not a hybrid
laptop's: the daemon bills the team), else the row exported last (:data:`SHARED_KEYS`: a
session's project, id, owner and start, or its id, owner and the instant its record was made; a
turn's session, time and text). :func:`lake_activity` tells apart two sessions of one project and id (two people's,
one person's on two laptops) as ``ID@OWNER``. Another engine reads the same tables: the catalog's name is ``memo``
(pyiceberg: ``SqlCatalog("memo", uri=…, warehouse=…)``, a PostgreSQL URL as
``postgresql+psycopg2://…``), and it keeps a record once the same way.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import polars as pl

from ..domain.errors import InvalidFieldError, MemoError
from ..services.store import VaultStore
from .frames import deliverables_frame, prompts_frame, sessions_frame

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

NAMESPACE = "memo"
TABLES = ("sessions", "prompts", "deliverables", "invoices")
#: The columns that name a row within its vault (``record_key`` is them joined).
KEYS = {"sessions": ("project", "id"), "prompts": ("project", "id"),
        "deliverables": ("project", "session_record_id", "position"), "invoices": ("ref",)}
#: The columns a reader takes a record's identity from across vaults (a record kept once): a
#: session's project, id (a team daemon's id for a session it keeps apart, ``fix--ann-1a2b3c``,
#: read as the laptop's ``fix``), whose it is (``owner``, else none) and start — two people's
#: sessions of one id (``fix-login``) both count, and so do one person's two of one id on two
#: laptops (the second vanished: found by a data lead and a breaker); a turn's number, time and the
#: hash of its text (one session's two turns of one text and time are two: an old SpecStory file
#: stamps every turn alike — found by an analyst); a deliverable's session's start. A session is also the same record where its
#: owner and the instant its record was made (``record_created``) are: a daemon's copy the lead
#: moved to another project, or whose start the lead corrected (counted twice: found by a team lead).
SHARED_KEYS = {"sessions": ("project", "_base_id", "_whose", "start_time"),
               "prompts": ("_where", "turn", "created", "body_sha256"),
               "deliverables": ("project", "session_record_id", "position", "session_start"),
               "invoices": ("ref", "pdf_sha256")}
#: A second identity of a session record across vaults (:data:`SHARED_KEYS`): its id (a kept-apart one read as
#: the laptop's), whose it is and when its record was made — two sessions of one owner made at one instant
#: (a start given by hand is its record's time) are two records (counted once: found by a breaker).
SAME_RECORD = ("_base_id", "owner", "record_created")
#: A team daemon's suffix of a session it keeps apart (``--ann-x.example-1a2b3c``: the owner as a slug,
#: dots and all — without them, every owner of an e-mail address was missed and counted twice: a team lead).
_APART = r"(--[a-z0-9._-]*-[0-9a-f]{6})$"
_WHO = ("vault_id", "machine", "exported_at", "exported_by_laptop")
_MONEY = pl.Decimal(18, 3)
_COST = pl.Decimal(18, 4)
UTC_DT = pl.Datetime("us", "UTC")

#: A session's tokens as ``activity`` counts them (wire key → column of the ``sessions`` table).
_TOKEN_KEYS = ("input", "cacheRead", "cacheWrite", "output", "reasoning")
_TOKEN_COLUMNS = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")

#: Columns and dtypes of the ``invoices`` table (before ``record_key`` and the columns of who wrote it).
INVOICE_SCHEMA: dict[str, pl.DataType] = {
    "ref": pl.String, "number": pl.String, "kind": pl.String, "status": pl.String, "client": pl.String,
    "issued": pl.Date, "due": pl.Date, "period_start": pl.Date, "period_end": pl.Date, "currency": pl.String,
    "net": _MONEY, "tax": _MONEY, "gross": _MONEY, "billable_hours": pl.Float64, "sessions": pl.Int64,
    "credits": pl.String, "pdf_sha256": pl.String,
}
#: A delete naming more rows than this rewrites the vault's rows whole (an ``IN`` list of
#: thousands is slower than the rewrite).
_FEW = 2_000
_COMMIT_TRIES = 5


@dataclass(frozen=True)
class LakeTarget:
    """Where the tables are: ``catalog`` an SQLAlchemy URL (``sqlite:////abs/catalog.db`` or
    ``postgresql+psycopg2://user:pass@host:port/db``), ``warehouse`` a ``file://`` or ``s3://``
    location, the S3 endpoint and region (credentials come from the environment:
    ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, as every S3 tool reads them)."""

    catalog: str
    warehouse: str
    s3_endpoint: str | None = None
    s3_region: str | None = None

    def shown(self) -> dict[str, str]:
        """The target as said to a person: a catalog URL's password and query values masked (an
        SQLite URL's ``?pw=…`` was printed as it is: found by a breaker)."""
        from ..vault.redact import mask_url

        parts = urlsplit(self.catalog)
        catalog = self.catalog
        if parts.password:
            catalog = catalog.replace(f":{parts.password}@", ":***@", 1)
        if "?" in catalog:  # sqlite:////…?pw=… has no host: mask_url leaves it as it is
            head, query = catalog.split("?", 1)
            catalog = head + "?" + "&".join(f"{pair.split('=', 1)[0]}=***" if pair else pair
                                            for pair in query.split("&"))
        return {"catalog": mask_url(catalog), "warehouse": mask_url(self.warehouse)}


def lake_target(settings: Any, catalog: str | None = None, warehouse: str | None = None,
                vault_roots: list[Path] | None = None) -> LakeTarget:
    """The lake of ``--catalog``/``--warehouse``, else of the config's ``[lake]``.

    A catalog without a scheme is an SQLite file (``~`` expanded, made absolute); a warehouse
    without a scheme is a folder (``file://``).

    Raises
    ------
    InvalidFieldError
        ``Invalid lake.catalog`` / ``Invalid lake.warehouse``: none given, a scheme other than
        ``sqlite``/``postgresql`` (catalog) or ``file``/``s3`` (warehouse), an SQLite file or a
        warehouse folder whose parent folder does not exist, a warehouse folder inside a vault or a
        git repository (the records must not land in a product's tree: SPEC §1).
    """
    lake = settings.lake
    catalog = catalog if catalog is not None else lake.catalog
    warehouse = warehouse if warehouse is not None else lake.warehouse
    if not catalog or not str(catalog).strip():
        raise InvalidFieldError("lake.catalog", "no catalog: set lake.catalog to an SQLite file or a "
                                                "postgresql://USER@HOST:PORT/DB (memo config set lake.catalog …; "
                                                "memo export iceberg also takes --catalog)")
    if not warehouse or not str(warehouse).strip():
        raise InvalidFieldError("lake.warehouse", "no warehouse: set lake.warehouse to a folder or "
                                                  "s3://BUCKET/PREFIX (memo config set lake.warehouse …; "
                                                  "memo export iceberg also takes --warehouse)")
    return LakeTarget(_catalog_url(str(catalog).strip(), vault_roots or []),
                      _warehouse_url(str(warehouse).strip(), vault_roots or []), lake.s3_endpoint, lake.s3_region)


def _catalog_url(text: str, vault_roots: list[Path]) -> str:
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if scheme in ("", "sqlite"):
        if scheme:  # as SQLAlchemy reads it: sqlite:////abs/file.db, sqlite:///relative.db
            rest = text.split(":///", 1)[1] if ":///" in text else ""
            if not rest:
                raise InvalidFieldError("lake.catalog", f"{text} names no file: give sqlite:////ABSOLUTE/PATH.db")
            path = Path(rest.split("?", 1)[0]).expanduser().absolute()
        else:
            path = Path(text).expanduser().absolute()
        if not path.parent.is_dir():
            raise InvalidFieldError("lake.catalog", f"folder {path.parent} does not exist")
        if path.is_dir():
            raise InvalidFieldError("lake.catalog", f"{text} is a folder; give the SQLite catalog's file")
        _outside_vaults_and_repositories("lake.catalog", text, path, vault_roots)
        return f"sqlite:///{path}"
    if scheme in ("postgresql", "postgres", "postgresql+psycopg2"):
        return "postgresql+psycopg2://" + text.split("://", 1)[1]
    raise InvalidFieldError("lake.catalog", f"{scheme}:// is not a catalog memo writes: give sqlite:///PATH.db "
                                            "or postgresql://USER@HOST:PORT/DB")


def _warehouse_url(text: str, vault_roots: list[Path]) -> str:
    scheme = urlsplit(text).scheme.lower() if "://" in text else ""
    if scheme == "s3":
        if not urlsplit(text).netloc:
            raise InvalidFieldError("lake.warehouse", f"{text} names no bucket (s3://BUCKET/PREFIX)")
        missing = [key for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if not os.environ.get(key)]
        if missing:  # an unsigned write left a lake no export or read could open again (found by a data lead)
            raise InvalidFieldError("lake.warehouse", f"{text} is a bucket: give its keys in {' and '.join(missing)} "
                                                      "(the environment; never the config)")
        return text.rstrip("/")
    if scheme not in ("", "file"):
        raise InvalidFieldError("lake.warehouse", f"{scheme}:// is not a warehouse memo writes: give a folder or "
                                                  "s3://BUCKET/PREFIX")
    path = Path(text[len("file://"):] if scheme == "file" else text).expanduser().absolute()
    resolved = path.resolve()
    if not resolved.parent.is_dir():
        raise InvalidFieldError("lake.warehouse", f"folder {resolved.parent} does not exist")
    if resolved.exists() and not resolved.is_dir():
        raise InvalidFieldError("lake.warehouse", f"{text} exists and is not a folder")
    _outside_vaults_and_repositories("lake.warehouse", text, resolved, vault_roots)
    return f"file://{resolved}"


def _outside_vaults_and_repositories(field: str, text: str, path: Path, vault_roots: list[Path]) -> None:
    """Refuse a lake file or folder inside (or holding) a vault, or inside a git repository: the
    catalog put in the vault's own index was wiped by the next ``memo reindex`` (found by a breaker),
    and the vault's records must not land in a product's tree (SPEC §1)."""
    resolved = path.resolve()
    for root in vault_roots:
        root = Path(root).resolve()
        if resolved.is_relative_to(root) or root.is_relative_to(resolved):
            raise InvalidFieldError(field, f"{text} and the vault {root} overlap; keep the lake elsewhere")
    for folder in (resolved, *resolved.parents):
        if (folder / ".git").exists():
            raise InvalidFieldError(field, f"{text} is inside the git repository {folder}; keep the vault's records "
                                           "out of product repositories (SPEC §1)")


def open_catalog(target: LakeTarget) -> "Catalog":
    """The SQL catalog of ``target`` (its tables created on first use by pyiceberg).

    Raises
    ------
    MemoError
        ``Lake catalog … cannot be opened: …`` (a server not answering, a refused login).
    """
    from pyiceberg.catalog.sql import SqlCatalog

    properties = {"uri": target.catalog, "warehouse": target.warehouse}
    if target.s3_endpoint:
        properties["s3.endpoint"] = target.s3_endpoint
    if target.s3_region:
        properties["s3.region"] = target.s3_region
    for env, key in (("AWS_ACCESS_KEY_ID", "s3.access-key-id"), ("AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"),
                     ("AWS_SESSION_TOKEN", "s3.session-token")):
        if os.environ.get(env):
            properties[key] = os.environ[env]
    try:
        return SqlCatalog(NAMESPACE, **properties)
    except Exception as exc:  # SQLAlchemy's OperationalError and kin: say which catalog, not a traceback
        raise MemoError(f"Lake catalog {target.shown()['catalog']} cannot be opened: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    """The first line of what went wrong (the driver's words where SQLAlchemy wraps them)."""
    text = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass
class LakeExport:
    """What an export did, per table: ``written`` rows (new or changed), ``deleted`` rows (no
    longer in the vault), ``rows`` the vault's rows the table now holds; ``vault_id``,
    ``machine``; ``target`` where."""

    target: LakeTarget
    vault_id: str
    machine: str
    written: dict[str, int] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(self.written.values()) or any(self.deleted.values())

    def wire(self) -> dict[str, Any]:
        return {**self.target.shown(), "namespace": NAMESPACE, "vaultId": self.vault_id, "machine": self.machine,
                "changed": self.changed,
                "tables": {name: {"rows": self.rows[name], "written": self.written[name],
                                  "deleted": self.deleted[name]} for name in self.rows}}


def vault_tables(store: VaultStore, body: bool = True) -> dict[str, pl.DataFrame]:
    """The rows the vault of ``store`` exports (its own vault only: a further vault exports
    itself), per table, before the columns of who wrote them (see the module's docstring)."""
    from .activity import ActivityRequest, activity_report

    sessions = sessions_frame(store)
    report = activity_report(store, ActivityRequest(), say_left_out=False)
    billed = pl.DataFrame(
        [(item["project"], item["id"], item["billedMinutes"], item["costUsd"], item["invoice"],
          *(item["tokens"].get(key, 0) for key in _TOKEN_KEYS), item["unpricedTurns"])
         for item in report.sessions],
        schema={"project": pl.String, "id": pl.String, "billed_minutes": pl.Int64, "cost_usd": pl.String,
                "invoice": pl.String, **dict.fromkeys(_TOKEN_COLUMNS, pl.Int64), "unpriced_turns": pl.Int64},
        orient="row",
    ).with_columns(pl.col("cost_usd").str.to_decimal(scale=4).cast(_COST),
                   pl.col("billed_minutes").fill_null(0))  # 0 when it bills nothing, as the vault's frames say
    # a session no report bills (superseded) bills 0 minutes, as the vault's frames say
    sessions_out = sessions.join(billed, on=["project", "id"], how="left").drop("vault").with_columns(
        pl.col("billed_minutes").fill_null(0))
    made = pl.DataFrame(store.conn.execute("SELECT project, id, json_extract(meta, '$.created') FROM records "
                                           "WHERE kind = 'session'").fetchall(),
                        schema={"project": pl.String, "id": pl.String, "record_created": pl.String}, orient="row")
    sessions_out = sessions_out.join(made.with_columns(_instant("record_created")), on=["project", "id"], how="left")
    prompts = prompts_frame(store, body=True)
    prompts = prompts.with_columns(pl.col("body").map_elements(_sha256, return_dtype=pl.String).alias("body_sha256"))
    return {
        "sessions": sessions_out,
        "prompts": (prompts if body else prompts.drop("body")).drop("vault"),
        "deliverables": deliverables_frame(sessions).drop("vault"),
        "invoices": invoices_frame(store),
    }


def _sha256(text: str | None) -> str | None:
    import hashlib

    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() if text is not None else None


def _instant(column: str) -> pl.Expr:
    """An ISO 8601 text column as ``Datetime(us, UTC)`` (null where it is none)."""
    return pl.col(column).str.to_datetime(time_zone="UTC", strict=False).dt.cast_time_unit("us").alias(column)


def invoices_frame(store: VaultStore) -> pl.DataFrame:
    """One row per issued document of the vault: :data:`INVOICE_SCHEMA` (dates as ``Date``,
    amounts ``Decimal(18, 3)`` in the document's currency, a credit note's negative, as its hours;
    ``status`` ``issued`` or ``credited`` for an invoice, null for a credit note; ``credits`` the
    invoice a credit note cancels)."""
    from ..vault import ledger

    docs = ledger.documents(store.root) if store.exists else []
    credited = ledger.credited(docs)
    rows = []
    for doc in docs:
        meta = doc.meta
        credit = doc.kind == ledger.CREDIT_NOTE
        sign = -1 if credit else 1  # what a credit note takes back, as its CSV says it (summed, the two net 0)
        rows.append({
            "ref": doc.ref, "number": doc.number, "kind": doc.kind,
            "status": None if credit else ("credited" if credited.get(doc.ref) else "issued"),
            "client": meta.get("client"), "issued": _day(meta.get("issued")), "due": _day(meta.get("due")),
            "period_start": _day(meta.get("periodStart")), "period_end": _day(meta.get("periodEnd")),
            "currency": meta.get("currency"), "net": _money(meta.get("net"), sign),
            "tax": _money(meta.get("tax"), sign), "gross": _money(meta.get("gross"), sign),
            "billable_hours": _float(meta.get("billableHours"), sign),
            "sessions": len(meta.get("sessions") or []),
            "credits": (meta.get("creditsRef") or meta.get("credits")) if credit else None,
            "pdf_sha256": meta.get("pdfSha256"),
        })
    return pl.DataFrame(rows, schema=INVOICE_SCHEMA, orient="row")


def _day(value: Any):
    from datetime import date

    try:
        return date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _money(value: Any, sign: int = 1) -> Decimal | None:
    try:
        return sign * Decimal(str(value)).quantize(Decimal("0.001")) if value is not None else None
    except ArithmeticError:
        return None


def _float(value: Any, sign: int = 1) -> float | None:
    try:
        return sign * float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _with_key(frame: pl.DataFrame, table: str) -> pl.DataFrame:
    key = pl.concat_str([pl.col(c).cast(pl.String) for c in KEYS[table]], separator="\x1f")
    return frame.with_columns(key.alias("record_key"))


def _arrow(frame: pl.DataFrame):
    """``frame`` as Arrow with the types Iceberg takes (no view or large types)."""
    import pyarrow as pa

    from .parquet import _plain_type

    table = frame.to_arrow()
    return table.cast(pa.schema([pa.field(f.name, _plain_type(f.type), nullable=True) for f in table.schema]))


def _row_hashes(frame: pl.DataFrame) -> pl.DataFrame:
    """``record_key`` and a hash of every column but those of who wrote the row — and of whether a
    hybrid laptop wrote it (``exported_by_laptop``, null as False): a laptop that joined the team
    exports its rows again as a laptop's, and the daemon's rows take their place (a row kept as
    it was first written stayed "not a laptop's" and beat the daemon's: found by a breaker)."""
    columns = sorted(c for c in frame.columns if c not in _WHO and c != "record_key")
    if "exported_by_laptop" in frame.columns:
        return frame.select("record_key", pl.struct(
            [*columns, pl.col("exported_by_laptop").fill_null(False)]).hash(seed=7).alias("row_hash"))
    return frame.select("record_key", pl.struct(columns).hash(seed=7).alias("row_hash"))


def export_lake(store: VaultStore, target: LakeTarget, body: bool = True) -> LakeExport:
    """Write the vault's sessions, prompts, deliverables and invoices into the lake (SPEC §10).

    Returns
    -------
    LakeExport
        Rows written and deleted per table; nothing committed where nothing changed.

    Raises
    ------
    InvalidFieldError
        ``Invalid vault``: the vault does not exist.
    MemoError
        The catalog cannot be opened; a table of the namespace has columns of another type
        than memo writes (named); a commit failed five times over (others writing the same
        table at once: run it again).
    """
    from ..services.sync import daemon_id

    if not store.exists:
        raise InvalidFieldError("vault", f"no vault at {store.root}: nothing to export")
    import logging

    # pyiceberg says its retries of a lost commit race on stderr ("Commit failed due to a concurrent
    # update, retrying"): not JSON under --json, and the export retries and says what it wrote itself
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    tables = vault_tables(store, body=body)
    vault_id, machine = daemon_id(store), socket.gethostname()
    laptop = getattr(store.settings, "mode", None) == "hybrid"  # its rows yield to the team daemon's
    catalog = open_catalog(target)
    catalog.create_namespace_if_not_exists(NAMESPACE)
    result = LakeExport(target, vault_id, machine)
    now = datetime.now(timezone.utc)
    for name in TABLES:
        frame = _with_key(tables[name], name).with_columns(
            pl.lit(vault_id).alias("vault_id"), pl.lit(machine).alias("machine"),
            pl.lit(now).cast(UTC_DT).alias("exported_at"), pl.lit(laptop).alias("exported_by_laptop"))
        try:
            written, deleted = _merge(catalog, name, frame, vault_id)
        except MemoError:
            raise
        except Exception as exc:  # noqa: BLE001 — the warehouse or catalog refused: one line, not a traceback
            raise MemoError(f"Lake table {NAMESPACE}.{name} cannot be written: {_first_line(exc)}") from None
        result.written[name], result.deleted[name], result.rows[name] = written, deleted, frame.height
    return result


def _merge(catalog: "Catalog", name: str, frame: pl.DataFrame, vault_id: str) -> tuple[int, int]:
    """Make the rows of ``vault_id`` in table ``name`` those of ``frame``: ``(written, deleted)``."""
    from pyiceberg.exceptions import CommitFailedException, ValidationException
    from pyiceberg.expressions import And, EqualTo, In

    arrow = _arrow(frame)
    identifier = f"{NAMESPACE}.{name}"
    for attempt in range(_COMMIT_TRIES):
        table = _table(catalog, identifier, arrow.schema)
        held = table.scan(row_filter=EqualTo("vault_id", vault_id)).to_polars() if table.current_snapshot() \
            else pl.DataFrame()
        if held.height:
            ours, theirs = _row_hashes(frame), _row_hashes(held.select([c for c in frame.columns if c in held.columns]))
            if set(held.columns) != set(frame.columns):  # another memo's columns: every row written anew
                theirs = theirs.with_columns(pl.lit(None, dtype=pl.UInt64).alias("row_hash"))
            changed = ours.join(theirs, on=["record_key", "row_hash"], how="anti")["record_key"]
            gone = set(theirs.join(ours, on="record_key", how="anti")["record_key"].to_list())
            stale = (set(changed.to_list()) & set(held["record_key"].to_list())) | gone
        else:
            changed, stale, gone = frame["record_key"], set(), set()
        if not len(changed) and not stale:
            return 0, 0
        rewrite = len(stale) > _FEW
        writing = frame if rewrite else frame.filter(pl.col("record_key").is_in(changed.to_list()))
        try:
            with table.transaction() as tx:
                if rewrite:
                    tx.delete(EqualTo("vault_id", vault_id))
                elif stale:
                    tx.delete(And(EqualTo("vault_id", vault_id), In("record_key", sorted(stale))))
                if writing.height:
                    tx.append(_arrow(writing))
        except (CommitFailedException, ValidationException):
            # another machine (or another export of this vault) committed to this table first: its files
            # the delete named are gone — read it again (two exports at once ended in a traceback)
            time.sleep(0.2 * (attempt + 1))
            continue
        return writing.height, len(gone)
    raise MemoError(f"Lake table {identifier}: five commits failed (others are writing it at once); run "
                    "memo export iceberg again")


def _table(catalog: "Catalog", identifier: str, schema) -> "Table":
    """The table, created with ``schema`` on first use; columns memo added since are added to it."""
    import warnings

    from pyiceberg.exceptions import NoSuchTableError

    try:
        table = catalog.load_table(identifier)
    except NoSuchTableError:
        return catalog.create_table_if_not_exists(identifier, schema=schema)
    missing = [f for f in schema if f.name not in table.schema().column_names]
    if missing:
        with warnings.catch_warnings(), table.update_schema() as update:
            warnings.simplefilter("ignore")
            update.union_by_name(schema)
        table = catalog.load_table(identifier)
    return table


def check_readable(target: LakeTarget) -> None:
    """Refuse to read a lake whose SQLite catalog or local warehouse folder is not there: a read
    made the catalog file (an empty lake, 0 hours, no word: a misspelt catalog path, found by an
    analyst), and a misspelt warehouse read as well as the right one.

    Raises
    ------
    InvalidFieldError
        ``lake.catalog`` or ``lake.warehouse``, naming the path that does not exist.
    """
    if target.catalog.startswith("sqlite:///") and not Path(target.catalog[len("sqlite:///"):].split("?", 1)[0]).exists():
        raise InvalidFieldError("lake.catalog", f"{target.catalog[len('sqlite:///'):]} does not exist: no vault was "
                                                "exported into that lake (memo export iceberg makes it)")
    if target.warehouse.startswith("file://"):
        folder = Path(target.warehouse[len("file://"):])
        if not folder.is_dir():
            raise InvalidFieldError("lake.warehouse", f"{folder} does not exist: no vault was exported into that "
                                                      "warehouse (memo export iceberg makes it)")
        if not (folder / NAMESPACE).is_dir():  # a folder that exists, of no lake (the catalog read another's files)
            raise InvalidFieldError("lake.warehouse", f"{folder} holds no memo tables ({NAMESPACE}/): no vault was "
                                                      "exported into that warehouse")


def lake_frames(target: LakeTarget, tables: tuple[str, ...] = TABLES) -> dict[str, pl.DataFrame]:
    """The lake's tables as polars frames, a record once (:data:`SHARED_KEYS`: when several vaults
    exported it, the row of a vault not a hybrid laptop's, else the one exported last); columns as
    the module's docstring gives them, plus ``vault_id``, ``machine``, ``exported_at``
    (``Datetime(us, UTC)``), ``exported_by_laptop`` (Boolean; null in rows of an earlier memo). A table no machine
    exported yet is an empty frame.

    Raises
    ------
    MemoError
        The catalog cannot be opened or read.
    """
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    check_readable(target)
    catalog = open_catalog(target)
    frames = {}
    for name in tables:
        try:
            table = catalog.load_table(f"{NAMESPACE}.{name}")
        except (NoSuchTableError, NoSuchNamespaceError):
            frames[name] = _empty(name)
            continue
        except Exception as exc:  # noqa: BLE001 — its metadata cannot be read (a bucket not answering): one line
            raise MemoError(f"Lake table {NAMESPACE}.{name} cannot be read: {_first_line(exc)}") from None
        try:
            frame = table.scan().to_polars() if table.current_snapshot() else _empty(name)
        except Exception as exc:  # noqa: BLE001 — a warehouse that cannot be read: one line, not a traceback
            raise MemoError(f"Lake table {NAMESPACE}.{name} cannot be read: {_first_line(exc)}") from None
        if frame.height:
            # the team daemon's row of a record before a laptop's, whenever each exported: the daemon bills the
            # team (its rounding, overlap policy, invoices); a laptop's export under its own config changed the
            # team's figures until the daemon issued (found by a team lead)
            laptop = (pl.col("exported_by_laptop").fill_null(False) if "exported_by_laptop" in frame.columns
                      else pl.lit(False))
            frame = frame.with_columns(laptop.alias("_laptop")).sort(
                ["_laptop", "exported_at"], descending=[False, True], maintain_order=True).drop("_laptop")
            if name == "sessions":
                frame = _one_row_a_session(frame)
            elif name == "prompts" and "body_sha256" in frame.columns:
                # a turn: its session (a kept-apart id read as the laptop's; a turn of no session: its
                # project), time and text — "yes" said at one time in two projects is two turns (found by a breaker)
                where = pl.when(pl.col("session_id").is_not_null()) \
                    .then(pl.concat_str([pl.lit("s:"), pl.col("session_id").str.replace(_APART, "")])) \
                    .otherwise(pl.concat_str([pl.lit("p:"), pl.col("project")]))
                frame = frame.with_columns(where.alias("_where")) \
                    .unique(subset=list(SHARED_KEYS[name]), keep="first", maintain_order=True).drop("_where")
            else:
                keys = [k for k in SHARED_KEYS[name] if k in frame.columns] or list(KEYS[name])
                if name == "prompts":  # rows of an earlier memo
                    keys = ["project", "id", "created"]
                frame = frame.unique(subset=keys, keep="first", maintain_order=True)
        frames[name] = frame.drop("record_key", strict=False)
    return frames


def _one_row_a_session(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (sessions, newest export first) with a record once (:data:`SHARED_KEYS`, then
    :data:`SAME_RECORD` where both are known)."""
    suffix = pl.col("id").str.extract(_APART, 1)
    apart = suffix.is_not_null() & pl.col("owner").is_not_null()
    frame = frame.with_columns(
        pl.when(apart).then(pl.col("id").str.slice(0, pl.col("id").str.len_chars() - suffix.str.len_chars()))
        .otherwise(pl.col("id")).alias("_base_id"),
        pl.col("owner").fill_null("").alias("_whose"))
    frame = frame.unique(subset=list(SHARED_KEYS["sessions"]), keep="first", maintain_order=True)
    if "record_created" in frame.columns:
        known = pl.col("owner").is_not_null() & pl.col("record_created").is_not_null()
        frame = pl.concat([frame.filter(known).unique(subset=list(SAME_RECORD), keep="first", maintain_order=True),
                           frame.filter(~known)]).sort("exported_at", descending=True, maintain_order=True)
    return frame.drop("_base_id", "_whose")


def _empty(name: str) -> pl.DataFrame:
    """A table no machine exported yet, or without rows: its columns and dtypes, no row."""
    from .frames import DELIVERABLE_SCHEMA, PROMPT_SCHEMA

    who = {"vault_id": pl.String, "machine": pl.String, "exported_at": UTC_DT, "exported_by_laptop": pl.Boolean}
    columns = {"sessions": _session_columns(),
               "prompts": {**{c: d for c, d in PROMPT_SCHEMA.items() if c != "vault"}, "body_sha256": pl.String, **who},
               "deliverables": {**{c: d for c, d in DELIVERABLE_SCHEMA.items() if c != "vault"}, **who},
               "invoices": {**INVOICE_SCHEMA, **who}}[name]
    return pl.DataFrame(schema=columns)


def lake_activity(target: LakeTarget, request: Any, settings: Any) -> Any:
    """The activity report (SPEC §4) of every vault exported into the lake (``memo activity
    --lake``): a session bills the minutes its own vault's rules gave it at its export
    (``billed_minutes``: rounding terms, overlap policy, the minutes its invoice billed);
    hours, the days, the clients' and projects' shares are worked out as :func:`activity_report`
    works them out. ``totalCostUsd`` and ``costByClient`` add the sessions' ``cost_usd``;
    ``costByModel`` is empty (the lake keeps a session's cost, not its models'); ``unpricedModels``
    names the models without a price of the selected sessions' turns. ``vaults`` names
    each vault read as ``VAULT_ID@MACHINE``.

    Returns
    -------
    ActivityReport

    Raises
    ------
    InvalidDateError, InvalidFieldError
        As :func:`activity_report` (``Invalid since date``, ``Invalid tz`` …); ``Invalid project``:
        no vault of the lake holds anything of a project asked for.
    MemoError
        The catalog cannot be opened or read.
    """
    from ..domain.clock import parse_bounds, resolve_zone
    from ..domain.rounding import cents_to_hours, hours_cents
    from .activity import (
        OVERLAP_POLICIES,
        ActivityReport,
        _bucket,
        _by_day,
        _client_name,
        _group_totals,
        _select,
        _session_items,
        _shares,
    )
    from .cost import COST_PLACES

    zone = resolve_zone(request.tz or settings.timezone)
    bounds = parse_bounds(request.since, request.until, zone)
    client = request.client.strip() if request.client and request.client.strip() else None
    owner = request.owner.strip() if request.owner and request.owner.strip() else None
    frames = lake_frames(target, ("sessions", "prompts"))
    sessions = _told_apart(frames["sessions"])
    if client is not None and client.lower() != "internal":
        known = {name.strip().lower() for name in sessions["client"].drop_nulls().to_list()} | \
            {name.strip().lower() for name in settings.clients}
        if client.lower() not in known:  # a misspelt client read as 0 hours, as the vault's report refuses it
            names = sorted({*sessions["client"].drop_nulls().to_list(), *settings.clients}, key=str.lower)
            raise InvalidFieldError("client", f"no session of the lake and no [clients] entry of the config has the "
                                              f"client {client!r} (exact name, any case); clients known: "
                                              f"{', '.join(names[:20]) or 'none yet'}")
    if request.projects is not None:
        held = set(sessions["project"].to_list()) | (set(frames["prompts"]["project"].to_list())
                                                     if frames["prompts"].height else set())
        missing = [project for project in request.projects if project not in held]
        if missing:  # a misspelt project read as 0 minutes, as every other read refuses it
            raise InvalidFieldError("project", f"no vault of the lake holds anything of project {missing[0]!r}"
                                               + (f" (projects: {', '.join(sorted(held)[:20])})" if held else ""))
        sessions = sessions.filter(pl.col("project").is_in(request.projects))
    selected = _select(sessions, bounds, client, owner).with_columns(pl.col("billed_minutes").fill_null(0))
    by_client, by_project = _group_totals(selected)
    rows = selected.sort("start_time", "id", nulls_last=True)
    client_cents = {key: hours_cents(int(minutes)) for _, key, minutes, _ in by_client}
    total_cents = sum(client_cents.values())
    session_cents, cents_of_project = _shares(rows, client_cents)
    items = _session_items(rows, session_cents)
    keys = list(zip(rows["project"].to_list(), rows["id"].to_list()))
    costs = dict(zip(keys, rows["cost_usd"].to_list()))
    invoices = dict(zip(keys, rows["invoice"].to_list()))
    unpriced = dict(zip(keys, rows["unpriced_turns"].fill_null(0).to_list()))
    tokens = dict(zip(keys, rows.select([pl.col(c).fill_null(0) for c in _TOKEN_COLUMNS]).iter_rows()))
    total_cost, client_cost = Decimal(0), {}
    for item in items:
        key = (item["project"], item["id"])
        cost = costs.get(key)
        item.update(costUsd=str(Decimal(cost).quantize(COST_PLACES)) if cost is not None else None,
                    tokens=dict(zip(_TOKEN_KEYS, tokens.get(key, (0,) * 5))), unpricedTurns=unpriced.get(key, 0),
                    invoice=invoices.get(key))
        if cost is not None:
            total_cost += Decimal(cost)
            if item["billableHours"] is not None:
                key = item["client"].lower()
                client_cost[key] = client_cost.get(key, Decimal(0)) + Decimal(cost)
    prompts = frames["prompts"]
    total_prompts = 0
    if prompts.height:
        keep = pl.col("status").fill_null("") != "superseded"
        if bounds.since is not None:
            keep &= pl.col("created") >= bounds.since.astimezone(timezone.utc)
        if bounds.until_exclusive is not None:
            keep &= pl.col("created") < bounds.until_exclusive.astimezone(timezone.utc)
        if request.projects is not None:
            keep &= pl.col("project").is_in(request.projects)
        if client is not None:
            keep &= _client_name().str.to_lowercase() == client.lower()
        if owner is not None:  # a person's turns: those of their sessions the report selects
            keep &= pl.struct("project", "session_id").is_in(
                rows.select(pl.struct("project", "session_id")).to_series().implode())
        total_prompts = prompts.filter(keep).height
    unpriced_models = _unpriced_models(prompts, rows, unpriced)
    if client:
        client = next((name for name, _, _, _ in by_client if name.lower() == client.lower()), client)
    machines = sessions.select("vault_id", "machine").unique().sort("vault_id") if sessions.height else None
    return ActivityReport(
        total_duration_minutes=sum(int(m) for _, _, m, _ in by_client),
        total_billable_hours=cents_to_hours(total_cents),
        by_client={name: _bucket(m, client_cents[key], n) for name, key, m, n in by_client},
        by_project={name: _bucket(m, cents_of_project.get(name, 0), n) for name, m, n in by_project},
        by_day=_by_day(rows, zone, total_cents),
        total_prompts=total_prompts,
        sessions=items,
        cost=total_cost,
        cost_by_client={name: str(client_cost.get(key, Decimal(0)).quantize(COST_PLACES))
                        for name, key, _, _ in by_client},
        unpriced_models=unpriced_models,
        zone=zone,
        bounds=bounds,
        projects=request.projects,
        client=client,
        owner=owner,
        vaults=[f"{v}@{m}" for v, m in machines.iter_rows()] if machines is not None else [],
        overlap_policy=OVERLAP_POLICIES[settings.overlap_policy],
        issuer=settings.invoice.name,
    )


def _unpriced_models(prompts: pl.DataFrame, rows: pl.DataFrame, unpriced: dict[tuple[Any, Any], Any]) -> list[str]:
    """The models without a price of the turns of the selected sessions (``rows``) that hold
    unpriced turns (``unpriced``: ``(project, id) → count``): the total cost leaves them out, and
    says so as the vault's report does (found by an analyst: the lake's total read as complete)."""
    from ..services.pricing import turn_cost

    held = {(project, str(record_id).removeprefix("session-")) for (project, record_id), n in unpriced.items() if n}
    if not held or not prompts.height or "model" not in prompts.columns:
        return []
    found: set[str] = set()
    checked: set[str] = set()  # a model priced once has a price
    wanted = prompts.filter(pl.col("model").is_not_null() & (pl.col("status").fill_null("") != "superseded"))
    for project, session_id, model, created, *counts in wanted.select(
            "project", "session_id", "model", "created", *_TOKEN_COLUMNS).iter_rows():
        if model in checked or (project, session_id) not in held or not any(counts):
            continue
        checked.add(model)
        tokens = {key: value for key, value in zip(_TOKEN_KEYS, counts) if value}
        if turn_cost(tokens, model, created) is None:
            found.add(model)
    return sorted(found)


def _told_apart(sessions: pl.DataFrame) -> pl.DataFrame:
    """``sessions`` with each ``id`` that two records of one project share (two people's
    ``fix-login``, one person's on two laptops) told apart as ``ID@OWNER`` (``ID@START`` where the
    owner is shared too): a report keys a session by project and id, and the second person's
    figures — hours, invoice, cost — went to the first's (found by a breaker)."""
    if not sessions.height:
        return sessions
    shared = pl.struct("project", "id").is_duplicated()
    by_owner = pl.concat_str([pl.col("id"), pl.lit("@"), pl.col("owner").fill_null("unknown")])
    still = pl.struct("project", by_owner.alias("named")).is_duplicated()
    by_start = pl.concat_str([pl.col("id"), pl.lit("@"), pl.col("start_time").dt.strftime("%Y-%m-%dT%H:%M:%S")])
    return sessions.with_columns(pl.when(shared & still).then(by_start).when(shared).then(by_owner)
                                 .otherwise(pl.col("id")).alias("id"))


def _session_columns() -> dict[str, pl.DataType]:
    """The columns of the lake's ``sessions`` table (an empty lake reads as none of them)."""
    from .frames import SESSION_SCHEMA

    columns = {c: d for c, d in SESSION_SCHEMA.items() if c != "vault"}
    return {**columns, "billed_minutes": pl.Int64, "cost_usd": _COST, "invoice": pl.String,
            **dict.fromkeys(_TOKEN_COLUMNS, pl.Int64), "unpriced_turns": pl.Int64, "record_created": UTC_DT,
            "vault_id": pl.String, "machine": pl.String, "exported_at": UTC_DT, "exported_by_laptop": pl.Boolean}

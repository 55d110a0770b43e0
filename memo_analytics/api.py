"""The analyst API (SPEC §4): :func:`open_vault` gives polars frames, the activity report and
a DuckDB connection over one vault and the further vaults of the configuration.

Example (a notebook)::

    import memo_analytics as memo

    vault = memo.open_vault("~/.memo/vault")
    sessions = vault.sessions()                       # polars.DataFrame
    report = vault.activity(since="2026-03-01", until="2026-03-31", tz="Europe/Berlin")
    report.total_billable_hours, report.by_day
    db = vault.duckdb()
    db.sql("SELECT project, sum(duration_minutes) FROM sessions GROUP BY ALL").pl()
    vault.rule_candidates()                           # derived-rule candidates (SPEC §5.3)

:func:`sample_vault` builds the deterministic sample vault of ``memo demo`` into a folder
(the analyst notebooks start from it).

Everything on :class:`Vault` reads: nothing is written to any vault (the further vaults are
opened read-only). Frames are read afresh on every call.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import polars as pl

from .analytics.activity import ActivityReport, ActivityRequest, activity_report
from .analytics.frames import (
    DELIVERABLE_SCHEMA,
    PROMPT_SCHEMA,
    SESSION_SCHEMA,
    USAGE_SCHEMA,
    deliverables_frame,
    duckdb_tables,
    prompts_frame,
    sessions_frame,
    usage_frame,
    vault_sources,
)
from .config import Settings, config_path
from .domain.clock import resolve_zone
from .domain.errors import InvalidFieldError
from .services.demo import DEMO_ZONE, build_demo_vault
from .services.requests import DeriveRulesRequest
from .services.rules import candidates_in_scope
from .services.store import VaultStore

if TYPE_CHECKING:
    import duckdb

    from .reports.invoice import Invoice

__all__ = ["DELIVERABLE_SCHEMA", "PROMPT_SCHEMA", "RULE_SCHEMA", "SESSION_SCHEMA", "USAGE_SCHEMA", "Lake", "Vault",
           "open_lake", "open_vault", "sample_vault"]

#: Columns and dtypes of :meth:`Vault.rule_candidates`.
RULE_SCHEMA = {
    "key": pl.String, "text": pl.String, "category": pl.String, "confidence": pl.Float64,
    "occurrences": pl.Int64, "signal": pl.String, "projects": pl.List(pl.String),
    "first_said": pl.Datetime("us", "UTC"), "last_said": pl.Datetime("us", "UTC"),
    "evidence": pl.List(pl.String),
}


def open_vault(path: str | Path | None = None, *, vaults: Sequence[str | Path] | None = None,
               timezone: str | None = None, config: bool = True) -> Vault:
    """Open a vault for analysis.

    Parameters
    ----------
    path : str | Path | None
        The vault folder. None: the configured vault (``MEMO_VAULT``, the config file's
        ``vaultRoot``, else ``~/.memo/vault``).
    vaults : sequence of str | Path | None
        Further vaults read beside it (read-only). None: the config file's ``vaults`` when
        ``path`` is None, and no further vault when ``path`` is given (a notebook that names
        its vault reads that vault only, whatever the machine's config says).
    timezone : str | None
        IANA zone of :meth:`Vault.activity` by default (None: the configured zone, else the
        machine's).
    config : bool
        False: read neither the config file nor the ``MEMO_*`` environment (no client terms,
        rounding, zone of this machine's): the sample vault of :func:`sample_vault`, whose
        numbers are then the same on every machine. ``path`` is required then.

    Returns
    -------
    Vault

    Raises
    ------
    InvalidFieldError
        ``Invalid path: … holds no vault`` when the folder has neither ``projects/`` nor
        ``.memo/``; ``Invalid vaultRoot`` for a path inside a product repository;
        ``Invalid tz`` for an unknown zone.
    """
    if not config and path is None:
        raise InvalidFieldError("path", "required with config=False: there is no configured vault to open")
    settings = Settings() if path is None else Settings(vault_root=path) if config else \
        Settings.isolated(vault_root=path)
    chosen = vaults if vaults is not None else (settings.vaults if path is None else [])
    further = [Path(v).expanduser().resolve() for v in chosen]
    update: dict = {"vaults": further}
    if timezone is not None:
        update["timezone"] = timezone
    settings = settings.model_copy(update=update)
    given = os.environ.get("MEMO_CONFIG")
    if config and given and given.strip() and not config_path().exists():
        warnings.warn(f"MEMO_CONFIG names {config_path()}, which does not exist: no config file is read (no client "
                      "terms, rounding or zone of it)", stacklevel=2)
    store = VaultStore(settings)
    if not store.exists:
        raise InvalidFieldError("path", f"{store.root} holds no vault (no projects/ or .memo/ folder)")
    resolve_zone(settings.timezone)  # an unknown zone fails here, not at the first report
    return Vault(store)


def notebook_vault(named: str | Path | None, scratch: str | Path) -> tuple[Path, bool]:
    """The vault a notebook reads (its ``VAULT`` parameter): ``(root, on_sample)``.

    ``named`` given (``~`` expanded): that vault, or an error — a typo never falls back to the
    sample, whose numbers would pass for the analyst's. None: the configured vault
    (``MEMO_VAULT``, the config file's ``vaultRoot``) — an error when one is named and holds no
    vault —, else the default vault when it holds an index, else the sample vault of
    :func:`sample_vault`, built in ``scratch/vault``.

    Raises
    ------
    InvalidFieldError
        ``Invalid VAULT: … holds no vault`` (neither a ``projects/`` folder nor ``.memo/index.sqlite``),
        of ``named`` or of the vault ``MEMO_VAULT``/``vaultRoot`` names.
    """
    if named is not None and str(named).strip():
        root = Path(named).expanduser().resolve()
        if not ((root / "projects").is_dir() or (root / ".memo" / "index.sqlite").is_file()):
            # (~/.memo alone is the config's folder: `~` for `~/.memo/vault` is a typo too)
            raise InvalidFieldError("VAULT", f"{root} holds no vault (no projects/ folder nor index); give the "
                                             "folder `memo demo --out` or your vaultRoot names, or None for the "
                                             "configured vault")
        return root, False
    settings = Settings()
    configured = settings.vault_root
    if (configured / ".memo" / "index.sqlite").is_file():
        return configured, False
    if "vault_root" in settings.model_fields_set and (configured / "projects").is_dir():
        return configured, False  # a vault of files whose index is built on open
    if "vault_root" in settings.model_fields_set:  # MEMO_VAULT or vaultRoot named one: a typo is no sample
        raise InvalidFieldError("VAULT", f"{configured} (MEMO_VAULT or the config's vaultRoot) holds no vault (no "
                                         "projects/ folder nor index); correct it, or unset it for the sample vault")
    return sample_vault(Path(scratch) / "vault"), True


def sample_vault(path: str | Path) -> Path:
    """Build the sample vault of ``memo demo`` in ``path``: one week of March 2026 in
    Europe/Berlin with several clients, projects, IDEs and models, billable and internal
    work, a session across local midnight, one open session, PR deliverables and a few
    instructions said again and again.

    Deterministic: the same records on every machine and every day (fixed seed, fixed
    instants; nothing depends on today), so notebooks built on it have stable outputs.

    Parameters
    ----------
    path : str | Path
        A folder that does not exist yet or is empty, outside every git repository.

    Returns
    -------
    Path
        The vault root (``path`` resolved), ready for :func:`open_vault`.

    Raises
    ------
    InvalidFieldError
        ``Invalid path: … is not empty`` (nothing is touched) or is not a folder;
        ``Invalid vaultRoot`` for a folder inside a git repository.
    """
    root = Path(path).expanduser().resolve()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidFieldError("path", f"{root} is not an empty folder; the sample vault needs a new one")
    settings = Settings.isolated(vault_root=root, timezone=DEMO_ZONE)
    store = VaultStore(settings)
    try:
        build_demo_vault(store)
    finally:
        store.close()
    return root


class Vault:
    """One opened vault and its further vaults (see :func:`open_vault`).

    Every frame has the columns and dtypes of its schema (``vault`` first: the root folder
    a row was read from; a record id found in several vaults is kept once, from the first);
    times are ``Datetime(us, UTC)``, durations whole minutes.

    Attributes
    ----------
    root : Path
        The primary vault.
    vaults : list[Path]
        Every vault read: ``root`` first, then the further vaults.
    settings : Settings
    """

    def __init__(self, store: VaultStore) -> None:
        self._store = store
        self.settings = store.settings
        self.root = store.root
        self.vaults = [self.root, *[v for v in self.settings.vaults if v != self.root]]

    def __repr__(self) -> str:
        return f"Vault({str(self.root)!r}, further={[str(v) for v in self.vaults[1:]]!r})"

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the index connection (further vaults are opened per call)."""
        self._store.close()

    def _projects(self, projects: list[str] | str | None, further: bool = True) -> list[str] | None:
        """``projects`` as a list (one id given as a string is that project: it matched none, each
        of its letters taken for a project), each a project the vault holds something of — a typo
        read as 0 minutes without a word (found by an analyst); with further vaults, one of them holds
        something of (an empty list is refused: None is every project).

        Raises
        ------
        InvalidFieldError
            ``Invalid project: the vault holds nothing of project …``."""
        self._store.recheck(0)  # every read sees the files as they are now (the index rebuilt under it too)
        if projects is None:
            return None
        try:
            given = [projects] if isinstance(projects, str) else list(projects)
        except TypeError:
            given = [projects]
        if not all(isinstance(project, str) for project in given):
            raise InvalidFieldError("projects", f"{projects!r} is no list of project ids (a list of strings)")
        if not given:  # "no project" read as 0 minutes: None is every project
            raise InvalidFieldError("projects", "is empty: name at least one project, or give None (every project)")
        from .analytics.activity import check_names

        check_names(self._store, given, None, further=further)  # every vault the read covers
        return given

    def sessions(self, projects: list[str] | None = None) -> pl.DataFrame:
        """One row per work session (SPEC §2.3, §2.5).

        Parameters
        ----------
        projects : list[str] | None
            Project ids to keep (in every vault; one id as a string is that one); None: every
            project. A project the vault holds nothing of is refused (``Invalid project``).

        Returns
        -------
        polars.DataFrame
            Columns and dtypes of :data:`~memo_analytics.analytics.frames.SESSION_SCHEMA`:
            ``vault, id, session_id, project, status, client`` (null when none: reports
            call it ``internal``), ``billable`` (Boolean), ``start_time``, ``end_time``
            (``Datetime(us, UTC)``; null while open), ``duration_minutes`` (Int64, whole
            minutes; null while open), ``task_slug, summary, deliverables`` (JSON list),
            ``ide, model, agent, branch, git_sha``, ``owner`` (String: the git identity of the
            person who worked it; null when unknown) — then, after those, ``billed_minutes``
            (Int64, not in ``SESSION_SCHEMA``: the minutes it bills, as ``memo activity``'s
            ``billedMinutes`` — the client's rounding and the
            overlap policy over the whole vault, an invoiced session as invoiced; 0 when it bills
            nothing: open, not billable, superseded). Sum ``billed_minutes``, not
            ``duration_minutes``, to reproduce the reports' billed time.

        Raises
        ------
        InvalidFieldError
            A further vault without an index (``Invalid vaults``).
        """
        from .analytics.activity import with_billed_minutes

        projects = self._projects(projects)
        with vault_sources(self._store, further=True) as sources:
            frame = sessions_frame(sources, projects)
            everything = frame if projects is None else sessions_frame(sources, None)
        return with_billed_minutes(self._store, frame, everything)

    def prompts(self, projects: list[str] | None = None, *, body: bool = False) -> pl.DataFrame:
        """One row per prompt (one conversational turn).

        Returns
        -------
        polars.DataFrame
            Columns and dtypes of :data:`~memo_analytics.analytics.frames.PROMPT_SCHEMA`:
            ``vault, id, session_id, turn`` (Int64; null outside a session), ``project,
            client, billable, created`` (``Datetime(us, UTC)``), ``ide, model, agent,
            task_slug, status, branch, git_sha, tags`` (``List(String)``), ``input_tokens,
            cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens`` (Int64; the
            turn's tokens, all under its ``model`` — a turn a sub-agent of another model answered
            too is priced per model only by ``activity``'s ``cost_by_model``; null when the
            transcript gave none); with ``body=True`` also ``body`` (the redacted text as stored).
            ``output_tokens`` is what the agent logged as output: Claude Code's and Codex's include the reasoning (``reasoning_tokens`` is then a part of it), Gemini CLI's and OpenCode's do not (their output is ``output + reasoning``); sum them per agent, not across.
        """
        projects = self._projects(projects)
        with vault_sources(self._store, further=True) as sources:
            return prompts_frame(sources, projects, body=body)

    def usage(self, projects: list[str] | None = None) -> pl.DataFrame:
        """Tokens by turn and model: one row per turn and model that spent tokens on it (a turn
        a main model and a small one answered has a row for each), so a model's tokens add up to
        :meth:`activity`'s ``cost_by_model`` — :meth:`prompts` puts a turn's tokens under its
        one ``model``.

        Returns
        -------
        polars.DataFrame
            Columns and dtypes of :data:`~memo_analytics.analytics.frames.USAGE_SCHEMA`:
            ``vault, id, session_id, project, client``, ``created`` (``Datetime(us, UTC)``),
            ``model`` (null when the transcript named none), ``input_tokens, cache_read_tokens,
            cache_write_tokens, output_tokens, reasoning_tokens`` (Int64, null where not given).
            ``output_tokens`` is what the agent logged as output: Claude Code's and Codex's include the reasoning (``reasoning_tokens`` is then a part of it), Gemini CLI's and OpenCode's do not (their output is ``output + reasoning``); sum them per agent, not across.
        """
        projects = self._projects(projects)
        with vault_sources(self._store, further=True) as sources:
            return usage_frame(sources, projects)

    def deliverables(self, projects: list[str] | None = None) -> pl.DataFrame:
        """One row per deliverable of a session (a PR, a commit …).

        Returns
        -------
        polars.DataFrame
            Columns and dtypes of :data:`~memo_analytics.analytics.frames.DELIVERABLE_SCHEMA`:
            ``vault, session_id, session_record_id, position`` (0-based order in the
            session), ``project, client, billable, session_status, session_start,
            session_end`` (``Datetime(us, UTC)``), ``type, url, sha, title``.
        """
        return deliverables_frame(self.sessions(projects))

    def activity(self, since: str | None = None, until: str | None = None, client: str | None = None,
                 tz: str | None = None, projects: list[str] | None = None,
                 cross_project: bool = True) -> ActivityReport:
        """The activity report (SPEC §4), as ``memo activity`` gives it.

        Parameters
        ----------
        since, until : str | None
            ISO date or time bounding session starts (a date-only ``until`` covers that
            whole day in ``tz``).
        client : str | None
            Client (case-insensitive; ``internal`` for sessions without one).
        tz : str | None
            IANA zone of date bounds and of ``by_day`` (default: the vault's zone).
        projects : list[str] | None
            Projects to report on; None: every project.
        cross_project : bool
            Read the further vaults too (default, like the frames); False: the primary
            vault only. ``vault.activity()`` equals ``memo --json activity --all``.

        Returns
        -------
        ActivityReport
            Minutes and hours by client, project and local day; :meth:`ActivityReport.wire`
            is the JSON of every interface.

        Raises
        ------
        InvalidDateError
            ``Invalid since date`` / ``Invalid until date``.
        InvalidFieldError
            ``Invalid tz``; a further vault without an index (``Invalid vaults``); a client no
            session of the vault and no client of the config has (``Invalid client``: a typo
            read as 0 hours, as ``memo activity --client`` refuses it); a project the vault holds
            nothing of (``Invalid project``).
        """
        projects = self._projects(projects, further=cross_project)
        if client is not None and not str(client).strip():  # as `memo activity --client ""` refuses it
            raise InvalidFieldError("client", "is empty: give a value, or leave it out (None: every client)")
        if tz is not None and not str(tz).strip():  # as `memo activity --tz ""` refuses it
            raise InvalidFieldError("tz", "is empty: give an IANA zone, or leave it out (None: the vault's zone)")
        report = activity_report(self._store, ActivityRequest(projects=projects, since=since, until=until,
                                                              client=client, tz=tz, cross_project=cross_project))
        if report.client and not report.sessions:
            from .analytics.activity import check_names

            check_names(self._store, None, report.client, further=cross_project)
        return report

    def invoice(self, report: ActivityReport, lines: str = "project", *, skip_unpriced: bool = False,
                zero_minutes: bool = False) -> Invoice:
        """The draft invoice of ``report`` (from :meth:`activity`), as ``memo report invoice``
        prints it: hours × each client's hourly rate (the config's ``[clients."<name>"]``), one
        total per currency; sessions already on an issued, uncredited invoice of this vault are
        left off (counted in ``already_invoiced``), so nothing is billed twice.

        Parameters
        ----------
        report : ActivityReport
            The period, clients and projects billed.
        lines : {"project", "session"}
            One line per client and project, or one per session.
        skip_unpriced : bool
            Leave off the clients without an ``hourlyRate`` (named in ``unpriced_clients``)
            rather than refuse.
        zero_minutes : bool
            Bill sessions of 0 minutes too.

        Returns
        -------
        Invoice
            ``sections`` (one per client: ``lines``, ``hours``, ``amount``, ``currency``),
            ``totals`` (one per currency), ``hours``; amounts are ``Decimal`` in the currency's
            minor unit (JPY none, EUR cents).

        Raises
        ------
        InvalidFieldError
            ``lines`` is not ``project`` or ``session``; ``report`` is not an
            :class:`ActivityReport` (``Invalid report``).
        UnpricedClientError
            A billed client has no terms (not with ``skip_unpriced``).
        ReportError
            Nothing to bill (every session already invoiced, or none ended; with ``skip_unpriced``: no
            client with terms has work left).
        """
        from .reports.invoice import build_invoice
        from .vault.ledger import invoiced_in

        if not isinstance(report, ActivityReport):  # an AttributeError deep inside (found by an analyst)
            raise InvalidFieldError("report", f"a {type(report).__name__} is no activity report: give "
                                              "vault.activity(…)'s (vault.invoice(vault.activity(since=…, until=…)))")

        return build_invoice(report, self.settings.billing_for, lines, str(config_path()),
                             invoiced=invoiced_in(self.root),
                             zero_minutes=zero_minutes, skip_unpriced=skip_unpriced)

    def rule_candidates(self, project: str | None = None, since: str | None = None, until: str | None = None,
                        min_confidence: float = 0.0) -> pl.DataFrame:
        """Derived-rule candidates: instructions the person keeps giving (SPEC §5.3), as
        ``memo report rules`` finds them, without saving or promoting anything.

        Read from the primary vault (``root``) only.

        Parameters
        ----------
        project : str | None
            Only this project's turns; None: every project.
        since, until : str | None
            ISO date or time bounding the turns' ``created`` (a date-only ``until`` covers
            that day in the vault's zone).
        min_confidence : float
            Leave out candidates below this confidence (0–1).

        Returns
        -------
        polars.DataFrame
            One row per candidate, by confidence, then occurrences, then key; columns and
            dtypes of :data:`RULE_SCHEMA`: ``key`` (the normalized grouping key), ``text``
            (first spelling seen), ``category`` (constraint, security, process,
            architecture), ``confidence`` (Float64, 0–0.99: base of the signal group plus
            0.05 per repeat), ``occurrences`` (Int64, turns that said it), ``signal`` (the
            phrase matched), ``projects`` (``List(String)``), ``first_said``, ``last_said``
            (``Datetime(us, UTC)``), ``evidence`` (``List(String)``: every prompt id that
            said it, in the order found).

        Raises
        ------
        InvalidDateError
            ``Invalid since date`` / ``Invalid until date``.
        InvalidFieldError
            A project that is no string, or one the vault holds nothing of (``Invalid project``);
            ``min_confidence`` outside 0–1 (``Invalid min_confidence``).
        """
        self._store.recheck(0)
        if project is not None:
            if not isinstance(project, str):  # a list named "projects" in the refusal (found by an analyst)
                raise InvalidFieldError("project", f"{project!r} is no project id (one id, a string; None: every project)")
            from .analytics.activity import check_names

            # a misspelt project is refused, as by the frames (it gave 0 rows); this vault's alone, as read
            check_names(self._store, [project], None, further=False)
        if isinstance(min_confidence, bool) or not isinstance(min_confidence, (int, float)) \
                or not 0 <= min_confidence <= 1:
            raise InvalidFieldError("min_confidence", f"{min_confidence!r} is not a confidence from 0 to 1 (0.8, not "
                                                      "80)")
        request = DeriveRulesRequest(project=project, cross_project=project is None, since=since, until=until,
                                     min_confidence=min_confidence)
        rows = []
        for c in candidates_in_scope(self._store, request):
            said = sorted(e.created for e in c.evidence)
            rows.append((c.key, c.text, c.category, c.confidence, c.occurrences, c.signal,
                         sorted({e.project for e in c.evidence}), said[0], said[-1], [e.id for e in c.evidence]))
        frame = pl.DataFrame(rows, schema={**RULE_SCHEMA, "first_said": pl.String, "last_said": pl.String},
                             orient="row")
        return frame.with_columns(
            pl.col("first_said", "last_said").str.to_datetime(time_zone="UTC", time_unit="us")
        ).sort(["confidence", "occurrences", "key"], descending=[True, True, False])

    def duckdb(self, *, body: bool = False) -> duckdb.DuckDBPyConnection:
        """A new in-memory DuckDB connection with the tables ``prompts``, ``sessions`` (with
        ``billed_minutes``), ``deliverables`` and ``usage`` (the frames above, copied in through Arrow; ``TIMESTAMPTZ`` columns,
        session time zone UTC). The caller closes it.

        Parameters
        ----------
        body : bool
            Include the prompts' ``body`` column.
        """
        from .analytics.activity import with_billed_minutes

        self._store.recheck(0)
        with vault_sources(self._store, further=True) as sources:
            sessions = sessions_frame(sources)
            frames = {"prompts": prompts_frame(sources, body=body),
                      "sessions": with_billed_minutes(self._store, sessions, sessions),
                      "deliverables": deliverables_frame(sessions), "usage": usage_frame(sources)}
        return duckdb_tables(frames)


def open_lake(catalog: str | None = None, warehouse: str | None = None, *, timezone: str | None = None) -> Lake:
    """Open the team's Iceberg tables (SPEC §10) that ``memo export iceberg`` writes from every
    machine: the sessions, prompts, deliverables and invoices of every vault exported there.

    Parameters
    ----------
    catalog, warehouse : str | None
        The SQL catalog (an SQLite file, ``sqlite:////PATH.db``, ``postgresql://USER@HOST:PORT/DB``)
        and the warehouse (a folder, ``s3://BUCKET/PREFIX``); None: the config's ``lake.catalog``
        and ``lake.warehouse``.
    timezone : str | None
        IANA zone of :meth:`Lake.activity` by default (None: the configured zone, else the machine's).

    Returns
    -------
    Lake

    Raises
    ------
    InvalidFieldError
        ``Invalid lake.catalog`` / ``Invalid lake.warehouse``: none given or configured, an
        unknown scheme, an SQLite catalog file or a warehouse folder that does not exist (no
        vault exported there); ``Invalid tz``.
    """
    from .analytics.lake import check_readable, lake_target

    settings = Settings()
    if timezone is not None:
        settings = settings.model_copy(update={"timezone": timezone})
    resolve_zone(settings.timezone)
    target = lake_target(settings, catalog, warehouse)
    check_readable(target)  # at the open, as said (an analyst: a misspelt lake opened, failed at the first read)
    return Lake(target, settings)


class Lake:
    """The team's Iceberg tables (:func:`open_lake`); every call reads them afresh. A record
    exported by several vaults (a laptop's and the team daemon's) is read once: the team
    daemon's row (any vault's not a hybrid laptop's), else the row exported last. Columns:
    :mod:`memo_analytics.analytics.lake` (the frames' columns without ``vault``, plus
    ``vault_id``, ``machine``, ``exported_at`` ``Datetime(us, UTC)``, ``exported_by_laptop`` Boolean)."""

    def __init__(self, target, settings: Settings) -> None:
        self._target = target
        self._settings = settings

    def _table(self, name: str) -> pl.DataFrame:
        from .analytics.lake import lake_frames

        return lake_frames(self._target, (name,))[name]

    def sessions(self) -> pl.DataFrame:
        """One row per session of every vault.

        Columns: ``id``, ``session_id``, ``project``, ``status``, ``client``, ``task_slug``,
        ``summary``, ``deliverables`` (JSON text), ``ide``, ``model``, ``agent``, ``branch``,
        ``git_sha``, ``owner``, ``invoice`` (its number, null when on none) — String;
        ``billable`` Boolean; ``start_time``, ``end_time``, ``record_created`` Datetime(us, UTC);
        ``duration_minutes`` Int64 (minutes between start and end); ``billed_minutes`` Int64
        (minutes as its vault bills it: rounding terms, overlap policy, its invoice; 0 when it
        bills nothing — open, not billable, superseded); ``cost_usd`` Decimal(18, 4) (USD, null
        when no report bills it); ``input_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
        ``output_tokens``, ``reasoning_tokens``, ``unpriced_turns`` Int64; ``vault_id``,
        ``machine`` String and ``exported_at`` Datetime(us, UTC): who exported the row, when;
        ``exported_by_laptop`` Boolean (a hybrid laptop's export: a row the team daemon's replaces)."""
        return self._table("sessions")

    def prompts(self) -> pl.DataFrame:
        """One row per turn of every vault.

        Columns: ``id``, ``session_id``, ``project``, ``client``, ``ide``, ``model``, ``agent``,
        ``task_slug``, ``status``, ``branch``, ``git_sha`` — String; ``turn`` Int64; ``billable``
        Boolean; ``created`` Datetime(us, UTC); ``tags`` List(String); ``input_tokens``,
        ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``, ``reasoning_tokens``
        Int64; ``body`` String (null when exported without bodies) and ``body_sha256`` String
        (hex SHA-256 of the redacted body); ``vault_id``, ``machine`` String, ``exported_at``
        Datetime(us, UTC), ``exported_by_laptop`` Boolean."""
        return self._table("prompts")

    def deliverables(self) -> pl.DataFrame:
        """One row per deliverable of every vault's sessions.

        Columns: ``session_id``, ``session_record_id``, ``project``, ``client``,
        ``session_status``, ``type``, ``url``, ``sha``, ``title`` — String; ``position`` Int64
        (its place in the session's list); ``billable`` Boolean; ``session_start``,
        ``session_end`` Datetime(us, UTC); ``vault_id``, ``machine`` String, ``exported_at``
        Datetime(us, UTC), ``exported_by_laptop`` Boolean."""
        return self._table("deliverables")

    def invoices(self) -> pl.DataFrame:
        """One row per issued invoice and credit note of every vault.

        Columns: ``ref``, ``number``, ``kind``, ``status``, ``client``, ``currency``, ``credits``
        (the number a credit note cancels), ``pdf_sha256`` — String; ``issued``, ``due``,
        ``period_start``, ``period_end`` Date; ``net``, ``tax``, ``gross`` Decimal(18, 3) in the
        invoice's ``currency``; ``billable_hours`` Float64 (hours); ``sessions`` Int64 (sessions
        billed); ``vault_id``, ``machine`` String, ``exported_at`` Datetime(us, UTC),
        ``exported_by_laptop`` Boolean."""
        return self._table("invoices")

    def activity(self, since: str | None = None, until: str | None = None, client: str | None = None,
                 tz: str | None = None, projects: list[str] | None = None) -> ActivityReport:
        """The activity report of every vault of the lake, as ``memo --json activity --lake``
        gives it (:func:`memo_analytics.analytics.lake.lake_activity`: minutes as each vault
        billed them; hours, days and shares as ``activity`` works them out).

        The lake keeps each session's cost (USD), not its models': ``cost`` and
        ``cost_by_client`` add the sessions' costs, ``cost_by_model`` is empty (a vault's
        :meth:`Vault.activity` gives cost by model, and :meth:`prompts` the tokens of each turn
        under its model).

        Raises
        ------
        InvalidDateError
            ``Invalid since date`` / ``Invalid until date``.
        InvalidFieldError
            ``Invalid tz``.
        """
        from .analytics.lake import lake_activity

        return lake_activity(self._target, ActivityRequest(projects=projects, since=since, until=until,
                                                           client=client, tz=tz), self._settings)

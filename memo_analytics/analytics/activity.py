"""``activity_report`` computed over polars frames of the index (SPEC §4). (DuckDB is not
loaded for it: it would add ≈ 40 ms to every ``memo activity``; analysts get the same frames
in DuckDB from :mod:`memo_analytics.api`.)

Rules: a session belongs to the report when its ``startTime`` lies in ``[since, until)``
(a date-only ``until`` covers that whole day in the report's zone). Only billable
sessions with a duration count toward ``totalDurationMinutes``, ``totalBillableHours``,
``byClient``, ``byProject`` and ``byDay``; open sessions are listed with a null duration and
count nothing until they end. A missing client is ``internal``; client matching is
case-insensitive; a client spelled several ways is listed under its most frequent spelling
(on a tie, the one its earliest session uses).
``totalPrompts`` counts prompt records whose ``created`` lies in the bounds, filtered by
client. ``crossProject`` reads every project of the vault and of every further vault of the
configuration (``Settings.vaults``, read-only); a record id found in several vaults counts
once.

Hours follow the one rounding policy of :mod:`memo_analytics.domain.rounding` (stated on the
wire as ``roundingPolicy``): a client's hours are rounded from its minutes, the total is
their sum, and hours by project, by day and per session are largest-remainder shares, so
every column adds up to its total. ``byDay`` splits a session that crosses local midnight
(in the report's zone) into per-day parts that add up to its minutes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone, tzinfo
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from ..domain.errors import InvalidFieldError, MemoError
from ..domain.clock import TimeBounds, parse_bounds, resolve_zone, to_iso, zone_name
from ..domain.records import RecordKind
from ..domain.rounding import ROUNDING_POLICY, apportion, cents_to_hours, hours_cents, minutes_by_local_day
from ..services.requests import ActivityReportRequest
from ..services.store import VaultStore
from .billed import billed_minutes
from .cost import COST_PLACES, CostTotals, PriceCache, session_costs
from .frames import IndexSource, sessions_frame, vault_sources

__all__ = ["INTERNAL_CLIENT", "ROUNDING_POLICY", "ActivityReport", "ActivityRequest", "activity_report"]

INTERNAL_CLIENT = "internal"

#: The overlap policies (config ``overlapPolicy``) as stated on every report (wire ``overlapPolicy``).
OVERLAP_POLICIES = {
    "union": "Parallel sessions of one person for one client bill their wall-clock union once: a session bills "
             "the minutes no earlier session of that person (its owner) for that client already covered.",
    "sum": "Every session bills its whole duration, parallel sessions included.",
}


@dataclass
class ActivityRequest:
    """Filters of ``memo activity`` / ``activity_report`` (SPEC §4).

    ``projects`` None means every project; ``cross_project`` also reads every further vault
    of ``Settings.vaults`` (SPEC §4 ``crossProject``: every project of every configured
    vault; ``projects``, when given, then selects in all of them). ``tz`` is an IANA zone
    name (None: the configured zone, else the machine's).
    """

    projects: list[str] | None = None
    since: str | None = None
    until: str | None = None
    client: str | None = None
    tz: str | None = None
    cross_project: bool = False
    #: only this person's sessions (their ``owner``, any case; ``unknown``: none recorded)
    owner: str | None = None


#: What ``byOwner`` calls the sessions no owner is recorded for (and the ``owner`` filter takes).
UNKNOWN_OWNER = "unknown"


@dataclass
class ActivityReport:
    """The report; :meth:`wire` gives the camelCase JSON of every interface.

    Attributes
    ----------
    total_duration_minutes : int
        Billable minutes of completed sessions.
    total_billable_hours : float
        Sum of the clients' hours (two decimals).
    by_client, by_project : dict[str, dict]
        ``{durationMinutes, billableHours, sessions}`` per client (``internal`` for none) /
        per project, sorted by name.
    by_day : dict[str, dict]
        ``{durationMinutes, billableHours}`` per local date (``YYYY-MM-DD`` in ``zone``),
        in date order; a session crossing midnight adds a part to each day it ran on (a
        day may lie after ``until``: a session counts by its start, wholly).
    total_prompts : int
        Prompt records created within the bounds, for the client filter.
    sessions : list[dict]
        Every selected session (billable or not, open or not) in start order.
    vaults : list[str]
        Roots of the vaults read (the primary first).
    cost : Decimal
        The AI cost of the selected turns in USD (``totalCostUsd`` on the wire).
    cost_by_model : dict[str, dict]
        A model → ``{costUsd, tokens: {input, cacheRead, cacheWrite, output, reasoning}, turns,
        unpricedTurns}``; ``costUsd`` is decimal text in
        USD with 4 places (``"0.0000"`` for a model without a price: see ``unpricedTurns``
        and ``unpriced_models``), for JSON without float rounding — ``Decimal(x)`` reads it. What
        one model cost in one session is rounded to 0.0001 USD first, and every figure is a sum
        of those parts (:func:`~memo_analytics.analytics.cost.session_costs`): pricing
        ``usage()``'s rows and summing them unrounded can differ in the last place.
    cost_by_client : dict[str, str]
        A client → its turns' AI cost in USD, decimal text as above.
    unpriced_models : list[str]
        Models of the selected turns ``genai-prices`` has no price for (their cost is not in
        ``cost``); a session with such turns has ``costUsd`` null.
    client_names : dict[str, str]
        A client of ``by_client`` → the legal name its billing profile gives (config
        ``[clients."X"] name``), where one is set and differs; printed on the timesheet.
    client_rounding : dict[str, str]
        A client of ``by_client`` → how its terms bill a session's minutes (``each session is
        billed in steps of 15 minutes, at least 30 minutes``), where they round; printed at
        the timesheet's foot.
    client_terms : dict[str, ClientBilling]
        A client's name in lower case → its billing terms, where they round
        (:meth:`rounded_minutes`).
    issuer : str or None
        Who bills the work (config ``[invoice] name``); the timesheet names it.
    left_out : list[str]
        ``"<path>: <reason>"`` of each session file of the vault that could not be read: left
        out, its minutes missing (``unreadableSessionFiles`` on the wire, only when any).
    left_out_in_scope : list[str]
        Those that may hold a session of this report (its projects; its client, unless the
        file names another): a document of it is refused (``reports.timesheet.require_whole``).
    """

    total_duration_minutes: int
    total_billable_hours: float
    by_client: dict[str, dict[str, Any]]
    by_project: dict[str, dict[str, Any]]
    total_prompts: int
    sessions: list[dict[str, Any]]
    zone: tzinfo
    bounds: TimeBounds
    projects: list[str] | None
    client: str | None = None
    #: the person the report is of (``--owner``), None: everyone's
    owner: str | None = None
    by_day: dict[str, dict[str, Any]] = field(default_factory=dict)
    vaults: list[str] = field(default_factory=list)
    overlap_policy: str = "union"
    cost: Decimal = Decimal(0)
    cost_by_model: dict[str, dict[str, Any]] = field(default_factory=dict)
    cost_by_client: dict[str, str] = field(default_factory=dict)
    unpriced_models: list[str] = field(default_factory=list)
    client_names: dict[str, str] = field(default_factory=dict)
    client_rounding: dict[str, str] = field(default_factory=dict)
    client_terms: dict[str, Any] = field(default_factory=dict, repr=False)
    issuer: str | None = None
    #: ``"<path>: <reason>"`` of each session file of the vault the report could not read (left out)
    left_out: list[str] = field(default_factory=list)
    #: those of ``left_out`` that may belong to this report (its projects; its client, where the
    #: file names another): a document of the report would be short by them
    left_out_in_scope: list[str] = field(default_factory=list)
    #: ``(project, sessionId)`` of each session on an issued, uncredited invoice → the minutes that
    #: invoice billed (what the session bills, whatever its record says since)
    invoiced_minutes: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)
    #: the same sessions → their ``durationMinutes`` as the invoice recorded them (minutes)
    invoiced_durations: dict[tuple[str, str], int] = field(default_factory=dict, repr=False)

    def rounded_minutes(self, client: str, minutes: int) -> int:
        """What the rounding of ``client``'s terms makes of a session of ``minutes`` (minutes),
        before parallel sessions are counted once; ``minutes`` where its terms do not round."""
        terms = self.client_terms.get(client.lower())
        return terms.billed_minutes(minutes) if terms is not None else minutes

    @property
    def bills_parallel_once(self) -> bool:
        """Whether parallel sessions of a client bill their union once (``overlapPolicy = "union"``)."""
        return self.overlap_policy == OVERLAP_POLICIES["union"]

    @property
    def by_owner(self) -> dict[str, dict[str, Any]]:
        """Billed time per person — the sessions' ``owner``, ``unknown`` where none is recorded —
        of the sessions that bill: ``{owner: {durationMinutes, billableHours, sessions}}``
        sorted by owner; the hours are the sessions' shares, so they add up to
        ``totalBillableHours`` as the clients' do."""
        groups: dict[str, list[int]] = {}
        for item in self.sessions:
            if item.get("billableHours") is None:
                continue
            totals = groups.setdefault(item.get("owner") or UNKNOWN_OWNER, [0, 0, 0])
            totals[0] += int(item.get("billedMinutes") or 0)
            totals[1] += round(float(item["billableHours"]) * 100)
            totals[2] += 1
        return {owner: _bucket(m, c, n) for owner, (m, c, n) in sorted(groups.items())}

    def wire(self) -> dict[str, Any]:
        """The camelCase report. Beside its own names it carries spec-memo's, which agents
        written for it read: ``totalSessions`` (sessions in the report, ``openSessions`` of
        them still open: they bill once they end, and the client and project entries, which
        count the sessions that bill, leave them out) and, in each client and project entry,
        ``sessionCount`` (= ``sessions``) and ``totalHours`` (= ``billableHours``)."""
        return {
            "totalDurationMinutes": self.total_duration_minutes,
            "totalBillableHours": self.total_billable_hours,
            "totalSessions": len(self.sessions),
            "openSessions": sum(1 for item in self.sessions if item.get("durationMinutes") is None),
            "byClient": _with_ancestor_names(self.by_client),
            "byProject": _with_ancestor_names(self.by_project),
            "byOwner": self.by_owner,
            "byDay": self.by_day,
            "totalPrompts": self.total_prompts,
            "sessions": self.sessions,
            "timezone": zone_name(self.zone),
            "since": self.bounds.since_iso,
            "untilExclusive": self.bounds.until_iso,
            "projects": self.projects if self.projects is not None else "all",
            "client": self.client,
            **({"owner": self.owner} if self.owner else {}),
            "roundingPolicy": ROUNDING_POLICY,
            "overlapPolicy": self.overlap_policy,
            "totalCostUsd": str(self.cost.quantize(COST_PLACES)),
            "costByModel": self.cost_by_model,
            "costByClient": self.cost_by_client,
            "unpricedModels": self.unpriced_models,
            # only when a session file could not be read: the report is short by its minutes
            **({"unreadableSessionFiles": self.left_out} if self.left_out else {}),
        }


def _with_ancestor_names(groups: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {**bucket, "sessionCount": bucket["sessions"], "totalHours": bucket["billableHours"]}
            for name, bucket in groups.items()}


def _client_name(column: str = "client") -> pl.Expr:
    """The client a session or prompt bills to: its ``client`` without surrounding spaces,
    ``internal`` when it has none (SPEC §4)."""
    name = pl.col(column).str.strip_chars(" ")
    return pl.when(name.is_null() | (name == "")).then(pl.lit(INTERNAL_CLIENT)).otherwise(name)


def _select(sessions: pl.DataFrame, bounds: TimeBounds, client: str | None, owner: str | None = None) -> pl.DataFrame:
    """The sessions a report covers: started within ``bounds``, of ``client`` (any case) and of
    ``owner`` (any case; ``unknown``: none recorded) when asked for, not superseded; with
    ``client_name`` (:func:`_client_name`) and ``counts`` (billable and ended: it adds to the
    totals) added."""
    keep = pl.col("status").fill_null("") != "superseded"
    if owner is not None:
        named = pl.col("owner").str.strip_chars().replace("", None)
        keep &= named.is_null() if owner.lower() == UNKNOWN_OWNER else \
            (named.str.to_lowercase() == pl.lit(owner.lower())).fill_null(False)
    if bounds.since is not None:
        keep &= pl.col("start_time") >= bounds.since.astimezone(timezone.utc)
    if bounds.until_exclusive is not None:
        keep &= pl.col("start_time") < bounds.until_exclusive.astimezone(timezone.utc)
    if client is not None:
        keep &= pl.col("client_name").str.to_lowercase() == pl.lit(client).str.to_lowercase()
    return sessions.with_columns(
        _client_name().alias("client_name"),
        (pl.col("billable") & pl.col("duration_minutes").is_not_null()).alias("counts"),
    ).filter(keep)


def _group_totals(selected: pl.DataFrame) -> tuple[list[tuple[str, str, int, int]], list[tuple[str, int, int]]]:
    """The counted sessions' billed minutes and number, by client — ``(name, key, minutes,
    n)`` sorted by ``key``, the client in lower case; ``name`` the spelling most of its
    sessions use, on a tie the one used first — and by project, ``(project, minutes, n)``
    sorted by project."""
    counted = selected.filter(pl.col("counts")).sort("start_time", nulls_last=True, maintain_order=True)
    counted = counted.with_columns(pl.col("client_name").str.to_lowercase().alias("client_key"))
    clients: dict[str, dict[str, Any]] = {}
    projects: dict[str, list[int]] = {}
    for name, key, project, minutes in zip(counted["client_name"].to_list(), counted["client_key"].to_list(),
                                           counted["project"].to_list(), counted["billed_minutes"].to_list()):
        entry = clients.setdefault(key, {"spellings": {}, "minutes": 0, "n": 0})
        entry["spellings"][name] = entry["spellings"].get(name, 0) + 1  # dicts keep first-use order
        entry["minutes"] += minutes
        entry["n"] += 1
        totals = projects.setdefault(project, [0, 0])
        totals[0] += minutes
        totals[1] += 1
    by_client = []
    for key in sorted(clients):
        entry = clients[key]
        spellings = entry["spellings"]
        by_client.append((max(spellings, key=spellings.__getitem__), key, entry["minutes"], entry["n"]))
    return by_client, [(project, m, n) for project, (m, n) in sorted(projects.items())]


def _prompts_of(prompt_clients: pl.DataFrame, client: str | None) -> int:
    """Prompts of ``prompt_clients`` (``{client, n}``) billed to ``client`` (any case; all when None)."""
    if client is not None:
        prompt_clients = prompt_clients.filter(
            _client_name().str.to_lowercase() == pl.lit(client).str.to_lowercase())
    return int(prompt_clients["n"].sum() or 0)


def check_names(store: VaultStore, projects: list[str] | None, client: str | None, further: bool = False) -> None:
    """Refuse project ids and a client no vault a read covers knows: this vault's, and with
    ``further`` every vault of ``store.settings.vaults`` too (a misspelt client across further
    vaults read as 0 hours without a word: found by an analyst).

    Raises
    ------
    InvalidFieldError
        ``Invalid project`` (:func:`~memo_analytics.services.sessions.check_projects`),
        ``Invalid client`` (:func:`~memo_analytics.services.sessions.check_client`); a further
        vault without an index (``Invalid vaults``)."""
    from ..services.sessions import check_client, check_projects

    if not projects and not client:
        return
    if not (further and store.settings.vaults):
        if projects:
            check_projects(store, projects)
        if client:
            check_client(store, client)
        return
    from ..index import store as index
    from .frames import vault_sources

    with vault_sources(store, further=True) as sources:
        held = sorted({name for source in sources for name in index.project_names(source.conn)})
        clients = sorted({name for source in sources for name in index.client_names(source.conn)})
    if projects:
        check_projects(store, projects, known=held)
    if client:
        check_client(store, client, known_elsewhere=clients)


def report_for(store: VaultStore, request: ActivityReportRequest) -> ActivityReport:
    """The ``activity_report`` action's report: the request's scope (a project, the cwd's
    repository, else every project; ``crossProject`` every project of every configured vault)
    resolved, then :func:`activity_report`. Every interface builds its report here.

    Raises
    ------
    InvalidFieldError, InvalidDateError
        As :func:`activity_report`; an invalid project id, or one the vault holds nothing of
        (:func:`~memo_analytics.services.sessions.check_projects`); a client no session of the vault and
        no client of the config has (``Invalid client``, :func:`~memo_analytics.services.sessions.check_client`).
    """
    projects = store.scope(request.project, request.cross_project, request.cwd)
    report = activity_report(store, ActivityRequest(projects=projects, since=request.since, until=request.until,
                                                    client=request.client, tz=request.tz,
                                                    cross_project=request.cross_project, owner=request.owner))
    if not report.sessions:  # a typo read as 0 minutes (in every vault read: found by a breaker, an analyst)
        check_names(store, [request.project] if request.project else None, report.client,
                    further=bool(request.cross_project))
    if report.owner and not report.sessions and report.owner.lower() != UNKNOWN_OWNER and store.exists:
        from .frames import vault_sources

        sql = "SELECT DISTINCT json_extract(meta, '$.owner') FROM records WHERE kind = 'session'"
        # every vault read (a misspelt owner across further vaults gave an empty timesheet: found by a billing person)
        with vault_sources(store, further=bool(request.cross_project and store.settings.vaults)) as sources:
            owners = sorted({row[0] for source in sources for row in source.conn.execute(sql)
                             if isinstance(row[0], str) and row[0].strip()}, key=str.lower)
        if report.owner.lower() not in {name.lower() for name in owners}:  # a typo read as "no work"
            asked = report.owner if len(report.owner) <= 100 else report.owner[:100] + "…"
            raise InvalidFieldError("owner", f"no session of the {'vaults read' if len(sources) > 1 else 'vault'} is "
                                             f"{asked}'s (owners: "
                                             f"{', '.join(o[:100] for o in owners[:20]) or 'none recorded'}"
                                             f"{', …' if len(owners) > 20 else ''}; 'unknown' for none)")
    return report


def _in_scope(left_out: list[tuple[str, str, Path]], projects: list[str] | None, client: str | None) -> list[str]:
    """``"<path>: <reason>"`` of the unreadable session files (``left_out``: ``(path as said,
    reason, its vault's root)``, :meth:`VaultStore.left_out`) that may hold a session of a report
    of ``projects`` (None: all) and ``client`` (None: any): in one of its projects, and — read as
    plain YAML, no record rule — of that client (no client, or null, is ``internal``; a file that
    is not even YAML, or names its client in a shape no record has, may be anyone's)."""
    from ..vault.io import read_frontmatter

    found = []
    for path, reason, root in left_out:
        where = Path(path) if Path(path).is_absolute() else root / path
        parts = where.relative_to(root).parts  # projects/<project>/sessions/<id>.md
        if projects is not None and (len(parts) < 2 or parts[1] not in projects):
            continue
        if client:
            try:
                named = read_frontmatter(where)[0].get("client")
            except MemoError:  # not even YAML: anyone's
                named = client
            # no client, or null, is internal work (as memo writes it): not another client's document's
            belongs = named.strip() if isinstance(named, str) and named.strip() else (
                INTERNAL_CLIENT if named is None or named == "" else client)
            if belongs.casefold() != client.casefold():
                continue
        found.append(f"{path}: {reason}")
    return found


def activity_report(store: VaultStore, request: ActivityRequest, say_left_out: bool = True) -> ActivityReport:
    """Aggregate sessions and prompts (SPEC §4).

    Returns
    -------
    ActivityReport
        Totals in minutes (int) and hours (2 decimals); ``sessions`` sorted by start,
        each ``{id, sessionId, project, client, billable, status, startTime, endTime,
        durationMinutes, billedMinutes, billableHours, taskSlug, summary, deliverables, owner,
        costUsd, tokens, unpricedTurns, invoice}`` with times in UTC ISO (``invoice`` the number of
        the issued, uncredited invoice that billed it, null when none) (``owner`` whose work it is —
        parallel sessions bill once per owner — null when unknown; ``billableHours`` null for a session that
        bills nothing; ``costUsd`` the API-equivalent cost of its turns, decimal text USD,
        :mod:`.cost`; null when none of its turns could be priced: no token counts recorded,
        or only models without a price). ``totalCostUsd`` and ``costByClient`` (billed sessions) on the wire
        add those of the sessions; ``costByModel`` lines add up to ``totalCostUsd``: every
        figure is a sum of what one model cost in one session, rounded to 0.0001 USD, so a
        session and a model cost the same under any filter.

    Raises
    ------
    InvalidDateError
        ``Invalid since date`` / ``Invalid until date``.
    InvalidFieldError
        Unknown time zone (``Invalid tz``); a further vault without an index
        (``Invalid vaults``).
    IndexDamagedError
        A further vault's index cannot be read.

    Session files edited in place since the index read them are taken in first
    (:meth:`VaultStore.catch_up_edits`): a hand-corrected duration bills as corrected. Session
    files that cannot be read are named in ``left_out`` (and ``left_out_in_scope``), and — with
    ``say_left_out`` — in a note of the store (:meth:`VaultStore.left_out`).
    """
    zone = resolve_zone(request.tz or store.settings.timezone)
    bounds = parse_bounds(request.since, request.until, zone)
    client = request.client.strip() if request.client and request.client.strip() else None
    owner = request.owner.strip() if request.owner and request.owner.strip() else None
    if store.exists:
        store.catch_up_edits(RecordKind.SESSION)  # billed minutes come from the files as they are now
    with vault_sources(store, further=request.cross_project) as sources:
        # a report without them is short: this vault's files and those of each further vault it reads
        left_out = store.left_out(RecordKind.SESSION, say=say_left_out,
                                  further=[(s.vault, s.conn) for s in sources if s.conn is not store.conn]) \
            if store.exists else []
        if store.exists and say_left_out:  # turns left out: the report's prompts and AI cost are short
            store.left_out(RecordKind.PROMPT, say=True)
        sessions = sessions_frame(sources, request.projects)
        # billed minutes are a session's own, whatever the report selects: worked out over the whole vault
        everything = sessions if request.projects is None else sessions_frame(sources, None)
        prompt_clients = _prompt_clients(sources, request.projects, bounds)
        prompt_sessions = _prompt_sessions(sources, request.projects, bounds) if owner else None
        token_rows = _token_rows(sources, request.projects)
        vaults = [s.vault for s in sources]
    selected = _select(sessions, bounds, client, owner)
    invoiced, durations, numbers = _invoiced(store)
    billed = billed_minutes(sessions if request.projects is None else everything, store.settings.overlap_policy,
                            store.settings.billing_for, _frozen_minutes(store, invoiced))
    selected = selected.with_columns(pl.Series("billed_minutes", [
        billed.get((v, p, i), 0) if counts else 0 for v, p, i, counts in zip(
            selected["vault"].to_list(), selected["project"].to_list(), selected["id"].to_list(),
            selected["counts"].fill_null(False).to_list())], dtype=pl.Int64))
    by_client, by_project = _group_totals(selected)
    rows = selected.sort("start_time", "id", nulls_last=True)
    if prompt_sessions is None:
        total_prompts = _prompts_of(prompt_clients, client)
    else:  # the person's turns: those of their sessions the report selects
        mine = set(zip(rows["project"].to_list(), rows["session_id"].to_list()))
        total_prompts = sum(n for project, session, n in prompt_sessions if (project, session) in mine)
    client_cents = {key: hours_cents(int(minutes)) for _, key, minutes, _ in by_client}
    total_cents = sum(client_cents.values())
    session_cents, cents_of_project = _shares(rows, client_cents)
    project_cents = [cents_of_project.get(name, 0) for name, _, _ in by_project]
    picked = set(zip(rows["project"].to_list(), rows["session_id"].to_list()))
    cache = PriceCache(store.layout.meta_dir / "cost-cache.json" if store.exists else None)
    by_session, by_model, unpriced = session_costs([r for r in token_rows if (r[0], r[1]) in picked], cache)
    items = _session_items(rows, session_cents)
    client_cost: dict[str, CostTotals] = {}
    for item in items:
        totals = by_session.get((item["project"], item["sessionId"]))
        wired = (totals or CostTotals()).wire()
        # null when no turn of it could be priced (no token counts recorded, or only models
        # without a price): unknown, where "0.0000" read as free
        priced = totals is not None and totals.turns > totals.unpriced_turns
        item.update(costUsd=wired["costUsd"] if priced else None, tokens=wired["tokens"],
                    unpricedTurns=wired["unpricedTurns"], invoice=numbers.get((item["project"], item["sessionId"])))
        if totals and item["billableHours"] is not None:
            merged = client_cost.setdefault(item["client"].lower(), CostTotals())
            merged.cost += totals.cost
            merged.turns += totals.turns
            merged.unpriced_turns += totals.unpriced_turns
            for key, value in totals.tokens.items():
                merged.tokens[key] += value
    total_cost = sum((t.cost for t in by_session.values()), Decimal(0))  # the sessions add up
    if client:  # as the sessions (else the config) spell it: a report's header printed "acme corp" as typed
        client = next((name for name, _, _, _ in by_client if name.lower() == client.lower()),
                      next((name for name in store.settings.clients if name.strip().lower() == client.lower()),
                           client))
    return ActivityReport(
        total_duration_minutes=sum(int(m) for _, _, m, _ in by_client),
        total_billable_hours=cents_to_hours(total_cents),
        by_client={name: _bucket(m, client_cents[key], n) for name, key, m, n in by_client},
        by_project={name: _bucket(m, c, n) for (name, m, n), c in zip(by_project, project_cents)},
        by_day=_by_day(rows, zone, total_cents),
        total_prompts=int(total_prompts),
        sessions=items,
        cost=total_cost,
        cost_by_model={model: totals.wire() for model, totals in sorted(by_model.items())},
        cost_by_client={name: client_cost.get(key, CostTotals()).wire()["costUsd"] for name, key, _, _ in by_client},
        unpriced_models=unpriced,
        zone=zone,
        bounds=bounds,
        projects=request.projects,
        client=client,
        owner=owner,
        vaults=vaults,
        overlap_policy=OVERLAP_POLICIES[store.settings.overlap_policy],
        invoiced_minutes=invoiced,
        invoiced_durations=durations,
        issuer=store.settings.invoice.name,
        left_out=[f"{path}: {reason}" for path, reason, _ in left_out],
        left_out_in_scope=_in_scope(left_out, request.projects, client),
        **_terms_printed(store.settings, [name for name, _, _, _ in by_client]),
    )


def _terms_printed(settings, clients: list[str]) -> dict[str, dict[str, str]]:
    """What the timesheet prints of each client's billing terms: ``client_names`` (the legal name,
    where one is set and differs), ``client_rounding`` (how its terms bill a session, where
    they round) and those terms (``client_terms``)."""
    names, notes, rounding = {}, {}, {}
    for client in clients:
        terms = settings.billing_for(client)
        if terms is None:
            continue
        if terms.name and terms.name != client:
            names[client] = terms.name
        note = terms.rounding_note(union=settings.overlap_policy == "union")
        if note:
            notes[client], rounding[client.lower()] = note, terms
    return {"client_names": names, "client_rounding": notes, "client_terms": rounding}


def with_billed_minutes(store: VaultStore, frame: pl.DataFrame, everything: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (a :func:`~.frames.sessions_frame`) with ``billed_minutes`` (Int64): the minutes
    each session bills, as every report and invoice bills them — the client's rounding terms and
    the overlap policy worked out over ``everything`` (the whole vault's sessions), an invoiced
    session's minutes as its invoice billed them; 0 for a session that bills nothing (open, not
    billable, superseded)."""
    invoiced, _, _ = _invoiced(store)
    billed = billed_minutes(everything, store.settings.overlap_policy, store.settings.billing_for,
                            _frozen_minutes(store, invoiced))
    return frame.with_columns(pl.Series("billed_minutes", [
        billed.get(key, 0) for key in zip(frame["vault"].to_list(), frame["project"].to_list(), frame["id"].to_list())],
        dtype=pl.Int64))


def _invoiced(store: VaultStore) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int],
                                         dict[tuple[str, str], str]]:
    """Sessions of the vault on an issued, uncredited invoice, ``(project, sessionId)`` → the
    minutes it billed, → their ``durationMinutes`` as it recorded them, and → its number (one
    read of the ledger)."""
    from ..vault import ledger

    if not store.exists:
        return {}, {}, {}
    docs = ledger.documents(store.root)
    durations = {key: item["durationMinutes"] for key, (_, _, item) in ledger.invoiced_items(docs).items()
                 if isinstance(item.get("durationMinutes"), int)}
    team = ledger.team_invoiced(store.root)  # a hybrid laptop's sessions its team daemon invoiced (the last pull)
    minutes = {**{key: billed for key, (_, billed) in team.items() if billed is not None},
               **ledger.invoiced_minutes(docs)}
    return minutes, durations, ledger.invoiced_in(store.root, docs)


def _frozen_minutes(store: VaultStore, invoiced: dict[tuple[str, str], int]) -> dict[tuple[str, str, str], int]:
    """``invoiced`` (minutes of :func:`_invoiced`) keyed as the sessions frame is (vault, project, record id)."""
    from ..domain.ids import session_record_id

    # a session of a further vault an invoice of this one billed keeps those minutes too (edited there, it
    # billed its new minutes under the old invoice: found by a billing person)
    roots = [str(store.root)] + [str(Path(root).expanduser().resolve()) for root in store.settings.vaults]
    return {(root, project, session_record_id(session_id)): minutes
            for (project, session_id), minutes in invoiced.items() for root in roots}


def _bucket(minutes: int, cents: int, sessions: int | None = None) -> dict[str, Any]:
    bucket: dict[str, Any] = {"durationMinutes": int(minutes), "billableHours": cents_to_hours(cents)}
    if sessions is not None:
        bucket["sessions"] = int(sessions)
    return bucket


def _shares(rows: pl.DataFrame, client_cents: dict[str, int]) -> tuple[dict[tuple[str, str], int], dict[str, int]]:
    """Hundredths of an hour of each counted session, by ``(project, id)`` (the key of a record:
    SPEC §2.1), and of each project: a client's hours are apportioned over its projects by
    minutes, a project's part over its sessions (start order) by minutes — so a client's projects
    add up to the client's hours, its sessions to their project's, and a project has the same hours
    whether the report covers its client alone or every client. A project of several clients has
    the sum of its parts."""
    counted = rows.filter(pl.col("counts")).select("project", "id", pl.col("client_name").str.to_lowercase()
                                                   .alias("key"), "billed_minutes")
    sessions: dict[tuple[str, str], int] = {}
    projects: dict[str, int] = {}
    for (key,), group in counted.group_by("key", maintain_order=True):
        by_project: dict[str, list[tuple[str, int]]] = {}
        for project, record_id, minutes in zip(group["project"].to_list(), group["id"].to_list(),
                                               group["billed_minutes"].to_list()):
            by_project.setdefault(project, []).append((record_id, int(minutes)))
        names = sorted(by_project)
        parts = apportion(client_cents[key], [sum(m for _, m in by_project[name]) for name in names])
        for name, part in zip(names, parts):
            projects[name] = projects.get(name, 0) + part
            ids = by_project[name]
            sessions.update(zip(((name, record_id) for record_id, _ in ids), apportion(part, [m for _, m in ids])))
    return sessions, projects


def _by_day(rows: pl.DataFrame, zone: tzinfo, total_cents: int) -> dict[str, dict[str, Any]]:
    """Billable minutes per local date; sessions within one local day are summed as they
    are, one crossing midnight is split by :func:`minutes_by_local_day`."""
    name = zone_name(zone)
    counted = rows.filter(pl.col("counts")).select(
        "start_time", "end_time", "billed_minutes",
        pl.col("start_time").dt.convert_time_zone(name).dt.date().alias("first"),
        pl.col("end_time").dt.convert_time_zone(name).dt.date().alias("last"),
    )
    same_day = pl.col("last").is_null() | (pl.col("first") == pl.col("last"))
    minutes: dict[Any, int] = {
        day: int(m) for day, m in counted.filter(same_day).group_by("first").agg(pl.col("billed_minutes").sum())
        .iter_rows()
    }
    for start, end, duration, _, _ in counted.filter(~same_day).iter_rows():
        for day, part in minutes_by_local_day(start, end, int(duration), zone):
            minutes[day] = minutes.get(day, 0) + part
    days = sorted(minutes)
    cents = apportion(total_cents, [minutes[d] for d in days]) if days else []
    return {d.isoformat(): _bucket(minutes[d], c) for d, c in zip(days, cents)}


def _ms_key(instant: datetime | None) -> str | None:
    """A bound as a stored-timestamp string (millisecond precision, rounded up so that
    ``created >= key`` / ``created < key`` on strings equals the comparison on instants)."""
    if instant is None:
        return None
    extra = instant.microsecond % 1000
    return to_iso(instant + timedelta(microseconds=1000 - extra) if extra else instant)


def _prompt_filter(projects: list[str] | None, bounds: TimeBounds) -> tuple[list[str], list[Any]]:
    """The ``WHERE`` terms and parameters of the prompts a report counts: not superseded,
    created within ``bounds``, of ``projects`` (None: all)."""
    where = ["kind = 'prompt'", "coalesce(status, '') <> 'superseded'"]
    params: list[Any] = []
    if bounds.since is not None:
        where.append("created >= ?")
        params.append(_ms_key(bounds.since))
    if bounds.until_exclusive is not None:
        where.append("created < ?")
        params.append(_ms_key(bounds.until_exclusive))
    if projects is not None:
        where.append(f"project IN ({','.join('?' * len(projects)) or 'NULL'})")
        params.extend(projects)
    return where, params


def _prompt_sessions(sources: list[IndexSource], projects: list[str] | None,
                     bounds: TimeBounds) -> list[tuple[str, str, int]]:
    """Prompts created within ``bounds``, per session: ``(project, sessionId, n)`` (of every
    vault read; a person's report counts the turns of their sessions)."""
    where, params = _prompt_filter(projects, bounds)
    where.append("session_id IS NOT NULL")
    sql = f"SELECT project, session_id, count(*) FROM records WHERE {' AND '.join(where)} GROUP BY project, session_id"
    return [(row[0], row[1], int(row[2])) for src in sources for row in src.conn.execute(sql, params).fetchall()]


def _prompt_clients(sources: list[IndexSource], projects: list[str] | None, bounds: TimeBounds) -> pl.DataFrame:
    """Prompts created within ``bounds``: ``{client, n}`` (client as stored). Counted in
    SQLite on the ``(kind, created)`` index; across several vaults a record (its project and
    id) counts once."""
    where, params = _prompt_filter(projects, bounds)
    schema = {"client": pl.String, "n": pl.Int64}
    if len(sources) == 1:
        sql = f"SELECT client, count(*) AS n FROM records WHERE {' AND '.join(where)} GROUP BY client"
        rows = sources[0].conn.execute(sql, params).fetchall()
        return pl.DataFrame([tuple(r) for r in rows], schema=schema, orient="row")
    sql = f"SELECT project, id, client FROM records WHERE {' AND '.join(where)}"
    frames = [pl.DataFrame([tuple(r) for r in src.conn.execute(sql, params).fetchall()],
                           schema={"project": pl.String, "id": pl.String, "client": pl.String}, orient="row")
              for src in sources]
    ids = pl.concat(frames).unique(subset=["project", "id"], keep="first")
    return ids.group_by("client").agg(pl.len().cast(pl.Int64).alias("n")).select(list(schema))


def _token_rows(sources: list[IndexSource], projects: list[str] | None) -> list[tuple]:
    """The turns that carry token counts: ``(project, session id, created, model, source,
    meta JSON)``; across several vaults a record (project and id) counts once."""
    where = ["kind = 'prompt'", "coalesce(status, '') <> 'superseded'", "session_id IS NOT NULL",
             "meta LIKE '%\"tokens\"%'"]
    params: list[Any] = []
    if projects is not None:
        where.append(f"project IN ({','.join('?' * len(projects)) or 'NULL'})")
        params.extend(projects)
    sql = f"SELECT project, id, session_id, created, model, source, meta FROM records WHERE {' AND '.join(where)}"
    seen: set[tuple[str, str]] = set()
    rows = []
    for src in sources:
        for project, record_id, *rest in src.conn.execute(sql, params).fetchall():
            if (project, record_id) not in seen:
                seen.add((project, record_id))
                rows.append((project, *rest))
    return rows


def _session_items(rows: pl.DataFrame, cents: dict[tuple[str, str], int]) -> list[dict[str, Any]]:
    """The wire items of the selected sessions, built column by column (times as stored:
    UTC ISO with milliseconds and ``Z``)."""
    iso = "%Y-%m-%dT%H:%M:%S%.3fZ"
    columns = rows.select(
        "id", "session_id", "project", "client_name", "billable", "status",
        pl.col("start_time").dt.strftime(iso), pl.col("end_time").dt.strftime(iso), "duration_minutes",
        "task_slug", "summary", "deliverables", "billed_minutes", "owner",
    ).get_columns()
    ids, sids, projects, clients, billable, status, starts, ends, minutes, slugs, summaries, raw, billed, owners = (
        c.to_list() for c in columns)
    deliverables = json.loads("[" + ",".join(d or "[]" for d in raw) + "]")  # one parse for all rows
    return [
        {"id": i, "sessionId": sid, "project": p, "client": c, "billable": bool(b), "status": st, "startTime": s,
         "endTime": e, "durationMinutes": m, "billedMinutes": bm if (p, i) in cents else None,
         "billableHours": cents_to_hours(cents[p, i]) if (p, i) in cents else None,
         "taskSlug": slug, "summary": summary, "deliverables": d, "owner": owner}
        for i, sid, p, c, b, st, s, e, m, slug, summary, d, bm, owner in zip(
            ids, sids, projects, clients, billable, status, starts, ends, minutes, slugs, summaries, deliverables,
            billed, owners)
    ]

"""Data access of the Panel dashboard (``dashboards/``, SPEC §3.4): every read and write goes
through the action table (:mod:`memo_analytics.actions`, the same requests and answers as
MCP, the CLI and ``/api/actions``) or, where a tab needs more than an action's JSON (the
activity report behind the timesheet, rule candidates with all their evidence), through the
service function behind that action. PDFs come from :mod:`memo_analytics.reports`, promotion
from ``derive_rules``. One page at a time; no SQL here.

:class:`DashboardData` holds the main vault's store and opens each further vault of
``Settings.vaults`` read-only on demand (the vault selector:
:class:`~memo_analytics.services.readonly.ReadOnlyVaultStore`); writes (digest proposals,
traps, promotion) only ever touch the main vault.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from .actions import run_action
from .analytics.activity import ActivityReport, report_for
from .analytics.facets import PromptFacets, prompt_facets
from .config import Settings
from .domain.clock import from_iso, utcnow
from .domain.errors import InvalidFieldError, MemoError
from .reports.invoice import build_invoice, invoice_pdf_bytes
from .reports.story import story_html_fragment
from .reports.timesheet import timesheet_pdf_bytes
from .services.projects import last_seen_root
from .services.readonly import ReadOnlyVaultStore
from .services.requests import (
    ActivityReportRequest,
    DeriveRulesRequest,
    DigestApplyRequest,
    DigestRequest,
    EditSessionRequest,
    GetRequest,
    ListRequest,
)
from .services.rules import candidates_in_scope
from .services.rules.extract import Candidate
from .services.sessions import known_clients
from .services.store import VaultStore
from .services.stories import render_story, story_data

PAGE_SIZES = (10, 20, 50, 100)
#: Where a promotion may write (SPEC §5.3), as offered by the dashboard.
PROMOTE_TARGETS = ("CLAUDE.md", "AGENTS.md", "GEMINI.md", ".github/copilot-instructions.md", ".cursor/rules/memo-derived.mdc")
#: Characters of a prompt shown in a table cell (the drawer shows all of it).
PREVIEW_CHARS = 160


class FiguresChangedError(MemoError):
    """An invoice the person confirmed would bill other figures now (:meth:`DashboardData.issue_invoice`):
    ``preview`` is what it would bill ('' when none could be made)."""

    def __init__(self, preview: str) -> None:
        self.preview = preview
        super().__init__("the figures changed since you were asked" + (f": it would bill {preview} now" if preview
                                                                       else "; no invoice can be made of it now"))


@dataclass
class PromptQuery:
    """The prompt filters of the dashboard (wire semantics of SPEC §2.6)."""

    vault: str = ""
    query: str = ""
    ide: str = ""
    project: str = ""
    model: str = ""
    agent: str = ""
    client: str = ""
    since: date | None = None
    until: date | None = None
    page_size: int = 20
    page: int = 1

    def request(self) -> ListRequest:
        """The :class:`ListRequest` of this page (the page clamped to ≥ 1).

        Raises
        ------
        InvalidFieldError
            A value the request refuses (``Invalid query: 101 words …``), as every view shows one.
        """
        from pydantic import ValidationError
        from pydantic.alias_generators import to_camel

        size = self.page_size if self.page_size in PAGE_SIZES else 20
        try:
            return self._request(size)
        except ValidationError as exc:  # the view shows a MemoError; this escaped it (a silent, stale page)
            first = exc.errors()[0]
            field = ".".join(to_camel(str(part)) for part in first["loc"]) or "query"
            raise InvalidFieldError(field, first["msg"].removeprefix("Value error, ")) from None

    def _request(self, size: int) -> ListRequest:
        return ListRequest(
            project=self.project or None, cross_project=not self.project, query=self.query.strip() or None,
            ide=self.ide or None, model=self.model.strip() or None, agent=self.agent.strip() or None,
            client=self.client.strip() or None, since=self.since.isoformat() if self.since else None,
            until=self.until.isoformat() if self.until else None, limit=size, offset=(max(self.page, 1) - 1) * size,
        )


def page_count(total: int, page_size: int) -> int:
    """Pages of ``total`` items (at least 1)."""
    return max(1, -(-total // max(page_size, 1)))


def preview(text: str | None, limit: int = PREVIEW_CHARS) -> str:
    """One line of ``text`` for a table cell (whitespace folded, cut at ``limit``)."""
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def period_bounds(period: str, today: date) -> tuple[date | None, date | None]:
    """``since``/``until`` (inclusive dates) of a named period relative to ``today``."""
    first = today.replace(day=1)
    if period == "this-month":
        return first, today
    if period == "last-month":
        end = first - timedelta(days=1)
        return end.replace(day=1), end
    if period == "last-30-days":
        return today - timedelta(days=29), today
    if period == "this-year":
        return today.replace(month=1, day=1), today
    return None, None


@dataclass
class DashboardData:
    """The dashboard's access to the vault(s)."""

    main: VaultStore
    _further: dict[str, VaultStore] = field(default_factory=dict)
    #: the last report drafted and its draft (or why none): :meth:`_draft`
    _drafted: tuple[Any, Any] | None = field(default=None, repr=False)

    # ---------------------------------------------------------------- vaults
    @property
    def store(self) -> VaultStore:
        """The main vault's store, its index checked against the files again when that was last
        done a while ago (:meth:`VaultStore.recheck`): a dashboard left open shows the files as
        they are now (a sync tool's records, a project folder removed by hand)."""
        self.main.recheck()
        return self.main

    @property
    def settings(self) -> Settings:
        return self.store.settings

    def vaults(self) -> dict[str, str]:
        """Label → root of every vault the selector offers: the main vault first."""
        out = {f"{self.store.root} (main)": str(self.store.root)}
        for root in self.settings.vaults:
            resolved = str(Path(root).expanduser().resolve())
            if resolved != str(self.store.root.resolve()):
                out.setdefault(resolved, resolved)
        return out

    def store_for(self, vault: str | None) -> VaultStore:
        """The store of ``vault`` (a root from :meth:`vaults`; empty → the main vault)."""
        if not vault or Path(vault).resolve() == self.store.root.resolve():
            return self.store
        if vault not in self.vaults().values():
            raise InvalidFieldError("vault", f"{vault} is not a configured vault")
        if vault not in self._further:
            self._further[vault] = ReadOnlyVaultStore(self.settings.model_copy(update={"vault_root": Path(vault)}))
        return self._further[vault]

    def is_main(self, vault: str | None) -> bool:
        return self.store_for(vault) is self.store

    def close(self) -> None:
        for store in self._further.values():
            store.close()
        self._further.clear()

    # ---------------------------------------------------------------- prompts
    def facets(self, vault: str | None = None) -> PromptFacets:
        return prompt_facets(self.store_for(vault))

    def prompts_page(self, query: PromptQuery) -> dict[str, Any]:
        """One page of prompts: the ``list`` action or, with a query, ``search`` (SPEC §2.6
        envelope ``{total, limit, offset, hasMore, items}``)."""
        request = query.request()
        return run_action(self.store_for(query.vault), "search" if request.query else "list", request)

    def local_time(self, iso: str | None) -> str:
        """``YYYY-MM-DD HH:MM`` in the vault's zone ('' when unknown)."""
        if not iso:
            return ""
        return from_iso(iso).astimezone(self.store.zone).strftime("%Y-%m-%d %H:%M")

    def prompt_detail(self, vault: str | None, record_id: str, project: str | None = None) -> dict[str, Any]:
        """The ``prompt_detail`` action (the record with ``renderedHtml``, its body as sanitized
        HTML) plus ``storyHtml``: the session's intent story, sanitized ('' for a turn without
        a session)."""
        store = self.store_for(vault)
        record = run_action(store, "prompt_detail", GetRequest(id=record_id, project=project))
        story = ""
        if record.get("sessionId"):
            story = story_html_fragment(render_story(story_data(store, record["sessionId"], record["project"]),
                                                     store.zone))
        return {**record, "storyHtml": story}

    # ---------------------------------------------------------------- activity & invoicing
    def clients(self) -> list[str]:
        return known_clients(self.store)

    def activity(self, client: str | None, since: date | None, until: date | None) -> ActivityReport:
        """The report of the ``activity_report`` action over every project of every
        configured vault (``crossProject``); its ``wire()`` is the action's answer."""
        return report_for(self.store, ActivityReportRequest(
            since=since.isoformat() if since else None, until=until.isoformat() if until else None,
            client=client or None, cross_project=True))

    def timesheet_pdf(self, report: ActivityReport) -> bytes:
        """The timesheet PDF of ``report``: the one of ``memo report timesheet``
        (``templatesDir`` overrides ours). Takes seconds on a long period."""
        return timesheet_pdf_bytes(report, self.settings.templates_dir)

    def invoice_problem(self, report: ActivityReport) -> tuple[str, str] | None:
        """Why no invoice can be made for ``report``, or None: ``("info", why)`` when clients of
        the view have no billing terms yet (the usual state of a new vault: a hint, not a fault),
        ``("warn", why)`` for anything else."""
        from .reports.invoice import UnpricedClientError

        try:
            self._draft(report)
        except UnpricedClientError as exc:
            named = [c for c in exc.clients if c.lower() != "internal"]
            terms = (f"billing terms for {', '.join(named)}: hourlyRate and currency under "
                     f"[clients.\"{named[0]}\"] in {exc.config} (memo config set)") if named else ""
            internal = "a client for its work filed under internal (memo session edit SID --client NAME)" \
                if len(named) < len(exc.clients) else ""
            return "info", (f"a draft needs {' and '.join(part for part in (terms, internal) if part)}, or choose "
                            "a client that has terms")
        except MemoError as exc:  # nothing to bill
            return "warn", str(exc)
        return None

    def issue_refusals(self, report: ActivityReport) -> list[str]:
        """What ``memo invoice issue`` would refuse of the draft of ``report``, one line each
        (:func:`~memo_analytics.reports.issuing.draft_refusals`: a client's address or tax
        treatment, an issued document whose file is lost): the draft is still given, the page
        says them beside it as ``memo report invoice`` does (the page said none: a click on
        "Issue…" was the first word of them). ``[]`` when no draft can be made."""
        from .reports.issuing import draft_refusals

        try:
            invoice = self._draft(report)
        except MemoError:
            return []
        refusals = draft_refusals(self.settings, invoice, self.store.root if self.store.exists else None)
        return refusals + self._unfiled_refusals(report)

    def credit_of(self, ref: str) -> str | None:
        """The number of the credit note that cancels the issued invoice ``ref``, or None."""
        from .vault import ledger

        return ledger.credited(ledger.documents(self.store.root)).get(ref) if self.store.exists else None

    def _unfiled_refusals(self, report: ActivityReport) -> list[str]:
        """The issue's refusal of a client's period whose billable work in its projects bills
        ``internal`` (:func:`~memo_analytics.reports.issuing.unfiled_notes`), foreseen: the page
        offered "Issue it?" and only the click said it (found by an operator)."""
        from .analytics.activity import INTERNAL_CLIENT
        from .reports.issuing import billing_period, unfiled_notes

        client, bounds = getattr(report, "client", None), report.bounds
        if not client or client == INTERNAL_CLIENT or bounds.since is None or bounds.until_exclusive is None:
            return []
        since, until = billing_period(report, report.sessions)  # the period's days, as the issue reads them
        try:
            return unfiled_notes(self.settings, [client], lambda: self.activity(INTERNAL_CLIENT, since, until),
                                 self.store if self.store.exists else None)
        except MemoError:
            return []

    def issue_preview(self, client: str | None, since: date | None, until: date | None) -> str:
        """What issuing the invoice of ``client`` for the period would bill, read from the vault now,
        for the question asked before issuing: ``"2.50 h, EUR 357.00 due"`` and the sessions it
        leaves off (open, already invoiced, of 0 minutes) — the question said none of it, and a
        period partly invoiced was issued for 0.50 h where the page showed 1.25 (found by a new
        user). '' when no invoice can be made (the issue then says why).
        """
        try:
            return self._preview(self.activity(client, since, until))
        except MemoError:
            return ""

    def _preview(self, report: ActivityReport) -> str:
        """:meth:`issue_preview` of a report built ('' when no invoice can be made of it)."""
        try:
            invoice = build_invoice(report, self.settings.billing_for, invoiced=self._invoiced())
        except MemoError:
            return ""
        due = "; ".join(f"{t.hours:.2f} h, {t.currency} {t.gross:,.2f} due" for t in invoice.totals)
        left = [f"{n} {what}" for n, what in ((invoice.open_sessions, "still open"),
                                              (invoice.already_invoiced, "already invoiced"),
                                              (invoice.zero_minute_sessions, "of 0 minutes")) if n]
        return due + (f" (left off: {', '.join(left)})" if left else "")

    def invoice_pdf(self, report: ActivityReport) -> bytes:
        """The draft invoice PDF of ``report`` (hours × each client's configured rate, one
        line per client and project): the one of ``memo report invoice`` without
        ``--number``."""
        return invoice_pdf_bytes(report, self.settings, user_templates=self.settings.templates_dir,
                                 invoiced=self._invoiced())[0]

    def issue_invoice(self, client: str | None, since: date | None, until: date | None,
                      expected: str | None = None):
        """Issue the invoice of ``client`` for the period (``memo invoice issue``): the report is
        built under the vault lock; the stored document is returned. ``expected``: the
        :meth:`issue_preview` the person confirmed — an invoice that would bill otherwise now (a
        session edited, imported or invoiced elsewhere, a rate changed since the question) is not
        issued (found by an operator: EUR 158.27 confirmed, EUR 396.27 issued).

        Raises
        ------
        InvalidFieldError, ReportError, UnpricedClientError
            As :func:`~memo_analytics.reports.issuing.issue_invoice` (no client, no complete period too).
        FiguresChangedError
            It would not bill ``expected`` now; ``preview`` says what it would bill.
        """
        from .analytics.activity import INTERNAL_CLIENT
        from .reports.issuing import issue_invoice

        def report() -> ActivityReport:
            built = self.activity(client, since, until)
            if expected is not None and (now := self._preview(built)) != expected:
                raise FiguresChangedError(now)
            return built

        document, _ = issue_invoice(self.store, self.settings, report,
                                    unfiled=lambda: self.activity(INTERNAL_CLIENT, since, until))
        return document

    def _draft(self, report: ActivityReport):
        """The draft invoice of ``report`` (:func:`build_invoice`), built once per report: the
        Activity tab asks both what keeps it from being drafted and what issuing it would refuse.

        Raises
        ------
        MemoError
            As :func:`build_invoice` (each ask of the same report raises it again)."""
        if self._drafted is None or self._drafted[0] is not report:
            try:
                self._drafted = (report, build_invoice(report, self.settings.billing_for, invoiced=self._invoiced()))
            except MemoError as exc:
                self._drafted = (report, exc)
        drafted = self._drafted[1]
        if isinstance(drafted, MemoError):
            raise drafted
        return drafted

    def _invoiced(self) -> dict[tuple[str, str], str]:
        """Sessions on issued invoices of the main vault: a draft leaves them off."""
        from .vault.ledger import invoiced_in

        return invoiced_in(self.store.root)

    # ---------------------------------------------------------------- rules
    def rule_candidates(self, project: str | None, min_confidence: float) -> list[Candidate]:
        return candidates_in_scope(self.store, DeriveRulesRequest(project=project or None,
                                                                  cross_project=not project,
                                                                  min_confidence=min_confidence))

    def save_traps(self, project: str | None, min_confidence: float) -> list[str]:
        """Save the candidates of ``project`` (None: every project) at or above
        ``min_confidence`` whose confidence reaches 0.8 as traps (``derive_rules`` with
        ``saveTraps``); their ids."""
        return run_action(self.store, "derive_rules", DeriveRulesRequest(
            project=project or None, cross_project=not project, min_confidence=min_confidence,
            save_traps=True))["savedTraps"]

    def promotion_root(self, project: str | None) -> Path | None:
        """The repository a promotion for ``project`` writes to (its ``lastSeenRoot``)."""
        return last_seen_root(self.store, project) if project else None

    def promote(self, project: str, destination: str) -> dict[str, Any]:
        """Promote the project's rules (confidence ≥ 0.8) into ``destination`` of its
        repository (``derive_rules`` with ``promote`` and no ``cwd``: the repository is the
        project's ``lastSeenRoot``). Returns ``{path, format, rules, traps}``.

        Raises
        ------
        InvalidFieldError
            No project chosen; or, from ``derive_rules``, a project without a known
            repository, nothing to promote, a destination that is not allow-listed.
        """
        if not project:  # without one, derive_rules would promote the default project's rules
            raise InvalidFieldError("promote", "choose a project: promotion writes into its repository")
        return run_action(self.store, "derive_rules", DeriveRulesRequest(project=project,
                                                                         promote=destination))["promoted"]

    # ---------------------------------------------------------------- digest
    def digest(self, refresh: bool = False, max_age_seconds: int | None = None) -> dict[str, Any]:
        """The ``digest`` action (``refresh``: recompute, not the cached answer; ``max_age_seconds``:
        recompute a cached answer older than that)."""
        return run_action(self.store, "digest", DigestRequest(refresh=refresh, max_age_seconds=max_age_seconds))

    def apply(self, item_id: str, fingerprint: str, project: str | None = None,
              as_of: str | None = None) -> dict[str, Any]:
        """The ``digest_apply`` action with the fingerprint the item was shown with
        (``applied: false`` with the new proposal when the state changed since), for the
        item of ``project`` (the same item id may stand for several projects' records);
        ``as_of``: the moment of the digest it was shown in (its ``computedAt``), so that the
        proposal applied is the one shown — an end an idle gap after the last prompt, not yet
        reached, is "now" and moves on with the clock."""
        return run_action(self.store, "digest_apply", DigestApplyRequest(item=item_id, fingerprint=fingerprint,
                                                                         project=project, as_of=as_of))

    def mark_reviewed(self, session_id: str, project: str) -> dict[str, Any]:
        """Record that the pull request of ``session_id`` (of ``project``) was reviewed: its
        ``reviewedAt`` (a session edit, SPEC §9), which ends its ``pr_awaiting_review`` item.

        Raises
        ------
        MemoError
            As :func:`~memo_analytics.services.session_edit.edit_session` (no such session, …).
        """
        from .services.session_edit import edit_session

        return edit_session(self.store, EditSessionRequest(session_id=session_id, project=project, reviewed=True))

    def today(self) -> date:
        return utcnow().astimezone(self.store.zone).date()


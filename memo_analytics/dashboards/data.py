"""Data access of the dashboard (SPEC §3.4): every read and write goes through the services,
one page at a time; nothing here builds HTML from record text without escaping or
sanitizing it.

:class:`DashboardData` holds the main vault's store and opens each further vault of
``Settings.vaults`` read-only on demand (the vault selector); writes (digest proposals,
traps, promotion) only ever touch the main vault.
"""

from __future__ import annotations

import html
import sqlite3
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from ..analytics.activity import ActivityReport, ActivityRequest, activity_report
from ..analytics.facets import PromptFacets, prompt_facets
from ..config import Settings
from ..domain.clock import from_iso, utcnow
from ..domain.errors import InvalidFieldError, MemoError
from ..index import store as index
from ..operator.acting import apply_item
from ..operator.service import current_digest
from ..reports.invoice import build_invoice, invoice_context
from ..reports.render import render_html, render_pdf_bytes, templates_dir
from ..reports.story import story_html_fragment
from ..reports.timesheet import timesheet_context
from ..services.projects import last_seen_root
from ..services.prompts import get_record, list_prompts, search_prompts
from ..services.requests import DeriveRulesRequest, ListRequest
from ..services.rules import (
    TRAP_THRESHOLD,
    candidates_in_scope,
    derive_rules,
    save_traps,
)
from ..services.rules.extract import Candidate
from ..services.sessions import known_clients
from ..services.store import VaultStore
from ..services.stories import render_story, story_data

PAGE_SIZES = (10, 20, 50, 100)
#: Where a promotion may write (SPEC §5.3), as offered by the dashboard.
PROMOTE_TARGETS = ("CLAUDE.md", "GEMINI.md", ".github/copilot-instructions.md", ".cursor/rules/memo-derived.mdc")
#: Characters of a prompt shown in a table cell (the drawer shows all of it).
PREVIEW_CHARS = 160


class _ReadOnlyStore(VaultStore):
    """A further vault of ``Settings.vaults``: its index opened read-only (nothing is
    created, migrated or written there)."""

    @property
    def conn(self) -> sqlite3.Connection:
        with self._conn_guard:
            if self._conn is None:
                path = self.layout.index_path
                if not path.is_file():
                    raise InvalidFieldError("vault", f"{self.root} holds no vault index; "
                                                     f"run `memo --vault-root {self.root} reindex`")
                self._conn = index.connect_readonly(path)
            return self._conn

    def lock(self):  # pragma: no cover - a guard: the dashboard never writes here
        raise InvalidFieldError("vault", f"{self.root} is a further vault: it is read, never written")


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
        """The :class:`ListRequest` of this page (the page clamped to ≥ 1)."""
        size = self.page_size if self.page_size in PAGE_SIZES else 20
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

    store: VaultStore
    _further: dict[str, VaultStore] = field(default_factory=dict)

    # ---------------------------------------------------------------- vaults
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
            self._further[vault] = _ReadOnlyStore(self.settings.model_copy(update={"vault_root": Path(vault)}))
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
        """One page of prompts: ``list`` or, with a query, ``search`` (SPEC §2.6 envelope)."""
        store = self.store_for(query.vault)
        request = query.request()
        return (search_prompts if request.query else list_prompts)(store, request)

    def local_time(self, iso: str | None) -> str:
        """``YYYY-MM-DD HH:MM`` in the vault's zone ('' when unknown)."""
        if not iso:
            return ""
        return from_iso(iso).astimezone(self.store.zone).strftime("%Y-%m-%d %H:%M")

    def prompt_detail(self, vault: str | None, record_id: str) -> dict[str, Any]:
        """The record plus ``renderedHtml`` (sanitized) and ``storyHtml`` (the session's
        intent story, sanitized; '' for a turn without a session)."""
        store = self.store_for(vault)
        record = get_record(store, record_id)
        story = ""
        if record.get("sessionId"):
            story = story_html_fragment(render_story(story_data(store, record["sessionId"]), store.zone))
        return {**record, "renderedHtml": story_html_fragment(record.get("body") or ""), "storyHtml": story}

    # ---------------------------------------------------------------- activity & invoicing
    def clients(self) -> list[str]:
        return known_clients(self.store)

    def activity(self, client: str | None, since: date | None, until: date | None) -> ActivityReport:
        """The activity of every project of every configured vault (``crossProject``)."""
        return activity_report(self.store, ActivityRequest(
            projects=None, since=since.isoformat() if since else None, until=until.isoformat() if until else None,
            client=client or None, cross_project=True))

    def timesheet_pdf(self, report: ActivityReport) -> bytes:
        """The timesheet PDF of ``report`` (``templatesDir`` overrides ours)."""
        user = self.settings.templates_dir
        return render_pdf_bytes(render_html("timesheet.html.j2", timesheet_context(report), user),
                                user or templates_dir())

    def invoice_problem(self, report: ActivityReport) -> str | None:
        """Why no invoice can be made for ``report`` (no billable session, a client without an
        hourly rate), or None."""
        try:
            build_invoice(report, self.settings.billing_for)
        except MemoError as exc:  # nothing to bill; a client without terms
            return str(exc)
        return None

    def invoice_pdf(self, report: ActivityReport) -> bytes:
        """The draft invoice PDF of ``report`` (hours × each client's configured rate)."""
        user = self.settings.templates_dir
        invoice = build_invoice(report, self.settings.billing_for)
        context = invoice_context(report, invoice)
        return render_pdf_bytes(render_html("invoice.html.j2", context, user), user or templates_dir())

    # ---------------------------------------------------------------- rules
    def rule_candidates(self, project: str | None, min_confidence: float) -> list[Candidate]:
        return candidates_in_scope(self.store, DeriveRulesRequest(project=project or None,
                                                                  cross_project=not project,
                                                                  min_confidence=min_confidence))

    def save_traps(self, candidates: list[Candidate]) -> list[str]:
        """Save the candidates with confidence ≥ 0.8 as traps; their ids."""
        return save_traps(self.store, [c for c in candidates if c.confidence >= TRAP_THRESHOLD])

    def promotion_root(self, project: str | None) -> Path | None:
        """The repository a promotion for ``project`` writes to (its ``lastSeenRoot``)."""
        return last_seen_root(self.store, project) if project else None

    def promote(self, project: str, destination: str) -> dict[str, Any]:
        """Promote the project's rules (confidence ≥ 0.8) into ``destination`` of its
        repository. Refused (``InvalidFieldError``) when the repository is unknown."""
        if not project:
            raise InvalidFieldError("promote", "choose a project: promotion writes into its repository")
        if self.promotion_root(project) is None:
            raise InvalidFieldError("promote", f"project {project} has no known repository (lastSeenRoot); "
                                               "record a turn from the repository first, or promote with the CLI "
                                               "from inside it")
        return derive_rules(self.store, DeriveRulesRequest(project=project, promote=destination))["promoted"]

    # ---------------------------------------------------------------- digest
    def digest(self, refresh: bool = False) -> dict[str, Any]:
        return current_digest(self.store, force=refresh)

    def apply(self, item_id: str, fingerprint: str) -> dict[str, Any]:
        """Apply one proposal (``applied: false`` with the new proposal when stale)."""
        return apply_item(self.store, item_id, fingerprint)

    def today(self) -> date:
        return utcnow().astimezone(self.store.zone).date()


def esc(value: Any) -> str:
    """``html.escape`` of ``str(value)`` ('' for None): every piece of record text shown."""
    return "" if value is None else html.escape(str(value), quote=True)

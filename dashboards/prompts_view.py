"""Prompts & Intent Stories (SPEC §3.4): a master table filled one page at a time from the
index (``list``/``search`` with limit and offset; the browser never holds more than a page),
IDE chips, a vault selector, search, model, agent and client fields, date pickers, page
size 10/20/50/100, pagination, and a details drawer with the rendered prompt and the
session's intent story (both sanitized HTML: record text is hostile)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import panel as pn

from memo_analytics.domain.clock import zone_name
from memo_analytics.dashboard_data import PAGE_SIZES, DashboardData, PromptQuery, page_count, preview
from memo_analytics.dashboards.style import esc, html_pane, note
from memo_analytics.domain.errors import MemoError
from memo_analytics.services.prompts import left_out_said

ALL_IDES = "All IDEs"
ALL_PROJECTS = "All projects"
COLUMNS = ["When", "Project", "Session", "Turn", "IDE", "Model", "Client", "Prompt"]


class PromptsView:
    """The tab; :attr:`layout` is what the app shows."""

    def __init__(self, data: DashboardData) -> None:
        self.data = data
        self.ids: list[tuple[str, str]] = []  # (project, id) of each row: the key of a record
        self.page = 1
        self.pages = 1
        self.shown: tuple[str, str | None] | None = None  # (id, project) of the record in the drawer
        vaults = data.vaults()
        self.vault = pn.widgets.Select(label="Vault", options=vaults, value=next(iter(vaults.values())), width=260,
                                       disabled=len(vaults) == 1, css_classes=["memo-vault"])
        self.search = pn.widgets.TextInput(label="Search", placeholder="Full text (Enter to search)", width=300,
                                           css_classes=["memo-search"])
        self.project = pn.widgets.Select(label="Project", width=200, css_classes=["memo-project"])
        self.model = pn.widgets.TextInput(label="Model", placeholder="contains…", width=150, css_classes=["memo-model"])
        self.agent = pn.widgets.TextInput(label="Agent", placeholder="contains…", width=150, css_classes=["memo-agent"])
        self.client = pn.widgets.TextInput(label="Client", placeholder="name, any case", width=150,
                                           css_classes=["memo-client"])
        self.since = pn.widgets.DatePicker(label="Since", width=140, css_classes=["memo-since"])
        self.until = pn.widgets.DatePicker(label="Until", width=140, css_classes=["memo-until"])
        self.clear = pn.widgets.Button(label="Clear filters", button_type="light", width=110, margin=(24, 10, 10, 10))
        # the chips wrap: six IDEs (as real imports give) ran past a phone's edge, the page scrolled sideways
        # (found by an operator)
        self.ides = pn.widgets.RadioButtonGroup(label="IDE", button_type="primary", button_style="outline",
                                                css_classes=["memo-ide-chips"], sizing_mode="stretch_width",
                                                stylesheets=[".bk-btn-group { flex-wrap: wrap; row-gap: 4px; } "
                                                             ".bk-btn-group > .bk-btn { flex: 0 0 auto; }"])
        self.page_size = pn.widgets.Select(label="Rows per page", options=list(PAGE_SIZES), value=20, width=110,
                                           css_classes=["memo-page-size"])
        self.first = pn.widgets.Button(label="« First", width=80, css_classes=["memo-first"])
        self.prev = pn.widgets.Button(label="‹ Previous", width=100, css_classes=["memo-prev"])
        self.next = pn.widgets.Button(label="Next ›", width=90, css_classes=["memo-next"])
        self.last = pn.widgets.Button(label="Last »", width=80, css_classes=["memo-last"])
        self.status = html_pane(css_classes=["memo-page-status"], margin=(18, 10, 5, 10))
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=COLUMNS), show_index=False, disabled=True, selectable=False,
            layout="fit_columns", sizing_mode="stretch_width", css_classes=["memo-prompts-table"],
            widths={"When": 160, "Project": 110, "Session": 150, "Turn": 66, "IDE": 86, "Model": 120, "Client": 100},
            header_align="left", text_align={"Turn": "right"},
            titles={"When": f"When ({zone_name(data.store.zone)})"},  # whose clock: the vault's zone
            configuration={"keybindings": False},  # Tabulator's took Tab: a keyboard user was held in the table
        )
        self.table.on_click(self._open_row)
        self.drawer_title = html_pane(sizing_mode="stretch_width", css_classes=["memo-drawer-title"])
        self.drawer_prompt = html_pane(sizing_mode="stretch_width", css_classes=["memo-drawer-prompt"])
        self.drawer_story = html_pane(sizing_mode="stretch_width", css_classes=["memo-drawer-story"])
        self.close = pn.widgets.Button(label="✕ Close", width=80, button_type="light", css_classes=["memo-drawer-close"])
        self.close.on_click(lambda _: setattr(self.drawer, "visible", False))
        self.drawer = pn.Column(
            pn.Row(self.drawer_title, self.close, sizing_mode="stretch_width"),
            html_pane('<h3 class="section">Prompt</h3>', margin=(0, 10)), self.drawer_prompt,
            html_pane('<h3 class="section">Session story</h3>', margin=(10, 10, 0, 10)), self.drawer_story,
            # up to 500 px beside the table, narrower on a narrow screen: its fixed 500 px, hidden, held a
            # phone's page 520 px wide (an operator on a phone)
            sizing_mode="stretch_width", max_width=500, visible=False, scroll=True, max_height=1100,
            css_classes=["memo-drawer"],
            styles={"border-left": "3px solid #1f5f8b", "background": "#fbfcfd", "box-shadow": "-4px 0 12px #0001"},
        )
        self.message = html_pane(sizing_mode="stretch_width", visible=False)
        self._facets()
        for widget in (self.search, self.project, self.model, self.agent, self.client, self.since, self.until,
                       self.ides, self.page_size):
            widget.param.watch(lambda _: self.go(1), "value")
        self.vault.param.watch(self._vault_changed, "value")
        self.clear.on_click(self._clear)
        self.first.on_click(lambda _: self.go(1))
        self.prev.on_click(lambda _: self.go(self.page - 1))
        self.next.on_click(lambda _: self.go(self.page + 1))
        self.last.on_click(lambda _: self.go(self.pages))
        filters = pn.Column(
            pn.FlexBox(self.vault, self.search, self.project, self.model, self.agent, self.client, self.since,
                       self.until, self.clear, sizing_mode="stretch_width"),
            self.ides, sizing_mode="stretch_width",
        )
        # wraps on a narrow screen: at 390 px a row of them made the page scroll sideways (an operator on a phone)
        pager = pn.FlexBox(self.page_size, self.first, self.prev, self.status, self.next, self.last,
                           flex_wrap="wrap", align_items="center", sizing_mode="stretch_width")
        master = pn.Column(filters, self.message, self.table, pager, sizing_mode="stretch_width")
        self.layout = pn.Row(master, self.drawer, sizing_mode="stretch_width", css_classes=["memo-prompts"])
        self.go(1)

    # ---------------------------------------------------------------- filters
    def _facets(self) -> None:
        facets = self.data.facets(self.vault.value)
        self.ides.options = [ALL_IDES, *facets.ides]
        self.ides.value = ALL_IDES
        self.project.options = [ALL_PROJECTS, *facets.projects]
        self.project.value = ALL_PROJECTS

    def _vault_changed(self, _event: Any) -> None:
        self.drawer.visible = False
        with pn.io.hold():
            self._facets()
        self.go(1)

    def _clear(self, _event: Any) -> None:
        with pn.io.hold():
            for widget in (self.search, self.model, self.agent, self.client):
                widget.value = ""
            self.since.value = self.until.value = None
            self.ides.value = ALL_IDES
            self.project.value = ALL_PROJECTS
        self.go(1)

    def query(self, page: int) -> PromptQuery:
        """The filters as the widgets hold them, for ``page``."""
        return PromptQuery(
            vault=self.vault.value, query=self.search.value or "",
            ide="" if self.ides.value in (None, ALL_IDES) else self.ides.value,
            project="" if self.project.value in (None, ALL_PROJECTS) else self.project.value,
            model=self.model.value or "", agent=self.agent.value or "", client=self.client.value or "",
            since=self.since.value, until=self.until.value, page_size=int(self.page_size.value), page=page,
        )

    # ---------------------------------------------------------------- one page
    def go(self, page: int) -> None:
        """Show page ``page`` (clamped) of the prompts the filters select."""
        page = max(1, page)
        try:
            result = self.data.prompts_page(self.query(page))
        except MemoError as exc:
            self._say(str(exc))
            return
        size = result["limit"]
        self.pages = page_count(result["total"], size)
        if page > self.pages and result["total"]:
            return self.go(self.pages)
        self.page = page
        # a search of no words, or that matched nothing, says why (the page showed 0 rows silently: an operator)
        self.message.object = note("info", result["note"]) if result.get("note") else ""
        self.message.visible = bool(result.get("note"))
        items = result["items"]
        self.ids = [(item["project"], item["id"]) for item in items]
        rows = [[self.data.local_time(i.get("created")), i.get("project") or "", i.get("sessionId") or "",
                 i.get("turn") if i.get("turn") is not None else "", i.get("ide") or "", i.get("model") or "",
                 i.get("client") or "internal", preview(i.get("body"))] for i in items]
        with pn.io.hold():
            frame = pd.DataFrame(rows, columns=COLUMNS)
            if not frame.equals(self.table.value):  # the same rows stay as they are under the pointer
                self.table.value = frame
            first = result["offset"] + 1 if items else 0
            searched = " · ranked by relevance" if (self.search.value or "").strip() else " · newest first"
            left = (f' · {esc(left_out_said(result["leftOut"]))}' if result.get("leftOut") else "")  # said, as the CLI does
            self.status.object = (f'<div class="memo-status">Page {page:,} of {self.pages:,} '
                                  f'<span class="muted">· {first:,}–{result["offset"] + len(items):,} of '
                                  f'{result["total"]:,} prompts{esc(searched)}{left}</span></div>')
            self.first.disabled = self.prev.disabled = page <= 1
            self.next.disabled = self.last.disabled = not result["hasMore"]

    def follow(self) -> None:
        """Show what the vault holds now, under the same filters and page: the turns of a
        running session recorded since, and an IDE or project first seen in the filters' lists
        (a filter no longer offered falls back to all). The digest's ↻ and its periodic refresh
        call it: an open tab follows the vault as the digest does. A page whose rows did not
        change is left as it is."""
        try:
            facets = self.data.facets(self.vault.value)
        except MemoError as exc:
            self._say(str(exc))
            return
        with pn.io.hold():
            for widget, every, offered in ((self.ides, ALL_IDES, facets.ides),
                                           (self.project, ALL_PROJECTS, facets.projects)):
                options = [every, *offered]
                if list(widget.options) != options:
                    chosen = widget.value
                    widget.options = options
                    if chosen not in options:
                        widget.value = every  # watched: shows page 1 of all
            titles = {"When": f"When ({zone_name(self.data.store.zone)})"}
            if self.table.titles != titles:  # the config's zone changed: the rows' times are in the new one
                self.table.titles = titles
        self.go(self.page)
        if self.drawer.visible and self.shown is not None:  # the record on show as the vault holds it now
            self.open(*self.shown, following=True)

    def _say(self, message: str) -> None:
        self.message.object = note("error", message)
        self.message.visible = True

    # ---------------------------------------------------------------- drawer
    def _open_row(self, event: Any) -> None:
        if event.row is None or not 0 <= event.row < len(self.ids):
            return
        project, record_id = self.ids[event.row]
        self.open(record_id, project)

    def open(self, record_id: str, project: str | None = None, following: bool = False) -> None:
        """Show ``record_id`` (of ``project``: the same id may exist in several) in the drawer:
        metadata, the rendered prompt, the story. ``following``: read again at the digest's
        refresh (:meth:`follow`) — a session edited since showed its old client and end beside the
        table's new row (found by an operator); a record gone from there closes the drawer."""
        try:
            record = self.data.prompt_detail(self.vault.value, record_id, project)
        except MemoError as exc:
            if following:
                self.drawer.visible = False
                self.shown = None
                return
            self._say(str(exc))
            return
        self.shown = (record_id, project)
        fields = [("Project", record.get("project")), ("Session", record.get("sessionId")),
                  ("Turn", record.get("turn")), ("When", self.data.local_time(record.get("created"))),
                  ("IDE", record.get("ide")), ("Model", record.get("model")), ("Agent", record.get("agent")),
                  ("Client", record.get("client") or "internal"), ("Billable", "yes" if record.get("billable", True)
                                                                   else "no"),
                  ("Branch", record.get("branch")), ("Task", record.get("taskSlug")),
                  ("Tags", ", ".join(record.get("tags") or [])), ("Files", ", ".join(record.get("linkedPaths") or []))]
        meta = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in fields if v not in (None, ""))
        with pn.io.hold():
            self.drawer_title.object = (f'<h3 class="section">{esc(record["id"])}</h3>'
                                        f'<table class="grid small">{meta}</table>')
            self.drawer_prompt.object = f'<div class="rendered">{record["renderedHtml"]}</div>'
            self.drawer_story.object = (f'<div class="rendered">{record["storyHtml"]}</div>' if record["storyHtml"]
                                        else '<span class="muted">This turn belongs to no session.</span>')
            self.drawer.visible = True

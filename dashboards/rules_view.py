"""Derived Rules (SPEC §5.3): candidates with their confidence, occurrences and evidence
turns; save the confident ones as traps; promote them into an instruction file of the
project's repository (known from its ``lastSeenRoot``; refused clearly when unknown)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import panel as pn

from memo_analytics.dashboard_data import PROMOTE_TARGETS, DashboardData
from memo_analytics.dashboards.style import esc, grid, html_pane, note
from memo_analytics.domain.errors import MemoError
from memo_analytics.services.rules import TRAP_THRESHOLD
from memo_analytics.services.rules.extract import Candidate

ALL_PROJECTS = "All projects"
COLUMNS = ["Rule", "Category", "Confidence", "Occurrences", "Projects"]
#: Candidates listed (the rest are counted).
SHOWN = 200


class RulesView:
    """The tab; :attr:`layout` is what the app shows."""

    def __init__(self, data: DashboardData) -> None:
        self.data = data
        self.candidates: list[Candidate] = []
        self.project = pn.widgets.Select(label="Project", options=[ALL_PROJECTS, *data.facets().projects],
                                         value=ALL_PROJECTS, width=220, css_classes=["memo-rules-project"])
        self.min_confidence = pn.widgets.FloatSlider(label="Minimum confidence", start=0.0, end=0.99, step=0.05,
                                                     format="0.00", value=0.0, width=220,
                                                     css_classes=["memo-rules-min"])
        self.save = pn.widgets.Button(label=f"Save as traps (≥ {TRAP_THRESHOLD:.2f})", button_type="primary",
                                      width=190, margin=(24, 10, 10, 10), css_classes=["memo-rules-save"])
        self.destination = pn.widgets.Select(label="Promote into", options=list(PROMOTE_TARGETS), width=250,
                                             css_classes=["memo-rules-destination"])
        self.promote = pn.widgets.Button(label="Promote", button_type="success", width=100, margin=(24, 10, 10, 10),
                                         css_classes=["memo-rules-promote"])
        self.summary = html_pane(sizing_mode="stretch_width", css_classes=["memo-rules-summary"])
        self.message = html_pane(sizing_mode="stretch_width", visible=False, css_classes=["memo-rules-message"])
        self.table = pn.widgets.Tabulator(
            pd.DataFrame(columns=COLUMNS), show_index=False, disabled=True, selectable=False,
            layout="fit_data_stretch", sizing_mode="stretch_width", css_classes=["memo-rules-table"],
            pagination="local", page_size=15, header_align="left",
            text_align={"Confidence": "right", "Occurrences": "right"}, widths={"Rule": 520},
            configuration={"keybindings": False},  # Tabulator's took Tab: a keyboard user was held in the table
        )
        self.table.on_click(self._select)
        self.evidence = html_pane(sizing_mode="stretch_width", css_classes=["memo-rules-evidence"])
        self.project.param.watch(lambda _: self.derive(), "value")
        self.min_confidence.param.watch(lambda _: self.derive(), "value_throttled")
        self.save.on_click(lambda _: self._save())
        self.promote.on_click(lambda _: self._promote())
        self.layout = pn.Column(
            pn.FlexBox(self.project, self.min_confidence, self.save, self.destination, self.promote,
                       flex_wrap="wrap", align_items="end", sizing_mode="stretch_width"),  # wraps on a phone
            self.message, self.summary, self.table,
            html_pane('<h3 class="section">Evidence</h3>', margin=(10, 10, 0, 10)), self.evidence,
            sizing_mode="stretch_width", css_classes=["memo-rules"],
        )
        self.derive()

    def _project(self) -> str | None:
        return None if self.project.value == ALL_PROJECTS else self.project.value

    def derive(self) -> None:
        """Re-derive the candidates for the selected project and minimum confidence."""
        try:
            self.candidates = self.data.rule_candidates(self._project(), self.min_confidence.value)
        except MemoError as exc:
            self._say("error", str(exc))
            return
        shown = self.candidates[:SHOWN]
        confident = sum(1 for c in self.candidates if c.confidence >= TRAP_THRESHOLD)
        root = self.data.promotion_root(self._project())
        where = (f"promotion writes into {root}" if root is not None else
                 "promotion needs a project whose repository is known: choose one" if self._project() is None else
                 f"project {self._project()} has no known repository (record a turn from it first); "
                 "promotion is refused")
        self.summary.object = (f'<span class="memo-rules-count">{len(self.candidates):,} candidates</span>'
                               f'<span class="muted"> · {confident:,} at or above {TRAP_THRESHOLD:.2f} · '
                               f'{esc(where)}</span>' + (f'<span class="muted"> · the first {SHOWN} listed</span>'
                                                         if len(self.candidates) > SHOWN else ""))
        self.promote.disabled = root is None or confident == 0
        self.save.disabled = confident == 0
        self.table.value = pd.DataFrame([[c.text, c.category, f"{c.confidence:.2f}", c.occurrences,
                                          ", ".join(sorted({e.project for e in c.evidence}))] for c in shown],
                                        columns=COLUMNS)
        self.evidence.object = ('<span class="muted">Click a candidate to see the turns that said it.</span>'
                                if shown else '<span class="muted">No candidate: nobody repeated an instruction '
                                              'with always, never, must, refuse … in this scope.</span>')

    def _select(self, event: Any) -> None:
        if event.row is None or not 0 <= event.row < min(len(self.candidates), SHOWN):
            return
        candidate = self.candidates[event.row]
        rows = [[e.created[:16].replace("T", " "), e.project, e.session_id or "", e.turn or "", e.id]
                for e in candidate.evidence[:50]]
        more = candidate.occurrences - len(rows)
        self.evidence.object = (f'<div class="rendered"><b>{esc(candidate.text)}</b> <span class="muted">— '
                                f'{esc(candidate.category)}, signal “{esc(candidate.signal)}”, confidence '
                                f'{candidate.confidence:.2f}, said {candidate.occurrences}×</span></div>'
                                + grid(["When (UTC)", "Project", "Session", "Turn", "Turn id"], rows, numeric={3})
                                + (f'<span class="muted">… and {more} more</span>' if more > 0 else ""))

    def _save(self) -> None:
        try:
            saved = self.data.save_traps(self._project(), self.min_confidence.value)
        except MemoError as exc:
            self._say("error", str(exc))
            return
        self._say("ok", f"Saved {len(saved)} traps (confidence ≥ {TRAP_THRESHOLD:.2f}); they appear in the "
                        "digest as rules ready to promote.")

    def _promote(self) -> None:
        try:
            promoted = self.data.promote(self._project() or "", self.destination.value)
        except MemoError as exc:
            self._say("error", str(exc))
            return
        self._say("ok", f"Promoted {promoted['rules']} rules into {promoted['path']} ({promoted['format']} format).")

    def _say(self, kind: str, message: str) -> None:
        self.message.object = note(kind, message)
        self.message.visible = True

"""The operator dashboard (SPEC §3.4): the digest atop every tab, then Prompts & Intent
Stories, Activity & Invoicing and Derived Rules. Reads go through the services (one page
at a time: filtering never loads every record into the page); the Activity and Rules tabs
are built when first opened, so the first paint only waits for the digest and one page."""

from __future__ import annotations

from typing import Callable

import panel as pn

from ..services.store import VaultStore
from .activity_view import ActivityView
from .data import DashboardData, esc
from .digest_view import DigestView
from .prompts_view import PromptsView
from .rules_view import RulesView
from .style import ACCENT, CSS, html_pane

HEADER_CSS = f"""
.bar {{ display: flex; align-items: baseline; gap: 14px; background: {ACCENT}; color: #fff; padding: 12px 20px; }}
.brand {{ font-weight: 700; font-size: 20px; letter-spacing: .02em; }}
.title {{ font-size: 18px; }}
.root {{ margin-left: auto; font-size: 12px; opacity: .8; font-family: ui-monospace, monospace; }}
"""

pn.extension("tabulator", notifications=False)

TAB_NAMES = ("Prompts & Intent Stories", "Activity & Invoicing", "Derived Rules")


def _lazy(build: Callable[[], pn.viewable.Viewable]) -> tuple[pn.Column, Callable[[], None]]:
    """A placeholder column and the function that fills it once."""
    holder = pn.Column(pn.indicators.LoadingSpinner(value=True, size=30, name="Loading…"),
                       sizing_mode="stretch_width")
    done: list[bool] = []

    def fill() -> None:
        if not done:
            done.append(True)
            holder.objects = [build()]

    return holder, fill


def create_app(store: VaultStore) -> pn.viewable.Viewable:
    """A fresh dashboard for one browser session."""
    data = DashboardData(store)
    digest = DigestView(data)
    prompts = PromptsView(data)

    def rules() -> pn.viewable.Viewable:
        view = RulesView(data)
        view.save.on_click(lambda _: digest.refresh(force=True))
        view.promote.on_click(lambda _: digest.refresh(force=True))
        return view.layout

    activity_tab, build_activity = _lazy(lambda: ActivityView(data).layout)
    rules_tab, build_rules = _lazy(rules)
    tabs = pn.Tabs((TAB_NAMES[0], prompts.layout), (TAB_NAMES[1], activity_tab), (TAB_NAMES[2], rules_tab),
                   sizing_mode="stretch_width", css_classes=["memo-tabs"], margin=(0, 10))
    builders = {1: build_activity, 2: build_rules}
    tabs.param.watch(lambda event: builders.get(event.new, lambda: None)(), "active")
    if pn.state.curdoc is not None:
        pn.state.on_session_destroyed(lambda _context: data.close())
    header = html_pane(f'<div class="bar"><span class="brand">memo</span><span class="title">Operator dashboard'
                       f'</span><span class="root">{esc(store.root)}</span></div>', sizing_mode="stretch_width",
                       margin=0, stylesheets=[CSS, HEADER_CSS])
    return pn.Column(header, digest.layout, tabs, sizing_mode="stretch_width", css_classes=["memo-app"],
                     margin=0)

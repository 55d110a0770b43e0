"""The operator dashboard (SPEC §3.4): the digest atop every tab, then Prompts & Intent
Stories, Activity & Invoicing and Derived Rules. Reads and writes go through
:class:`~memo_analytics.dashboard_data.DashboardData` (the action table and the services
behind it; one page at a time: filtering never loads every record into the page); the
Activity and Rules tabs are built when first opened, so the first paint only waits for the
digest and one page.

One app, two ways to serve it:

- ``memo serve`` imports :func:`create_app` (this file ships in the wheel as
  ``memo_analytics.dashboards.app``) and serves it at ``/`` beside the status API, behind
  its token and browser boundary;
- ``panel serve dashboards/app.py`` (from a checkout; installed, the ``app.py`` beside
  ``memo_analytics.dashboards``) runs this file once per browser session: it opens the
  configured vault through the one runtime of the process (``Settings()``: ``MEMO_VAULT``,
  else the config file's ``vaultRoot``; ``MEMO_CONFIG`` names the file; a hybrid vault's
  writes are pushed as under ``memo serve``) and marks the app servable. Panel's own server
  has none of ``memo serve``'s guards (token, Host and Origin checks): keep it on loopback,
  its default.

Imports are absolute (``memo_analytics.…``): under ``panel serve`` this file is a script,
not a module of its package.
"""

from __future__ import annotations

from typing import Callable

import panel as pn

from memo_analytics.config import Settings
from memo_analytics.dashboard_data import DashboardData
from memo_analytics.dashboards.activity_view import ActivityView
from memo_analytics.dashboards.digest_view import DigestView
from memo_analytics.dashboards.prompts_view import PromptsView
from memo_analytics.dashboards.rules_view import RulesView
from memo_analytics.dashboards.style import ACCENT, CSS, esc, html_pane, note
from memo_analytics.domain.errors import MemoError
from memo_analytics.runtime import Runtime
from memo_analytics.services.store import VaultStore

HEADER_CSS = f"""
.bar {{ display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 14px; background: {ACCENT}; color: #fff;
        padding: 12px 20px; }}
.brand {{ font-weight: 700; font-size: 20px; letter-spacing: .02em; }}
.title {{ font-size: 18px; }}
.root {{ margin-left: auto; font-size: 12px; opacity: .8; font-family: ui-monospace, monospace; min-width: 0;
         overflow-wrap: anywhere; }}
"""

pn.extension("tabulator", notifications=False)

TAB_NAMES = ("Prompts & Intent Stories", "Activity & Invoicing", "Derived Rules")


def _lazy(build: Callable[[], pn.viewable.Viewable]) -> tuple[pn.Column, Callable[[], None]]:
    """A placeholder column and the function that fills it once."""
    holder = pn.Column(pn.indicators.LoadingSpinner(value=True, size=30, label="Loading…"),
                       sizing_mode="stretch_width")
    done: list[bool] = []

    def fill() -> None:
        if not done:
            done.append(True)
            holder.objects = [build()]

    return holder, fill


def create_app(store: VaultStore) -> pn.viewable.Viewable:
    """A fresh dashboard for one browser session on ``store``'s vault (and the further
    vaults of its settings, read-only)."""
    data = DashboardData(store)
    digest = DigestView(data)
    prompts = PromptsView(data)
    digest.followers.append(prompts.follow)  # ↻ and the periodic refresh show new turns in the table too
    digest.auto_refresh(store.settings.operator.dashboard_refresh_seconds)
    digest.on_changed = lambda: prompts.go(prompts.page)  # an applied proposal changed records it may list

    def rules() -> pn.viewable.Viewable:
        view = RulesView(data)
        view.save.on_click(lambda _: digest.refresh(force=True))
        view.promote.on_click(lambda _: digest.refresh(force=True))
        return view.layout

    def activity() -> pn.viewable.Viewable:
        view = ActivityView(data)
        digest.followers.append(view.follow)  # its figures follow the vault as the digest's do
        return view.layout

    activity_tab, build_activity = _lazy(activity)
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


def served_app() -> pn.viewable.Viewable:
    """The dashboard of one browser session under ``panel serve``: the configured vault,
    from the process's one :class:`~memo_analytics.runtime.Runtime` (built from ``Settings()``
    on the first page load; a changed config file is read again on each later one). A setting
    that cannot be used, or a machine in remote mode (it keeps no vault), is shown as one line
    instead of the app."""
    try:
        runtime = pn.state.as_cached("memo_analytics.dashboards.runtime",
                                     lambda: Runtime(Settings(), long_running=True))
        runtime.refresh()
        store = runtime.store()
    except (MemoError, ValueError) as exc:  # a bad config file or MEMO_* value (pydantic: a ValueError)
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return html_pane(note("error", f"memo: {first}"), sizing_mode="stretch_width", css_classes=["memo-app"])
    return create_app(store)


if pn.state.served:  # run by `panel serve dashboards/app.py`, once per browser session
    served_app().servable(title="memo")

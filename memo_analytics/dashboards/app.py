"""The operator dashboard (SPEC §3.4): the digest atop every tab, then Prompts & Intent
Stories, Activity & Invoicing and Derived Rules. Reads go through the services (one page
at a time: filtering never loads every record into the page)."""

from __future__ import annotations

import panel as pn

from ..operator.service import current_digest
from ..services.store import VaultStore


def digest_panel(store: VaultStore) -> pn.viewable.Viewable:
    """The digest, one line per item."""
    digest = current_digest(store)
    lines = [f"**{len(digest['items'])} items need you**"] if digest["items"] else ["Nothing needs you now."]
    lines += [f"- `{item['kind']}` {item['subject']} — {item['why']} → `{item['action']}`" for item in digest["items"]]
    return pn.pane.Markdown("\n".join(lines), sizing_mode="stretch_width", name="digest")


def create_app(store: VaultStore) -> pn.viewable.Viewable:
    """A fresh dashboard for one browser session."""
    return pn.Column(
        pn.pane.Markdown("# memo — operator dashboard"),
        digest_panel(store),
        pn.Tabs(("Prompts & Intent Stories", pn.pane.Markdown("…")),
                ("Activity & Invoicing", pn.pane.Markdown("…")),
                ("Derived Rules", pn.pane.Markdown("…"))),
        sizing_mode="stretch_width",
    )

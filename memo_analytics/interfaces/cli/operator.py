"""``memo digest``: what needs you now (SPEC §6)."""

from __future__ import annotations

from typing import Any, Optional

import typer
from rich.table import Table

from ...operator.service import run_digest
from ...services.requests import DigestRequest
from .common import _build, _emit, _safe, _short, app, out, state


def _age(minutes: int) -> str:
    if minutes >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} d"
    return f"{minutes // 60} h {minutes % 60:02d}" if minutes >= 60 else f"{minutes} min"


@app.command("digest")
def digest(
    refresh: bool = typer.Option(False, "--refresh", help="Recompute now instead of the cached digest."),
    as_of: Optional[str] = typer.Option(None, "--as-of", help="What needed you at this instant (ISO date or time)."),
) -> None:
    """What needs you now: stalled or overlong sessions, unclaimed hand-offs, PRs awaiting
    review, rules ready to promote, billable work without a client — one line each, ranked."""
    result = run_digest(state.store, _build(DigestRequest, refresh=refresh, as_of=as_of))

    def human(r: dict[str, Any]) -> None:
        if r.get("error"):
            out.print(_safe(f"note: {r['error']}; showing the digest of {r['computedAt']}"))
        if not r["items"]:
            out.print("Nothing needs you now.")
        else:
            table = Table(title=f"{len(r['items'])} items need you · computed {r['computedAt'][:16].replace('T', ' ')} UTC")
            for column in ("lane", "kind", "subject", "age", "why", "do"):
                table.add_column(column, overflow="fold")
            for item in r["items"]:
                table.add_row(item["lane"], item["kind"], _short(item["subject"], 30), _age(item["ageMinutes"]),
                              _short(item["why"], 60), _safe(item["action"]))
            out.print(table)
        if r["beyondHorizon"]:
            older = ", ".join(f"{n} {kind}" for kind, n in r["beyondHorizon"].items())
            out.print(f"older than {r['horizonDays']} days (counted, not listed): {older}")

    _emit(result, human)

"""Look of the dashboard: one stylesheet for the HTML panes (Panel renders each pane in its
own shadow root, so the sheet is attached to every pane that uses its classes) and small
HTML builders whose every piece of text is escaped."""

from __future__ import annotations

import html
from typing import Any, Iterable

import panel as pn

from memo_analytics.domain.wire import without_direction_controls

ACCENT = "#1f5f8b"

CSS = """
:host { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2733; }
.muted { color: #5c6b7a; }
.small { font-size: 12px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 11px; font-weight: 600;
         letter-spacing: .02em; white-space: nowrap; }
.lane-waiting { background: #fde8d7; color: #8a3b00; }
.lane-dropped { background: #e7ecf2; color: #33475b; }
.kind { font-weight: 600; }
code { background: #f2f4f7; padding: 1px 5px; border-radius: 4px; font-size: 12px; word-break: break-all; }
.item { line-height: 1.45; }
.item .why { margin-left: 2px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid #dfe5ec; border-radius: 8px; padding: 10px 16px; min-width: 140px; background: #fff; }
.card .value { font-size: 22px; font-weight: 650; color: #1d2733; }
.card .label { font-size: 12px; color: #5c6b7a; text-transform: uppercase; letter-spacing: .04em; }
table.grid { border-collapse: collapse; width: 100%; font-size: 13px; }
table.grid th { text-align: left; color: #5c6b7a; font-weight: 600; border-bottom: 1px solid #dfe5ec; padding: 4px 8px; }
table.grid td { border-bottom: 1px solid #eef1f5; padding: 4px 8px; vertical-align: top; }
table.grid td.num, table.grid th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.grid tr.total td { font-weight: 650; border-top: 2px solid #c9d2dc; }
.note { padding: 8px 12px; border-radius: 6px; font-size: 13px; }
.note.ok { background: #e6f4ea; color: #1e5631; }
.note.warn { background: #fff4e0; color: #7a4b00; }
.note.info { background: #eef3f8; color: #33475b; }
.note.error { background: #fde7e9; color: #8a1c24; }
.rendered { font-size: 14px; line-height: 1.5; overflow-wrap: anywhere; }
.rendered pre { background: #f6f8fa; padding: 8px; border-radius: 6px; overflow-x: auto; white-space: pre-wrap; }
.rendered table { border-collapse: collapse; font-size: 13px; }
.rendered td, .rendered th { border: 1px solid #dfe5ec; padding: 3px 6px; text-align: left; }
.rendered h1 { font-size: 18px; } .rendered h2 { font-size: 16px; } .rendered h3 { font-size: 14px; }
h3.section { font-size: 15px; margin: 4px 0; color: #1d2733; }
"""


def esc(value: Any) -> str:
    """``html.escape`` of ``str(value)`` ('' for None), without direction controls (a U+202E
    showed "evil" as "live"): every piece of record text shown."""
    return "" if value is None else html.escape(without_direction_controls(str(value)), quote=True)


def html_pane(text: str = "", **kwargs: Any) -> pn.pane.HTML:
    """An HTML pane with the dashboard's stylesheet. ``text`` must already be escaped or
    sanitized (built with :func:`esc` or :func:`~memo_analytics.reports.story.story_html_fragment`)."""
    kwargs.setdefault("stylesheets", [CSS])
    return pn.pane.HTML(text, **kwargs)


def note(kind: str, message: str) -> str:
    """A one-line notice (``ok``, ``info``, ``warn`` or ``error``); ``message`` is escaped. A live
    region: a screen reader says it when it appears (an error at once, the others when idle)."""
    role = "alert" if kind == "error" else "status"
    return f'<div class="note {esc(kind)}" role="{role}">{esc(message)}</div>'


def cards(items: Iterable[tuple[str, Any]]) -> str:
    """Figure cards: ``(label, value)`` pairs, escaped."""
    return '<div class="cards">' + "".join(
        f'<div class="card"><div class="value">{esc(value)}</div><div class="label">{esc(label)}</div></div>'
        for label, value in items) + "</div>"


def grid(headers: list[str], rows: Iterable[list[Any]], numeric: set[int] = frozenset(),
         total: list[Any] | None = None) -> str:
    """A plain table; cells escaped; columns in ``numeric`` right-aligned."""
    def cells(values: list[Any], tag: str) -> str:
        return "".join(f'<{tag}{" class=num" if i in numeric else ""}>{esc(v)}</{tag}>' for i, v in enumerate(values))

    body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
    if total is not None:
        body += f'<tr class="total">{cells(total, "td")}</tr>'
    return f'<table class="grid"><thead><tr>{cells(headers, "th")}</tr></thead><tbody>{body}</tbody></table>'

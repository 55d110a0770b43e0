"""Pure query building for listing and search (SPEC §2.6). No I/O here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..domain.clock import TimeBounds, to_iso

DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: Largest offset passed to SQLite (beyond any vault; keeps the value a 64-bit integer).
MAX_OFFSET = 2**53


def clamp_page(limit: object = None, offset: object = None) -> tuple[int, int]:
    """Clamp ``limit`` to 1–100 (default 20) and ``offset`` to ≥ 0 (SPEC §2.6).

    Non-numeric values fall back to the defaults rather than failing.
    """
    try:
        lim = DEFAULT_LIMIT if limit in (None, "") else int(limit)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        lim = DEFAULT_LIMIT
    try:
        off = 0 if offset in (None, "") else int(offset)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        off = 0
    return min(max(lim, 1), MAX_LIMIT), min(max(off, 0), MAX_OFFSET)


_WORD = re.compile(r"\w", re.UNICODE)


def fts_match_expression(query: str) -> str | None:
    """Quote free text into an FTS5 MATCH expression that can never be a syntax error.

    Every whitespace-separated token becomes a quoted phrase (inner quotes doubled);
    tokens are AND-combined. Operators a user types (``AND``, ``-x``, ``a:b``, ``C++``,
    brackets) are searched as text, not interpreted. Tokens without any letter or digit
    are dropped. Returns None when nothing searchable is left (the caller answers with an
    empty page, SPEC §2.6).
    """
    phrases = []
    for token in query.split():
        if not _WORD.search(token):
            continue
        phrases.append('"' + token.replace('"', '""') + '"')
    return " ".join(phrases) if phrases else None


@dataclass
class PromptFilter:
    """Metadata filters, AND-combined (SPEC §2.6).

    ``ide`` exact case-insensitive; ``model``/``agent`` case-insensitive substring;
    ``session_id``, ``task_slug``, ``client`` exact; ``billable`` exact; every tag in
    ``tags`` must be present; ``bounds`` limit ``created`` (half-open, UTC).
    ``projects`` None means every project (cross-project).
    """

    projects: list[str] | None = None
    ide: str | None = None
    model: str | None = None
    agent: str | None = None
    session_id: str | None = None
    task_slug: str | None = None
    client: str | None = None
    billable: bool | None = None
    tags: list[str] = field(default_factory=list)
    bounds: TimeBounds = field(default_factory=TimeBounds)


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def build_where(kind: str, flt: PromptFilter, alias: str = "r") -> tuple[str, list[object]]:
    """SQL ``WHERE`` clause and parameters for ``flt`` over ``records`` aliased ``alias``."""
    a = alias
    clauses = [f"{a}.kind = ?"]
    params: list[object] = [kind]
    if flt.projects is not None:
        clauses.append(f"{a}.project IN ({','.join('?' * len(flt.projects)) or 'NULL'})")
        params.extend(flt.projects)
    if flt.ide:
        clauses.append(f"lower({a}.ide) = lower(?)")
        params.append(flt.ide)
    for column, value in (("model", flt.model), ("agent", flt.agent)):
        if value:
            clauses.append(f"lower({a}.{column}) LIKE '%' || lower(?) || '%' ESCAPE '\\'")
            params.append(_like_escape(value))
    for column, value in (("session_id", flt.session_id), ("task_slug", flt.task_slug), ("client", flt.client)):
        if value:
            clauses.append(f"{a}.{column} = ?")
            params.append(value)
    if flt.billable is not None:
        clauses.append(f"{a}.billable = ?")
        params.append(1 if flt.billable else 0)
    for tag in flt.tags:
        clauses.append(f"EXISTS (SELECT 1 FROM json_each({a}.tags) WHERE json_each.value = ?)")
        params.append(tag)
    if flt.bounds.since is not None:
        clauses.append(f"{a}.created >= ?")
        params.append(to_iso(flt.bounds.since))
    if flt.bounds.until_exclusive is not None:
        clauses.append(f"{a}.created < ?")
        params.append(to_iso(flt.bounds.until_exclusive))
    return " AND ".join(clauses), params

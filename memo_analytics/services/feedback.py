"""Memory feedback (SPEC §3.1 ``feedback``): how often a record was recalled and whether it helped."""

from __future__ import annotations

from typing import Any

from ..domain.clock import to_iso, utcnow
from ..domain.errors import RecordNotFoundError
from ..domain.ids import validate_slug
from ..domain.records import RecordKind
from ..index import store as index
from .requests import FeedbackRequest
from .store import VaultStore


def record_feedback(store: VaultStore, request: FeedbackRequest, now=None) -> dict[str, Any]:
    """Count one use of a record (``hits``) and, when given, whether it helped.

    The counts live in the record's frontmatter as ``feedback: {hits, helpful, notHelpful,
    lastAt}`` and are updated under the vault lock (so concurrent feedback is never lost).

    Returns
    -------
    dict
        ``{id, feedback: {hits, helpful, notHelpful, lastAt}}``.

    Raises
    ------
    RecordNotFoundError
        No prompt or session has this id.
    """
    now = now or utcnow()
    validate_slug(request.id, "id")
    with store.lock():
        row = None
        for candidate in (request.id, f"session-{request.id}"):
            row = index.get_row(store.conn, candidate)
            if row is not None and row["kind"] in ("prompt", "session"):
                break
            row = None
        if row is None:
            raise RecordNotFoundError(request.id)
        kind = RecordKind(row["kind"])
        meta, body = store.read(row["project"], kind, row["id"]) or ({}, "")
        if not meta:
            raise RecordNotFoundError(request.id)
        counts = dict(meta.get("feedback") or {})
        counts["hits"] = int(counts.get("hits", 0)) + 1
        counts["helpful"] = int(counts.get("helpful", 0)) + (1 if request.helpful is True else 0)
        counts["notHelpful"] = int(counts.get("notHelpful", 0)) + (1 if request.helpful is False else 0)
        counts["lastAt"] = to_iso(now)
        meta["feedback"] = counts
        store.upsert(kind, meta, body)
    return {"id": row["id"], "feedback": counts}

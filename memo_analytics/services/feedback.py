"""Memory feedback (SPEC §3.1 ``feedback``): how often a record was recalled and what it was worth.

Any memory record takes feedback: a prompt, a session, a trap or a decision (a hand-off is a
baton, not a memory). The verdict comes as spec-memo's ``feedback: helpful|stale|wrong`` or as
today's ``helpful: true|false``:

- ``helpful: true`` ≡ ``feedback: helpful``: counts ``helpful``;
- ``helpful: false``: counts ``notHelpful`` (not helpful, no reason given);
- ``feedback: stale`` (it was true, it is outdated) and ``feedback: wrong`` (it never was):
  count ``stale`` or ``wrong`` *and* ``notHelpful``, so ``notHelpful`` stays the total of
  not-helpful uses whichever way they were said;
- no verdict: a hit only.
"""

from __future__ import annotations

from typing import Any

from ..domain.clock import to_iso, utcnow
from ..domain.errors import InvalidFieldError, RecordNotFoundError
from ..domain.ids import validate_slug
from ..domain.records import RecordKind
from .prompts import clean_text, refuse_unreadable_record
from .requests import FeedbackRequest
from .store import VaultStore

#: The kinds that take feedback, in the order an id is looked up.
FEEDBACK_KINDS = (RecordKind.PROMPT, RecordKind.SESSION, RecordKind.TRAP, RecordKind.DECISION)
#: How many comments a record keeps (the newest last).
KEPT_COMMENTS = 5
#: A comment's limit in characters (it lives in the record's frontmatter).
MAX_COMMENT_CHARS = 2000

_COUNTS = ("hits", "helpful", "notHelpful", "stale", "wrong")


def _find(store: VaultStore, record_id: str, project: str | None, cwd: str | None):
    kinds = {kind.value for kind in FEEDBACK_KINDS}
    for candidate in (record_id, f"session-{record_id}"):
        row = store.locate(candidate, None, project, cwd)
        if row is not None and row["kind"] in kinds:
            return row
        if row is not None and candidate == record_id:
            raise InvalidFieldError("id", f"{record_id} is a {row['kind']}; feedback is for prompts, sessions, "
                                          "traps and decisions")
    refuse_unreadable_record(store, record_id, project)
    raise RecordNotFoundError(record_id, project or None)


def _comment(text: str | None) -> str | None:
    text = clean_text(text, "comment")  # trimmed, secrets redacted
    if not text:
        return None
    if len(text) > MAX_COMMENT_CHARS:
        raise InvalidFieldError("comment", f"is {len(text)} characters; the limit is {MAX_COMMENT_CHARS}")
    return text


def record_feedback(store: VaultStore, request: FeedbackRequest, now=None) -> dict[str, Any]:
    """Count one use of a record (``hits``) and, when given, its verdict and comment.

    The counts live in the record's frontmatter as ``feedback: {hits, helpful, notHelpful,
    stale, wrong, lastAt, comments}`` (``comments``: the last :data:`KEPT_COMMENTS`
    ``{at, feedback, comment}``, secrets redacted) and are updated under the vault lock
    (so concurrent feedback is never lost).

    Returns
    -------
    dict
        ``{id, kind, project, feedback: {hits, helpful, notHelpful, stale, wrong, lastAt, comments}}``.

    Raises
    ------
    RecordNotFoundError
        No prompt, session, trap or decision has this id.
    InvalidFieldError
        The id is a hand-off's; the comment is too long.
    """
    now = now or utcnow()
    validate_slug(request.id, "id")
    comment = _comment(request.comment)
    verdict = request.verdict()
    with store.lock():
        row = _find(store, request.id, request.project, request.cwd)
        kind = RecordKind(row["kind"])
        meta, body = store.read(row["project"], kind, row["id"]) or ({}, "")
        if not meta:
            raise RecordNotFoundError(request.id)
        old = dict(meta.get("feedback") or {})
        counts = {name: int(old.get(name) or 0) for name in _COUNTS}
        counts["hits"] += 1
        if verdict is not None:
            counts["helpful" if verdict == "helpful" else "notHelpful"] += 1
            if verdict in ("stale", "wrong"):
                counts[verdict] += 1
        comments = [c for c in old.get("comments") or [] if isinstance(c, dict)]
        if comment is not None:
            comments = (comments + [{"at": to_iso(now), "feedback": verdict, "comment": comment}])[-KEPT_COMMENTS:]
        # keys of an older or newer memo stay as they were
        feedback = {**old, **counts, "lastAt": to_iso(now), "comments": comments}
        meta["feedback"] = feedback
        store.upsert(kind, meta, body)
    return {"id": row["id"], "kind": kind.value, "project": row["project"], "feedback": feedback}

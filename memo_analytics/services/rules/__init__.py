"""Derived rules (SPEC §5.3): candidates from the turns in scope, traps, formats, promotion.

The pure core is :mod:`.extract` (what counts as the person's instruction) and
:mod:`.formats`; :mod:`.promote` owns the one write into a product repository.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ...domain.clock import parse_bounds, to_iso, utcnow
from ...domain.errors import InvalidFieldError
from ...domain.ids import validate_session_id
from ...domain.records import RecordKind
from ...index import snapshot as snapshot_rows
from ...index import store as index
from ...index.query import PromptFilter, clamp_page
from ..projects import last_seen_root
from ..requests import DeriveRulesRequest
from ..store import VaultStore, repository_root
from .extract import Candidate, extract, normalized_key, trap_id, trap_rule, trap_text
from .formats import FORMATS, rules_body
from .promote import allowed_destination, plan_promotion, write_promotion

#: Candidates at or above this confidence become traps and are promoted (SPEC §5.3).
TRAP_THRESHOLD = 0.8
#: Body substrings that can hold a signal phrase (SQL prefilter; the regexes decide).
_PREFILTER = ["always", "every time", "never", "not", "don", "circumstances", "cannot", "must", "mandatory",
              "required", "refuse", "reject", "prohibit"]


def candidates_in_scope(store: VaultStore, request: DeriveRulesRequest) -> list[Candidate]:
    """Every candidate from the prompt turns the request selects (pure extraction over the
    index's redacted text)."""
    flt = PromptFilter(
        projects=store.scope(request.project, request.cross_project, request.cwd),
        session_id=validate_session_id(request.session_id) if request.session_id else None,
        bounds=parse_bounds(request.since, request.until, store.zone),
    )
    rows = index.texts_containing(store.conn, "prompt", flt, _PREFILTER)
    turns = ({"id": r["id"], "project": r["project"], "sessionId": r["session_id"], "turn": r["turn"],
              "created": r["created"], "body": r["body"]} for r in rows)
    return [c for c in extract(turns) if c.confidence >= request.min_confidence]


def save_traps(store: VaultStore, candidates: list[Candidate], now=None) -> list[str]:
    """Save every candidate with confidence ≥ :data:`TRAP_THRESHOLD` as a trap record in the
    project where it was said most (SPEC §5.3): id ``trap-derived-{slug32}-{suffix8}``,
    severity ``high``, tags ``['derived-rule', category]``. Saving again updates the trap
    (same id) and keeps its ``created``, and its ``status``/``promotedTo`` once promoted. Returns the
    trap ids."""
    now = to_iso(now or utcnow())
    saved = []
    with store.lock(), store.deferred_views():
        for candidate in candidates:
            if candidate.confidence < TRAP_THRESHOLD:
                continue
            project = _home_project(candidate)
            record_id = _saved_as(store, project, candidate)
            existing = store.read(project, RecordKind.TRAP, record_id)
            kept = {key: existing[0][key] for key in ("status", "promotedTo") if existing and key in existing[0]}
            meta = {
                "id": record_id, "kind": "trap", "project": project, "status": "active",
                "created": existing[0].get("created", now) if existing else now, "updated": now,
                "source": "derived-rules", "severity": "high", "tags": ["derived-rule", candidate.category],
                "confidence": candidate.confidence, "occurrences": candidate.occurrences, "summary": candidate.text,
                "evidence": [e.id for e in candidate.evidence[:50]],
                **kept,  # saved again, a promoted rule stays promoted (and in its file's block)
            }
            store.upsert(RecordKind.TRAP, meta, candidate.text + "\n")
            saved.append(record_id)
    return saved


def _saved_as(store: VaultStore, project: str, candidate: Candidate) -> str:
    """The id the candidate's trap has in ``project``: that of a trap saved before with the same
    rule (its slug and normalized text — spec-memo's suffix is not our hash: a migrated vault got
    a second trap of each rule, and two lines of it in the digest and the promoted file), else
    :func:`~.extract.trap_id`."""
    record_id = trap_id(candidate)
    prefix = record_id.rsplit("-", 1)[0] + "-"
    for row in index.rows_of_kind(store.conn, RecordKind.TRAP.value, project):
        if row["id"] != record_id and row["id"].startswith(prefix) \
                and normalized_key(trap_text({"summary": row["summary"]}, row["body"])) == candidate.key:
            return row["id"]
    return record_id


def _home_project(candidate: Candidate) -> str:
    projects = Counter(e.project for e in candidate.evidence)
    return min(projects, key=lambda p: (-projects[p], p))


def _mark_promoted(store: VaultStore, candidates: list[Candidate], written, now=None) -> list[str]:
    """Saved traps of promoted candidates become ``promoted`` (they leave the digest's
    ``rule_ready``). Returns their ids."""
    marked = []
    with store.lock(), store.deferred_views():
        for candidate in candidates:
            project = _home_project(candidate)
            found = store.read(project, RecordKind.TRAP, _saved_as(store, project, candidate))
            if found is None or found[0].get("status") == "promoted":
                continue
            meta, body = found
            meta.update(status="promoted", promotedTo=str(written), updated=to_iso(now or utcnow()))
            store.upsert(RecordKind.TRAP, meta, body)
            marked.append(meta["id"])
    return marked


def promoted_rules(store: VaultStore, project: str, target, leave: set[str] = frozenset()) -> list[dict[str, Any]]:
    """The rules promoted before into ``target`` (the file) — from any project's traps —, as
    :func:`~.formats.rules_body` takes them, oldest id first — except the traps of ``leave``
    (promoted again now). A promotion rewrites the file's whole managed block: these stay in it."""
    rules = []
    # every project's traps promoted into this file (two projects of one repository share its block),
    # and this project's promoted before the file was recorded
    for row in sorted(index.rows_of_kind(store.conn, RecordKind.TRAP.value, None, "promoted"),
                      key=lambda r: (r["project"] != project, r["project"], r["id"])):
        found = store.read(row["project"], RecordKind.TRAP, row["id"])
        if found is None or row["id"] in leave:
            continue
        into = found[0].get("promotedTo")
        if into != str(target) and not (into is None and row["project"] == project):
            continue
        rule = trap_rule(*found)
        if not rule["text"] or rule["text"] in {r["text"] for r in rules}:
            continue  # said in two projects, promoted from both: one line
        rules.append(rule)
    return rules


def derive_rules(store: VaultStore, request: DeriveRulesRequest) -> dict[str, Any]:
    """``derive_rules`` (SPEC §5.3).

    Returns
    -------
    dict
        ``{total, limit, items}`` — candidates by confidence, each ``{key, text, category,
        confidence, occurrences, signal, projects, evidence[]}`` — plus ``savedTraps`` (ids)
        with ``saveTraps``, ``format``/``rules`` (the text) with ``format``, and
        ``promoted`` (the file written) with ``promote``.

    Raises
    ------
    InvalidFieldError
        Unknown format; a promotion without a product root (no ``cwd`` in a repository and
        no ``lastSeenRoot`` for the project) or to a file that is not allow-listed.
    InvalidDateError
        ``Invalid since date`` / ``Invalid until date``.
    """
    if request.format is not None and request.format not in FORMATS:
        raise InvalidFieldError("format", f"{request.format!r} is not one of {', '.join(FORMATS)}")
    product_root = None
    if request.promote is not None and request.cross_project:
        raise InvalidFieldError("promote", "promotes the rules of one project into its repository; drop "
                                           "crossProject/--all")
    if request.promote is not None:
        product_root = repository_root(request.cwd)
        if product_root is None:
            project = store.resolve_project(request.project, request.cwd)
            product_root = last_seen_root(store, project)
        if product_root is None:
            raise InvalidFieldError("promote", "needs a cwd inside the product repository, or a project whose "
                                               "lastSeenRoot is known (record a turn from the repository first)")
        _, default_format = allowed_destination(product_root, request.promote)  # refuse before any work
    candidates = candidates_in_scope(store, request)
    limit, _ = clamp_page(request.limit, 0)
    items = [c.wire() for c in candidates[:limit]]
    result: dict[str, Any] = {
        "total": len(candidates), "limit": limit, "items": items,
        # spec-memo's name for the same candidates, with its field names beside ours
        "rules": [{**item, "rule": item["text"], "sourcePromptIds": [e["id"] for e in item["evidence"]]}
                  for item in items],
    }
    confident = [c.wire(evidence_limit=0) for c in candidates if c.confidence >= TRAP_THRESHOLD]
    result["confident"] = len(confident)
    plan = None
    ready: list[tuple[dict[str, Any], str]] = []
    if request.promote is not None:  # every check of the promotion before anything is written
        ready = _ready_traps(store, store.resolve_project(request.project, request.cwd),
                            {normalized_key(rule["text"]) for rule in confident})
        confident += [trap_rule(meta, body) for meta, body in ready]
        if not confident:
            project = store.resolve_project(request.project, request.cwd)
            raise InvalidFieldError("promote", f"no rule of project {project} reaches {TRAP_THRESHOLD} "
                                               "(nothing to promote; see `memo report rules`)")
        fmt = request.format or default_format
        project = store.resolve_project(request.project, request.cwd)
        promoting = {trap_id(c) for c in candidates if c.confidence >= TRAP_THRESHOLD}

        def planned() -> Any:  # the rules promoted before into this file stay in its block
            target, _ = allowed_destination(product_root, request.promote)
            body = rules_body([*promoted_rules(store, project, target, promoting), *confident], fmt)
            return plan_promotion(product_root, request.promote, body, store.root)

        plan = planned()
    if request.save_traps:
        result["savedTraps"] = save_traps(store, candidates)
    if request.format is not None:
        result["format"] = request.format
        result["formatted"] = rules_body(confident, request.format)
    if plan is not None:
        plan = planned()  # read the file again just before writing: an edit made meanwhile is kept
        written = write_promotion(plan)
        marked = _mark_promoted(store, [c for c in candidates if c.confidence >= TRAP_THRESHOLD], written)
        marked += _mark_traps(store, ready, written)
        result["promoted"] = {"path": str(written), "format": fmt, "rules": len(confident), "traps": marked}
    return result


def _ready_traps(store: VaultStore, project: str, said: set[str]) -> list[tuple[dict[str, Any], str]]:
    """The project's derived-rule traps the digest offers (``rule_ready``, the same query:
    active, confidence ≥ :data:`TRAP_THRESHOLD`, holding a rule) whose rule no candidate says now —
    one written or migrated by hand, or whose turns are gone: ``--promote`` (the digest's command)
    promotes them too, as its one-click action does. ``(meta, body)`` pairs, in the index's order."""
    found = []
    for trap in snapshot_rows.derived_rule_traps(store.conn):
        if trap["project"] != project:
            continue
        body = trap.pop("_body") or ""
        trap.pop("_path", None)
        rule = trap_rule(trap, body)
        key = normalized_key(rule["text"])
        if rule["confidence"] >= TRAP_THRESHOLD and rule["text"] and key not in said:
            said.add(key)
            found.append((trap, body))
    return found


def _mark_traps(store: VaultStore, traps: list[tuple[dict[str, Any], str]], written, now=None) -> list[str]:
    """``traps`` become ``promoted`` into ``written``. Returns their ids."""
    with store.lock(), store.deferred_views():
        for meta, body in traps:
            meta.update(status="promoted", promotedTo=str(written), updated=to_iso(now or utcnow()))
            store.upsert(RecordKind.TRAP, meta, body)
    return [meta["id"] for meta, _ in traps]

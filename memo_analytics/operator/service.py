"""The digest pass over a vault (SPEC §6, phase 1): gather, rank, cache.

The digest is recomputed only when the vault changed (its index version moved) or when an
age threshold it depends on fell due; any other read returns the cached answer from
``.memo/digest.json``. A change within ``operator.debounceSeconds`` of the last pass is
folded into the next one (the cached answer is returned, marked ``stale``). A failed
recompute keeps the previous answer and says so in ``error``.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..domain.records import RecordKind
from ..domain.clock import from_iso, parse_record_instant, to_iso, utcnow
from ..analytics.frames import vault_sources
from ..index import snapshot as rows
from ..domain.errors import AmbiguousIdError, IndexReadOnlyError, InvalidDateError, InvalidFieldError
from ..domain.ids import validate_slug
from ..services.requests import DigestApplyRequest, DigestRequest
from ..services.store import VaultStore
from ..vault import ledger
from ..vault.io import atomic_write_bytes
from . import audit, policy
from .acting import apply_item, run_delegated
from .digest import Snapshot, compute_digest, fingerprint, next_due
from .snapshot import take_snapshot

log = logging.getLogger(__name__)

CACHE_FILE = "digest.json"


def _version(store: VaultStore) -> str:
    """The content version of every vault the digest reads."""
    try:
        with vault_sources(store, further=True) as sources:
            # record folders' mtimes move when a file appears or goes (a sync conflict kept or resolved)
            folders = [max((f.stat().st_mtime_ns for f in [*(Path(source.vault) / "projects").glob("*/*"),
                                                              Path(source.vault) / ledger.FOLDER]
                            if f.is_dir()), default=0) for source in sources]  # and an invoice merged in
            # and the delegations: a new grant acts on the next pass, not after the next write
            grants = policy.delegations_stamp(store)
            from ..services.importers.held import HELD_FILE
            from ..services.sync import state_stamp

            # and a hybrid laptop's pushes: one failed, or went through, changes no record (sync_push_failing);
            # and the work an import held back for an invoice (import_held_back: a minute late, found by an operator)
            try:
                held = (store.layout.meta_dir / HELD_FILE).stat().st_mtime_ns
            except OSError:
                held = 0
            return "|".join(f"{rows.version(source.conn)}@{mtime}" for source, mtime in zip(sources, folders)) \
                + f"|d{grants}|c{_config_stamp(store)}|s{state_stamp(store)}|h{held}"
    except Exception:  # a broken further vault: the recompute reports it
        return rows.version(store.conn) + f"|?|d{policy.delegations_stamp(store)}|c{_config_stamp(store)}"


def _config_stamp(store: VaultStore) -> str:
    """What of the config the digest reads (clients, projectClients, the operator's thresholds):
    ``memo config set projectClients.P internal``, the command an item gives, took a minute to
    clear it (the cached digest was of the vault's version only)."""
    said = store.settings.model_dump_json(include={"clients", "project_clients", "operator", "timezone"})
    return fingerprint(said)


def _cache_path(store: VaultStore) -> Path:
    return store.layout.meta_dir / CACHE_FILE


#: an item of a cached digest as the interfaces read it: these fields, of these types
_ITEM_FIELDS = {"id": str, "kind": str, "lane": str, "subject": str, "project": str, "why": str, "action": str,
                "since": str, "fingerprint": str, "ageMinutes": int, "minutesAtStake": int}


def _read_cache(store: VaultStore) -> dict[str, Any] | None:
    """The cached digest, or None when there is none or it cannot be served as it is (not JSON,
    an instant that is not one, a field missing or of another type — a hand edit, a torn disk):
    then the digest is computed again, never a failure of every pass until ``--refresh``."""
    try:
        data = json.loads(_cache_path(store).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        digest = data["digest"]
        from_iso(digest["computedAt"])
        if data.get("validUntil") is not None:
            from_iso(data["validUntil"])
        usable = (isinstance(digest["items"], list) and isinstance(digest.get("beyondHorizon", {}), dict)
                  and all(isinstance(item, dict) and all(isinstance(item.get(k), t) for k, t in _ITEM_FIELDS.items())
                          and isinstance(item.get("proposal") or {}, dict) for item in digest["items"]))
    except (KeyError, TypeError, ValueError, InvalidDateError):
        usable = False
    if not usable:
        log.warning("%s cannot be served as it is (edited by hand, or torn); the digest is computed again",
                    _cache_path(store))
        return None
    return data


def digest_as_of(store: VaultStore, as_of: str) -> dict[str, Any]:
    """The digest as it stood at ``as_of`` (ISO date or time in the vault's zone), computed
    afresh and not cached: what needed the human that day.

    Raises
    ------
    InvalidDateError
        ``Invalid asOf date``.
    InvalidFieldError
        ``Invalid asOf``: a moment in the future.
    """
    moment = parse_record_instant(as_of, "asOf", store.zone, wall_clock=True)
    if moment > utcnow():
        raise InvalidFieldError("asOf", f"{as_of} is in the future: a digest as of then would show what has not "
                                        "happened (a session still live as stalled); memo digest shows now")
    snapshot = take_snapshot(store, moment) if store.exists else Snapshot()
    cutoff = to_iso(moment)
    for name in ("open_sessions", "pending_handoffs", "pull_request_sessions", "rule_traps", "unbilled_sessions",
                 "unfiled_sessions", "sync_conflicts", "duplicate_invoices", "invoiced_changed", "terms_differ", "long_sessions",
                 "unreadable_sessions"):
        # records made after the moment did not exist yet
        setattr(snapshot, name, [r for r in getattr(snapshot, name) if (r.get("created") or "") <= cutoff])
    snapshot.pull_request_sessions = [r for r in snapshot.pull_request_sessions if (r.get("endTime") or "") <= cutoff]
    for session in snapshot.open_sessions:  # the transcript's last write as of then is not known
        session.pop("lastActivityAt", None)
    snapshot.live_conversations = []  # nor whether a conversation was still open then
    return {**compute_digest(snapshot, moment, store.settings.operator, store.zone), "vaultVersion": None, "cached": False,
            "stale": False, "asOf": to_iso(moment)}


def run_digest(store: VaultStore, request, now: datetime | None = None) -> dict[str, Any]:
    """The ``digest`` action: :func:`digest_as_of` with ``asOf``; else one digest pass —
    :func:`current_digest`, and when it was recomputed and the person delegated action
    classes, the delegated actions (which then leave the digest, recomputed). ``operator``
    lists the automatic actions of the last 24 hours and this pass's fallbacks.

    With ``maxAgeSeconds`` (a person asking once: ``memo digest``), a cached digest older than
    that, or one the vault changed after within the debounce window (``stale``), is computed
    again: valid until the next threshold falls due, its ages and "no turn for …" were as of
    when it was computed (an hour-old digest said a session idle for 3 h was idle for 2 h)."""
    if request.as_of:
        return digest_as_of(store, request.as_of)
    now = now or utcnow()
    digest = current_digest(store, now=now, force=request.refresh)
    if request.max_age_seconds is not None and not digest.get("error") and (digest.get("stale") or (
            digest.get("cached") and (now - from_iso(digest["computedAt"])).total_seconds() > request.max_age_seconds)):
        digest = current_digest(store, now=now, force=True)
    fallbacks: list[dict[str, Any]] = []
    try:
        grants = policy.load(store) if store.exists else {"grants": {}}
    except InvalidFieldError as exc:  # a hand-edited file: nothing acts by itself, and the digest says why
        grants = {"off": True, "grants": {}}
        fallbacks.append({"id": "delegations", "project": "", "reason": str(exc)})
    if grants["grants"] and not grants.get("off") and not digest["cached"]:
        outcome = run_delegated(store, now)
        fallbacks = outcome["fallbacks"]
        if any(record["outcome"] == "applied" for record in outcome["acted"]):
            digest = current_digest(store, now=now, force=True)
    day_ago = to_iso(now - timedelta(days=1))
    recent = [r for r in audit.read(store) if r.get("actor") == "operator" and r.get("at", "") >= day_ago] \
        if store.exists else []
    return {**digest, "operator": {"off": bool(grants.get("off")), "acted": recent, "fallbacks": fallbacks}}


def current_digest(store: VaultStore, now: datetime | None = None, force: bool = False) -> dict[str, Any]:
    """The operator digest of ``store`` (wire dict, see :func:`compute_digest`) plus
    ``vaultVersion``, ``cached`` (served without a recompute), ``stale`` (the vault changed
    within the debounce window) and ``error`` (the last recompute failed).

    Raises
    ------
    Exception
        Only when a recompute fails and no earlier digest exists to fall back on.
    """
    now = now or utcnow()
    policy = store.settings.operator
    if not store.exists:
        return {**compute_digest(Snapshot(), now, policy, store.zone), "vaultVersion": "empty", "cached": False,
                "stale": False}
    # session files edited in place since the index read them (an editor that rewrites a file keeps its
    # folder's time): taken in first, as billing reads do — a hand edit that broke one went unseen
    try:
        store.catch_up_edits(RecordKind.SESSION)
    except IndexReadOnlyError:
        pass  # an index this process cannot write (a read-only copy): the digest of what it holds
    version = _version(store)
    settings = store.settings  # thresholds, and the billing terms billing_terms_differ compares
    policy_print = fingerprint(settings.operator.model_dump(mode="json"), settings.overlap_policy, settings.timezone,
                               {name: terms.model_dump(mode="json") for name, terms in settings.clients.items()})
    cache = _read_cache(store)
    if cache is not None and cache.get("policy") != policy_print:
        cache = None  # thresholds changed: the last answer says nothing about the new ones
    if cache is not None and not force:
        valid_until = from_iso(cache["validUntil"]) if cache.get("validUntil") else None
        computed_at = from_iso(cache["digest"]["computedAt"])
        if cache.get("version") == version and (valid_until is None or now < valid_until):
            return {**cache["digest"], "vaultVersion": version, "cached": True, "stale": False}
        if cache.get("version") != version and (now - computed_at).total_seconds() < policy.debounce_seconds:
            return {**cache["digest"], "vaultVersion": cache.get("version"), "cached": True, "stale": True}
    try:
        snapshot = take_snapshot(store)
        digest = compute_digest(snapshot, now, policy, store.zone)
        due = next_due(snapshot, now, policy)
    except Exception as exc:  # keep the previous answer rather than blanking it
        if cache is None:
            raise
        return {**cache["digest"], "vaultVersion": cache.get("version"), "cached": True, "stale": True,
                "error": f"recompute failed: {type(exc).__name__}: {exc}"}
    record = {"version": version, "policy": policy_print, "validUntil": to_iso(due) if due else None,
              "digest": digest}
    try:
        store.layout.meta_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(_cache_path(store), json.dumps(record, ensure_ascii=False).encode("utf-8"), durable=False)
    except OSError:
        pass  # a read-only vault still gets its digest, just not cached
    return {**digest, "vaultVersion": version, "cached": False, "stale": False}


def apply_digest_item(store: VaultStore, request: DigestApplyRequest) -> dict[str, Any]:
    """``digest_apply``: apply the proposal of the digest item ``request.item`` (SPEC §6
    phase 2) with the fingerprint the person reviewed — by default the one the digest shows
    now (or as of ``asOf``). ``{applied, item, reason?, result?}``: ``applied: false`` with
    the new proposal when the state changed since.

    Raises
    ------
    InvalidFieldError
        ``Invalid item: …`` — not in the digest (of ``asOf``), or without a proposal.
    AmbiguousIdError
        Items of several projects have this id and neither ``project`` nor ``fingerprint``
        chooses one.
    InvalidDateError
        ``Invalid asOf date``.
    """
    moment = parse_record_instant(request.as_of, "asOf", store.zone, wall_clock=True) if request.as_of else None
    if moment is not None and moment > utcnow():
        raise InvalidFieldError("asOf", f"{request.as_of} is in the future: a digest as of then would act on what "
                                        "has not happened (a session still live ended as stalled)")
    if request.project:
        validate_slug(request.project, "project")
    fingerprint = request.fingerprint
    if fingerprint is None:
        digest = digest_as_of(store, request.as_of) if request.as_of else current_digest(store)
        shown = [i for i in digest["items"] if i["id"] == request.item
                 and (not request.project or i["project"] == request.project)]
        if not shown:
            if request.as_of:
                raise InvalidFieldError("item", f"{request.item} is not in the digest as of {request.as_of}; run "
                                                f"`memo digest --as-of {request.as_of}` and pick an id")
            raise InvalidFieldError("item", f"{request.item} is not in the digest of now; run `memo digest` and pick "
                                            "an id (an item picked from `memo digest --as-of DATE` is applied with the "
                                            "same --as-of DATE)")
        if len(shown) > 1:  # a further vault's item (read, never written) has no proposal: this vault's is meant
            shown = [i for i in shown if i.get("proposal")] or shown
        if len(shown) > 1:
            raise AmbiguousIdError(request.item, [i["project"] for i in shown])
        fingerprint = shown[0]["fingerprint"]
    return apply_item(store, request.item, fingerprint, as_of=moment, project=request.project)


def watch_pass(store: VaultStore, fresh: bool = False, now: datetime | None = None) -> dict[str, Any]:
    """One pass of ``memo operator watch`` (SPEC §6 phases 1 and 3, §8): record the hook events
    waiting in the vault's spool, run the digest pass (:func:`run_digest`: recomputed when the
    vault changed, with the delegated actions), and offer it to the webhook
    (:func:`~memo_analytics.operator.notify.offer`). ``fresh``: a stale cached digest is
    recomputed (a single pass) rather than left for the next pass.

    Returns the offer's ``{sent, items, reason, failed?, deliveryId?, reported?}`` (``reported``:
    how many of the operator's actions the notification reported) plus ``computedAt``,
    ``digestItems`` (how many items the digest lists), ``spool`` (the replay's outcome lines),
    ``acted`` (audit records of this pass's automatic actions) and ``fallbacks``.
    """
    from ..services.capture import drain_spool
    from .notify import offer

    begun = now or utcnow()
    started = to_iso(begun)
    replayed = drain_spool(store.root, store)
    digest = run_digest(store, DigestRequest(), now=now)
    if digest.get("stale") and fresh:
        digest = run_digest(store, DigestRequest(refresh=True), now=now)
    return {**offer(store, digest, now, acted_since=begun), "computedAt": digest["computedAt"], "digestItems": len(digest["items"]),
            "spool": replayed, "acted": [r for r in digest["operator"]["acted"] if r.get("at", "") >= started],
            "fallbacks": digest["operator"]["fallbacks"]}

"""The digest pass over a vault (SPEC §6, phase 1): gather, rank, cache.

The digest is recomputed only when the vault changed (its index version moved) or when an
age threshold it depends on fell due; any other read returns the cached answer from
``.memo/digest.json``. A change within ``operator.debounceSeconds`` of the last pass is
folded into the next one (the cached answer is returned, marked ``stale``). A failed
recompute keeps the previous answer and says so in ``error``.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..domain.clock import from_iso, parse_record_instant, to_iso, utcnow
from ..analytics.frames import vault_sources
from ..index import snapshot as rows
from ..services.store import VaultStore
from ..vault.conflicts import conflict_files, conflict_record_id
from ..vault.io import atomic_write_bytes
from .digest import Snapshot, compute_digest, fingerprint, next_due

CACHE_FILE = "digest.json"


def take_snapshot(store: VaultStore) -> Snapshot:
    """The records the digest joins, read from the index of ``store``'s vault and of every
    further configured vault (read-only; their records carry ``_vault``)."""
    snapshot = Snapshot()
    with vault_sources(store, further=True) as sources:
        for source in sources:
            further = source.conn is not store.conn
            for name, query in (("open_sessions", rows.open_sessions), ("pending_handoffs", rows.pending_handoffs),
                                 ("pull_request_sessions", rows.sessions_with_pull_requests),
                                 ("rule_traps", rows.derived_rule_traps),
                                 ("unbilled_sessions", rows.unbilled_sessions)):
                found = query(source.conn)
                if further:
                    for record in found:
                        record["_vault"] = source.vault
                getattr(snapshot, name).extend(found)
            root = Path(source.vault)
            for path in conflict_files(root / "projects"):
                record_path = path.with_name(f"{conflict_record_id(path)}.md")
                snapshot.sync_conflicts.append({
                    "recordId": conflict_record_id(path), "project": path.parent.parent.name,
                    "path": str(path), "recordPath": str(record_path), **({"_vault": source.vault} if further else {}),
                    "created": to_iso(datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)),
                })
    return snapshot


def _version(store: VaultStore) -> str:
    """The content version of every vault the digest reads."""
    try:
        with vault_sources(store, further=True) as sources:
            # record folders' mtimes move when a file appears or goes (a sync conflict kept or resolved)
            folders = [max((f.stat().st_mtime_ns for f in (Path(source.vault) / "projects").glob("*/*")
                            if f.is_dir()), default=0) for source in sources]
            return "|".join(f"{rows.version(source.conn)}@{mtime}" for source, mtime in zip(sources, folders))
    except Exception:  # a broken further vault: the recompute reports it
        return rows.version(store.conn) + "|?"


def _cache_path(store: VaultStore) -> Path:
    return store.layout.meta_dir / CACHE_FILE


def _read_cache(store: VaultStore) -> dict[str, Any] | None:
    try:
        data = json.loads(_cache_path(store).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) and isinstance(data.get("digest"), dict) else None
    except (OSError, ValueError):
        return None


def digest_as_of(store: VaultStore, as_of: str) -> dict[str, Any]:
    """The digest as it stood at ``as_of`` (ISO date or time in the vault's zone), computed
    afresh and not cached: what needed the human that day.

    Raises
    ------
    InvalidDateError
        ``Invalid asOf date``.
    """
    moment = parse_record_instant(as_of, "asOf", store.zone)
    snapshot = take_snapshot(store) if store.exists else Snapshot()
    cutoff = to_iso(moment)
    for name in ("open_sessions", "pending_handoffs", "pull_request_sessions", "rule_traps", "unbilled_sessions",
                 "sync_conflicts"):
        # records made after the moment did not exist yet
        setattr(snapshot, name, [r for r in getattr(snapshot, name) if (r.get("created") or "") <= cutoff])
    snapshot.pull_request_sessions = [r for r in snapshot.pull_request_sessions if (r.get("endTime") or "") <= cutoff]
    return {**compute_digest(snapshot, moment, store.settings.operator), "vaultVersion": None, "cached": False,
            "stale": False, "asOf": to_iso(moment)}


def run_digest(store: VaultStore, request, now: datetime | None = None) -> dict[str, Any]:
    """The ``digest`` action: :func:`digest_as_of` with ``asOf``; else one digest pass —
    :func:`current_digest`, and when it was recomputed and the person delegated action
    classes, the delegated actions (which then leave the digest, recomputed). ``operator``
    lists the automatic actions of the last 24 hours and this pass's fallbacks."""
    from . import audit, policy
    from .acting import run_delegated

    if request.as_of:
        return digest_as_of(store, request.as_of)
    now = now or utcnow()
    digest = current_digest(store, now=now, force=request.refresh)
    fallbacks: list[dict[str, Any]] = []
    grants = policy.load(store) if store.exists else {"grants": {}}
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
        return {**compute_digest(Snapshot(), now, policy), "vaultVersion": "empty", "cached": False, "stale": False}
    version = _version(store)
    policy_print = fingerprint(store.settings.operator.model_dump(mode="json"))
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
        digest = compute_digest(snapshot, now, policy)
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

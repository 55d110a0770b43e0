"""Hybrid sync (SPEC §2.7): local writes as usual, plus a push of changed records to a
remote memo daemon (``hybrid.remoteUrl``).

- Every mutation appends the record to a persistent outbox (``.memo/sync/outbox.jsonl``,
  under the vault lock, O(1)); long-running processes push it after ``hybrid.debounceMs``;
  ``session_end`` pushes at once; ``memo sync push`` pushes by hand. The outbox survives a
  restart of either side, and a failed push is retried with exponential backoff.
- A push sends each record's file text with the ``updated`` of the version this vault last
  pushed (``base``). The daemon applies it when it still holds that base (or nothing);
  when both sides changed the record the newer ``updated`` wins and the other version is
  kept beside it as a conflict file (:mod:`memo_analytics.vault.conflicts`). Pushes are
  idempotent upserts by id: pushing the same version twice changes nothing.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from filelock import FileLock

from ..domain.clock import from_iso, to_iso, utcnow
from ..domain.errors import CorruptRecordError, InvalidFieldError
from ..domain.records import RecordKind
from ..domain.ids import validate_slug
from ..vault.conflicts import keep_conflict
from ..vault.io import atomic_write_bytes, dump_record, parse_record_text, read_json_state, write_json_state
from .store import VaultStore

log = logging.getLogger("memo_analytics.sync")

SYNC_DIR = "sync"
MAX_BACKOFF_SECONDS = 300
CONNECT_TIMEOUT_SECONDS = 10


def _dir(store: VaultStore) -> Path:
    return store.layout.meta_dir / SYNC_DIR


def hybrid_enabled(store: VaultStore) -> bool:
    """Hybrid pushes apply: mode ``hybrid`` with a remote URL."""
    return store.settings.mode == "hybrid" and bool(store.settings.hybrid.remote_url)


# ---------------------------------------------------------------- the outbox


def note_write(store: VaultStore, meta: dict[str, Any], path: Path) -> None:
    """Append a written record to the outbox (called by ``VaultStore.upsert`` under the lock)."""
    folder = _dir(store)
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"id": meta["id"], "path": str(path.relative_to(store.root)), "updated": meta.get("updated")})
    with open(folder / "outbox.jsonl", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")
    _schedule(store)


def _outbox(store: VaultStore) -> list[dict[str, Any]]:
    try:
        lines = (_dir(store) / "outbox.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue  # a torn last line after a crash: the record is pushed with its next change
    return entries


def _load(store: VaultStore, name: str) -> dict[str, Any]:
    return read_json_state(_dir(store) / name) or {}


def _save(store: VaultStore, name: str, data: dict[str, Any]) -> None:
    write_json_state(_dir(store) / name, data)


def status(store: VaultStore) -> dict[str, Any]:
    """``{mode, remoteUrl, pending, lastSuccessAt, lastError, lastErrorAt, attempts, nextRetryAt}``."""
    state = _load(store, "state.json")
    pending = len({entry["id"] for entry in _outbox(store)})
    return {"mode": store.settings.mode, "remoteUrl": store.settings.hybrid.remote_url, "pending": pending,
            "lastSuccessAt": state.get("lastSuccessAt"), "lastError": state.get("lastError"),
            "lastErrorAt": state.get("lastErrorAt"), "attempts": state.get("attempts", 0),
            "nextRetryAt": state.get("nextRetryAt")}


# ---------------------------------------------------------------- pushing


def _post(url: str, payload: dict[str, Any], token: str | None, timeout: float) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", "User-Agent": "memo-sync"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (configured URL)
        return json.loads(response.read().decode("utf-8"))


def push(store: VaultStore, now: datetime | None = None, force: bool = False) -> dict[str, Any]:
    """Push the outbox to the daemon (SPEC §2.7). Returns ``{pushed, results, pending,
    error}``; never raises for network or daemon errors (they are recorded with a backoff:
    ``2^attempts`` seconds up to 5 minutes; ``force`` ignores the backoff)."""
    now = now or utcnow()
    if not hybrid_enabled(store):
        return {"pushed": 0, "results": [], "pending": status(store)["pending"], "error": "hybrid sync is off"}
    _dir(store).mkdir(parents=True, exist_ok=True)
    with FileLock(str(_dir(store) / "push.lock"), timeout=60):
        state = _load(store, "state.json")
        if not force and state.get("nextRetryAt") and now < from_iso(state["nextRetryAt"]):
            return {"pushed": 0, "results": [], "pending": status(store)["pending"],
                    "error": f"waiting until {state['nextRetryAt']} after: {state.get('lastError')}"}
        entries = _outbox(store)
        latest: dict[str, dict[str, Any]] = {}
        for entry in entries:
            latest.pop(entry["id"], None)
            latest[entry["id"]] = entry
        batch = list(latest.values())[: store.settings.hybrid.batch_size]
        pushed_versions = _load(store, "pushed.json")
        records = []
        for entry in batch:
            path = store.root / entry["path"]
            try:
                text = path.read_text(encoding="utf-8")
            except OSError:
                continue  # removed since: nothing to push
            records.append({"id": entry["id"], "text": text, "base": pushed_versions.get(entry["id"])})
        url = store.settings.hybrid.remote_url.rstrip("/") + "/api/sync/records"
        try:
            answer = _post(url, {"records": records}, store.settings.hybrid.token, CONNECT_TIMEOUT_SECONDS) \
                if records else {"results": []}
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = f"HTTP {exc.code}" if isinstance(exc, urllib.error.HTTPError) else \
                f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            attempts = int(state.get("attempts", 0)) + 1
            state.update(lastError=reason, lastErrorAt=to_iso(now), attempts=attempts,
                         nextRetryAt=to_iso(now + timedelta(seconds=min(2 ** attempts, MAX_BACKOFF_SECONDS))))
            _save(store, "state.json", state)
            log.warning("memo sync push failed (%s); %d records wait in the outbox", reason, len(latest))
            return {"pushed": 0, "results": [], "pending": len(latest), "error": reason}
        done = {r["id"]: r for r in answer.get("results", []) if r.get("outcome") != "refused"}
        sent_updated = {entry["id"]: entry.get("updated") for entry in batch}
        for record in records:
            if record["id"] in done:
                meta, _ = parse_record_text(record["text"], record["id"])
                pushed_versions[record["id"]] = meta.get("updated")
        _save(store, "pushed.json", pushed_versions)
        with store.lock():  # appends happen under this lock: none is lost by the rewrite
            remaining = [e for e in _outbox(store)
                         if not (e["id"] in done and e.get("updated") == sent_updated.get(e["id"]))]
            atomic_write_bytes(_dir(store) / "outbox.jsonl",
                               "".join(json.dumps(e) + "\n" for e in remaining).encode("utf-8"))
        state.update(lastSuccessAt=to_iso(now), attempts=0, nextRetryAt=None)
        _save(store, "state.json", state)
        return {"pushed": len(done), "results": answer.get("results", []),
                "pending": len({e["id"] for e in remaining}), "error": None}


def dual_sync(store: VaultStore, trigger: str) -> dict[str, Any]:
    """Sync after ``trigger`` (``session_end``): the hybrid push when hybrid has a remote URL,
    vault-git when enabled; never in remote mode. Errors are logged and returned, never
    raised (SPEC §2.5)."""
    outcome: dict[str, Any] = {"trigger": trigger}
    if store.settings.mode == "remote":
        return outcome
    try:
        if hybrid_enabled(store):
            outcome["hybrid"] = push(store, force=True)
        if store.settings.vault_git.enabled:
            from .vault_git import sync as git_sync

            outcome["vaultGit"] = git_sync(store, trigger)
    except Exception as exc:  # noqa: BLE001 - a sync problem never fails the call that triggered it
        log.warning("memo sync after %s failed: %s: %s", trigger, type(exc).__name__, exc)
        outcome["error"] = f"{type(exc).__name__}: {exc}"
    return outcome


# ---------------------------------------------------------------- debounce in long-running processes

_TIMERS: dict[str, threading.Timer] = {}
_TIMERS_GUARD = threading.Lock()


def enable_background_push(store: VaultStore) -> None:
    """In a long-running process (``memo serve``, ``memo mcp``): push ``debounceMs`` after
    the last write, and retry what the outbox still holds."""
    store.__dict__["_background_push"] = True
    if status(store)["pending"]:
        _schedule(store)


def _schedule(store: VaultStore) -> None:
    if not store.__dict__.get("_background_push") or not hybrid_enabled(store):
        return
    key = str(store.root)
    delay = store.settings.hybrid.debounce_ms / 1000

    def run() -> None:
        result = push(store)
        if result["pending"] and result["error"]:
            state = _load(store, "state.json")
            wait = max((from_iso(state["nextRetryAt"]) - utcnow()).total_seconds(), delay) \
                if state.get("nextRetryAt") else delay
            _start(key, wait, run)

    _start(key, delay, run)


def _start(key: str, delay: float, run) -> None:
    with _TIMERS_GUARD:
        previous = _TIMERS.pop(key, None)
        if previous is not None:
            previous.cancel()
        timer = threading.Timer(delay, run)
        timer.daemon = True
        _TIMERS[key] = timer
        timer.start()


# ---------------------------------------------------------------- receiving (the daemon side)


def apply_incoming(store: VaultStore, records: list[dict[str, Any]], now: datetime | None = None) -> list[dict]:
    """Upsert pushed records by id (the daemon's ``POST /api/sync/records``).

    Each item ``{id, text, base}``: ``text`` is the record file; ``base`` the ``updated`` of
    the version the pusher last pushed. Outcomes: ``applied`` (new, or the daemon still had
    the base), ``unchanged`` (same content), ``applied, older kept as conflict`` /
    ``kept ours, theirs kept as conflict`` (both sides changed: newer ``updated`` wins),
    ``refused`` (the text is not a valid record; one line why). Nothing is ever lost.
    """
    now = now or utcnow()
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    results = []
    for item in records:
        record_id = str(item.get("id", ""))
        try:
            validate_slug(record_id, "id")
            meta, body = parse_record_text(str(item.get("text", "")), record_id)
            if meta["id"] != record_id:
                raise InvalidFieldError("id", f"{record_id} does not match the record's id {meta['id']}")
            kind = RecordKind(meta["kind"])
        except (CorruptRecordError, InvalidFieldError, ValueError) as exc:
            results.append({"id": record_id, "outcome": "refused", "reason": str(exc)})
            continue
        path = store.path_for(meta["project"], kind, record_id)
        incoming = dump_record(meta, body)
        with store.lock():
            if not path.exists():
                store.upsert(kind, meta, body)
                results.append({"id": record_id, "outcome": "applied"})
                continue
            local_text = path.read_text(encoding="utf-8")
            local_meta, local_body = parse_record_text(local_text, str(path))
            if dump_record(local_meta, local_body) == incoming:
                results.append({"id": record_id, "outcome": "unchanged"})
                continue
            if item.get("base") is not None and local_meta.get("updated") == item.get("base"):
                store.upsert(kind, meta, body)  # the daemon had what the pusher last sent: an update
                results.append({"id": record_id, "outcome": "applied"})
                continue
            if (meta.get("updated") or "") > (local_meta.get("updated") or ""):
                kept = keep_conflict(path, local_text.encode("utf-8"), stamp)
                store.upsert(kind, meta, body)
                results.append({"id": record_id, "outcome": "applied, older kept as conflict",
                                "conflict": str(kept.relative_to(store.root))})
            else:
                kept = keep_conflict(path, incoming.encode("utf-8"), stamp)
                results.append({"id": record_id, "outcome": "kept ours, theirs kept as conflict",
                                "conflict": str(kept.relative_to(store.root))})
    return results

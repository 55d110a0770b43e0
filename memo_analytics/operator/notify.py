"""Digest notifications by webhook (SPEC §6 phase 1).

A pass offers the current digest; only items never sent before count as new (an item is
its reason code and subject). New items are coalesced: the first new item opens a settle
window (``operator.settleSeconds``) and everything new by its end goes out as one POST;
and at most one notification leaves per ``operator.notifyMinIntervalSeconds`` (an hour by
default) — a new item inside that hour waits for the next pass after it. A failed POST
is retried on a later pass; an item is marked sent only when the receiver answered 2xx.
State lives in ``.memo/notify.json``, written atomically under its own lock file (a slow
receiver never holds up the vault's writers; two watchers never send the same item twice).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import Any

from filelock import FileLock

from ..domain.clock import from_iso, to_iso, utcnow
from ..services.remote import exchange
from ..services.store import VaultStore
from ..vault.io import read_json_state, write_json_state

STATE_FILE = "notify.json"
TIMEOUT_SECONDS = 10


def item_key(item: dict[str, Any]) -> str:
    return f"{item['kind']}:{item['subject']}"


def _state_path(store: VaultStore):
    return store.layout.meta_dir / STATE_FILE


def _load(store: VaultStore) -> dict[str, Any]:
    return read_json_state(_state_path(store), "sent") or {"sent": {}, "lastSentAt": None, "pendingSince": None}


def _save(store: VaultStore, state: dict[str, Any]) -> None:
    write_json_state(_state_path(store), state)


def _post(url: str, payload: dict[str, Any]) -> str | None:
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "memo-digest"})
    try:
        # within the time in all (a receiver sending its headers slowly held the watch for ever), and
        # no redirect followed (urllib made a POST a GET without the digest, and took its 2xx for sent)
        status = exchange(request, TIMEOUT_SECONDS, read=lambda response, _: response.status)
        return None if 200 <= status < 300 else f"HTTP {status}"
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"HTTP {exc.code}" + (" (a redirect: memo follows none; set operator.webhookUrl to where it "
                                     "leads)" if 300 <= exc.code < 400 else "")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        return f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"


def offer(store: VaultStore, digest: dict[str, Any], now: datetime | None = None) -> dict[str, Any]:
    """Offer one digest pass to the webhook. Returns ``{sent, items, reason}``: ``sent``
    the number of items posted (0 when nothing left), ``reason`` why not (``no webhook``,
    ``nothing new``, ``settling until …``, ``rate limited until …``, ``failed: …``)."""
    url = store.settings.operator.webhook_url
    if not url:
        return {"sent": 0, "items": [], "reason": "no webhook configured"}
    now = now or utcnow()
    policy = store.settings.operator
    store.layout.meta_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(store.layout.meta_dir / "notify.lock"), timeout=TIMEOUT_SECONDS * 3):
        state = _load(store)
        new = [item for item in digest.get("items", []) if item_key(item) not in state["sent"]]
        if not new:
            if state.get("pendingSince"):
                state["pendingSince"] = None
                _save(store, state)
            return {"sent": 0, "items": [], "reason": "nothing new"}
        if not state.get("pendingSince"):
            state["pendingSince"] = to_iso(now)
            _save(store, state)
        settled = from_iso(state["pendingSince"]) + timedelta(seconds=policy.settle_seconds)
        if now < settled:
            return {"sent": 0, "items": [], "reason": f"settling until {to_iso(settled)}"}
        if state.get("lastSentAt"):
            allowed = from_iso(state["lastSentAt"]) + timedelta(seconds=policy.notify_min_interval_seconds)
            if now < allowed:
                return {"sent": 0, "items": [], "reason": f"rate limited until {to_iso(allowed)}"}
        error = _post(url, {"computedAt": digest.get("computedAt"), "items": new,
                            "text": "\n".join(f"[{i['kind']}] {i['subject']} ({i['project']}): {i['why']} → "
                                              f"{i['action']}" for i in new)})
        if error is not None:
            return {"sent": 0, "items": [], "reason": f"failed: {error}"}
        for item in new:
            state["sent"][item_key(item)] = to_iso(now)
        state["lastSentAt"] = to_iso(now)
        state["pendingSince"] = None
        _save(store, state)
        return {"sent": len(new), "items": [item_key(i) for i in new], "reason": "sent"}

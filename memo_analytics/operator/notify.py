"""Digest notifications by webhook (SPEC §6 phase 1).

A pass offers the current digest; only items not sent before count as new (an item is its
reason code, subject and project). An item that left the digest (resolved: the session got a
turn or ended, the hand-off was claimed) is forgotten, so it is sent again when it comes back.
New items are coalesced: the first new item opens a settle window (``operator.settleSeconds``)
and everything new by its end goes out as one POST; and at most one notification leaves per
``operator.notifyMinIntervalSeconds`` (an hour by default) — a new item inside that hour waits
for the next pass after it. A digest served stale (the vault changed within the debounce
window) or from a failed recompute is not offered: its items may be resolved already.

A POST may take ``operator.webhookTimeoutSeconds`` in all. A failed POST is retried on a
later pass, backing off (30 s, 1, 2, 4 … up to 15 min between tries); an item is marked sent
only when the receiver answered 2xx. Every try of one batch carries the same ``deliveryId``
(also as the ``Idempotency-Key`` header): a receiver that took a batch but whose answer was
lost (a timeout, the watcher stopped by SIGINT/SIGTERM mid-POST) sees the retry under the id
it already has. State lives in ``.memo/notify.json``, written atomically under its own lock
file (a slow receiver never holds up the vault's writers; two watchers never send the same
item twice).
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.error
import urllib.request
from urllib.parse import urlsplit
from datetime import datetime, timedelta
from typing import Any

from filelock import FileLock

from ..domain.clock import from_iso, to_iso, utcnow
from ..domain.errors import InvalidDateError
from ..services.remote import exchange
from . import audit
from .digest import fingerprint
from ..services.store import VaultStore
from ..vault.io import read_json_state, write_json_state

log = logging.getLogger(__name__)

STATE_FILE = "notify.json"
#: the first retry of a failed POST waits this long; each further failure doubles it, up to the cap
BACKOFF_SECONDS = 30
BACKOFF_CAP_SECONDS = 900
#: at most this many of the operator's own actions in one notification (the rest in the next)
MAX_ACTIONS_REPORTED = 100


def item_key(item: dict[str, Any]) -> str:
    """The item as ``notify.json`` remembers it: ``kind:subject (project)``, and the further vault
    it was read from — the same session id in two projects is two items (SPEC §2.1)."""
    key = f"{item['kind']}:{item['subject']} ({item.get('project') or ''})"
    return key + (f" in {item['vault']}" if item.get("vault") else "")


def _legacy_key(item: dict[str, Any]) -> str:
    """How a notify.json written before kept the item (``kind:subject``)."""
    return f"{item['kind']}:{item['subject']}"


def webhook_label(url: str) -> str:
    """The webhook as a log line may name it: scheme, host and port, never its path or query
    (a Slack or Discord webhook's path is its secret)."""
    parts = urlsplit(url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{parts.hostname or '?'}{port}"


def _state_path(store: VaultStore):
    return store.layout.meta_dir / STATE_FILE


#: the instants notify.json keeps; one in the future (a hand edit, a clock set back) would
#: silence the webhook until then: taken as not there (``retryAt`` may lie one back-off ahead)
_INSTANTS = ("lastSentAt", "pendingSince", "retryAt", "actionsReportedUntil")


def _load(store: VaultStore, now: datetime) -> dict[str, Any]:
    """``notify.json`` as far as it can be used: a file that is not JSON, a ``sent`` that is not
    a table, an instant that is not one (or lies in the future) or a ``failures`` that is not
    a count is dropped (logged: the webhook may hear of an item twice) — never a crash of every
    pass, nor a webhook silenced for ever."""
    data = read_json_state(_state_path(store))
    if data is None:
        try:
            torn = _state_path(store).stat().st_size > 0
        except OSError:
            torn = False
        if torn:
            log.warning("%s is not a JSON table (edited by hand, or torn); started afresh", _state_path(store))
        data = {}
    sent = data.get("sent") if isinstance(data.get("sent"), dict) else {}
    state: dict[str, Any] = {"sent": {k: v for k, v in sent.items() if isinstance(k, str) and isinstance(v, str)}}
    dropped = [] if isinstance(data.get("sent"), dict) or not data else ["sent"]
    for key in _INSTANTS:
        value = data.get(key)
        try:
            latest = now + timedelta(seconds=BACKOFF_CAP_SECONDS if key == "retryAt" else 0)
            usable = value is None or (isinstance(value, str) and from_iso(value) <= latest)
        except (ValueError, InvalidDateError):
            usable = False
        state[key] = value if usable else None
        dropped += [] if usable else [key]
    error = data.get("lastError")
    state["lastError"] = error[:300] if isinstance(error, str) else None
    failures = data.get("failures", 0)
    state["failures"] = failures if isinstance(failures, int) and not isinstance(failures, bool) and \
        0 <= failures <= 10_000 else 0
    dropped += [] if state["failures"] == failures else ["failures"]
    if state["retryAt"] and not state["failures"]:  # a back-off without a failure to back off from
        state["retryAt"] = None
        dropped.append("retryAt")
    if dropped:
        log.warning("%s: %s not usable (not an instant of the past, not a count); started afresh for %s",
                    _state_path(store), ", ".join(dropped), "it" if len(dropped) == 1 else "them")
    return state


def notification_status(store: VaultStore, now: datetime | None = None) -> dict[str, Any]:
    """Whether the webhook hears of the digest, for ``memo operator status``: ``{webhook}`` (its
    host only, or None when none is set) and, from ``notify.json``, ``lastSentAt``,
    ``pendingSince`` (items waiting to be sent since), ``failures`` (tries failed in a row),
    ``retryAt`` and ``lastError`` (the last failure, its URL's secrets left out). A team lead saw
    failures only in the watch's log."""
    url = store.settings.operator.webhook_url
    state = _load(store, now or utcnow()) if store.exists else {}
    return {"webhook": webhook_label(url) if url else None,
            **{key: state.get(key) for key in ("lastSentAt", "pendingSince", "retryAt", "lastError")},
            "failures": state.get("failures", 0)}


def _save(store: VaultStore, state: dict[str, Any]) -> None:
    write_json_state(_state_path(store), state)


#: Discord's webhook hosts: a message needs ``content`` (at most 2,000 characters), not ``text``
_DISCORD_HOSTS = {"discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"}
DISCORD_CONTENT_LIMIT = 2000


def for_receiver(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as the receiver at ``url`` reads it. Slack (``hooks.slack.com``) reads ``text``
    as mrkdwn: ``&``, ``<`` and ``>`` are escaped as its formatting guide asks, so a session named
    ``<!channel>`` or ``<https://evil|click>`` is shown as typed, not a ping or a disguised
    link. Discord reads ``content`` (cut to 2,000 characters) and would ping ``@everyone`` in a
    name: its mentions are turned off, its brackets escaped (no masked link). A host is read
    without its trailing dot. Any other receiver gets the payload as it is."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")  # hooks.slack.com. is hooks.slack.com
    text = payload.get("text") or ""
    if host == "hooks.slack.com":
        return {**payload, "text": text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")}
    if host in _DISCORD_HOSTS:
        if len(text) > DISCORD_CONTENT_LIMIT:
            text = text[:DISCORD_CONTENT_LIMIT - 40].rsplit("\n", 1)[0] + "\n… (more in memo digest)"
        # a masked link ([Approve](https://evil.example)) in a recorded URL is shown as typed
        text = text.replace("[", "\\[").replace("]", "\\]")
        return {**payload, "content": text, "allowed_mentions": {"parse": []}}
    return payload


def _post(url: str, payload: dict[str, Any], timeout: float) -> str | None:
    payload = for_receiver(url, payload)
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), method="POST",
                                     headers={"Content-Type": "application/json", "User-Agent": "memo-digest",
                                              "Idempotency-Key": payload["deliveryId"]})
    try:
        # within the time in all (a receiver sending its headers slowly held the watch for ever), and
        # no redirect followed (urllib made a POST a GET without the digest, and took its 2xx for sent)
        status = exchange(request, timeout, read=lambda response, _: response.status)
        return None if 200 <= status < 300 else f"HTTP {status}"
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"HTTP {exc.code}" + (" (a redirect: memo follows none; set operator.webhookUrl to where it "
                                     "leads)" if 300 <= exc.code < 400 else "")
    except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
        return _without_secrets(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}", url)


def _without_secrets(reason: str, url: str) -> str:
    """``reason`` without what of ``url`` may be its secret (user, password, path, query), as
    an exception's text may quote them (``nonnumeric port: 'PASSW0RD@host'``)."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
    secrets = [userinfo, *userinfo.split(":"), parts.path.strip("/"), parts.query, parts.fragment,
               *parts.path.strip("/").split("/"), *parts.query.split("&")]
    for secret in sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True):
        reason = reason.replace(secret, "***")
    return reason


def _tries(n: int) -> str:
    return f"{n} failed {'try' if n == 1 else 'tries'}"


def _forget_resolved(state: dict[str, Any], items: list[dict[str, Any]]) -> bool:
    """Keep in ``state["sent"]`` only the items still in the digest (a resolved item that comes
    back is new again); a key written before keeps its item. Whether anything changed."""
    sent = state["sent"]
    kept: dict[str, str] = {}
    for item in items:
        at = sent.get(item_key(item)) or sent.get(_legacy_key(item))
        if at:
            kept[item_key(item)] = at
    changed = kept != sent
    state["sent"] = kept
    return changed


def _unreported_actions(store: VaultStore, state: dict[str, Any], first: datetime) -> tuple[list[dict[str, Any]], str]:
    """The operator's own actions (audit records of actor ``operator``: applied, refused,
    failed) after ``state["actionsReportedUntil"]``, oldest first, and that mark. Without a
    mark (the first offer of a vault; one :func:`_load` dropped) the mark is just before ``first``:
    actions from before the webhook was set are not sent."""
    watermark = state.get("actionsReportedUntil") or to_iso(first - timedelta(milliseconds=1))  # checked by _load
    since = from_iso(watermark)
    acted = [r for r in audit.read(store) if r.get("actor") == "operator" and from_iso(r["at"]) > since]
    return acted[:MAX_ACTIONS_REPORTED], watermark


def offer(store: VaultStore, digest: dict[str, Any], now: datetime | None = None,
          acted_since: datetime | None = None) -> dict[str, Any]:
    """Offer one digest pass to the webhook. Returns ``{sent, items, reason}``: ``sent`` the
    number of items posted (0 when nothing left), ``items`` their keys, ``reason`` why not
    (``no webhook configured``, ``waiting for …`` on a stale digest, ``nothing new``,
    ``settling until …``, ``rate limited until …``, ``failed: …`` — naming the webhook's host —,
    ``backing off until …``) or ``sent``; ``failed`` is true when this pass's POST failed.

    The POST's JSON: ``deliveryId`` (the same on every try of one batch), ``computedAt`` (the
    digest's, UTC), ``sentAt`` (UTC), ``items`` (the digest's wire items), ``acted`` (the
    operator's own actions since the last notification, audit records: SPEC §6 phase 3 "act
    and report"; the first offer of a vault reports those from ``acted_since`` on, default
    ``now``) and ``text`` (one line each). ``reported`` in the result: how many of them were sent.
    """
    url = store.settings.operator.webhook_url
    if not url:
        return {"sent": 0, "items": [], "reason": "no webhook configured"}
    if digest.get("error"):
        return {"sent": 0, "items": [], "reason": f"waiting for a digest that can be computed ({digest['error']})"}
    if digest.get("stale"):
        return {"sent": 0, "items": [], "reason": "waiting for the vault to settle (it changed within "
                                                  "operator.debounceSeconds): its items may be resolved already"}
    now = now or utcnow()
    policy = store.settings.operator
    store.layout.meta_dir.mkdir(parents=True, exist_ok=True)
    with FileLock(str(store.layout.meta_dir / "notify.lock"), timeout=policy.webhook_timeout_seconds * 3):
        state = _load(store, now)
        items = list(digest.get("items", []))
        changed = _forget_resolved(state, items)
        new = [item for item in items if item_key(item) not in state["sent"]]
        acted, watermark = _unreported_actions(store, state, acted_since or now)
        changed = changed or watermark != state.get("actionsReportedUntil")
        state["actionsReportedUntil"] = watermark
        if not new and not acted:
            if state.get("pendingSince") or state.get("failures"):
                state.update(pendingSince=None, failures=0, retryAt=None)
                changed = True
            if changed:
                _save(store, state)
            return {"sent": 0, "items": [], "reason": "nothing new"}
        if not state.get("pendingSince"):
            state["pendingSince"] = to_iso(now)
            changed = True
        if changed:
            _save(store, state)
        settled = from_iso(state["pendingSince"]) + timedelta(seconds=policy.settle_seconds)
        if now < settled:
            return {"sent": 0, "items": [], "reason": f"settling until {to_iso(settled)}"}
        if state.get("lastSentAt"):
            allowed = from_iso(state["lastSentAt"]) + timedelta(seconds=policy.notify_min_interval_seconds)
            if now < allowed:
                return {"sent": 0, "items": [], "reason": f"rate limited until {to_iso(allowed)}"}
        if state.get("retryAt") and now < from_iso(state["retryAt"]):
            return {"sent": 0, "items": [], "reason": f"backing off until {state['retryAt']} after "
                                                      f"{_tries(int(state.get('failures') or 1))}", "failed": True}
        keys = [item_key(i) for i in new]
        delivery = fingerprint(state["pendingSince"], sorted(keys), [(r["at"], r["subject"]) for r in acted])
        lines = [f"[{i['kind']}] {i['subject']} ({i['project']}): {i['why']} → {i['action']}" for i in new]
        lines += [f"operator: {r['actionClass']} on {r['subject']} ({r.get('project')}) — {r['outcome']} at {r['at']}"
                  for r in acted]
        error = _post(url, {"deliveryId": delivery, "computedAt": digest.get("computedAt"), "sentAt": to_iso(now),
                            "items": new, "acted": acted, "text": "\n".join(lines)}, policy.webhook_timeout_seconds)
        if error is not None:
            failures = int(state.get("failures") or 0) + 1
            wait = min(BACKOFF_SECONDS * 2 ** (failures - 1), BACKOFF_CAP_SECONDS)
            state.update(failures=failures, retryAt=to_iso(now + timedelta(seconds=wait)), lastError=error)
            _save(store, state)
            return {"sent": 0, "items": [], "failed": True,
                    "reason": f"failed: {error} (webhook {webhook_label(url)}; try {failures}, the next after "
                              f"{state['retryAt']})"}
        for key in keys:
            state["sent"][key] = to_iso(now)
        state.update(lastSentAt=to_iso(now), pendingSince=None, failures=0, retryAt=None, lastError=None)
        if acted:
            state["actionsReportedUntil"] = max(r["at"] for r in acted)
        _save(store, state)
        return {"sent": len(new), "items": keys, "reason": "sent", "deliveryId": delivery, "reported": len(acted)}

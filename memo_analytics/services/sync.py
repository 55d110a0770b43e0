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

import hashlib
import http.client
import json
import logging
import os
import shutil
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from filelock import FileLock, Timeout

from ..domain.clock import from_iso, to_iso, utcnow
from ..config import MAX_BODY_BYTES
from ..domain.errors import CorruptRecordError, InvalidFieldError, MemoError
from ..domain.ids import MAX_SESSION_ID_LENGTH, session_record_id, slugify, validate_slug
from ..domain.records import RecordKind, normalize_meta
from ..index import store as index
from ..vault.conflicts import keep_conflict
from ..vault.io import atomic_write_bytes, dump_record, parse_record_text, read_json_state, write_json_state
from ..vault.redact import (
    SECRET_VALUE,
    IgnoreRules,
    is_secret_name,
    looks_like_secret,
    mask_url,
    redact_ignored_paths,
    redact_secrets,
)
from .prompts import canonical_client, same_person
from .record_rules import check_record
from .remote import exchange, without_userinfo
from .store import VaultStore

log = logging.getLogger("memo_analytics.sync")

SYNC_DIR = "sync"
MAX_BACKOFF_SECONDS = 300
#: Versions of one record a pusher remembers as sent but unconfirmed (a lost answer).
MAX_SENT_VERSIONS = 20
#: The longest a push waits for the daemon's whole answer (``session_end`` waits for it).
PUSH_SECONDS = 30


def _dir(store: VaultStore) -> Path:
    return store.layout.meta_dir / SYNC_DIR


def hybrid_enabled(store: VaultStore) -> bool:
    """Hybrid pushes apply: mode ``hybrid`` with a remote URL."""
    return store.settings.mode == "hybrid" and bool(store.settings.hybrid.remote_url)


# ---------------------------------------------------------------- the outbox


def note_write(store: VaultStore, meta: dict[str, Any], path: Path) -> None:
    """Append a written record to the outbox (a ``"write"`` listener: under the vault lock)."""
    folder = _dir(store)
    folder.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"id": meta["id"], "project": meta["project"], "path": str(path.relative_to(store.root)),
                       "updated": meta.get("updated")})
    with open(folder / "outbox.jsonl", "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def hybrid_listener(background: bool) -> Callable[..., None]:
    """The ``"write"`` listener of the hybrid push (SPEC §2.7): every written record is queued
    in the outbox; with ``background`` (a long-running process: ``memo serve``, ``memo mcp``)
    the push goes out ``hybrid.debounceMs`` after the last write and retries what the outbox
    still holds. ``memo_analytics.runtime`` subscribes it in hybrid mode with a remote URL."""
    def on_write(emitter: VaultStore, meta: dict[str, Any], path: Path, caught_up: bool = False) -> None:
        if caught_up and _pushed_as_is(emitter, meta) and not edited_since_push(emitter, meta, path):
            return  # the index caught up with a file the daemon already has in this version
        note_write(emitter, meta, path)
        if background:
            _schedule(emitter)

    return on_write


_PUSHED_CACHE: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}


def _cached_state(store: VaultStore, name: str) -> dict[str, Any]:
    """The push state file ``name``, read again only when it changed (a rebuild asks of every
    record: read once per record, the whole file each time, it grew with the vault squared)."""
    path = _dir(store) / name
    try:
        info = path.stat()
    except OSError:
        return {}
    cached = _PUSHED_CACHE.get(str(path))
    if cached is None or cached[0] != (info.st_mtime_ns, info.st_size):
        cached = ((info.st_mtime_ns, info.st_size), _load(store, name))
        _PUSHED_CACHE[str(path)] = cached
    return cached[1]


def _pushed_as_is(store: VaultStore, meta: dict[str, Any]) -> bool:
    """Whether the daemon confirmed this version of the record (``pushed.json`` holds its
    ``updated``)."""
    pushed = _cached_state(store, "pushed.json")
    version = pushed.get(f"{meta.get('project')}/{meta.get('id')}", pushed.get(str(meta.get("id"))))
    return version is not None and version == meta.get("updated")


#: The SHA-256 of each record file as its last push read it (``project/id`` → hex): a file edited by
#: hand since, its ``updated`` left as it was, is a new version to push (:func:`edited_since_push`).
PUSHED_TEXTS = "pushed-texts.json"


def _text_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def edited_since_push(store: VaultStore, meta: dict[str, Any], path: Path) -> bool:
    """Whether the record file at ``path`` differs from what its last push read though it names
    the same ``updated`` — edited by hand, as spec-memo's users do (adding an ``owner``): it was
    never pushed, the README saying it is (found by a team lead). False when no push read it."""
    known = _cached_state(store, PUSHED_TEXTS).get(f"{meta.get('project')}/{meta.get('id')}")
    if not isinstance(known, str):
        return False
    try:
        return _text_digest(path.read_bytes()) != known
    except OSError:
        return False


def resume_pushes(store: VaultStore) -> None:
    """A long-running process that starts (or turns hybrid on) pushes what the outbox holds."""
    if status(store)["pending"]:
        _schedule(store)


def session_end_listener(emitter: VaultStore, session: dict[str, Any]) -> None:
    """The ``"session_end"`` listener: :func:`dual_sync` (SPEC §2.5); the runtime subscribes it
    when the hybrid push or vault-git is on."""
    dual_sync(emitter, "session_end")


def _key(entry: dict[str, Any]) -> str:
    """``project/id``: what names one record in the outbox and the push state (SPEC §2.1: the
    same id may exist in several projects). An entry written before entries named their
    project takes it from its path (``projects/<project>/…``)."""
    project = entry.get("project") or (Path(entry.get("path") or "").parts[1:2] or [""])[0]
    return f"{project}/{entry['id']}"


def _rekey(store: VaultStore, state: dict[str, Any]) -> dict[str, Any]:
    """Push state keyed by ``project/id``: an entry kept by its plain id (before records were
    keyed by project) goes to the one project whose record has that id; when several have it,
    which one it was is no longer known, and it is dropped (the daemon then merges that
    record as a conflict rather than a fast-forward: nothing is lost)."""
    out = {key: value for key, value in state.items() if "/" in key}
    for key, value in state.items():
        if "/" not in key:
            projects = sorted({row["project"] for row in index.rows_with_id(store.conn, key)})
            if len(projects) == 1:
                out.setdefault(f"{projects[0]}/{key}", value)
    return out


def rekey_project(store: VaultStore, source: str, target: str) -> None:
    """After ``memo project rename|merge`` here: the versions the daemon holds of the records that
    moved (``pushed.json``, ``sent.json``) are theirs under ``target`` too, so their next push builds on
    them — the daemon follows the rename (:func:`_follow_a_rename`) instead of keeping a second
    copy of each session under the old name (billed twice once the lead filed one of them)."""
    for name in ("pushed.json", "sent.json"):
        state = _load(store, name)
        moved = {f"{target}/{key.split('/', 1)[1]}": value for key, value in state.items()
                 if key.startswith(f"{source}/")}
        if moved:
            _save(store, name, {**{k: v for k, v in state.items() if not k.startswith(f"{source}/")},
                                **{k: v for k, v in moved.items() if k not in state}})


def _follow_a_rename(store: VaultStore, kind: RecordKind, meta: dict[str, Any], ancestors: set[str]) -> None:
    """A pushed session new to its project that this daemon holds in another — brought by a push of
    the same person (its base copy there), under its own id or kept apart from another person's
    session of that id (:func:`apart_session_id`) — was moved on the laptop (``memo project
    rename``): the daemon's session, its turns and its baton move with it, each as it is (its
    ``updated`` kept: the push builds on it), with its base and served versions, under the
    laptop's id. The old project kept a second copy of each session, and the daemon billed both
    once the lead filed one of them (a team lead found it of a session kept apart: the rename left
    it in the old project, the sessions and turns counted twice; and of a session whose id another
    person's renamed session also held: the invoiced one was copied).

    Raises
    ------
    InvalidFieldError
        ``project``: the session is on an issued invoice here, which names its project.
    """
    if kind is not RecordKind.SESSION or not isinstance(meta.get("sessionId"), str) or not ancestors:
        return  # a push that builds on no version sent before is a session of its own (the same id elsewhere)
    session_id, record_id, target = meta["sessionId"], str(meta["id"]), meta["project"]
    found = _renamed_copy(store, session_id, target, meta.get("owner"), ancestors)
    if found is None:
        return
    source, held = found
    from ..vault import ledger

    invoiced = ledger.invoiced_in(store.root).get((source, held))
    if invoiced:
        raise InvalidFieldError("project", _stays_invoiced(session_id, invoiced, source, target))
    held_record = f"session-{held}"
    renamed = held != session_id  # kept apart there: here it is no other person's, under the laptop's id
    moving = [(RecordKind.PROMPT, f"prompt-{held}-t{turn}", f"prompt-{session_id}-t{turn}", "sessionId")
              for turn in sorted(index.session_turn_numbers(store.conn, source, held))]
    moving += [(RecordKind.HANDOFF, f"handoff-{held}", f"handoff-{session_id}", "fromSessionId"),
               (RecordKind.SESSION, held_record, record_id, "sessionId")]
    for moved_kind, old_id, new_id, named in moving:  # the session last: a move cut short is followed again
        found_record = store.read(source, moved_kind, old_id)
        if found_record is None or store.read_text(target, moved_kind, new_id) is not None:
            continue
        moved = {**found_record[0], "project": target, **({"id": new_id, named: session_id} if renamed else {})}
        store.upsert(moved_kind, normalize_meta(moved), found_record[1])
        store.remove(moved_kind, source, old_id)
    _move_kept_versions(store, source, held_record, target, record_id,
                        {"id": record_id, "sessionId": session_id} if renamed else {})


def _move_kept_versions(store: VaultStore, source: str, held_record: str, target: str, record_id: str,
                        renamed: dict[str, str]) -> None:
    """Move the versions kept of a pushed session (its base, those pulls served) from ``source``
    to ``target`` where it moved, each naming its new project (and id, ``renamed``): the next
    push of it merges against them there."""
    for old, new in ((_base_path(store, source, held_record), _base_path(store, target, record_id)),
                     (_served_dir(store, source, held_record), _served_dir(store, target, record_id))):
        if old.exists() and not new.exists():
            new.parent.mkdir(parents=True, exist_ok=True)
            os.replace(old, new)
    for version in [_base_path(store, target, record_id), *_served_versions(store, target, record_id)]:
        try:  # each version kept of it names its new project (and id): the merge reads no change of them
            kept, body = parse_record_text(version.read_text(encoding="utf-8"), held_record)
            stamp = version.stat().st_mtime_ns
            atomic_write_bytes(version, dump_record(normalize_meta({**kept, "project": target, **renamed}),
                                                    body).encode("utf-8"), durable=False)
            os.utime(version, ns=(stamp, stamp))  # its time tells a base written since from one before
        except (OSError, CorruptRecordError, ValueError):
            continue


def _carry_a_moved_base(store: VaultStore, meta: dict[str, Any], builds_on_ours: bool) -> None:
    """A push of a session into the project this vault moved it to (its laptop followed the
    move, :func:`_follow_a_move`): the versions kept of it in the project it was pushed in
    come along, so the push merges with what the lead changed (:func:`_merged`) instead of
    replacing it — or, when the push builds on this vault's version (``builds_on_ours``: the
    laptop took it at its pull), they are dropped: it is a fast-forward."""
    record_id = str(meta["id"])
    if _base_path(store, meta["project"], record_id).is_file():
        return
    for base in sorted((_dir(store) / "base").glob(f"*/{record_id}.md")):
        source = base.parent.name
        kept = _kept_version(base, record_id)
        if source != meta["project"] and kept is not None and kept[0].get("sessionId") == meta.get("sessionId") \
                and kept[0].get("created") == meta.get("created") \
                and not store.path_for(source, RecordKind.SESSION, record_id).exists():
            if builds_on_ours:
                base.unlink(missing_ok=True)
                shutil.rmtree(_served_dir(store, source, record_id), ignore_errors=True)
            else:
                _move_kept_versions(store, source, record_id, meta["project"], record_id, {})
            return


def _renamed_copy(store: VaultStore, session_id: str, target: str, owner: Any,
                  ancestors: set[str]) -> tuple[str, str] | None:
    """``(project, session id there)`` of the one session in another project than ``target`` that a
    push of ``owner`` brought here — under ``session_id`` or kept apart as theirs — and that the
    push builds on (``ancestors``: its base copy's or its own ``updated``); None when there is none
    or several."""
    found = []
    for source, held in _pushed_by(store, session_id, owner, target):
        held_record = f"session-{held}"
        kept = _kept_version(_base_path(store, source, held_record), held_record)
        here = store.read(source, RecordKind.SESSION, held_record)
        if ancestors & {kept[0].get("updated") if kept else None, here[0].get("updated") if here else None}:
            found.append((source, held))
    return found[0] if len(found) == 1 else None


def _pushed_by(store: VaultStore, session_id: str, owner: Any, besides: str) -> list[tuple[str, str]]:
    """``(project, session id there)`` of each session of :func:`_ids_of_a_session` in another project
    than ``besides`` that a push of ``owner`` brought here (an index lookup per id; another person's
    session of that id, or the daemon's own, is not one)."""
    if not isinstance(owner, str) or not owner.strip():
        return []
    found = []
    for held in _ids_of_a_session(session_id, owner):
        for source in sorted({row["project"] for row in index.rows_with_id(store.conn, f"session-{held}",
                                                                             RecordKind.SESSION.value)} - {besides}):
            pushed_here, pushed_owner = _base_owner(store, source, held)
            if pushed_here and pushed_owner and same_person(pushed_owner, owner):
                found.append((source, held))
    return found


def _stays_invoiced(session_id: str, invoice: str, source: str, target: str) -> str:
    """Why a session renamed on a laptop stays in its project here, and how the laptop converges."""
    return (f"session {session_id} is on invoice {invoice} in project {source} here, which names its project; it "
            f"stays there: move it back on this laptop (memo session edit {session_id} --project {target} "
            f"--to-project {source}), or credit the invoice first")


def _refuse_turn_of_invoiced_elsewhere(store: VaultStore, kind: RecordKind, meta: dict[str, Any],
                                       pushed_owner: Any = None) -> None:
    """Refuse a pushed turn new to its project whose session is not there but is on an issued
    invoice in another project here, pushed by the turn's owner: the session's move was refused
    (:func:`_follow_a_rename`), and its turn alone would be a second copy counted there (found by a
    team lead: one turn, two on the daemon).

    Raises
    ------
    InvalidFieldError
        ``project``: as :func:`_follow_a_rename` refuses the session.
    """
    session_id, owner = meta.get("sessionId"), meta.get("owner") or pushed_owner  # the push names its session's
    if kind is not RecordKind.PROMPT or not isinstance(session_id, str) \
            or _session_here(store, meta["project"], session_id)[0]:
        return
    theirs = _pushed_by(store, session_id, owner, meta["project"])
    if not theirs:
        return
    from ..vault import ledger

    invoiced = ledger.invoiced_in(store.root)
    for source, held in theirs:
        if (source, held) in invoiced:
            raise InvalidFieldError("project", _stays_invoiced(session_id, invoiced[(source, held)], source,
                                                               meta["project"]))


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


def _outbox_pending(store: VaultStore) -> int:
    """The records the outbox holds now: what a push's answer counts (one read of the outbox — not
    :func:`status`'s count of a first push, which reads every record of the vault: a hook's push
    each turn, the daemon down, grew with the vault)."""
    return len({_key(entry) for entry in _outbox(store)})


def state_stamp(store: VaultStore) -> int:
    """When this laptop's push state last changed (ns; 0 none): a push that failed or went through
    changes the digest (:func:`push_trouble`) while no record changes."""
    try:
        return (_dir(store) / "state.json").stat().st_mtime_ns
    except OSError:
        return 0


def push_trouble(store: VaultStore) -> dict[str, Any] | None:
    """On a hybrid laptop, what the operator digest says of its pushes (one read of the state and
    the outbox): ``{pending, lastError, lastErrorAt, lastSuccessAt, refused}`` when records wait
    and the last push failed, or the daemon refused records of it (they wait, sent again at each
    push); else None. A push failing for days, or refused for good, said only by ``memo sync
    status``: the work never reached the team's invoices (found by a team lead)."""
    if not hybrid_enabled(store):
        return None
    state = _load(store, "state.json")
    refused = [r for r in state.get("refused") or [] if isinstance(r, dict) and isinstance(r.get("id"), str)]
    failing = bool(state.get("lastError"))
    if not failing and not refused:
        return None
    waiting = {_key(entry) for entry in _outbox(store)}
    # those still waiting (one not pushed for a reason of this laptop's left the outbox: its own item says it)
    refused = [r for r in refused if f"{r.get('project')}/{r['id']}" in waiting]
    pending = len(waiting)
    if not pending or not (failing or refused):
        return None
    return {"pending": pending, "lastError": state.get("lastError") if failing else None,
            "lastErrorAt": state.get("lastErrorAt"), "lastSuccessAt": state.get("lastSuccessAt"), "refused": refused}


def status(store: VaultStore) -> dict[str, Any]:
    """``{mode, remoteUrl, pending, lastSuccessAt, lastError, lastErrorAt, attempts, nextRetryAt,
    refused, conflicts, keptApart, keptOnDaemon, lastPullAt, lastPullError, pulled}``, and before
    the first push to the daemon ``firstPush`` (``{project: records}``: the whole vault it sends,
    counted in ``pending``): ``refused`` lists the records (id, one-line reason) the daemon refused in
    the last push (they stay queued); ``conflicts`` the latest 20 pushes that met another version on
    the daemon (``{id, project, outcome, conflict}``: which won, and the file the daemon keeps
    the other in — its digest lists it); ``keptOnDaemon`` the latest 20 sessions a push merged
    with a correction made on the daemon, or whose invoice there holds its billing (``{id,
    project, keptHere, invoice?}``: the fields the daemon kept, which this vault does not have); ``keptApart`` the latest 20 records of a session whose id
    is another person's session on the daemon (``{id, project, storedAs, heldBy}``: the id they
    have there); ``pulled`` the latest 20 records a pull wrote here (``{id, project, kind}``: a
    baton for this laptop's people, a session corrected on the daemon, :func:`pull`)."""
    state = _load(store, "state.json")
    pending = _outbox_pending(store)
    first: dict[str, int] = {}
    if hybrid_enabled(store) and state.get("seededFor") != store.settings.hybrid.remote_url and store.exists:
        # before the first push to this daemon: it sends the whole vault, which "0 records waiting" hid
        # (found by a team lead: a person joining sent every project of their own, private clients too)
        for _, project, _, _ in _to_seed(store, state):
            first[project] = first.get(project, 0) + 1
        pending += sum(first.values())
    return {"mode": store.settings.mode, "remoteUrl": mask_url(store.settings.hybrid.remote_url or "") or None,
            "pending": pending, **({"firstPush": dict(sorted(first.items()))} if first else {}),
            "lastSuccessAt": state.get("lastSuccessAt"), "lastError": state.get("lastError"),
            "lastErrorAt": state.get("lastErrorAt"), "attempts": state.get("attempts", 0),
            "nextRetryAt": state.get("nextRetryAt"), "refused": state.get("refused") or [],
            "conflicts": state.get("conflicts") or [], "keptApart": state.get("keptApart") or [],
            "keptOnDaemon": state.get("keptOnDaemon") or [], "lastPullAt": state.get("lastPullAt"),
            "lastPullError": state.get("lastPullError"), "pulled": state.get("pulled") or []}


# ---------------------------------------------------------------- pushing


def _post(url: str, payload: dict[str, Any], token: str | None, timeout: float) -> dict[str, Any]:
    headers = {"Content-Type": "application/json", "User-Agent": "memo-sync"}
    url, basic = without_userinfo(url)  # a password in the URL: Basic auth, never a host name to look up
    if basic:
        headers["Authorization"] = basic
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(payload).encode("utf-8"), headers=headers, method="POST")
    return exchange(request, timeout)  # within the time, following no redirect (the token stays with the daemon)


#: What a push sends of each outbox item (``sessionCreated``: when its session was made, for a turn or a hand-off).
_PUSHED_KEYS = ("id", "project", "text", "base", "sent", "owner", "sessionCreated")


def _pushed_owner(store: VaultStore, meta: dict[str, Any],
                  owners: dict[tuple[str, str], tuple[bool, str | None, str | None]]) -> dict[str, str | None]:
    """``{"owner": …}`` for a pushed turn or hand-off: the ``owner`` of its session here (None:
    the session names none), so the daemon keeps two people's sessions of one id apart
    (:func:`_kept_apart`); ``{}`` when its session is not here, or for another record (the
    daemon then leaves it where its id says). ``owners`` caches the sessions for one push."""
    try:
        kind = RecordKind(meta.get("kind"))
    except ValueError:
        return {}
    session_id = _session_of(kind, meta)
    if session_id is None or kind is RecordKind.SESSION:
        return {}  # a session names its own owner
    key = (str(meta.get("project")), session_id)
    if key not in owners:
        owners[key] = (*_session_here(store, *key), _created_here(store, *key))
    held, owner, made = owners[key]
    # when its session was made: the daemon tells one person's two sessions of one id apart by it (two
    # laptops); a correction of its times changes it on neither side
    return ({"owner": owner, **({"sessionCreated": made} if made else {})}) if held else {}


def _unsettled(kept: Any, settled: set[tuple[Any, str]]) -> list[dict[str, Any]]:
    """The ``keptOnDaemon`` entries but those of records whose versions now agree (``settled``:
    ``(project, id)``; the laptop took the daemon's, or the daemon took the laptop's as it is)."""
    return [item for item in (kept or []) if isinstance(item, dict)
            and (item.get("project"), item.get("id")) not in settled and (None, item.get("id")) not in settled]


def _newest(new: list[dict[str, Any]], earlier: Any, key: str) -> list[dict[str, Any]]:
    """The 20 latest entries of a push state list: ``new`` first, then those of ``earlier`` that
    none of them replaces (by ``key``)."""
    seen = {item.get(key) for item in new}
    return (new + [item for item in (earlier or []) if isinstance(item, dict) and item.get(key) not in seen])[:20]


#: What a push that did not reach the daemon, or was not taken, raises.
PUSH_FAILURES = (urllib.error.URLError, OSError, ValueError, http.client.HTTPException)


def _failure(exc: Exception) -> str:
    """Why a push failed, as one line with its repair (a refused token, a redirect)."""
    if not isinstance(exc, urllib.error.HTTPError):
        return _one_line(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
    refused, moved = exc.code in (401, 403), 300 <= exc.code < 400
    said = ""
    if not refused and not moved:  # the daemon's own one line (a push it refused whole): "HTTP 400" said nothing
        try:
            error = json.loads(exc.read(8192) or b"{}").get("error")
            said = f": the daemon says: {str(error)[:300]}" if isinstance(error, str) and error.strip() else ""
        except (OSError, ValueError, AttributeError):
            said = ""
    return _one_line(f"HTTP {exc.code}" + (": the daemon refused this machine's token; check hybrid.token "
                                           "(memo config set hybrid.token TOKEN, the daemon's MEMO_TOKEN)" if refused
                                           else ": a redirect; memo follows none (its token would go along): "
                                           "set hybrid.remoteUrl to the daemon's own address" if moved else said))


def check_daemon(settings: Any, timeout: float = 10.0) -> None:
    """Whether the daemon of ``hybrid.remoteUrl`` takes this machine's push: an empty push
    (``POST /api/sync/records`` ``{records: []}``, which changes nothing) with ``hybrid.token``.

    Raises
    ------
    MemoError
        One line why not, with its repair (``memo doctor`` shows it).
    """
    if not settings.hybrid.remote_url:
        raise MemoError("no daemon: hybrid.remoteUrl is not set (memo config set hybrid.remoteUrl URL)")
    try:
        answer = _post(settings.hybrid.remote_url.rstrip("/") + "/api/sync/records", {"records": []},
                       settings.hybrid.token, timeout)
    except PUSH_FAILURES as exc:
        raise MemoError(_failure(exc)) from None
    if not isinstance(answer, dict) or answer.get("results") != []:
        raise MemoError("the answer is not a memo daemon's sync answer")


def _one_line(text: str) -> str:
    """An error as one short line with secrets redacted (it is shown and kept in state)."""
    line = " ".join(str(text).split())
    return redact_secrets(line[:300] + ("…" if len(line) > 300 else ""))[0]


def _record_path(store: VaultStore, entry: dict[str, Any], key: str) -> Path | None:
    """The record file an outbox ``entry`` names — ``projects/<project>/<kind folder>/<id>.md``
    of the vault, a regular file reached through no link — or None."""
    from ..domain.records import RecordKind, subdir_for_kind

    project, record_id, given = key.split("/", 1)[0], entry.get("id"), str(entry.get("path") or "")
    if not isinstance(record_id, str):
        return None
    expected = {f"projects/{project}/{subdir_for_kind(kind)}/{record_id}.md" for kind in RecordKind}
    if given not in expected:
        return None
    path = store.root / given
    try:
        inside = path.resolve().is_relative_to(store.layout.projects_dir.resolve())
    except OSError:
        return None
    return path if inside and not path.is_symlink() else None


@contextmanager
def _releasing(lock: FileLock) -> Iterator[None]:
    """Release ``lock`` (taken already) when the block ends."""
    try:
        yield
    finally:
        lock.release()


def push_every_batch(store: VaultStore) -> dict[str, Any]:
    """:func:`push` now (``force``), batch after batch (``hybrid.batchSize`` each) until none waits,
    one fails, or what is left is refused (it waits for the next push): ``{pushed, results, pending,
    error}`` of them all, and ``owned`` (:func:`_own_ownerless`) when sessions of no owner were
    given one (found by a tester: "pushed 200 records; 3800 waiting", 17 runs to drain an import)."""
    result = push(store, force=True)
    if result.get("daemonChanged"):  # another daemon answered at this address: it is sent what it lacks now
        forgot = result.get("daemonForgot")
        result = push(store, force=True)
        if forgot:  # said once the whole vault went again
            result["daemonForgot"] = forgot
    while not result["error"] and result["pending"] and result["pushed"]:
        waited = result["pending"]
        more = push(store, force=True)
        result = {**more, "pushed": result["pushed"] + more["pushed"], "results": result["results"] + more["results"],
                  **({"owned": result["owned"]} if result.get("owned") else {})}
        if more["pending"] >= waited:
            break
    return result


def push(store: VaultStore, now: datetime | None = None, force: bool = False,
         timeout: float | None = None) -> dict[str, Any]:
    """Push the outbox to the daemon (SPEC §2.7). Returns ``{pushed, results, pending,
    error}``; never raises for network or daemon errors (they are recorded with a backoff:
    ``2^attempts`` seconds up to 5 minutes; ``force`` ignores the backoff). ``timeout`` (else
    the store's ``sync_timeout``, else 30 s) bounds the daemon's answer, and the wait for another
    push under way (else 60 s): past it nothing is sent now, the records wait."""
    now = now or utcnow()
    if not hybrid_enabled(store):
        return {"pushed": 0, "results": [], "pending": _outbox_pending(store), "error": "hybrid sync is off"}
    _dir(store).mkdir(parents=True, exist_ok=True)
    wait = timeout or store.sync_timeout  # a hook's or a start's push waits no longer for another push either
    lock = FileLock(str(_dir(store) / "push.lock"), timeout=wait or 60)
    try:
        lock.acquire()
    except Timeout:
        return {"pushed": 0, "results": [], "pending": _outbox_pending(store),
                "error": f"another push is under way (over {wait or 60:g} s): the records wait for the next push"}
    with _releasing(lock):
        state = _load(store, "state.json")
        if not force and state.get("nextRetryAt") and now < from_iso(state["nextRetryAt"]):
            return {"pushed": 0, "results": [], "pending": _outbox_pending(store),
                    "error": f"waiting until {state['nextRetryAt']} after: {state.get('lastError')}"}
        try:
            _which_daemon(store, state, timeout or store.sync_timeout or PUSH_SECONDS)
        except PUSH_FAILURES as exc:
            return _push_failed(store, state, now, exc, _outbox_pending(store))
        owned = _own_ownerless(store, now, state)
        _seed_outbox(store, state)
        entries = _outbox(store)
        latest: dict[str, dict[str, Any]] = {}
        for entry in entries:
            latest.pop(_key(entry), None)
            latest[_key(entry)] = entry
        # sessions first: a hand-off is taken with the session that left it, never in a batch before it
        batch = sorted(latest.values(), key=lambda entry: not str(entry.get("id", "")).startswith("session-"))[
            : store.settings.hybrid.batch_size]
        pushed_versions = _rekey(store, _load(store, "pushed.json"))
        texts = _load(store, PUSHED_TEXTS)
        read_here: dict[str, bytes] = {}  # the bytes of each record sent, as read (the next hand edit is told by them)
        unconfirmed = _rekey(store, _load(store, "sent.json"))  # versions sent whose answer never came
        records, mismatched = [], []
        held: set[str] = set()  # outbox lines of a version the daemon has: out of the outbox, not sent
        owners: dict[tuple[str, str], tuple[bool, str | None]] = {}
        for entry in batch:
            key = _key(entry)
            path = _record_path(store, entry, key)
            if path is None:  # an outbox line naming no record file of this vault (written by hand, or pulled)
                mismatched.append({"id": str(entry.get("id")), "project": key.split("/", 1)[0],
                                   "reason": f"its outbox path {str(entry.get('path'))[:200]!r} is no record file "
                                             f"of the vault; not pushed"})
                continue
            try:
                raw = path.read_bytes()
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                mismatched.append({"id": str(entry.get("id")), "project": key.split("/", 1)[0],
                                   "reason": "it is not UTF-8 text; not pushed"})
                continue
            except FileNotFoundError:  # removed since (moved by a rename, a merge): nothing to push, ever
                held.add(key)  # out of the outbox ("1 waiting" for good); the record's new place has its own line
                continue
            except OSError:
                continue  # cannot be read now: tried again with the next push
            try:
                local, body = parse_record_text(text, entry["id"])
                updated = local.get("updated")
                text = _as_sent(store, local, body, text)
            except CorruptRecordError as exc:  # never sent as it is: only what redaction has read goes out
                mismatched.append({"id": entry["id"], "project": key.split("/", 1)[0],
                                   "reason": f"it cannot be parsed ({exc.reason}); not pushed"})
                continue
            if local.get("kind") == RecordKind.TRAP.value:  # the laptop's rules: never pushed (NO_PUSHED_TRAPS)
                held.add(key)
                continue
            if local.get("project") not in (None, key.split("/", 1)[0]):  # edited by hand to name another project
                mismatched.append({"id": entry["id"], "project": key.split("/", 1)[0],
                                   "reason": f"its frontmatter names project {local.get('project')!r}; not pushed"})
                continue
            base = pushed_versions.get(key)
            if updated is not None and base == updated and isinstance(texts.get(key), str) \
                    and texts[key] != _text_digest(raw):
                # edited by hand since its push, its ``updated`` as it was: a new version, as memo's edit makes one
                # — but not a change of what an issued invoice billed, which memo's edit refuses too
                invoiced = _billed_otherwise(store, local)
                if invoiced is not None:
                    mismatched.append({"id": entry["id"], "project": key.split("/", 1)[0], "reason": invoiced})
                    continue
                try:
                    raw = _a_version_of_a_hand_edit(store, local, body, now)
                    local, body = parse_record_text(raw.decode("utf-8"), entry["id"])
                except (MemoError, ValueError, OSError) as exc:  # the edit breaks a record rule: said, not sent
                    mismatched.append({"id": entry["id"], "project": key.split("/", 1)[0],
                                       "reason": f"edited by hand, and it cannot be written so "
                                                 f"({str(exc).splitlines()[0][:300]}); not pushed"})
                    continue
                updated, text = local.get("updated"), _as_sent(store, local, body, raw.decode("utf-8"))
                read_here[key] = raw
            if updated is not None and base == updated and not state.get("resendAll"):
                held.add(key)  # the daemon holds this version (it was pulled)
                continue
            sent = [v for v in unconfirmed.get(key, []) if v != updated][-MAX_SENT_VERSIONS:]
            read_here.setdefault(key, raw)
            records.append({"id": entry["id"], "project": key.split("/", 1)[0], "key": key, "text": text,
                            "base": base, "sent": sent, "updated": updated,
                            **_pushed_owner(store, local, owners)})
            if updated is not None:
                unconfirmed[key] = [*sent, updated][-MAX_SENT_VERSIONS:]
            elif sent:
                unconfirmed[key] = sent
        _save(store, "sent.json", unconfirmed)  # before sending: a lost answer is remembered
        url = store.settings.hybrid.remote_url.rstrip("/") + "/api/sync/records"
        receipts, pusher = _load(store, "receipts.json"), _pusher_id(store)
        # another pusher's count (the vault copied here, or moved): this one starts from 1
        made = receipts.get("seq") if isinstance(receipts.get("seq"), int) and receipts.get("pusher") == pusher \
            else 0
        # with nothing to send, `memo sync push` still asks the daemon how many of this laptop's pushes it
        # holds (the same number again): a daemon restored from a backup lost work of a laptop that had
        # nothing new, and nothing ever said so (found by a team lead)
        checks = not records and force and made > 0
        seq = made + (0 if checks else 1)
        try:
            answer = _post(url, {"records": [{k: r[k] for k in _PUSHED_KEYS if k in r} for r in records], "pulls": True,
                                 "vault": pusher, "seq": seq},
                           store.settings.hybrid.token, timeout or store.sync_timeout or PUSH_SECONDS) \
                if records or checks else {"results": []}
            if not isinstance(answer, dict) or not isinstance(answer.get("results", []), list) \
                    or not all(isinstance(r, dict) for r in answer.get("results", [])):
                raise ValueError("the answer is not a memo daemon's sync answer")
        except PUSH_FAILURES as exc:
            return _push_failed(store, state, now, exc, len(latest))
        named = answer.get("daemonId")
        if _a_daemon_id(named) and _a_daemon_id(state.get("daemonId")) and named != state["daemonId"]:
            # another daemon answers at this address (a new one put there, a backup restored): what it
            # took is not filed as the other's; the next push sends it what it lacks (found by a breaker)
            _now_pushing_to(store, state, named, store.settings.hybrid.remote_url)
            return {"pushed": 0, "results": [], "pending": _outbox_pending(store), "error": None,
                    "daemonChanged": True}
        had = answer.get("received")
        counts = isinstance(had, int) and not isinstance(had, bool)
        if records:  # numbered only with a daemon that counts them: one upgraded later starts from 1, as it does
            _save(store, "receipts.json", {"seq": seq, "pusher": pusher} if counts else {})
        if counts and ((records and 0 <= had < seq - 1) or (checks and 0 <= had < seq)):
            # the daemon holds fewer of this laptop's pushes than it answered (its vault restored from a
            # backup, a copy of an older disk): what was pushed since is gone there, and the laptop's
            # push state said it held it — nothing was sent again, the team's totals short without a
            # word (found by a team lead). Everything goes again: a version it holds is taken unchanged.
            _forget_what_the_daemon_held(store, state, forgot=True)
            sent_before = seq if checks else seq - 1
            log.warning("memo sync: the daemon at %s holds %d of this laptop's %d pushes (restored from a "
                        "backup?): every record is sent again", store.settings.hybrid.remote_url, had, sent_before)
            return {"pushed": 0, "results": [], "pending": _outbox_pending(store), "error": None,
                    "daemonChanged": True, "daemonForgot": {"received": had, "sent": sent_before}}
        keys_of_id: dict[str, list[str]] = {}
        for record in records:
            keys_of_id.setdefault(record["id"], []).append(record["key"])
        done = {}
        for result in answer.get("results", []):
            if result.get("outcome") == "refused" or not isinstance(result.get("id"), str):
                continue
            if isinstance(result.get("project"), str):
                done[f"{result['project']}/{result['id']}"] = result
            elif len(keys_of_id.get(result["id"], [])) == 1:  # a daemon that does not name projects
                done[keys_of_id[result["id"]][0]] = result
        for item in mismatched:  # out of the outbox: the index holds the file as corrupt too
            done[f"{item['project']}/{item['id']}"] = {"outcome": "refused"}
        sent_updated = {_key(entry): entry.get("updated") for entry in batch}
        for record in records:
            if record["key"] in done:
                pushed_versions[record["key"]] = record["updated"]
                texts[record["key"]] = _text_digest(read_here[record["key"]])
                unconfirmed.pop(record["key"], None)
        _save(store, "sent.json", unconfirmed)
        _save(store, "pushed.json", pushed_versions)
        _save(store, PUSHED_TEXTS, texts)
        with store.lock():  # appends happen under this lock: none is lost by the rewrite
            # every line read before the push is delivered with its record's newest version;
            # a write made while the push ran stays queued
            read = {(_key(e), e.get("updated")) for e in entries}
            refused_here = {f"{item['project']}/{item['id']}" for item in mismatched}
            remaining = [e for e in _outbox(store) if not ((_key(e), e.get("updated")) in read and (
                _key(e) in refused_here or _key(e) in held
                or (_key(e) in done and sent_updated.get(_key(e)) is not None)))]
            atomic_write_bytes(_dir(store) / "outbox.jsonl",
                               "".join(json.dumps(e) + "\n" for e in remaining).encode("utf-8"))
            if not remaining:  # everything went again (resendAll): pushes as usual from now (saved below)
                state.pop("resendAll", None)
        refused = mismatched + [{"id": r.get("id"), **({"project": r["project"]} if r.get("project") else {}),
                                 "reason": r.get("reason")} for r in answer.get("results", [])
                                if r.get("outcome") == "refused"]
        conflicts = [{"id": r.get("id"), **({"project": r["project"]} if isinstance(r.get("project"), str) else {}),
                      "outcome": str(r.get("outcome"))[:100], "conflict": str(r["conflict"])[:300]}
                     for r in answer.get("results", []) if isinstance(r.get("conflict"), str)]
        apart = [{"id": r["id"], **({"project": r["project"]} if isinstance(r.get("project"), str) else {}),
                  "storedAs": str(r["storedAs"])[:200], "heldBy": str(r.get("heldBy"))[:200]}
                 for r in answer.get("results", []) if isinstance(r.get("storedAs"), str) and isinstance(r.get("id"), str)]
        kept_there = [{"id": r["id"], **({"project": r["project"]} if isinstance(r.get("project"), str) else {}),
                       "keptHere": [str(k)[:60] for k in r["keptHere"][:20]],
                       **({"invoice": str(r["invoice"])[:60]} if isinstance(r.get("invoice"), str) else {})}
                      for r in answer.get("results", []) if isinstance(r.get("id"), str)
                      and isinstance(r.get("keptHere"), list) and r["keptHere"]]
        # a version the daemon took as it is (a fast-forward, or one it held): nothing is kept there any more
        settled = {(r.get("project"), r["id"]) for r in answer.get("results", []) if isinstance(r.get("id"), str)
                   and r.get("outcome") in ("applied", "unchanged") and not r.get("storedAs")}
        # a record pushed again and taken without a conflict: the one said before is behind it (the lead
        # settled it there; `memo sync status` kept saying it — found by a team lead)
        past = {(r.get("project"), r["id"]) for r in answer.get("results", []) if isinstance(r.get("id"), str)
                and r.get("outcome") != "refused" and not isinstance(r.get("conflict"), str)}
        state.update(lastSuccessAt=to_iso(now), attempts=0, nextRetryAt=None, lastError=None, lastErrorAt=None,
                     refused=refused[:20], conflicts=(conflicts + _unsettled(state.get("conflicts"), past))[:20],
                     keptApart=_newest(apart, state.get("keptApart"), "storedAs"),
                     keptOnDaemon=_newest(kept_there, _unsettled(state.get("keptOnDaemon"), settled), "id"))
        _save(store, "state.json", state)
        return {"pushed": len(done) - len(mismatched), "results": answer.get("results", []) + [
                    {**item, "outcome": "refused", "here": True} for item in mismatched],
                "pending": len({_key(e) for e in remaining}), "error": None, **({"owned": owned} if owned else {})}


def _billed_otherwise(store: VaultStore, meta: dict[str, Any]) -> str | None:
    """Why a session edited by hand is not pushed: its times, client or billable flag now differ
    from what the issued invoice billing it says (``memo session edit`` refuses that edit: "credit
    it first") — it went to the daemon as a new version, billed to another client there (found by
    an attacker of the hand-edit push); else None."""
    from ..vault import ledger

    if meta.get("kind") != RecordKind.SESSION.value:
        return None
    found = ledger.invoiced_items(ledger.documents(store.root)).get((str(meta.get("project")),
                                                                     str(meta.get("sessionId"))))
    if found is None:
        return None
    fields = ledger.differs_from_invoice(meta, found[1], found[2])
    if not fields:
        return None
    return (f"edited by hand, its {', '.join(fields)} no longer as invoice {found[0]} billed it: not pushed (an issued "
            f"invoice's session changes only after a credit note: memo invoice credit {found[0]}); the digest lists it")


def _a_version_of_a_hand_edit(store: VaultStore, meta: dict[str, Any], body: str, now: datetime) -> bytes:
    """Write the record a person edited by hand as memo's own edit writes one — its ``updated``
    now, validated and redacted as any write — and give its bytes.

    Raises
    ------
    MemoError, ValueError, OSError
        The edit breaks a record rule (or its kind is none), or the file cannot be written."""
    path = store.upsert(RecordKind(meta.get("kind")), {**meta, "updated": to_iso(now)}, body)
    return Path(path).read_bytes()


def _own_ownerless(store: VaultStore, now: datetime, state: dict[str, Any]) -> dict[str, Any] | None:
    """Before a push: the sessions here that name no ``owner`` (spec-memo writes none; a laptop
    without a git identity) become this laptop's person's — their global git identity — written
    as memo's own edit writes a record (``updated`` now). The team vault tells people apart by it: a
    migrated team's sessions of no owner were one person's there, their overlapping time billed
    once (found by a team lead moving from spec-memo: 380 of 530 minutes). ``{owner, sessions}``
    of what was done (``owner`` None: no git identity here, nothing written), or None when every
    session names one."""
    from .store import git_identity

    who = _owner_or_none(git_identity(None))
    # the whole vault once for this identity (``state["ownedAs"]``), then the sessions queued: a push
    # must not grow with the vault
    queued = None if who is None or state.get("ownedAs") != who else [
        (_key(entry).split("/", 1)[0], str(entry.get("id"))) for entry in _outbox(store)
        if str(entry.get("id", "")).startswith("session-")]
    found = index.ownerless_sessions(store.conn, queued)
    if who is not None:
        state["ownedAs"] = who  # saved with the push's state
    if not found:
        return None
    if who is None:
        return {"owner": None, "sessions": len(found)}
    done = 0
    with store.batch():
        for project, record_id in found:
            try:
                got = store.read(project, RecordKind.SESSION, record_id)
                if got is None or (isinstance(got[0].get("owner"), str) and got[0]["owner"].strip()):
                    continue
                store.upsert(RecordKind.SESSION, {**got[0], "owner": who, "updated": to_iso(now)}, got[1])
                done += 1
            except MemoError:
                continue  # a session that cannot be written as it is: it stays of no owner (said by its push)
    return {"owner": who, "sessions": done} if done else None


def _owner_or_none(value: Any) -> str | None:
    """``value`` as a session's ``owner`` (:func:`~.prompts.clean_owner`), or None when it is none or cannot be one."""
    from .prompts import clean_owner

    try:
        return clean_owner(value) if isinstance(value, str) else None
    except InvalidFieldError:
        return None


#: The files of what one daemon holds of this laptop's records (kept per daemon, :func:`_which_daemon`).
_PER_DAEMON = ("pushed.json", "sent.json", PUSHED_TEXTS, "receipts.json")
#: The file that names a daemon's vault (:func:`daemon_id`).
DAEMON_ID = "daemon-id"


def daemon_id(store: VaultStore) -> str:
    """This vault's id as a team daemon (32 hex digits in ``.memo/sync/daemon-id``, made on first
    use; its answer to every push names it): a laptop tells one daemon under two addresses (a
    proxy, its IP) from another daemon by it, and a copy of the daemon's disk on a new machine is
    the same daemon (it holds the same records)."""
    import secrets

    path = _dir(store) / DAEMON_ID
    known = _daemon_id_in(path)
    if known is not None:
        return known
    path.parent.mkdir(parents=True, exist_ok=True)
    with store.lock():  # two first pushes at once name one id
        known = _daemon_id_in(path)
        if known is None:
            known = secrets.token_hex(16)
            try:
                atomic_write_bytes(path, known.encode("ascii"))
            except OSError as exc:
                raise MemoError(f"the daemon's id file {path} cannot be written ({exc.strerror or exc}): move it "
                                "away; nothing of this push was stored") from None
        return known


def _pusher_id(store: VaultStore) -> str:
    """Who pushes, for the daemon's count of pushes (:func:`received_push`): this vault's id
    (:func:`daemon_id`) on this machine at this path — a vault copied to a second laptop (the same
    id file) is another pusher: their numbers interleaved, and the daemon was said restored and sent
    everything again at each push (found by a breaker)."""
    import socket

    where = f"{daemon_id(store)}\n{socket.gethostname()}\n{Path(store.root).resolve()}"
    return hashlib.sha256(where.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def received_push(store: VaultStore, vault: Any, seq: Any) -> int | None:
    """On the daemon: the number of the last push it holds of the pusher ``vault`` (a laptop vault
    on its machine: :func:`_pusher_id`), before the push ``seq`` (kept now, in
    ``.memo/sync/laptops/``): a laptop whose number is higher was answered pushes this vault no
    longer holds (restored from a backup). None for a push that names no pusher or number (an
    older memo)."""
    if not _a_daemon_id(vault) or not isinstance(seq, int) or isinstance(seq, bool) or not 0 < seq < 1 << 53:
        return None
    path = _dir(store) / "laptops" / f"{vault}.json"
    with store.lock():
        kept = read_json_state(path) or {}
        had = kept.get("seq") if isinstance(kept.get("seq"), int) else 0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json_state(path, {"seq": seq})
        except OSError as exc:  # every push got a bare "Internal error (FileExistsError)" (found by a breaker)
            from ..domain.errors import DiskFullError, disk_full

            if disk_full(exc, path):  # said as a full disk (HTTP 507), not "move what is there away" (a team lead)
                raise DiskFullError(str(store.root)) from None
            raise MemoError(f"nothing of this push was stored: the daemon's count of this laptop's pushes cannot be "
                            f"written ({exc.strerror or exc}: {path}; move what is there away)") from None
    return had


def _daemon_id_in(path: Path) -> str | None:
    try:
        known = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return known if _a_daemon_id(known) else None


def _a_daemon_id(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)


def _push_failed(store: VaultStore, state: dict[str, Any], now: datetime, exc: Exception,
                 pending: int) -> dict[str, Any]:
    """A push the daemon did not answer: the error kept with a backoff, the records left waiting."""
    reason = _failure(exc)
    attempts = int(state.get("attempts", 0)) + 1
    state.update(lastError=reason, lastErrorAt=to_iso(now), attempts=attempts,
                 nextRetryAt=to_iso(now + timedelta(seconds=min(2 ** attempts, MAX_BACKOFF_SECONDS))))
    _save(store, "state.json", state)
    log.warning("memo sync push failed (%s); %d record%s wait%s in the outbox", reason, pending,
                "" if pending == 1 else "s", "s" if pending == 1 else "")
    return {"pushed": 0, "results": [], "pending": pending, "error": reason}


def _which_daemon(store: VaultStore, state: dict[str, Any], timeout: float) -> bool:
    """Before a push to ``hybrid.remoteUrl`` not pushed to before: ask the daemon there which it is
    (an empty push; its answer names :func:`daemon_id`). Another daemon than the one this laptop's
    push state describes: that state is kept aside for it, this one's (kept from an earlier time,
    else none) is taken up, and the outbox is seeded with what it lacks — a laptop re-pointed at
    another daemon and back sent the first nothing it recorded meanwhile (found by a team lead;
    ``memo sync push --all`` was needed each way). The same daemon under another address, or one
    that names no id (an older memo), changes nothing. True when the daemon changed.

    Raises
    ------
    urllib.error.URLError, OSError, ValueError, http.client.HTTPException
        The daemon did not answer (:data:`PUSH_FAILURES`): the push fails as it would have.
    """
    url = store.settings.hybrid.remote_url
    if state.get("daemonUrl") == url:
        return False
    # unanswered, the push fails as a push does (a push sent on meanwhile would have been filed as
    # the other daemon's: found by a breaker — its records never reached the first daemon again)
    answer = _post(url.rstrip("/") + "/api/sync/records", {"records": [], "pulls": True},
                   store.settings.hybrid.token, timeout)
    named = answer.get("daemonId") if isinstance(answer, dict) else None
    if not _a_daemon_id(named):
        state["daemonUrl"] = url
        _save(store, "state.json", state)
        return False
    return _now_pushing_to(store, state, named, url)


def _now_pushing_to(store: VaultStore, state: dict[str, Any], named: str, url: str) -> bool:
    """Record that ``url`` is the daemon ``named``; another daemon than the one the push state
    describes: that state kept aside for it, this one's taken up (none: the outbox is seeded with
    the whole vault). True when the daemon changed."""
    known = state.get("daemonId")
    changed = _a_daemon_id(known) and known != named
    if changed:
        with store.lock():
            aside, back = _dir(store) / "daemons" / known, _dir(store) / "daemons" / named
            aside.mkdir(parents=True, exist_ok=True)
            for name in _PER_DAEMON:
                write_json_state(aside / name, _load(store, name))
                _save(store, name, read_json_state(back / name) or {})
        state.pop("seededFor", None)  # seeded again: every record whose version this daemon lacks
        log.info("memo sync: %s is another daemon than the last one pushed to: it is sent what it lacks", url)
    state.update(daemonId=named, daemonUrl=url)
    _save(store, "state.json", state)
    return changed


def _seed_outbox(store: VaultStore, state: dict[str, Any]) -> None:
    """The first push to a daemon queues every record of the vault, not only those written since
    hybrid mode was on (found by a team lead: a vault indexed in local mode, then switched to
    hybrid, pushed "0 records; 0 waiting" for good while the daemon held none of it). A record
    the daemon already holds in its version (``pushed.json``) is taken out of the outbox unsent —
    also after ``hybrid.remoteUrl`` changed: the same daemon under another address (a proxy, a
    name for its IP) converges on what it holds; a laptop re-pointed at another daemon sends it
    the whole vault with :func:`push_everything` (``memo sync push --all``)."""
    url = store.settings.hybrid.remote_url
    if state.get("seededFor") == url:
        return
    with store.lock():  # appends happen under this lock
        lines = [json.dumps({"id": record_id, "project": project, "path": path, "updated": updated}) + "\n"
                 for record_id, project, path, updated in _to_seed(store, state)]
        if lines:
            with open(_dir(store) / "outbox.jsonl", "a", encoding="utf-8") as handle:
                handle.write("".join(lines))
    state["seededFor"] = url
    _save(store, "state.json", state)


def _to_seed(store: VaultStore, state: dict[str, Any]) -> list[tuple[str, str, str, str | None]]:
    """``(id, project, path, updated)`` of each record :func:`_seed_outbox` queues: not queued yet,
    not held by the daemon in its version, and no trap (never pushed)."""
    pushed = {} if state.get("resendAll") else _rekey(store, _load(store, "pushed.json"))
    queued = {_key(entry) for entry in _outbox(store)}
    # a trap is never pushed (NO_PUSHED_TRAPS): neither queued nor counted in a first push's projects
    return [(record_id, project, path, updated) for record_id, project, path, updated
            in index.record_places(store.conn, (RecordKind.TRAP.value,))
            if f"{project}/{record_id}" not in queued
            and (updated is None or pushed.get(f"{project}/{record_id}") != updated)]


def _forget_what_the_daemon_held(store: VaultStore, state: dict[str, Any], forgot: bool = False) -> None:
    """Send the daemon pushed to every record of the vault again — ``memo sync push --all``, and a
    daemon that lost what this laptop sent it (``forgot``: noted as ``daemonForgotAt``): the outbox
    is seeded with the whole vault now (``memo sync status`` counts it; a hook's short process that
    found the loss left the rest to a push nobody made — found by a breaker), and each record goes
    with the version it was built on (``base``), as a push of a change does, until the outbox is
    empty (``resendAll``): sent without it, a record the laptop never changed met the lead's
    correction on the daemon as a rival version — a conflict file, or the correction undone by
    a laptop clock ahead of the daemon's (found by a team lead)."""
    state.pop("seededFor", None)
    state["resendAll"] = True
    if forgot:
        state["daemonForgotAt"] = to_iso(utcnow())
    _save(store, "state.json", state)
    _seed_outbox(store, state)


def push_everything(store: VaultStore) -> dict[str, Any]:
    """``memo sync push --all``: every record of the vault to the daemon, whatever this laptop
    pushed before — for a laptop re-pointed at another daemon (a new team server), to which the
    versions the old one held say nothing (it was sent nothing: found by an attacker). The
    daemon takes a version it holds as unchanged. Then :func:`push_every_batch`."""
    _forget_what_the_daemon_held(store, _load(store, "state.json"))
    return push_every_batch(store)


def dual_sync(store: VaultStore, trigger: str) -> dict[str, Any]:
    """Sync after ``trigger`` (``session_end``): the hybrid push when hybrid has a remote URL,
    vault-git when enabled (the runtime wires this only where the vault is local). Errors are logged and returned, never
    raised (SPEC §2.5)."""
    outcome: dict[str, Any] = {"trigger": trigger}
    try:
        if hybrid_enabled(store):
            outcome["hybrid"] = push(store, force=True)
            if outcome["hybrid"]["error"] is None:  # the daemon answers: what the team left this laptop
                outcome["pulled"] = pull(store, timeout=store.sync_timeout or PUSH_SECONDS)
                if any(r.get("outcome") == "moved" for r in outcome["pulled"]["results"]):
                    # a session the lead moved while it was open, moved here now it ended: its push, refused
                    # a moment ago, goes where the daemon holds it (a breaker: it waited for the next end)
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


def _schedule(store: VaultStore) -> None:
    if not hybrid_enabled(store):
        return
    key = str(store.root)
    delay = store.settings.hybrid.debounce_ms / 1000

    def run() -> None:
        result = push(store)
        if result.get("daemonChanged"):  # another daemon, or one that lost pushes: what it lacks goes now
            _start(key, delay, run)
            return
        if result["pending"] and result["error"]:
            state = _load(store, "state.json")
            wait = max((from_iso(state["nextRetryAt"]) - utcnow()).total_seconds(), delay) \
                if state.get("nextRetryAt") else delay
            _start(key, wait, run)

    _start(key, delay, run)


_OUTBOX_SEEN: dict[str, tuple[int, int] | None] = {}


def push_queued_elsewhere(store: VaultStore) -> bool:
    """A long-running process's periodic look at the outbox (one ``stat``): records another
    process of this machine queued — a ``memo session edit`` beside a running ``memo serve`` —
    are pushed after ``hybrid.debounceMs`` as its own writes are; a push already due (or a retry
    waiting out its backoff) is left as it is. Whether a push was scheduled."""
    if not hybrid_enabled(store):
        return False
    key = str(store.root)
    try:
        info = (_dir(store) / "outbox.jsonl").stat()
        stamp: tuple[int, int] | None = (info.st_mtime_ns, info.st_size)
    except OSError:
        stamp = None
    seen, _OUTBOX_SEEN[key] = _OUTBOX_SEEN.get(key), stamp
    if stamp is None or stamp == seen or not stamp[1]:
        return False
    with _TIMERS_GUARD:
        due = _TIMERS.get(key)
        if due is not None and due.is_alive():
            return False
    _schedule(store)
    return True


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


#: Largest record text a push may carry, in bytes of UTF-8: the body limit of local writes
#: (``MAX_BODY_BYTES``) plus room for the frontmatter.
MAX_RECORD_BYTES = MAX_BODY_BYTES + 256_000

#: Frontmatter fields that name a record: never rewritten by redaction (a secret-shaped
#: value there is refused instead).
_IDENTITY_FIELDS = ("id", "kind", "project")


def _clean_strings(value: Any, rules: IgnoreRules) -> Any:
    """Capture-ignore paths, then secrets, out of every string inside ``value`` (SPEC §2.4)."""
    if isinstance(value, str):
        return redact_secrets(redact_ignored_paths(value, rules)[0])[0]
    if isinstance(value, list):
        return [_clean_strings(item, rules) for item in value]
    if isinstance(value, dict):  # keys too: a secret can hide in a key of a hand-written table
        return {_clean_strings(key, rules): SECRET_VALUE if isinstance(item, str) and is_secret_name(key)
                else _clean_strings(item, rules) for key, item in value.items()}  # password: hunter2
    return value


def _as_sent(store: VaultStore, meta: dict[str, Any], body: str, text: str) -> str:
    """The text a push sends for a record file: the file as it is, unless a string of it holds
    a secret or a capture-ignored path (a file written or edited by hand, which memo never
    redacted): then the record rendered again with them redacted, so no secret leaves the
    machine (SPEC §2.4)."""
    rules = IgnoreRules.for_root(None, store.settings.capture_ignore)  # the configured globs: no product root here
    cleaned = {key: value if key in _IDENTITY_FIELDS else _clean_strings(value, rules) for key, value in meta.items()}
    cleaned_body = _clean_strings(body, rules)
    return text if (cleaned, cleaned_body) == (meta, body) else dump_record(cleaned, cleaned_body)


def admit_record(store: VaultStore, record_id: str, text: Any) -> tuple[RecordKind, dict[str, Any], str]:
    """One pushed record through the ingress rules of local writes: size limit, a record
    file that parses (no YAML aliases), an id that matches and names nothing secret, a
    known kind, then capture-ignore (``captureIgnore`` globs: the daemon has no product root)
    and secret redaction of the body and every frontmatter string (SPEC §2.4, §2.7).

    Returns
    -------
    tuple
        ``(kind, meta, body)`` as they will be stored.

    Raises
    ------
    InvalidFieldError, CorruptRecordError
        One line naming what is wrong; nothing is written.
    """
    validate_slug(record_id, "id")
    if looks_like_secret(record_id):
        raise InvalidFieldError("id", "looks like a secret (token or key)")
    if not isinstance(text, str):
        raise InvalidFieldError("text", "must be the record file's text")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_RECORD_BYTES:
        raise InvalidFieldError("text", f"is {size} bytes; the limit is {MAX_RECORD_BYTES} bytes")
    if "\x00" in text:
        raise InvalidFieldError("text", "contains a NUL character")
    meta, body = parse_record_text(text, record_id)
    if meta["id"] != record_id:
        raise InvalidFieldError("id", f"{record_id} does not match the record's id {meta['id']}")
    kind = RecordKind(meta["kind"])
    validate_slug(meta["project"], "project")
    if looks_like_secret(meta["project"]):
        raise InvalidFieldError("project", "looks like a secret (token or key)")
    if kind is RecordKind.HANDOFF and record_id != f"handoff-{meta.get('fromSessionId')}":
        # a baton is its session's (``handoff-<session>``): one under an id of its own passed every
        # check of its session (kept apart, travels with it) and was shown as that session's
        raise InvalidFieldError("id", f"a hand-off's id is handoff-<fromSessionId> "
                                      f"(handoff-{meta.get('fromSessionId')}), not {record_id}")
    check_record(meta, body, utcnow())
    rules = IgnoreRules.for_root(None, store.settings.capture_ignore)  # the configured globs: no product root here
    cleaned = {key: value for key, value in meta.items() if key in _IDENTITY_FIELDS}
    cleaned.update(_clean_strings({k: v for k, v in meta.items() if k not in _IDENTITY_FIELDS}, rules))
    return kind, normalize_meta(cleaned), _clean_strings(body, rules)


def apply_incoming(store: VaultStore, records: list[dict[str, Any]], now: datetime | None = None,
                   claims: bool = True) -> list[dict]:
    """Upsert pushed records by ``(project, id)`` (the daemon's ``POST /api/sync/records``).

    Each item ``{id, project, text, base, sent, owner}``: ``text`` is the record file (whose
    frontmatter names the project; ``project`` is only echoed, so the pusher can tell two
    records of one id apart); ``base`` the
    ``updated`` of the version the daemon last confirmed to the pusher; ``sent`` the
    ``updated`` of versions the pusher sent since without hearing back (a push whose answer
    was lost); ``owner`` whose session the record is of (a turn's and a hand-off's session's
    owner on the pusher). Each result names ``id`` and ``project``. Every record first passes
    :func:`admit_record` (the rules of local writes). A session, turn or hand-off of another
    person's session id here is kept apart (:func:`_kept_apart`): its result adds ``storedAs``
    (the id it has here) and ``heldBy`` (whose session the id is).
    Outcomes: ``applied`` (new, or the daemon holds one of the pusher's own versions: a
    fast-forward), ``unchanged`` (same content; re-indexed when the index lost it),
    ``applied, older kept as conflict`` / ``kept ours, theirs kept as conflict`` (both
    sides changed: newer ``updated`` wins), ``refused`` (one line why). Nothing is lost.
    ``claims``: a pushed session new here claims the baton its start would have (False for a
    pusher that pulls, :func:`pull`: its person's agent never saw a baton its start did not take).
    """
    now = now or utcnow()
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    results = []
    # sessions first: a session's owner decides where its turns of the same request go
    ordered = sorted(records, key=lambda item: not (isinstance(item, dict) and str(item.get("id", "")).startswith("session-")))
    with store.batch():  # one group commit for the request (issue 16)
        for item in ordered:
            _apply_item(store, item, stamp, results, claims)
    if any(str(r.get("id") or "").startswith("session-") and str(r.get("outcome") or "").startswith("applied")
           for r in results):
        with store.lock():  # the batch's records indexed: when each session says it was written
            _note_received(store, results, now)
    return results


#: On the daemon (under ``.memo/sync/``): when each session pushed to it arrived, last version.
RECEIVED_FILE = "received-sessions.json"


#: A pushed session whose ``updated`` is older than its arrival by more than this came late (a
#: laptop offline, or its clock behind): its arrival is kept. One that came at once is not (its
#: ``updated`` says when it came: a file of every session rewritten at each push grew with the vault).
LATE_ARRIVAL = timedelta(minutes=5)
#: How long a late arrival is kept (the digest's late-work items look back less far).
ARRIVALS_KEPT = timedelta(days=120)


def _note_received(store: VaultStore, results: list[dict[str, Any]], now: datetime) -> None:
    """Keep when this push's sessions arrived, for those that came late — written on the laptop
    before a document was last issued here, or long before they came (``project/session-<id>``
    → UTC ISO): a session recorded on a laptop before an invoice and pushed after it (offline,
    or its clock behind) is late work the invoice left out — its ``updated`` is the laptop's
    clock, the daemon's digest took it for work the invoice saw (found by a team lead)."""
    from ..vault import ledger

    try:  # when a document was last issued here: a session written before it and arriving after it came late
        issued = datetime.fromtimestamp(ledger.folder(store.root).stat().st_mtime, tz=timezone.utc)
    except (OSError, ValueError, OverflowError):
        issued = None
    arrived = []
    for r in results:
        if not (str(r.get("outcome") or "").startswith("applied") and str(r.get("id") or "").startswith("session-")
                and isinstance(r.get("project"), str)):
            continue
        record_id = str(r.get("storedAs") or r["id"])
        row = index.get_row(store.conn, r["project"], record_id, RecordKind.SESSION.value)
        try:
            updated = from_iso(str(row["updated"])) if row is not None else None
        except (ValueError, TypeError, IndexError):
            updated = None
        if updated is None or now - updated > LATE_ARRIVAL or (issued is not None and updated <= issued):
            arrived.append(f"{r['project']}/{record_id}")
    path = _dir(store) / RECEIVED_FILE
    if not arrived:
        return
    kept = read_json_state(path, "sessions") or {"sessions": {}}
    sessions = kept["sessions"] if isinstance(kept.get("sessions"), dict) else {}
    oldest = to_iso(now - ARRIVALS_KEPT)
    sessions = {k: v for k, v in sessions.items() if isinstance(v, str) and v >= oldest}
    sessions.update(dict.fromkeys(arrived, to_iso(now)))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_state(path, {"sessions": sessions})
    except OSError:
        pass  # the digest's hint only: the records are stored


def received_sessions(store: VaultStore) -> dict[str, str]:
    """On the daemon: ``project/session-<id>`` → when its last pushed version arrived (UTC ISO);
    empty elsewhere (:func:`_note_received`)."""
    kept = read_json_state(_dir(store) / RECEIVED_FILE, "sessions") or {}
    sessions = kept.get("sessions") if isinstance(kept, dict) else None
    return {k: v for k, v in sessions.items() if isinstance(v, str)} if isinstance(sessions, dict) else {}


#: Why the daemon takes no trap: a trap's rule goes into a repository's agent instructions (a
#: promotion writes every promoted trap's text into CLAUDE.md, and a delegated ``promote_rule``
#: acts on saved traps by itself) — a token holder's pushed "rule" became an instruction to every
#: agent of the repository. The daemon derives the team's rules from the turns it holds.
NO_PUSHED_TRAPS = ("a trap stays on its laptop (its rule is written into agents' instructions); the daemon derives "
                   "the team's rules from the turns it holds")


def _apply_item(store: VaultStore, item: dict[str, Any], stamp: str, results: list[dict], claims: bool = True) -> None:
    """Admit and apply one pushed record; its result appended to ``results``."""
    record_id = str(item.get("id", ""))[:200]
    echo = _echo_project(item.get("project"))
    try:
        kind, meta, body = admit_record(store, record_id, item.get("text"))
    except (CorruptRecordError, InvalidFieldError, ValueError) as exc:
        results.append({"id": record_id, **echo, "outcome": "refused", "reason": str(exc).splitlines()[0][:500]})
        return
    if echo and echo["project"] != meta["project"]:
        results.append({"id": record_id, **echo, "outcome": "refused",
                        "reason": f"the push names project {echo['project']} but the record's frontmatter names "
                                  f"{meta['project']}"})
        return
    if kind is RecordKind.TRAP:
        results.append({"id": record_id, **echo, "outcome": "refused", "reason": NO_PUSHED_TRAPS})
        return
    echo = {"project": meta["project"]}
    try:
        sent = item.get("sent") if isinstance(item.get("sent"), list) else []
        stored_id, meta, apart = _kept_apart(store, kind, meta, item.get("owner", _UNSAID), body, item.get("base"),
                                             ancestry=bool(item.get("base")) or bool(sent),
                                             session_created=item.get("sessionCreated"))
        if kind is RecordKind.HANDOFF:
            _refuse_a_baton_of_no_session(store, stored_id, meta)
        outcome = _apply_one(store, stored_id, kind, meta, body, item, stamp, claims)
        results.append({**outcome, "id": record_id, **echo, **apart})
    except MemoError as exc:  # e.g. the id is another kind's record in that project: this record only
        results.append({"id": record_id, **echo, "outcome": "refused", "reason": str(exc).splitlines()[0][:500]})


def _refuse_a_baton_of_no_session(store: VaultStore, record_id: str, meta: dict[str, Any]) -> None:
    """A pushed hand-off comes with the session that left it (the laptop pushes a session end's
    records together, the session first): one of a session this vault does not hold, that is
    not here already, is refused — a token holder's made-up baton put its "next steps" before a
    teammate's agent, as left by a session that never was.

    Raises
    ------
    InvalidFieldError
        ``fromSessionId``: neither the session nor the baton is here.
    """
    session_id = str(meta.get("fromSessionId") or "")
    if _session_here(store, meta["project"], session_id)[0]:
        return
    try:
        here = store.read(meta["project"], RecordKind.HANDOFF, record_id)
    except MemoError:
        here = None
    if here is None:
        raise InvalidFieldError("fromSessionId", f"session {session_id} is not on the daemon: a hand-off comes with "
                                                 "the session that left it (push the session first)")


def _session_of(kind: RecordKind, meta: dict[str, Any]) -> str | None:
    """The session id a session, a turn of a session or a session's hand-off belongs to (its
    record id names it: ``session-S``, ``prompt-S-tN``, ``handoff-S``), else None."""
    named = meta.get("fromSessionId") if kind is RecordKind.HANDOFF else meta.get("sessionId")
    if not isinstance(named, str) or not named:
        return None
    expected = {RecordKind.SESSION: f"session-{named}", RecordKind.HANDOFF: f"handoff-{named}",
                RecordKind.PROMPT: f"prompt-{named}-t{meta.get('turn')}"}.get(kind)
    return named if meta.get("id") == expected else None


def apart_session_id(session_id: str, owner: str | None) -> str:
    """The id under which a team vault keeps ``owner``'s session ``session_id`` when that id is
    another person's session there: ``{sessionId}--{owner as a slug}-{6 hex of the owner}``
    (``unknown`` for none), within the session id's length. The hex tells apart owners whose
    slugs are alike (``Jörg`` and ``Jürg``, names in other scripts)."""
    suffix = _apart_suffix(owner)
    return session_id[: MAX_SESSION_ID_LENGTH - len(suffix)].rstrip("-._") + suffix


def _apart_suffix(owner: str | None) -> str:
    """What :func:`apart_session_id` adds to a session id of ``owner``'s."""
    import hashlib

    name = (owner or "").strip()
    digest = hashlib.blake2b(name.casefold().encode("utf-8", "surrogatepass"), digest_size=3).hexdigest()
    return f"--{slugify(name, 40) if name else 'unknown'}-{digest}"


def _ids_of_a_session(session_id: str, owner: str) -> list[str]:
    """The ids ``owner``'s session ``session_id`` may have on this daemon: its own, kept apart from
    another person's (:func:`apart_session_id`), and — when it is such an id — the laptop's own id
    it stands for (a rename back into a project where another person holds that id)."""
    ids = [session_id, apart_session_id(session_id, owner)]
    suffix = _apart_suffix(owner)
    if session_id.endswith(suffix) and len(session_id) > len(suffix):
        ids.append(session_id[: -len(suffix)])
    return list(dict.fromkeys(ids))


#: A push item that names no ``owner`` (a pusher before owners were sent, or a turn whose
#: session the pusher does not hold).
_UNSAID = object()


def _session_here(store: VaultStore, project: str, session_id: str) -> tuple[bool, str | None]:
    """Whether this vault holds the session ``session_id`` of ``project``, and its ``owner``
    (None: none named; a file that cannot be read counts as none held)."""
    try:
        found = store.read(project, RecordKind.SESSION, f"session-{session_id}")
    except (MemoError, ValueError):
        return False, None
    owner = found[0].get("owner") if found else None
    return found is not None, owner if isinstance(owner, str) and owner.strip() else None


def _created_here(store: VaultStore, project: str, session_id: str) -> str | None:
    """The ``created`` of the session ``session_id`` of ``project`` here (None: none held, or
    none readable)."""
    try:
        found = store.read(project, RecordKind.SESSION, f"session-{session_id}")
    except (MemoError, ValueError):
        return None
    made = found[0].get("created") if found else None
    return str(made) if made else None


def _same_instant(one: Any, other: Any) -> bool:
    """Whether two instants as text name one instant (None never does)."""
    try:
        return bool(one) and bool(other) and from_iso(str(one)) == from_iso(str(other))
    except ValueError:
        return False


def _another_session_of_yours(store: VaultStore, kind: RecordKind, meta: dict[str, Any], session_id: str,
                              ancestry: bool, session_created: Any) -> str | None:
    """Why a pushed record is refused when it is of another session of the same person's than the
    one held here under its id — one person's two sessions of one id on two machines (``standup``
    on a second laptop, a laptop replaced) — else None. A session is another one when it was made
    (``created``) at another instant than the held one; a turn or hand-off when its session's
    ``created`` (``sessionCreated`` of the push) is not the held one's (``ancestry`` is not asked:
    a refused push is retried as "sent"). Applied, it replaced the held session, kept only as a conflict file no
    report counts (found by a team lead); kept apart, news of the two could not be told apart on
    the laptops (found by a breaker). A correction of a session's times changes no ``created``."""
    held = _created_here(store, meta["project"], session_id)
    made = meta.get("created") if kind is RecordKind.SESSION else session_created
    other = bool(made) and bool(held) and not _same_instant(made, held)
    if not other:
        return None
    return (f"session {session_id} here is another session of yours, made {held} (recorded on another of your "
            f"machines), and this one was made {made}: the daemon keeps that one; this one stays on this machine — "
            "record its next work under another session id")


def _base_owner(store: VaultStore, project: str, session_id: str) -> tuple[bool, str | None]:
    """Whether a push brought the session ``session_id`` here (its base copy, :func:`_keep_base`),
    and the ``owner`` that push named."""
    kept = _kept_version(_base_path(store, project, f"session-{session_id}"), f"session-{session_id}")
    if kept is None:
        return False, None
    owner = kept[0].get("owner")
    return True, owner if isinstance(owner, str) and owner.strip() else None


#: What a laptop changes of a baton it holds but whose session it does not (one a pull gave it):
#: its claim, its cancel, or its claim given back.
_BATON_STATE = frozenset({"status", "claimedBy", "claimedAt", "cancelledAt", "updated"})


def _a_batons_state_only(store: VaultStore, meta: dict[str, Any], body: str) -> bool:
    """Whether a pushed hand-off differs from the one here only in its state (:data:`_BATON_STATE`):
    a claim or cancel of a baton a pull gave the laptop, which holds none of its session."""
    try:
        found = store.read(meta["project"], RecordKind.HANDOFF, meta["id"])
    except MemoError:
        return False
    if found is None or found[1].strip() != body.strip():
        return False
    here = found[0]
    return all(here.get(key) == meta.get(key) for key in set(here) | set(meta) if key not in _BATON_STATE)


def _its_pusher(store: VaultStore, meta: dict[str, Any], base: Any) -> bool:
    """Whether a push of session ``meta`` builds on the very version a push brought here (its
    ``base`` is that version's ``updated``): the laptop that pushed it, not another person's
    session of the same id."""
    kept = _kept_version(_base_path(store, meta["project"], meta["id"]), meta["id"])
    return isinstance(base, str) and bool(base) and kept is not None and str(kept[0].get("updated") or "") == base


def _kept_apart(store: VaultStore, kind: RecordKind, meta: dict[str, Any],
                pushed_owner: Any, body: str = "", base: Any = None, ancestry: bool | None = None,
                session_created: Any = None) -> tuple[str, dict[str, Any], dict[str, str]]:
    """Where a pushed record goes: its own id, unless it belongs to a session whose id is
    another person's session in this vault — two people who both named a session
    ``fix-login``. Then the pusher's session, its turns and its hand-off are kept under
    :func:`apart_session_id` (ids and ``sessionId`` / ``fromSessionId`` rewritten), so
    neither person's work replaces the other's (a newer ``updated`` would have won, the other
    kept only as a conflict file that no report counts). The owner is a session's own
    ``owner``, for a turn or a hand-off the ``owner`` the push names for its session; owners
    compare in any case, and no owner is one too (a laptop without a git identity). A session a
    push brought here under this owner is the same session, whoever it names now (a lead
    corrected its owner here: the push merges, :func:`_merged`); so is one a push brought naming no
    owner, pushed again on that version (``base``) naming one (:func:`_its_pusher`). A turn or hand-off pushed without
    an ``owner`` is of no owner (a session of a person's here keeps it apart) — but for the claim,
    cancel or give-back of a baton here, which a laptop sends of a baton a pull gave it. Returns ``(stored id,
    frontmatter, {"storedAs": id, "heldBy": owner}`` when moved, else ``{}``)``.

    Raises
    ------
    InvalidFieldError
        ``id``: the id it would be kept under is a third person's session here.
    """
    session_id = _session_of(kind, meta)
    if session_id is None or (kind is RecordKind.HANDOFF and pushed_owner is _UNSAID
                              and _a_batons_state_only(store, meta, body)):
        return meta["id"], meta, {}  # no session, or a claim of a baton a pull gave: where its id says
    # a turn or hand-off pushed naming no owner is no one's: kept apart from a person's session
    # (a token holder left the owner out, and rewrote the person's turns)
    owner = meta.get("owner") if kind is RecordKind.SESSION else None if pushed_owner is _UNSAID else pushed_owner
    owner = owner if isinstance(owner, str) and owner.strip() else None
    held, holder = _session_here(store, meta["project"], session_id)
    ancestry = bool(base) if ancestry is None else ancestry
    if not held:
        # this person's session kept apart here under its other id, moved here by the lead: the laptop's
        # id stands for it (found by a breaker: the laptop's next push made a second copy beside it)
        apart = apart_session_id(session_id, owner)
        there, its_owner = _session_here(store, meta["project"], apart) if owner else (False, None)
        if there and same_person(its_owner, owner):
            # held by nobody else here: kept apart since its first push, where another's session had its id
            # (the note named the pusher as the holder: found by a breaker)
            return _stored_apart(kind, meta, apart, "")
        return meta["id"], meta, {}
    if same_person(holder, owner):
        refused = _another_session_of_yours(store, kind, meta, session_id, ancestry, session_created) \
            if owner else None
        if refused is not None:
            raise InvalidFieldError("id", refused)
        return meta["id"], meta, {}
    brought, pushed_as = _base_owner(store, meta["project"], session_id)
    if brought and same_person(pushed_as, owner):
        return meta["id"], meta, {}  # the session a push brought, its owner corrected here since
    if brought and pushed_as is None and kind is RecordKind.SESSION and _its_pusher(store, meta, base):
        # the laptop that pushed it naming no owner (spec-memo's) names its owner now: the same session
        return meta["id"], meta, {}
    apart = apart_session_id(session_id, owner)
    there, its_owner = _session_here(store, meta["project"], apart)
    if there and not same_person(its_owner, owner):
        raise InvalidFieldError("id", f"session {session_id} is {holder or 'another session'}'s here, and {apart} "
                                      f"is {its_owner or 'another session'}'s: start the session under another id")
    return _stored_apart(kind, meta, apart, holder or "a session of no recorded owner")


def _stored_apart(kind: RecordKind, meta: dict[str, Any], apart: str,
                  held_by: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """``meta`` of a session, turn or hand-off kept under the session id ``apart``, as
    :func:`_kept_apart` returns it."""
    moved = dict(meta)
    if kind is RecordKind.SESSION:
        moved.update(id=f"session-{apart}", sessionId=apart)
    elif kind is RecordKind.HANDOFF:
        moved.update(id=f"handoff-{apart}", fromSessionId=apart)
    else:
        moved.update(id=f"prompt-{apart}-t{meta['turn']}", sessionId=apart)
    return moved["id"], normalize_meta(moved), {"storedAs": moved["id"], "heldBy": held_by}


def _echo_project(named: Any) -> dict[str, str]:
    """``{"project": named}`` when the pusher named a safe project id, else ``{}``."""
    try:
        return {"project": validate_slug(named, "project")} if isinstance(named, str) else {}
    except InvalidFieldError:
        return {}


def _apply_one(store: VaultStore, record_id: str, kind: RecordKind, meta: dict[str, Any], body: str,
               item: dict[str, Any], stamp: str, claims: bool = True) -> dict[str, Any]:
    """Apply one admitted record (see :func:`apply_incoming`) under the vault lock; its outcome."""
    sent = item.get("sent") if isinstance(item.get("sent"), list) else []
    ancestors = {value for value in [item.get("base"), *sent[:MAX_SENT_VERSIONS]] if isinstance(value, str)}
    path = store.path_for(meta["project"], kind, record_id)
    incoming = dump_record(meta, body)
    with store.lock():
        local_text = store.read_text(meta["project"], kind, record_id)
        if local_text is None and kind is RecordKind.SESSION:
            _follow_a_rename(store, kind, meta, ancestors)
            local_text = store.read_text(meta["project"], kind, record_id)
        elif kind is RecordKind.SESSION:
            ours = _as_parsed(local_text, record_id)
            _carry_a_moved_base(store, meta, ours is not None and ours[0].get("updated") in ancestors)
        if local_text is None:
            _refuse_moved(store, kind, meta, ancestors, item.get("sessionCreated"))
            _refuse_turn_of_invoiced_elsewhere(store, kind, meta, item.get("owner"))
            filed = _filed_here(store, kind, meta)
            filed, baton = _takes_a_baton(store, kind, filed, claims)
            filed = _a_version_here(filed, meta)
            store.upsert(kind, filed, body)
            _keep_base(store, kind, meta, incoming, (filed, body))
            return {"id": record_id, "outcome": "applied", **({"handoff": baton} if baton else {})}
        try:
            local_meta, local_body = parse_record_text(local_text, str(path))
        except CorruptRecordError:
            local_meta, local_body = {}, None  # a broken live file loses to a valid version, kept beside it
        if local_body is not None and dump_record(local_meta, local_body) == incoming:
            if index.get_row(store.conn, meta["project"], record_id) is None:
                store.upsert(kind, meta, body)  # the file landed but its index row did not
            _keep_base(store, kind, meta, incoming)
            return {"id": record_id, "outcome": "unchanged"}
        if local_body is not None and _only_updated_differs((local_meta, local_body), (meta, body)):
            # the same record but for when it was last written (a move undone the way a refusal names, a push
            # of a version held here after the pusher's push state was lost): nothing to compare, no conflict
            # file and digest item (found by a team lead: two files differing only in ``updated``)
            _keep_base(store, kind, meta, incoming)
            return {"id": record_id, "outcome": "unchanged"}
        if kind is RecordKind.HANDOFF and local_meta.get("status") == "claimed" and meta.get("status") == "claimed" \
                and local_meta.get("claimedBy") != meta.get("claimedBy") and local_meta.get("updated") not in ancestors:
            # a baton is taken once: a second claim (a laptop that had not heard of the first) never replaces it;
            # one built on the first (its session gave it back, empty, and the next one took it) does
            kept = keep_conflict(path, incoming.encode("utf-8"), stamp)
            return {"id": record_id, "outcome": f"kept ours: already claimed by {local_meta.get('claimedBy')}",
                    "conflict": str(kept.relative_to(store.root))}
        if kind is RecordKind.PROMPT and local_body is not None and local_meta.get("updated") not in ancestors \
                and _only_billing_differs((local_meta, local_body), (meta, body)):
            # the turn as here but for its client or billable: its session's correction here (a lead's) moved it
            return _turn_follows_its_session(store, record_id, local_meta, local_body)
        if local_meta.get("updated") is not None and local_meta.get("updated") in ancestors \
                and (not _changed_here(store, kind, meta, local_text) or _pulled_since(store, meta, local_meta,
                                                                                        local_body)):
            held, invoiced = _as_invoiced(store, kind, local_meta, meta)
            held = _a_version_here(held, meta)
            store.upsert(kind, held, body)  # the daemon holds a version the pusher sent: fast-forward
            _keep_base(store, kind, meta, incoming, (held, body))
            return {"id": record_id, "outcome": "applied", **invoiced}
        merged = _merged(store, kind, meta, body, local_meta, local_body, ancestors, item.get("base")) \
            if local_body is not None else None
        if merged is not None and merged[0] is local_meta:
            return {"id": record_id, "outcome": "unchanged"}
        if merged is not None:
            merged_meta, merged_body, kept_here, clashed = merged
            outcome: dict[str, Any] = {"id": record_id, "outcome": "merged", "keptHere": kept_here}
            if clashed:  # both changed these: the newer wins each, the other version kept whole beside it
                loser = local_text if (meta.get("updated") or "") > (local_meta.get("updated") or "") else incoming
                kept = keep_conflict(path, loser.encode("utf-8"), stamp)
                outcome.update(outcome="merged, both changed " + ", ".join(clashed) + ": the newer kept, the other "
                                                                                      "kept as conflict",
                               conflict=str(kept.relative_to(store.root)))
            merged_meta, invoiced = _as_invoiced(store, kind, local_meta, merged_meta)
            store.upsert(kind, merged_meta, merged_body)
            _keep_base(store, kind, meta, incoming, (merged_meta, merged_body))
            return {**outcome, **invoiced, "keptHere": sorted({*outcome["keptHere"], *invoiced.get("keptHere", [])})}
        if (meta.get("updated") or "") > (local_meta.get("updated") or ""):
            kept = keep_conflict(path, local_text.encode("utf-8"), stamp)
            held, invoiced = _as_invoiced(store, kind, local_meta, meta)
            held = _a_version_here(held, meta)
            store.upsert(kind, held, body)
            _keep_base(store, kind, meta, incoming, (held, body))
            return {"id": record_id, "outcome": "applied, older kept as conflict",
                    "conflict": str(kept.relative_to(store.root)), **invoiced}
        kept = keep_conflict(path, incoming.encode("utf-8"), stamp)
        return {"id": record_id, "outcome": "kept ours, theirs kept as conflict",
                "conflict": str(kept.relative_to(store.root))}


def _only_updated_differs(ours: tuple[dict[str, Any], str], theirs: tuple[dict[str, Any], str]) -> bool:
    """Whether two versions of a record are the same but for ``updated``."""
    return dump_record({**ours[0], "updated": None}, ours[1]) == dump_record({**theirs[0], "updated": None}, theirs[1])


def _turn_follows_its_session(store: VaultStore, record_id: str, local_meta: dict[str, Any],
                              local_body: str) -> dict[str, Any]:
    """A pushed turn that differs from this vault's only in its client or billable: this vault's,
    with its session's client and billable here — a lead's correction of the session moved its turns
    here, and the laptop's turn (renamed, or pushed again) won whole as the newer, its session's
    correction lost and the lead's version kept as a conflict file. The outcome."""
    follow = _session_billing(store, local_meta["project"], local_meta.get("sessionId"))
    if not follow or all(local_meta.get(key) == value for key, value in follow.items()):
        return {"id": record_id, "outcome": "unchanged", "keptHere": sorted(follow)}
    store.upsert(RecordKind.PROMPT, normalize_meta({**local_meta, **follow, "updated": to_iso(utcnow())}), local_body)
    return {"id": record_id, "outcome": "merged", "keptHere": sorted(follow)}


def _session_billing(store: VaultStore, project: str, session_id: Any) -> dict[str, Any]:
    """``{client, billable}`` of the session ``session_id`` of ``project`` here, or ``{}`` when
    this vault holds none that reads."""
    try:
        session = store.read(project, RecordKind.SESSION, f"session-{session_id}")
    except (MemoError, ValueError):
        return {}
    return {key: session[0].get(key) for key in ("client", "billable")} if session else {}


def _a_version_here(written: dict[str, Any], pushed: dict[str, Any]) -> dict[str, Any]:
    """``written`` (what this daemon writes of a pushed record: filed under the client its
    ``projectClients`` maps, a baton's client, what an issued invoice billed) under an ``updated``
    of its own when it differs from the push's: a version is known by its ``updated``, and the
    pusher's version and the daemon's filing of it shared one — a laptop that pulled the filing
    but kept its own edit then pushed as if it had taken it, and the filing was undone."""
    if written == pushed or written.get("updated") is None:
        return written
    stamp = max(to_iso(utcnow()), to_iso(from_iso(written["updated"]) + timedelta(milliseconds=1)))
    return normalize_meta({**written, "updated": stamp})


def _refuse_moved(store: VaultStore, kind: RecordKind, meta: dict[str, Any], ancestors: set[str] = frozenset(),
                  session_created: Any = None) -> None:
    """Refuse a pushed session, or a turn of it, that a push brought here before and that was
    moved to another project here since (``memo session edit --to-project`` on the daemon): applied
    where its project says, the session would be here twice and bill twice. So too when the laptop
    renamed the project it was pushed in since (``memo project rename``): the push under the new
    name builds on the version brought before (``ancestors``), or is a turn of such a session —
    the lead's move was not followed by the rename: the session was in both projects, billed on
    two invoices once the lead filed one copy under another client.

    Raises
    ------
    InvalidFieldError
        ``project``: where it is now, and how to move it on the laptop too.
    """
    session_id = _session_of(kind, meta)
    if session_id is None or kind is RecordKind.HANDOFF or _session_here(store, meta["project"], session_id)[0]:
        return  # no session's record, or the session is where the push says
    record_id = f"session-{session_id}"
    pushed_from = [meta["project"]] if _base_path(store, meta["project"], record_id).is_file() else []
    if not pushed_from:  # pushed under another name before: a rename on the laptop
        for base in sorted((_dir(store) / "base").glob(f"*/{record_id}.md")):
            kept = _kept_version(base, record_id)
            # the push builds on the version brought here, or on one a pull served (this daemon's filing
            # of it under projectClients' client, pulled by the laptop: its rename then came in as new)
            if kept is not None and base.parent.name != meta["project"] \
                    and not _session_here(store, base.parent.name, session_id)[0] \
                    and (kind is not RecordKind.SESSION or kept[0].get("updated") in ancestors
                         or any(_served_path(store, base.parent.name, record_id, a).is_file() for a in ancestors)):
                pushed_from.append(base.parent.name)
    if not pushed_from:
        return  # not a session a push brought here, or still where it was (a rename the daemon follows)
    elsewhere = sorted({row["project"] for row in index.rows_with_id(store.conn, record_id, RecordKind.SESSION.value)}
                       - {meta["project"], *pushed_from})
    if elsewhere:
        made = meta.get("created") if kind is RecordKind.SESSION else session_created
        there = _created_here(store, elsewhere[0], session_id)
        if made and there and not _same_instant(made, there):  # the person's other session of that id was moved
            raise InvalidFieldError("id", f"session {session_id} of project {elsewhere[0]} is another session of "
                                          f"yours, made {there} (recorded on another of your machines), and this "
                                          f"one was made {made}: the daemon keeps that one; this one stays on this "
                                          "machine — record its next work under another session id")
        raise InvalidFieldError("project", f"session {session_id} was moved to project {elsewhere[0]} on the "
                                           f"daemon: move it on this laptop too (memo session edit {session_id} "
                                           f"--project {meta['project']} --to-project {elsewhere[0]})")


def _filed_here(store: VaultStore, kind: RecordKind, meta: dict[str, Any]) -> dict[str, Any]:
    """A pushed session new to this vault that names no client, filed under the client this
    vault's ``projectClients`` maps its project to (the team's mapping: each laptop had to copy
    it, or its sessions billed ``internal`` on the daemon); a project mapped to ``internal``
    stays so. A pushed turn new here that names no client takes its session's client here."""
    if kind is RecordKind.PROMPT and isinstance(meta.get("sessionId"), str):
        # a turn new here bills as its session here bills: filed by this daemon, or corrected by its lead
        # before the turn came (the session's turns followed it; one pushed after stayed behind)
        follow = _session_billing(store, str(meta["project"]), meta["sessionId"])
        named = isinstance(meta.get("client"), str) and meta["client"].strip()
        if follow.get("client") and not named:  # a client a turn names of its own (prompt record --client) stays
            return normalize_meta({**meta, "client": follow["client"]})
        return meta
    if kind is not RecordKind.SESSION or (isinstance(meta.get("client"), str) and meta["client"].strip()):
        return meta
    client = canonical_client(store, store.settings.client_of_project(str(meta["project"])))
    return normalize_meta({**meta, "client": client}) if client else meta


def _takes_a_baton(store: VaultStore, kind: RecordKind, meta: dict[str, Any],
                   claims: bool = True) -> tuple[dict[str, Any], str | None]:
    """A pushed session new to this vault claims the pending hand-off here that its start would
    have claimed (SPEC §2.5: its project, branch and owner; left before it started): a hybrid
    laptop never sees the team's batons, so one addressed to its person stayed pending and the
    work it led to billed ``internal``. The session bills the client of the session that left
    it when nothing else names one — as does a session that claimed a baton on the laptop (a
    pulled one, :func:`pull`). ``claims`` False (a pusher that pulls: its start claimed what
    its person saw): nothing is claimed here — the baton waits for a start that shows it. Returns the frontmatter and the id of the baton claimed here (or None)."""
    if kind is not RecordKind.SESSION or meta.get("status") == "superseded":
        return meta, None
    from .handoffs import claim_handoff
    from .sessions import client_of_session

    claimed = None
    if meta.get("handoffClaimed"):  # claimed on the laptop (a pulled baton): its client is known here
        try:
            found = store.read(str(meta["project"]), RecordKind.HANDOFF, str(meta["handoffClaimed"]))
        except (MemoError, ValueError):
            found = None
        baton = {**found[0], "id": meta["handoffClaimed"]} if found else None
    elif not claims:  # a laptop that pulls: its start took what it saw; a baton it did not see stays pending
        return meta, None
    else:
        baton = claimed = claim_handoff(store, str(meta["project"]), str(meta.get("sessionId")), meta.get("branch"),
                                        meta.get("owner"), utcnow(), started=str(meta.get("startTime") or ""))
    if baton is None:
        return meta, None
    taken = {**meta, "handoffClaimed": baton["id"]}
    if not (isinstance(meta.get("client"), str) and meta["client"].strip()) and \
            str(meta["project"]) not in store.settings.project_clients:
        taken["client"] = client_of_session(store, str(meta["project"]), baton.get("fromSessionId"))
    return normalize_meta(taken), claimed["id"] if claimed else None


#: What an issued invoice billed of a session: a push never changes them on the daemon
#: (``memo session edit`` there refuses to; a credit note frees them).
_INVOICED_KEYS = ("client", "billable", "startTime", "endTime", "durationMinutes")


def _as_invoiced(store: VaultStore, kind: RecordKind, ours: dict[str, Any],
                 theirs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``theirs`` (what a push would write over the session ``ours``) with what an issued,
    uncredited invoice billed of it kept as it is here: a laptop had moved an invoiced session
    to another client and lengthened it on the daemon. Returns the frontmatter to write and
    ``{"keptHere": [keys], "invoice": number}`` when any was kept (else ``{}``)."""
    if kind is not RecordKind.SESSION or not ours:
        return theirs, {}
    from ..vault import ledger

    try:
        invoiced = ledger.invoiced_items(ledger.documents(store.root)).get((ours.get("project"), ours.get("sessionId")))
    except MemoError:
        return theirs, {}  # a ledger that cannot be read: the daemon's digest says so
    differing = sorted(key for key in _INVOICED_KEYS if theirs.get(key) != ours.get(key))
    if ours.get("status") == "completed" and theirs.get("status") != "completed":
        differing.append("status")  # superseded or open again, it was left out of every report (a security tester)
    if invoiced is None or not differing:
        return theirs, {}
    held = {**theirs, **{key: ours.get(key) for key in _INVOICED_KEYS}}
    if ours.get("status") == "completed":
        held["status"] = "completed"
    try:
        return normalize_meta(held), {"keptHere": differing, "invoice": invoiced[0]}
    except ValueError:
        return theirs, {}


#: The frontmatter keys a session's times are made of: merged as one (an end from one side and
#: the minutes of the other would disagree).
_TIME_KEYS = ("startTime", "endTime", "durationMinutes", "status", "timesEdited")
#: Keys every write sets anew: never a change of its own.
_STAMP_KEYS = ("updated",)


def pushed_here(store: VaultStore, project: str, session_id: str) -> bool:
    """Whether a laptop's push brought the session ``session_id`` of ``project`` to this vault (a
    team daemon keeps its base copy): its ``transcriptPath`` names a file of that laptop, which this
    machine must not read (a token holder learned of the daemon's files, and moved the proposed end
    of the session, by naming one)."""
    return _base_path(store, project, f"session-{session_id}").is_file()


def _base_path(store: VaultStore, project: str, record_id: str) -> Path:
    """Where the base copy of a pushed session is kept (:func:`_keep_base`)."""
    return _dir(store) / "base" / project / f"{record_id}.md"


def _kept_version(path: Path, record_id: str) -> tuple[dict[str, Any], str] | None:
    """``(frontmatter, body)`` of a session version kept at ``path`` (a base copy, a served
    version), or None when there is none that reads."""
    try:
        return parse_record_text(path.read_text(encoding="utf-8"), record_id)
    except (OSError, CorruptRecordError, ValueError):
        return None


def _changed_here(store: VaultStore, kind: RecordKind, meta: dict[str, Any], local_text: str) -> bool:
    """Whether this vault's session differs from the version a push brought (its base): a file
    edited here by hand keeps its ``updated``, so the version alone reads as the pusher's own."""
    if kind is not RecordKind.SESSION:
        return False
    try:
        base = _base_path(store, meta["project"], meta["id"]).read_text(encoding="utf-8")
        return base != local_text and parse_record_text(base, str(meta["id"])) != \
            parse_record_text(local_text, str(meta["id"]))
    except (OSError, CorruptRecordError, ValueError):
        return False


def _pulled_since(store: VaultStore, meta: dict[str, Any], local_meta: dict[str, Any], local_body: str | None) -> bool:
    """Whether the pusher builds on this vault's session exactly as it is here: a pull served
    it this version (:func:`pull`) and nothing changed it since — a hand edit keeps its
    ``updated`` but not its text, so it is merged, not passed over."""
    served = _served(store, meta["project"], str(meta["id"]), local_meta.get("updated"))
    return served is not None and local_body is not None and \
        (normalize_meta(served[0]), served[1]) == (normalize_meta(local_meta), local_body)


def _keep_base(store: VaultStore, kind: RecordKind, meta: dict[str, Any], text: str,
               stored: tuple[dict[str, Any], str] | None = None) -> None:
    """Keep the session version a pusher sent, as its base (``.memo/sync/base/<project>/<id>.md``):
    its next push is a change of that version, and a correction made here since can be told
    apart from it (:func:`_merged`). Sessions only: what a lead corrects (client, times,
    billable, summary). ``stored``: the frontmatter and body written here, when they may differ
    from the push's; then the base copy is dated 1970, older than the session, so
    :func:`for_people` looks at it (a base newer than its session is otherwise skipped)."""
    if kind is RecordKind.SESSION:
        path = _base_path(store, meta["project"], meta["id"])
        atomic_write_bytes(path, text.encode("utf-8"), durable=False)
        if stored is not None and dump_record(*stored) != text:
            os.utime(path, ns=(0, 0))  # what this vault wrote differs at once (merged, filed): a pull looks at it


def _merged(store: VaultStore, kind: RecordKind, theirs: dict[str, Any], their_body: str, ours: dict[str, Any],
            our_body: str, ancestors: set[str],
            built_on: Any = None) -> tuple[dict[str, Any], str, list[str], list[str]] | None:
    """A session both the pusher and this daemon changed since the version the pusher last
    pushed (its base, :func:`_keep_base`), merged key by key: what only one side changed is
    taken from it; what both changed alike is kept; what both changed otherwise goes to the
    newer ``updated``. The times (:data:`_TIME_KEYS`) merge as one. A lead's correction here
    (the client, the minutes) is no longer undone by a later edit of the summary on the laptop.

    ``built_on``: the ``updated`` of the version the pusher says it built on (its ``base``), the
    base when kept here; else one of ``ancestors`` (versions it sent).

    Returns ``(frontmatter, body, keys kept from here, keys both changed)``, or None: not a
    session, no base of the version the push builds on (the one it pushed, or the one a pull
    served it, :func:`for_people`), or a merge the record rules refuse
    (then the newer version wins whole, the other kept as a conflict file)."""
    if kind is not RecordKind.SESSION:
        return None
    pushed = _kept_version(_base_path(store, theirs["project"], theirs["id"]), str(theirs["id"]))
    # the version the pusher says it built on (``base``: what it pushed, or what a pull served it) —
    # a version it pushed before a pull took the daemon's filing (its projectClients) is not: the
    # daemon's client read as the laptop's change, and a lead's correction since lost to it.
    # A served version first: the daemon's filing of a push keeps its ``updated``, so the version
    # pushed and the one a pull then served can share it; then the pushed one; then any it sent
    pushed_at = pushed[0].get("updated") if pushed is not None else None

    def served(version: Any) -> tuple[dict[str, Any], str] | None:
        return _served(store, theirs["project"], str(theirs["id"]), version) if isinstance(version, str) else None

    candidates = (served(built_on), pushed if pushed_at == built_on else None,
                  pushed if pushed_at in ancestors else None, *(served(v) for v in sorted(ancestors)))
    kept = next((one for one in candidates if one is not None), None)
    if kept is None:
        return None  # the pusher built on another version than the ones kept
    base, base_body = kept
    if (theirs, their_body) == (base, base_body):
        return ours, our_body, [], []  # nothing new from the pusher (its answer was lost): ours stays
    newer_theirs = (theirs.get("updated") or "") > (ours.get("updated") or "")
    groups = [(key,) for key in sorted({*base, *ours, *theirs} - {*_TIME_KEYS, *_STAMP_KEYS})] + [_TIME_KEYS]
    merged: dict[str, Any] = {}
    kept_here, clashed = [], []
    for group in groups:
        b, o, t = ([side.get(key) for key in group] for side in (base, ours, theirs))
        if t == b or o == t:
            pick = ours
            if o != b:
                kept_here.append(group[0] if len(group) == 1 else "times")
        elif o == b:
            pick = theirs
        else:
            pick = theirs if newer_theirs else ours
            clashed.append(group[0] if len(group) == 1 else "times")
        merged.update({key: pick[key] for key in group if key in pick})
    if our_body == their_body or their_body == base_body:
        body = our_body
    elif our_body == base_body:
        body = their_body
    else:
        body = their_body if newer_theirs else our_body
        clashed.append("body")
    stamp = max(to_iso(utcnow()), ours.get("updated") or "", theirs.get("updated") or "")
    merged["updated"] = stamp if stamp not in (theirs.get("updated"), ours.get("updated")) else \
        to_iso(from_iso(stamp) + timedelta(milliseconds=1))  # a version of its own: no push fast-forwards it
    try:
        return normalize_meta(merged), body, kept_here, clashed
    except ValueError:
        return None


# ---------------------------------------------------------------- pulling: what the team left a laptop

#: The most people one pull asks for (a laptop's git identities), and the most records one
#: answer carries (the rest come with the next pull).
MAX_PULL_OWNERS = 20
MAX_PULL_RECORDS = 500
#: How long a session start waits for the daemon's batons before it goes on without them.
START_PULL_SECONDS = 3.0
#: After a pull that failed, session starts pull again only this many seconds later.
PULL_BACKOFF_SECONDS = 60


def for_people(store: VaultStore, owners: Any) -> list[dict[str, Any]]:
    """The daemon's side of a pull (``POST /api/sync/pull`` ``{owners}``): what this team vault
    holds for the people of a hybrid laptop (owners compare in any case, :func:`~.prompts.same_person`):

    - each pending hand-off addressed to one of them (its ``owner``) — a ``shared`` baton or one
      of no owner stays for a start on the daemon's side (two laptops must not both claim it);
    - each baton claimed or cancelled here in the last :data:`CLOSED_BATONS_DAYS` days that is
      addressed to one of them or was left by one of them (a laptop that holds it as pending
      hears it was taken: their other laptop, a teammate);
    - each of their sessions a push brought here that was changed here since (a lead's
      correction of its client, times or billable; an issued invoice's hold), with ``base``: the
      ``updated`` of the version the push brought — under the laptop's own id when it was kept
      apart here (:func:`_as_the_laptops`). The version served is kept (``.served``): the
      laptop's next push is merged against it (:func:`_merged`). When its client or billable
      changed, its turns come along (they were corrected with it).

    Each ``{id, project, kind, text[, base, baseText]}`` (``baseText``: the version the push
    brought, as kept here), at most :data:`MAX_PULL_RECORDS`.

    Raises
    ------
    InvalidFieldError
        ``owners`` is not a list of 1–20 names.
    """
    if not isinstance(owners, list) or not owners or len(owners) > MAX_PULL_OWNERS \
            or not all(isinstance(name, str) and name.strip() and len(name) <= 200 for name in owners):
        raise InvalidFieldError("owners", f"must be a list of 1–{MAX_PULL_OWNERS} names (the people of the laptop)")

    def theirs(owner: Any) -> bool:
        return isinstance(owner, str) and bool(owner.strip()) and any(same_person(owner, name) for name in owners)

    found: list[dict[str, Any]] = []
    for row in index.rows_of_kind(store.conn, RecordKind.HANDOFF.value, None, "pending"):
        text = store.read_text(row["project"], RecordKind.HANDOFF, row["id"])
        try:
            meta, _ = parse_record_text(text or "", row["id"])
        except (CorruptRecordError, ValueError):
            continue
        if meta.get("status") == "pending" and not meta.get("shared") and theirs(meta.get("owner")):
            found.append({"id": row["id"], "project": row["project"], "kind": "handoff", "text": text})
    # batons claimed or cancelled lately that a laptop may hold as pending: addressed to its people
    # (their other laptop took it), or left by them (a teammate took it)
    since = to_iso(utcnow() - timedelta(days=CLOSED_BATONS_DAYS))
    for status in ("claimed", "cancelled"):
        for row in index.rows_of_kind(store.conn, RecordKind.HANDOFF.value, None, status):
            if (row["updated"] or "") < since:
                continue
            text = store.read_text(row["project"], RecordKind.HANDOFF, row["id"])
            try:
                meta, _ = parse_record_text(text or "", row["id"])
                left_by = _session_here(store, row["project"], str(meta.get("fromSessionId")))[1]
            except (CorruptRecordError, MemoError, ValueError):
                continue
            if theirs(meta.get("owner")) or theirs(left_by):
                found.append({"id": row["id"], "project": row["project"], "kind": "handoff", "text": text})
    bases = _dir(store) / "base"
    for base_file in sorted(bases.glob("*/*.md")) if bases.is_dir() else []:
        if len(found) >= MAX_PULL_RECORDS:
            break
        project, record_id = base_file.parent.name, base_file.stem
        live = store.path_for(project, RecordKind.SESSION, record_id)
        if not live.exists():  # moved here since its push (a lead's project rename or merge, a session's move)
            moved = _moved_here(store, project, record_id, base_file, theirs)
            found += [moved] if moved is not None else []
            continue
        try:
            if live.stat().st_mtime_ns < base_file.stat().st_mtime_ns:
                continue  # not written since the push brought it as it is
            base_text, text = base_file.read_text(encoding="utf-8"), live.read_text(encoding="utf-8")
            base, _ = parse_record_text(base_text, record_id)
            meta, _ = parse_record_text(text, record_id)
        except (OSError, CorruptRecordError, ValueError):
            continue
        if (theirs(meta.get("owner")) or theirs(base.get("owner"))) and \
                _changed_here(store, RecordKind.SESSION, meta, text):
            _keep_served(store, project, record_id, meta, text)  # the base of the laptop's next push, if it takes it
            served = [version.read_text(encoding="utf-8") for version in _served_versions(store, project, record_id)
                      if version.read_bytes() != text.encode("utf-8")]
            laptops = _as_the_laptops(meta, text, [base_text, *served])
            found.append({"id": laptops["id"], "project": project, "kind": "session", "text": laptops["text"],
                          "baseText": laptops["baseTexts"][0], "baseTexts": laptops["baseTexts"],
                          "base": base.get("updated")})
            if any(meta.get(key) != base.get(key) for key in ("client", "billable")):
                found += _its_turns(store, project, meta, laptops["id"])  # a correction moves its turns along
    return found[:MAX_PULL_RECORDS]


def _moved_here(store: VaultStore, project: str, record_id: str, base_file: Path,
                theirs: Callable[[Any], bool]) -> dict[str, Any] | None:
    """A pull's news of a session a push brought into ``project`` that this vault moved since to
    another project (``memo project rename|merge``, ``memo session edit --to-project`` on the
    daemon): ``{id, project, kind: "session", text, movedFrom}`` as its laptop names it, so the
    laptop moves it too (:func:`_follow_a_move`) — else each push of it is refused for good
    (:func:`_refuse_moved`). None when it is not one of ``theirs``, is gone, is in several
    projects, or a push of it came under its new project already (the laptop followed)."""
    base = _kept_version(base_file, record_id)
    if base is None or not theirs(base[0].get("owner")):
        return None
    found = []
    # under its id, or kept apart from another person's session of that id where it went (a lead's merge)
    owner, session_id = base[0].get("owner"), str(base[0].get("sessionId") or "")
    ids = [record_id] + ([f"session-{apart_session_id(session_id, owner)}"] if session_id and owner else [])
    for held in dict.fromkeys(ids):
        for row in index.rows_with_id(store.conn, held, RecordKind.SESSION.value):
            if row["project"] == project and held == record_id:
                continue
            pushed_there = _kept_version(_base_path(store, row["project"], held), held)
            if pushed_there is not None and (same_person(pushed_there[0].get("owner"), owner) if owner else True):
                return None  # pushed under its new project since: the laptop holds it there
            text = store.read_text(row["project"], RecordKind.SESSION, held)
            meta = _as_parsed(text, held)
            if meta is None or meta[0].get("created") != base[0].get("created"):
                continue
            if (same_person(meta[0].get("owner"), owner) if owner else meta[0].get("sessionId") == session_id):
                found.append((row["project"], meta[0], text))
    if len(found) != 1:
        return None
    target, meta, text = found[0]
    laptops = _as_the_laptops(meta, str(text), [])
    return {"id": laptops["id"], "project": target, "kind": "session", "text": laptops["text"], "movedFrom": project}


def _follow_a_move(store: VaultStore, meta: dict[str, Any], body: str, moved_from: Any, result: dict[str, Any],
                   pushed: dict[str, Any]) -> dict[str, Any]:
    """Move a session of this laptop, and its turns, where the daemon moved it (a pull's item
    with ``movedFrom``, :func:`_moved_here`), as ``memo session edit --to-project`` does; its
    result (``moved``; ``left`` when this vault holds no such session there; ``kept yours``
    when the move is refused here — on an issued invoice of this vault, say). A session not
    changed here since its push takes the daemon's version, as a pull takes a correction (the
    daemon holds it: the next push builds on it); one changed here is merged with it there."""
    try:
        source = validate_slug(str(moved_from), "movedFrom")
    except InvalidFieldError as exc:
        return {**result, "outcome": "refused", "reason": str(exc)}
    session_id, target = str(meta.get("sessionId") or ""), meta["project"]
    here = store.read(source, RecordKind.SESSION, str(meta["id"]))
    if here is None:  # followed to another project before (the lead's first move), not pushed since
        for row in index.rows_with_id(store.conn, str(meta["id"]), RecordKind.SESSION.value):
            found = store.read(row["project"], RecordKind.SESSION, str(meta["id"])) \
                if row["project"] != target else None
            if found is not None and found[0].get("created") == meta.get("created"):
                source, here = row["project"], found  # a breaker: a second move was "left" and copied back
                break
    if here is None:
        there = store.read(target, RecordKind.SESSION, str(meta["id"])) is not None
        return {**result, "outcome": "unchanged" if there else "left",
                **({} if there else {"reason": f"no session {session_id} in project {source} here"})}
    if here[0].get("created") != meta.get("created"):
        return {**result, "outcome": "left", "reason": f"session {session_id} of project {source} here is another "
                                                       "session of that id"}
    if here[0].get("status") == "active" and not here[0].get("endTime"):
        # open here: its agent's next turns are recorded under the checkout's project (a breaker: a turn
        # stranded beside the moved session, its end refused) — it follows the move once it ends
        return {**result, "outcome": "kept yours", "movedFrom": source,
                "reason": f"the daemon moved it to project {target}; it is open here: it moves at the first pull "
                          "after it ends"}
    from .requests import EditSessionRequest
    from .session_edit import edit_session

    try:
        edit_session(store, EditSessionRequest(session_id=session_id, project=source, to_project=target))
    except MemoError as exc:
        return {**result, "outcome": "kept yours", "movedFrom": source,
                "reason": f"the daemon moved it to project {target}; not here: {str(exc).splitlines()[0][:300]}"}
    as_pushed = pushed.pop(f"{source}/{meta['id']}", None)
    if as_pushed is not None and as_pushed == here[0].get("updated"):
        with store.lock():
            pushed[f"{target}/{meta['id']}"] = meta.get("updated")  # before the write: the daemon has this version
            store.upsert(RecordKind.SESSION, meta, body)
            _turns_bill_as(store, target, session_id, meta)
    elif as_pushed is not None:  # the next push builds on the version it pushed, kept there where it moved
        pushed[f"{target}/{meta['id']}"] = as_pushed
    return {**result, "outcome": "moved", "movedFrom": source}


def _turns_bill_as(store: VaultStore, project: str, session_id: str, session: dict[str, Any]) -> None:
    """The turns of a session whose version the daemon corrected (client, billable) bill as it
    does, as the daemon's turns do (the lead's correction moved them there)."""
    for number in sorted(index.session_turn_numbers(store.conn, project, session_id)):
        found = store.read(project, RecordKind.PROMPT, f"prompt-{session_id}-t{number}")
        if found is not None and any(found[0].get(key) != session.get(key) for key in ("client", "billable")):
            store.upsert(RecordKind.PROMPT, {**found[0], "client": session.get("client"),
                                             "billable": session.get("billable"), "updated": session.get("updated")},
                         found[1])


def _its_turns(store: VaultStore, project: str, meta: dict[str, Any], laptop_id: str) -> list[dict[str, Any]]:
    """The turns of a corrected session here, as its laptop names them (its session kept apart
    here goes back under the laptop's id): a lead's new client or billable reached them too."""
    session_id, theirs = str(meta["sessionId"]), laptop_id.removeprefix("session-")
    turns = []
    for number in sorted(index.session_turn_numbers(store.conn, project, session_id)):
        text = store.read_text(project, RecordKind.PROMPT, f"prompt-{session_id}-t{number}")
        if text is None:
            continue
        if theirs != session_id:
            try:
                turn, body = parse_record_text(text, f"prompt-{session_id}-t{number}")
                text = dump_record(normalize_meta({**turn, "id": f"prompt-{theirs}-t{number}", "sessionId": theirs}),
                                   body)
            except (CorruptRecordError, ValueError):
                continue
        turns.append({"id": f"prompt-{theirs}-t{number}", "project": project, "kind": "prompt", "text": text})
    return turns


#: How far back a pull looks for batons claimed or cancelled that a laptop may hold as pending (days).
CLOSED_BATONS_DAYS = 14


#: The versions of one session the daemon keeps as served by pulls (the newest).
MAX_SERVED_VERSIONS = 8


def _served_dir(store: VaultStore, project: str, record_id: str) -> Path:
    """Where the daemon keeps the versions of a session pulls served, one file per version
    (``<sha256 of its updated>.md``): a laptop that took one builds its next push on it
    (:func:`_merged` merges against it); one that did not still builds on an earlier one."""
    return _dir(store) / "base" / project / f"{record_id}.served"


def _keep_served(store: VaultStore, project: str, record_id: str, meta: dict[str, Any], text: str) -> None:
    """Keep ``text`` (the version of ``meta``) among the served versions of the session, the
    :data:`MAX_SERVED_VERSIONS` newest kept."""
    path = _served_path(store, project, record_id, meta.get("updated"))
    if path.is_file() and path.read_bytes() == text.encode("utf-8"):
        return
    atomic_write_bytes(path, text.encode("utf-8"), durable=False)
    for old in _served_versions(store, project, record_id)[MAX_SERVED_VERSIONS:]:
        old.unlink(missing_ok=True)


def _served_versions(store: VaultStore, project: str, record_id: str) -> list[Path]:
    """The files of the versions of the session pulls served (newest first)."""
    return sorted(_served_dir(store, project, record_id).glob("*.md"), key=lambda one: one.stat().st_mtime_ns,
                  reverse=True)


def _served_path(store: VaultStore, project: str, record_id: str, updated: Any) -> Path:
    """The file of the version of the session with this ``updated`` that a pull served."""
    import hashlib

    return _served_dir(store, project, record_id) / (hashlib.sha256(str(updated).encode("utf-8")).hexdigest()[:32]
                                                     + ".md")


def _served(store: VaultStore, project: str, record_id: str, updated: Any) -> tuple[dict[str, Any], str] | None:
    """The version of the session a pull served with this ``updated``, or None."""
    return _kept_version(_served_path(store, project, record_id, updated), record_id)


def laptops_id(session_id: str, owner: Any) -> str:
    """The id ``owner``'s laptop gave a session this team vault keeps apart under ``session_id``
    (:func:`apart_session_id`), else ``session_id`` itself."""
    original = session_id.rsplit("--", 1)[0] if "--" in session_id else None
    return original if original and isinstance(owner, str) and apart_session_id(original, owner) == session_id \
        else session_id


def _as_the_laptops(meta: dict[str, Any], text: str, bases: list[str]) -> dict[str, Any]:
    """``{id, text, baseTexts}`` of a session as its laptop names it (``bases``: the versions
    the laptop may hold as this vault's — the one it pushed, those pulls served it): a session
    kept apart here (:func:`apart_session_id`: another person's session had its id) goes back
    under the id its person's laptop gave it, so a correction reaches it."""
    session_id, owner = str(meta.get("sessionId") or ""), meta.get("owner")
    original = laptops_id(session_id, owner)
    if original != session_id:
        def renamed(version: str) -> str:
            theirs, body = parse_record_text(version, str(meta["id"]))
            return dump_record(normalize_meta({**theirs, "id": f"session-{original}", "sessionId": original}), body)

        try:
            return {"id": f"session-{original}", "text": renamed(text), "baseTexts": [renamed(one) for one in bases]}
        except (CorruptRecordError, ValueError):
            pass
    return {"id": str(meta["id"]), "text": text, "baseTexts": bases}


#: The most invoiced sessions a pull names (a laptop's people's, of every invoice the daemon issued).
MAX_PULL_INVOICED = 50_000


def invoiced_for_people(store: VaultStore, owners: Any) -> list[dict[str, Any]]:
    """The daemon's side of a pull, too: ``[{project, sessionId, invoice, billedMinutes}]`` of
    each session of the people ``owners`` (:func:`for_people`'s check) on an issued, uncredited
    invoice of this team vault — under the id their laptop gave it (a session kept apart here,
    :func:`apart_session_id`, by its own). A laptop never heard its sessions were invoiced: its
    draft billed them again, and ``--here`` issued them twice (found by a team lead)."""
    from ..vault import ledger

    if not isinstance(owners, list):
        return []
    docs = ledger.documents(store.root)
    minutes = ledger.invoiced_minutes(docs)
    found: list[dict[str, Any]] = []
    for (project, session_id), (number, _, item) in sorted(ledger.invoiced_items(docs).items()):
        rows = index.rows_with_id(store.conn, session_record_id(session_id), RecordKind.SESSION.value)
        meta = next((json.loads(row["meta"]) for row in rows if row["project"] == project), None) if rows else None
        owner = (meta or {}).get("owner") or item.get("owner")
        if not (isinstance(owner, str) and any(same_person(owner, name) for name in owners if isinstance(name, str))):
            continue
        found.append({"project": project, "sessionId": laptops_id(session_id, owner), "invoice": number,
                      "billedMinutes": minutes.get((project, session_id)),
                      # when it was made: the person's other session of that id on another laptop is not it
                      **({"created": meta["created"]} if meta and isinstance(meta.get("created"), str) else {})})
        if len(found) >= MAX_PULL_INVOICED:
            break
    return found


def own_invoices_note(store: VaultStore) -> str | None:
    """Once per vault (then None): what to do with the invoices this laptop issued before it
    pushed to a team daemon — the daemon never hears of them (a push carries no invoice), so an
    invoice issued there billed their sessions again, under a number already sent (found by a
    newcomer). None when this vault issued none."""
    from ..vault import ledger

    state = _load(store, "state.json")
    if state.get("ownInvoicesSaid"):
        return None
    # its own invoices only: what the daemon invoiced (team-invoiced.json) is no invoice of this vault's
    # (found by a breaker and a team lead: "this vault issued 2026-0001", which it could not credit)
    billed = ledger.invoiced_sessions(ledger.documents(store.root))
    if not billed:
        return None
    _save(store, "state.json", {**state, "ownInvoicesSaid": to_iso(utcnow())})
    numbers = sorted(set(billed.values()))
    shown = ", ".join(numbers[:5]) + (" …" if len(numbers) > 5 else "")
    return (f"this vault issued {len(numbers)} invoice{'s' if len(numbers) != 1 else ''} ({shown}) billing "
            f"{len(billed)} session{'s' if len(billed) != 1 else ''} the team daemon now holds, and it does not hear "
            "of them: an invoice issued there bills them again, its numbers starting over. Before the team's next "
            "invoice, copy this vault's invoices/ folder into the daemon's vault (while it has none of its own), "
            "or credit them here and issue them there")


def team_invoiced(store: VaultStore) -> dict[tuple[str, str], tuple[str, int | None]]:
    """What the last pull said of this laptop's sessions the team daemon invoiced:
    ``{(project, sessionId): (invoice number, billed minutes)}`` (empty off hybrid, before a pull)."""
    from ..vault.ledger import team_invoiced as read

    return read(store.root)


def _keep_team_invoiced(store: VaultStore, answer: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Keep the pull's ``invoiced`` list (:func:`invoiced_for_people`) for the ledger to read; the
    invoice numbers the last pull named and this one no longer does (credited there — or a daemon
    restored from a backup forgot an invoice its laptops had heard of: found by a team lead), each
    with the numbers that bill its sessions now (an invoice credited and issued again)."""
    items = answer.get("invoiced")
    if not isinstance(items, list):
        return []  # a daemon of an earlier memo: what was kept stays
    before = team_invoiced(store)
    known = {number for number, _ in before.values()}
    kept = [{"project": item["project"], "sessionId": item["sessionId"], "invoice": item["invoice"],
             "billedMinutes": item["billedMinutes"] if isinstance(item.get("billedMinutes"), int)
             and not isinstance(item.get("billedMinutes"), bool) else None}
            for item in items[:MAX_PULL_INVOICED] if isinstance(item, dict)
            and all(isinstance(item.get(key), str) and item[key] for key in ("project", "sessionId", "invoice"))
            and not _another_of_mine(store, item)]
    _save(store, "team-invoiced.json", {"items": kept, "pulledAt": to_iso(utcnow())})
    gone = known - {item["invoice"] for item in kept}
    now_on = {(item["project"], item["sessionId"]): item["invoice"] for item in kept}
    # an invoice credited and issued again: its sessions on the new one (said as such, not as an alarm)
    again = {number: sorted({now_on[key] for key, (was, _) in before.items() if was == number and key in now_on})
             for number in gone}
    return [(number, again[number]) for number in sorted(gone)]


def _another_of_mine(store: VaultStore, item: dict[str, Any]) -> bool:
    """Whether the daemon's news ``item`` (``{project, sessionId, created}``) is of another session
    than this laptop's of that id — the person's other session, made on another machine (found by
    a breaker: the daemon's invoice of one marked the other invoiced, its move refused)."""
    made = item.get("created")
    if not isinstance(made, str) or not made:
        return False
    here = _created_here(store, str(item["project"]), str(item["sessionId"]))
    return bool(here) and not _same_instant(here, made)


def laptop_people(store: VaultStore, cwd: str | None = None) -> list[str]:
    """Whose work this vault holds, for a pull: the git identity of the repository of ``cwd``
    (else the person's global one), then the owners of its latest sessions, at most
    :data:`MAX_PULL_OWNERS`."""
    from .store import git_identity, repository_root

    named = [git_identity(repository_root(cwd) if cwd else None), *index.session_owners(store.conn)]
    people: list[str] = []
    for name in named:
        if isinstance(name, str) and name.strip() and not any(same_person(name, one) for one in people):
            people.append(name)
    return people[:MAX_PULL_OWNERS]


def pull(store: VaultStore, owners: list[str] | None = None, timeout: float = PUSH_SECONDS,
         now: datetime | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Pull from the daemon what the team left this laptop's people (:func:`for_people`; the
    people: ``owners``, else :func:`laptop_people` of ``cwd``): hand-offs addressed to them (a
    session start here then claims one and shows its next steps, as on the daemon) and
    corrections of their sessions made there.

    A pulled record passes :func:`admit_record` and is written when this vault has no version
    of it, or still holds the one the daemon's change started from (a pending baton as pulled;
    a session as last pushed — its text as the daemon keeps it, ``baseText``, so a hand edit
    here counts as a change): then the daemon holds what is written here (``pushed.json``), and
    the next push builds on it. A baton claimed here, or a session changed here since its push,
    keeps this vault's version: the next push takes it to the daemon, which merges it. Only a
    pending, unshared baton addressed to one of the people asked for is taken.

    ``timeout`` bounds the daemon's answer and, again, the wait for the sync state a push holds
    (a session start waits for neither longer). Returns ``{pulled, results: [{id, project,
    kind, outcome, reason?}], error}``; never raises for network or daemon errors (``error``
    says it; nothing is written)."""
    now = now or utcnow()
    if not hybrid_enabled(store):
        return {"pulled": 0, "results": [], "error": "hybrid sync is off"}
    people = (owners if owners is not None else laptop_people(store, cwd))[:MAX_PULL_OWNERS]
    if not people:
        return {"pulled": 0, "results": [], "error": None,
                "note": "no person to pull for: no session here names an owner and git names no user.email"}
    url = store.settings.hybrid.remote_url.rstrip("/") + "/api/sync/pull"
    _dir(store).mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(_dir(store) / "push.lock"), timeout=max(timeout, 0.5))  # pushed.json is the push's too
    try:
        answer = _post(url, {"owners": people}, store.settings.hybrid.token, timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("records"), list) \
                or not all(isinstance(item, dict) for item in answer["records"]):
            raise ValueError("the answer is not a memo daemon's pull answer")
    except PUSH_FAILURES as exc:
        reason = _failure(exc)
        try:
            with lock:  # session starts skip the pull for a while: a daemon down costs each one nothing
                _save(store, "state.json", {**_load(store, "state.json"), "lastPullError": reason,
                                            "lastPullErrorAt": to_iso(now),
                                            "pullRetryAt": to_iso(now + timedelta(seconds=PULL_BACKOFF_SECONDS))})
        except Timeout:
            pass  # a push holds the state: the error is said to the caller all the same
        return {"pulled": 0, "results": [], "error": reason}
    results: list[dict[str, Any]] = []
    try:
        lock.acquire()
    except Timeout:
        return {"pulled": 0, "results": [], "error": f"a push holds the sync state (over {timeout:g} s): nothing "
                                                      "pulled; the next pull brings it"}
    try:
        forgotten = _keep_team_invoiced(store, answer)
        pushed = _rekey(store, _load(store, "pushed.json"))
        for item in answer["records"][:MAX_PULL_RECORDS]:
            results.append(_pull_one(store, item, pushed, people))
        _save(store, "pushed.json", pushed)
        if any(r["outcome"] in ("pulled", "moved") for r in results):
            with store.lock():  # a pulled version's outbox line: the daemon has it, nothing waits
                held = [e for e in _outbox(store) if pushed.get(_key(e)) is None or pushed.get(_key(e)) != e.get("updated")]
                atomic_write_bytes(_dir(store) / "outbox.jsonl",
                                   "".join(json.dumps(e) + "\n" for e in held).encode("utf-8"))
        state = _load(store, "state.json")
        taken = [r for r in results if r["outcome"] == "pulled"]
        state.update(lastPullAt=to_iso(now), lastPullError=None, lastPullErrorAt=None, pullRetryAt=None,
                     pulled=_newest(taken, state.get("pulled"), "id"),  # the daemon's version is this vault's now:
                     keptOnDaemon=_unsettled(state.get("keptOnDaemon"),  # nothing is kept apart from it there
                                             {(r.get("project"), r["id"]) for r in taken}))
        _save(store, "state.json", state)
    finally:
        lock.release()
    return {"pulled": sum(r["outcome"] == "pulled" for r in results), "results": results, "error": None,
            **({"noLongerInvoiced": [number for number, again in forgotten if not again]}
               if any(not again for _, again in forgotten) else {}),
            **({"invoicedAgain": {number: again for number, again in forgotten if again}}
               if any(again for _, again in forgotten) else {})}


def _as_parsed(text: Any, record_id: str) -> tuple[dict[str, Any], str] | None:
    """``(frontmatter, body)`` of a record text as memo compares versions (normalized), or None."""
    try:
        meta, body = parse_record_text(text, record_id) if isinstance(text, str) else (None, None)
        return (normalize_meta(meta), body) if meta is not None else None
    except (CorruptRecordError, ValueError):
        return None


#: What a lead's correction of a session changes in its turns (``memo session edit``): all a pull may change of one.
_TURN_BILLING_KEYS = ("client", "billable", "updated")


def _only_billing_differs(local: tuple[dict[str, Any], str], pulled: tuple[dict[str, Any], str]) -> bool:
    """Whether a pulled turn differs from this vault's only where a correction of its session
    changes a turn (its client, billable): a turn edited here, or a daemon's answer that
    rewrites its text, is not taken."""
    def rest(version: tuple[dict[str, Any], str]) -> tuple[dict[str, Any], str]:
        return {k: v for k, v in version[0].items() if k not in _TURN_BILLING_KEYS}, version[1]

    return rest(local) == rest(pulled)


def _pull_one(store: VaultStore, item: dict[str, Any], pushed: dict[str, Any], people: list[str]) -> dict[str, Any]:
    """Write one pulled record when this vault may take it (see :func:`pull`); its result."""
    record_id = str(item.get("id", ""))[:200]
    echo = _echo_project(item.get("project"))
    try:
        kind, meta, body = admit_record(store, record_id, item.get("text"))
        if kind not in (RecordKind.HANDOFF, RecordKind.SESSION, RecordKind.PROMPT):
            raise InvalidFieldError("kind", f"a pull brings hand-offs, sessions and their turns, not a {kind.value}")
        if kind is RecordKind.HANDOFF and meta.get("status") == "pending" and not (
                not meta.get("shared")
                and any(same_person(meta.get("owner"), name) for name in people if meta.get("owner"))):
            raise InvalidFieldError("handoff", "a pull takes a pending baton addressed to one of this laptop's "
                                               "people, not a shared or someone else's one")
    except (CorruptRecordError, InvalidFieldError, ValueError) as exc:
        return {"id": record_id, **echo, "outcome": "refused", "reason": str(exc).splitlines()[0][:300]}
    result = {"id": record_id, "project": meta["project"], "kind": kind.value}
    if kind is RecordKind.SESSION and item.get("movedFrom") is not None:
        return _follow_a_move(store, meta, body, item["movedFrom"], result, pushed)
    key = f"{meta['project']}/{record_id}"
    with store.lock():
        try:
            local_text = store.read_text(meta["project"], kind, record_id)
            local = _as_parsed(local_text, record_id) if local_text is not None else None
        except (OSError, UnicodeDecodeError):
            local = None
            local_text = ""
        if local_text is not None and local is None:
            return {**result, "outcome": "kept yours", "reason": "this vault's file cannot be read; left as it is"}
        if local is not None and local == (meta, body):
            return {**result, "outcome": "unchanged"}
        if local is None and kind is not RecordKind.HANDOFF:
            return {**result, "outcome": "left", "reason": f"not a {kind.value} of this vault"}
        if kind is RecordKind.HANDOFF and _anothers_baton_of_a_session_here(store, meta, local):
            # two people named a session alike: the daemon's baton is not this laptop's session's
            return {**result, "outcome": "left", "reason": f"session {meta.get('fromSessionId')} of this vault is "
                    "another session of that id; the baton stays on the daemon (a start there claims it)"}
        if kind is RecordKind.HANDOFF and meta.get("status") != "pending" and local is None:
            # claimed or cancelled there: news only for a laptop that holds it as pending
            return {**result, "outcome": "left", "reason": f"{meta.get('status')} on the daemon, not held here"}
        if local is not None and kind is RecordKind.HANDOFF and local[0].get("status") != "pending":
            return {**result, "outcome": "kept yours", "reason": f"{local[0].get('status')} here: the next push takes it"}
        if kind is RecordKind.SESSION:  # the versions the daemon knows this laptop held: pushed, or pulled
            texts = item.get("baseTexts") if isinstance(item.get("baseTexts"), list) else [item.get("baseText")]
            bases = [parsed for parsed in (_as_parsed(one, record_id) for one in texts[:MAX_SERVED_VERSIONS + 1])
                     if parsed is not None]
        unchanged_since_push = local is not None and local[0].get("updated") == pushed.get(key) and (
            local in bases if kind is RecordKind.SESSION and bases else  # a hand edit keeps `updated`: text tells
            _only_billing_differs(local, (meta, body)) if kind is RecordKind.PROMPT else
            kind is not RecordKind.SESSION or local[0].get("updated") == item.get("base"))
        if local is not None and not unchanged_since_push:
            return {**result, "outcome": "kept yours",
                    "reason": "changed here since your push: the next push merges it with the daemon's change"}
        # what an issued invoice of this vault billed of the session stays as it billed it: an edit
        # here is refused, and the daemon's "correction" of an invoiced client or times was taken
        meta, invoiced = _as_invoiced(store, kind, local[0] if local is not None else {}, meta)
        pushed[key] = meta.get("updated")  # before the write: its outbox line is a version the daemon has
        store.upsert(kind, meta, body)
    return {**result, "outcome": "pulled", **invoiced}


def _anothers_baton_of_a_session_here(store: VaultStore, meta: dict[str, Any],
                                      local: tuple[dict[str, Any], str] | None) -> bool:
    """Whether a pulled hand-off is another session's of the id of a session this vault holds —
    two people who named a session alike (the daemon keeps theirs apart): none here, or one left
    at another time than the one here (this session's own). Its own baton's news passes."""
    if local is not None and local[0].get("created") == meta.get("created"):
        return False
    session_id = str(meta.get("fromSessionId") or "")
    try:
        return bool(session_id) and store.read(meta["project"], RecordKind.SESSION, f"session-{session_id}") is not None
    except MemoError:
        return True  # a session file here that cannot be read: its baton is not overwritten either


def pull_before_start(store: VaultStore, cwd: str | None, owner: str | None = None) -> str | None:
    """Before a session start of a hybrid laptop: pull the batons the team left its people
    (:func:`pull`, waiting at most :data:`START_PULL_SECONDS`), so the start claims one and shows
    its next steps; skipped while a failed push waits out its backoff, and for
    :data:`PULL_BACKOFF_SECONDS` after a failed pull (the daemon is down: a start must not wait
    for it each time). Never raises; a line on what it did, or None."""
    if not hybrid_enabled(store):
        return None
    try:
        state = _load(store, "state.json")
        for key, what in (("nextRetryAt", "push"), ("pullRetryAt", "pull")):
            if state.get(key) and utcnow() < from_iso(state[key]):
                return f"pull skipped: the daemon is waited out after a failed {what} (until {state[key]})"
        people = laptop_people(store, cwd)
        if owner and owner.strip() and not any(same_person(owner, one) for one in people):
            people = [owner.strip(), *people][:MAX_PULL_OWNERS]
        result = pull(store, people, timeout=START_PULL_SECONDS)
    except Exception as exc:  # noqa: BLE001 - a start never fails on the sync's account
        return f"pull failed: {type(exc).__name__}"
    return f"pull failed: {result['error']}" if result["error"] else f"pulled {result['pulled']} from the daemon"


def start_after_pull(store: VaultStore, request: Any) -> dict[str, Any]:
    """``session_start`` (:func:`~.sessions.start_session`); on a hybrid laptop the batons the
    team left its person are pulled first (:func:`pull_before_start`), so the start can claim
    one (SPEC §2.5, §2.7)."""
    from .sessions import start_session

    pull_before_start(store, request.cwd, request.owner)
    started = start_session(store, request)
    if started.get("handoff"):
        push_a_claim(store)
    return started


def push_a_claim(store: VaultStore) -> None:
    """After a start here claimed a baton: push at once (waiting at most
    :data:`START_PULL_SECONDS`), so the daemon marks it claimed before the person's other
    laptop pulls it; what does not go now goes with the next push. Never raises."""
    if not hybrid_enabled(store):
        return
    try:
        push(store, force=True, timeout=START_PULL_SECONDS)
    except Exception as exc:  # noqa: BLE001 - a start never fails on the sync's account
        log.warning("memo sync push after a claim failed: %s: %s", type(exc).__name__, exc)

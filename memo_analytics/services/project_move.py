"""``memo project rename|merge``: give a project its real name, or fold one into another
(SPEC §9, issue 15 point 5) — imports named eight projects after temporary folders.

Every record of the source project (turns, sessions, traps, decisions, hand-offs) is written
into the target project with ``project`` set to it, through the store (validation, the index
in the same step, the sync listeners), and then removed from the source; the source's
``project.toml`` moves when the target has none. ``rename`` wants a target that does not
exist yet; ``merge`` folds into an existing one and refuses, before anything moves, when the
two hold records of the same id that differ (the list names them). A run cut short (killed)
is finished by running it again: a record already in the target with the same content is
only removed from the source.

Sessions on an issued invoice no credit note cancels do not move: the invoice that was sent
names their project (``memo invoice credit`` first).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..domain.clock import to_iso, utcnow
from ..domain.errors import InvalidFieldError
from ..domain.ids import validate_slug
from ..domain.records import RecordKind
from ..index import store as index
from ..vault import ledger
from ..vault.io import read_json_state, write_json_state
from .projects import last_seen_root, move_seen_root, project_file
from .store import VaultStore, project_from_cwd

#: A rename under way (``{source, target}`` in ``<vault>/.memo/``): a run cut short is finished by
#: running the same rename again.
RENAMING_FILE = "renaming.json"

#: The record kinds, sessions last: a session moves after its turns.
_ORDER = (RecordKind.PROMPT, RecordKind.TRAP, RecordKind.DECISION, RecordKind.HANDOFF, RecordKind.SESSION)


def move_cut_short(store: VaultStore) -> dict[str, Any] | None:
    """``{source, target[, merge]}`` of a ``memo project rename|merge`` cut short (killed) in this
    vault, else None: until it is run again, records may be in both projects — counted twice by
    reports, ids ambiguous (found by a reliability tester: nothing said so)."""
    found = read_json_state(store.layout.meta_dir / RENAMING_FILE)
    if not isinstance(found, dict) or not isinstance(found.get("source"), str) or not isinstance(found.get("target"), str):
        return None
    return found


def cut_short_note(under_way: dict[str, Any]) -> str:
    """What a cut-short move (:func:`move_cut_short`) means, and the command that finishes it."""
    verb = "merge" if under_way.get("merge") else "rename"
    return (f"a {verb} of project {under_way.get('source')} {'into' if verb == 'merge' else 'to'} "
            f"{under_way.get('target')} was cut short: some records are in both (reports count them twice); finish "
            f"it first: memo project {verb} {under_way.get('source')} {under_way.get('target')}")


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    ignore = {"project", "updated"}
    return {k: v for k, v in a.items() if k not in ignore} == {k: v for k, v in b.items() if k not in ignore}


def move_project(store: VaultStore, source: str, target: str, merge: bool = False, now=None) -> dict[str, Any]:
    """Move every record of ``source`` into ``target``.

    Returns
    -------
    dict
        ``{source, target, moved: {kind: n}, alreadyThere (int)[, checkout, checkoutProject]}`` —
        ``checkout``: the repository this machine saw ``source`` in, whose folder's name still files
        what is recorded there under ``checkoutProject``, not ``target``.

    Raises
    ------
    InvalidFieldError
        A bad or equal project id; ``source`` has no records; ``target`` exists (rename) or
        does not (merge); records of the same id that differ (``id``, naming them); a session
        on an issued invoice (``project``, naming the invoice).
    """
    now = now or utcnow()
    source, target = validate_slug(source, "project"), validate_slug(target, "project")
    if source == target:
        raise InvalidFieldError("project", f"{source} is already called so")
    with store.lock():
        conn = store.conn
        rows = {kind: index.rows_of_kind(conn, kind.value, project=source) for kind in _ORDER}
        # a baton of a session this vault does not hold (a teammate's, pulled from the team daemon) is the
        # daemon's project's: it stays (moved, the daemon refused it, and it was claimed twice here)
        rows[RecordKind.HANDOFF] = [row for row in rows[RecordKind.HANDOFF] if _its_session_here(store, source, row)]
        marker = store.layout.meta_dir / RENAMING_FILE
        under_way = read_json_state(marker)
        cut_short = under_way == {"source": source, "target": target, **({"merge": True} if merge else {})}
        if under_way and not cut_short and source in (under_way.get("source"), under_way.get("target")):
            raise InvalidFieldError("project", cut_short_note(under_way))
        if not any(rows.values()):
            if cut_short:  # every record had moved when it was cut short: what is left is the folder's
                _clear_folder(store, source, target)
                marker.unlink(missing_ok=True)
                return {"source": source, "target": target, "moved": {}, "alreadyThere": 0}
            raise InvalidFieldError("project", f"project {source} has no records")
        target_ids = {r["id"] for kind in _ORDER for r in index.rows_of_kind(conn, kind.value, project=target)}
        source_ids = {r["id"] for kind in _ORDER for r in rows[kind]}
        # a target holding only copies, or what a rename into it cut short (killed) moved, is that rename's
        if not merge and target_ids - source_ids and not cut_short:
            raise InvalidFieldError("project", f"project {target} exists; fold {source} into it with "
                                               f"memo project merge {source} {target}")
        if merge and not target_ids:
            raise InvalidFieldError("project", f"project {target} has no records; rename {source} to it with "
                                               f"memo project rename {source} {target}")
        invoiced = ledger.invoiced_in(store.root)
        on_invoice = sorted({number for (project, _), number in invoiced.items() if project == source})
        if on_invoice:
            raise InvalidFieldError("project", f"project {source} has sessions on invoice {', '.join(on_invoice)}, "
                                               "which names the project; credit it first (memo invoice credit)")
        apart = _keep_peoples_sessions_apart(store, source, target, target_ids, now) \
            if merge and target_ids & source_ids else []
        if apart:  # the renamed sessions and turns no longer clash: read the source again
            rows = {kind: index.rows_of_kind(conn, kind.value, project=source) for kind in _ORDER}
            rows[RecordKind.HANDOFF] = [row for row in rows[RecordKind.HANDOFF]
                                        if _its_session_here(store, source, row)]
        clashes = []
        for kind in _ORDER:
            for row in rows[kind]:
                if row["id"] in target_ids:
                    mine, theirs = store.read(source, kind, row["id"]), store.read(target, kind, row["id"])
                    if mine is None or theirs is None or not _same(mine[0], theirs[0]) or mine[1] != theirs[1]:
                        clashes.append(row["id"])
        if clashes:
            shown = ", ".join(clashes[:5]) + (f" and {len(clashes) - 5} more" if len(clashes) > 5 else "")
            raise InvalidFieldError("id", f"{len(clashes)} records of {source} and {target} share an id but differ "
                                          f"({shown}); nothing was moved")
        moved: dict[str, int] = {}
        already = 0
        # said before the first record moves: running it again finishes it (every command says so until then)
        write_json_state(marker, {"source": source, "target": target, **({"merge": True} if merge else {})})
        with store.deferred_views():
            _move_records(store, rows, source, target, target_ids, moved, now)
            already = sum(1 for kind in _ORDER for r in rows[kind] if r["id"] in target_ids)
        from .sync import rekey_project

        rekey_project(store, source, target)  # what the team daemon holds of them: their versions follow
        _clear_folder(store, source, target)
        marker.unlink(missing_ok=True)
    # the checkout this machine saw it in still bears the old name: what it records next goes there
    root = last_seen_root(store, target)
    named = project_from_cwd(root) if root is not None else None
    again = {"checkout": str(root), "checkoutProject": named} if named and named != target else {}
    return {"source": source, "target": target, "moved": moved, "alreadyThere": already, **again,
            **({"keptApart": apart} if apart else {})}


def _keep_peoples_sessions_apart(store: VaultStore, source: str, target: str, target_ids: set[str],
                                 now) -> list[dict[str, str]]:
    """Before a merge: each session of ``source`` whose id a session of ``target`` has, that is
    another person's (both name an owner, not the same one), goes under the id a team daemon keeps
    it apart by (:func:`~.sync.apart_session_id`), its turns and hand-off with it — two people's
    ``fix`` refused the merge for good (found by a team lead). Not on a hybrid laptop: its sessions'
    ids are the team daemon's too. ``[{owner, sessionId, keptAs}]``."""
    from .prompts import same_person
    from .sync import apart_session_id

    if store.settings.mode == "hybrid":
        return []
    renamed = []
    for row in index.rows_of_kind(store.conn, RecordKind.SESSION.value, project=source):
        if row["id"] not in target_ids:
            continue
        mine, theirs = store.read(source, RecordKind.SESSION, row["id"]), store.read(target, RecordKind.SESSION, row["id"])
        owner = mine[0].get("owner") if mine else None
        other = theirs[0].get("owner") if theirs else None
        if not (isinstance(owner, str) and owner.strip() and isinstance(other, str) and other.strip()) \
                or same_person(owner, other):
            continue
        session_id = str(mine[0].get("sessionId"))
        kept_as = apart_session_id(session_id, owner)
        if any(store.read(project, RecordKind.SESSION, f"session-{kept_as}") is not None for project in (source, target)):
            continue
        stamp = to_iso(now)
        for number in sorted(index.session_turn_numbers(store.conn, source, session_id)):
            turn = store.read(source, RecordKind.PROMPT, f"prompt-{session_id}-t{number}")
            if turn is not None:
                store.upsert(RecordKind.PROMPT, {**turn[0], "id": f"prompt-{kept_as}-t{number}", "sessionId": kept_as,
                                                 "updated": stamp}, turn[1])
                store.remove(RecordKind.PROMPT, source, f"prompt-{session_id}-t{number}")
        baton = store.read(source, RecordKind.HANDOFF, f"handoff-{session_id}")
        if baton is not None:
            store.upsert(RecordKind.HANDOFF, {**baton[0], "id": f"handoff-{kept_as}", "fromSessionId": kept_as,
                                              "updated": stamp}, baton[1])
            store.remove(RecordKind.HANDOFF, source, f"handoff-{session_id}")
        store.upsert(RecordKind.SESSION, {**mine[0], "id": f"session-{kept_as}", "sessionId": kept_as, "updated": stamp},
                     mine[1])
        store.remove(RecordKind.SESSION, source, row["id"])
        renamed.append({"owner": owner, "sessionId": session_id, "keptAs": kept_as})
    return renamed


def _move_records(store: VaultStore, rows, source: str, target: str, target_ids: set[str], moved: dict[str, int],
                  now) -> None:
    for kind in _ORDER:
        for row in rows[kind]:
            found = store.read(source, kind, row["id"])
            if found is None:
                continue
            meta, body = found
            if row["id"] not in target_ids:
                store.upsert(kind, {**meta, "project": target, "updated": to_iso(now)}, body)
                moved[kind.value] = moved.get(kind.value, 0) + 1
            store.remove(kind, source, row["id"])


def _its_session_here(store: VaultStore, project: str, row) -> bool:
    """Whether the session a hand-off of ``project`` was left by is in this vault's ``project``."""
    try:
        meta = json.loads(row["meta"]) if row["meta"] else {}
    except ValueError:
        return True
    left_by = meta.get("fromSessionId")
    return not isinstance(left_by, str) or index.get_row(store.conn, project, f"session-{left_by}",
                                                         RecordKind.SESSION.value) is not None


def _clear_folder(store: VaultStore, source: str, target: str) -> None:
    """The source's ``project.toml`` to the target (when it has none), its compiled views and
    empty folders gone; anything else left in it stays (and keeps the folder)."""
    old, new = project_file(store, source), project_file(store, target)
    move_seen_root(store, source, target)
    if old.is_file():
        if new.exists():
            os.unlink(old)
        else:
            os.replace(old, new)
    folder = store.layout.project_dir(source)
    for view in ("PROMPTS.md", "SESSIONS.md", "INDEX.md", "TRAPS.md", "DECISIONS.md"):
        if (folder / view).is_file():
            os.unlink(folder / view)
    for sub in sorted(folder.glob("*"), reverse=True):
        if sub.is_dir() and not sub.is_symlink() and not any(sub.iterdir()):
            sub.rmdir()
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    store.refresh_views(target)

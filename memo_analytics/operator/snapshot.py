"""The records the operator digest joins (SPEC §6), read from the index of a vault and of
every further configured vault: one snapshot, shared by the digest pass
(:mod:`.service`) and the actions that re-check an item before they act (:mod:`.acting`)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from ..analytics.frames import vault_sources
from ..domain.clock import from_iso, to_iso
from ..domain.errors import MemoError
from ..domain.records import RecordKind
from ..index import snapshot as rows
from ..services.store import VaultStore, project_from_cwd
from ..services.sync import pushed_here
from ..vault import ledger
from ..vault.conflicts import conflict_files, conflict_record_id
from .digest import Snapshot


def _invoices(root: Path) -> list[ledger.Document]:
    """The vault's issued documents; none when its invoices folder cannot be read (``memo
    invoice list`` names the file)."""
    try:
        return ledger.documents(root)
    except (MemoError, OSError):
        return []


def _duplicate_invoices(docs: list[ledger.Document]) -> list[dict[str, Any]]:
    """``{number, refs, client, created}`` of each invoice number two uncredited invoices of the
    vault carry (:func:`~memo_analytics.vault.ledger.duplicate_numbers`), and of each invoice two
    credit notes cancel (``creditedTwice``; ``refs`` the notes, with the last one's ``gross``,
    ``currency``: :func:`~memo_analytics.vault.ledger.credited_twice`)."""
    by_ref = {doc.ref: doc for doc in docs}
    return [{"number": number, "refs": refs, "client": str(by_ref[refs[-1]].meta.get("client") or ""),
             "created": str(by_ref[refs[-1]].meta.get("createdAt") or to_iso(datetime.now(timezone.utc)))}
            for number, refs in ledger.duplicate_numbers(docs).items()] + [
        # an invoice two credit notes cancel (two machines credited it before they synced): the
        # client was credited twice — said by `memo invoice list` only, the digest was silent
        {"number": invoice, "refs": notes, "creditedTwice": True, "client": str(by_ref[notes[-1]].meta.get("client") or ""),
         "gross": str(by_ref[notes[-1]].meta.get("gross") or ""), "currency": str(by_ref[notes[-1]].meta.get("currency") or ""),
         "created": str(by_ref[notes[-1]].meta.get("createdAt") or to_iso(datetime.now(timezone.utc)))}
        for invoice, notes in ledger.credited_twice(docs).items()]


def _invoiced_changed(conns: list[Any], docs: list[ledger.Document]) -> list[dict[str, Any]]:
    """The session records that differ from the uncredited invoice that billed them
    (:func:`~memo_analytics.vault.ledger.differs_from_invoice`: a vault-git pull, or a hand edit,
    changed them after it was issued), each with ``invoice``, ``fields``, ``asInvoiced`` and
    ``created`` (the record's last write: when it began to differ); and those whose record the
    index no longer holds, with ``missing`` true and ``fields`` ``["record"]``. ``conns``: the
    indexes of every vault read (an invoice bills the sessions of further vaults too: each was
    called gone from the vault, found by a billing person)."""
    items = ledger.invoiced_items(docs)
    found, seen = [], set()
    for session in [one for conn in conns for one in rows.sessions_keyed(conn, list(items))]:
        if (str(session.get("project")), str(session.get("sessionId"))) in seen:
            continue
        key = (str(session.get("project")), str(session.get("sessionId")))
        seen.add(key)
        number, client, item = items[key]
        fields = ledger.differs_from_invoice(session, client, item)
        if fields:
            found.append({**session, "invoice": number, "fields": fields, "asInvoiced": ledger.as_invoiced(client, item),
                          "created": str(session.get("updated") or session.get("created") or "")})
    # a billed session whose record is gone from the index (its file deleted, or one reindex cannot
    # read): reports leave its minutes out while the invoice bills them — said once by reindex,
    # then silent; listed (as of now: when it went is not known) until the file is back
    now = to_iso(datetime.now(timezone.utc))
    for key in sorted(set(items) - seen):
        number, client, item = items[key]
        found.append({"id": f"session-{key[1]}", "project": key[0], "sessionId": key[1], "invoice": number,
                      "fields": ["record"], "missing": True, "asInvoiced": ledger.as_invoiced(client, item),
                      "durationMinutes": item.get("billedMinutes", item.get("durationMinutes")), "created": now})
    return found


#: How far back (days) an issued invoice's period is looked at for work recorded after it.
LATE_WORK_DAYS = 62


def _late_work(store: VaultStore, moment: datetime) -> list[dict[str, Any]]:
    """Billable ended sessions of the vault on no invoice whose start lies in the period of an
    issued, uncredited invoice of their client that ended in the last :data:`LATE_WORK_DAYS` days
    (recorded, pulled or imported after it was issued: the month was billed, this work was not,
    and nothing said so — found by two billing people), each with ``invoice``, ``periodStart``,
    ``periodEnd``, ``invoiceClient`` and ``billedMinutes`` (what an invoice of that period bills
    of it now: rounded, its overlap with invoiced work left out, as ``memo activity``); and the
    sessions of a credited invoice that no invoice bills now (``creditedBy``: its credit note)."""
    docs = _invoices(store.root)
    credited = ledger.credited(docs)
    since = (moment - timedelta(days=LATE_WORK_DAYS)).date().isoformat()
    invoices = [doc for doc in docs if doc.kind == ledger.INVOICE and doc.ref not in credited
                and str(doc.meta.get("periodEnd") or "") >= since and doc.meta.get("periodStart")]
    # a credited invoice's sessions now on no invoice: its credit note took them back, nothing bills them
    # until an invoice is issued again (found by an accountant: the digest said nothing after a credit)
    taken_back = [doc for doc in docs if doc.kind == ledger.INVOICE and doc.ref in credited
                  and str(doc.meta.get("periodEnd") or "") >= since and doc.meta.get("periodStart")]
    was_billed = {doc.ref: {(s.get("project"), s.get("sessionId")) for s in doc.meta.get("sessions") or []}
                  for doc in taken_back}
    replaced = {str(doc.meta.get("replaces")) for doc in docs if doc.meta.get("replaces")}
    invoices += taken_back
    if not invoices:
        return []
    billed = ledger.invoiced_in(store.root, docs)
    zone = store.zone
    from ..services.sync import received_sessions

    arrived = received_sessions(store)  # a team daemon's: when each pushed session came
    first = min(str(doc.meta["periodStart"]) for doc in invoices)
    found = []
    for session in rows.sessions_ended_since(store.conn, first):
        client = str(session.get("client") or "").strip().casefold()
        if session.get("billable") is False or not client or not session.get("durationMinutes") \
                or (session.get("project"), session.get("sessionId")) in billed:
            continue
        day = from_iso(session["startTime"]).astimezone(zone).date().isoformat()
        # written after the invoice was made: one there as it is when it was issued was left out of it on
        # purpose (another project's, under an invoice of one project: found by a breaker). A session
        # started by hand carries its start as ``created``: its last write tells when it was recorded —
        # for an import, when this vault wrote its file (its ``updated`` is the transcript's last time:
        # found by an integrator). A session a credited invoice billed is on no invoice now, whenever written
        recorded = _written_at(store.root, session, arrived)
        key = (session.get("project"), session.get("sessionId"))
        matching = [doc for doc in invoices
                    if str(doc.meta.get("client") or "").strip().casefold() == client
                    and str(doc.meta["periodStart"]) <= day <= str(doc.meta["periodEnd"])
                    # a credited invoice: only the sessions it billed (a breaker: "this session it billed" of another)
                    and (key in was_billed[doc.ref] if doc.ref in was_billed else _written_after(recorded, doc.meta,
                                                                                                  zone))]
        if matching:
            # the invoice of its project, else the latest (found by an accountant: the item named a 0.25 h
            # invoice of another project, issued before the month's own)
            doc = max(matching, key=lambda d: (session.get("project") in {s.get("project") for s in
                                                                       d.meta.get("sessions") or []},
                                               str(d.meta.get("createdAt") or d.meta.get("issued") or "")))
            found.append({**session, "invoice": doc.number, "periodStart": str(doc.meta["periodStart"]),
                          "periodEnd": str(doc.meta["periodEnd"]), "invoiceClient": str(doc.meta.get("client")),
                          "recordedAt": recorded or None,
                          **({"creditedBy": credited[doc.ref], "replaced": doc.number in replaced,
                              "invoiceProjects": sorted({str(s.get("project")) for s in doc.meta.get("sessions") or []})}
                             if doc.ref in credited else {}),
                          "hybridLaptop": getattr(store.settings, "mode", None) == "hybrid"})
    billed_now: dict[tuple[str, str, str], dict[tuple[Any, Any], Any]] = {}
    for late in found:
        period = (late["invoiceClient"], late["periodStart"], late["periodEnd"])
        if period not in billed_now:
            billed_now[period] = _billed_minutes(store, *period)
        minutes = billed_now[period].get((late.get("project"), late.get("sessionId")))
        if minutes is not None:
            late["billedMinutes"] = minutes
    return [late for late in found if late.get("billedMinutes") != 0]  # within invoiced work: nothing to bill


def _conflict_owner(conn: Any, path: Path) -> dict[str, str]:
    """``{"owner": …}`` of a conflict file: its record's, else its session's (a turn names none),
    else ``{}`` — the digest's item named nobody (found by a team lead)."""
    from ..vault.io import parse_record_text

    try:
        meta, _ = parse_record_text(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, MemoError, ValueError):
        return {}
    owner = meta.get("owner")
    if not (isinstance(owner, str) and owner.strip()) and isinstance(meta.get("sessionId"), str):
        found = rows.sessions_keyed(conn, [(path.parent.parent.name, meta["sessionId"])])
        owner = found[0].get("owner") if found else None
    return {"owner": owner} if isinstance(owner, str) and owner.strip() else {}


def _written_at(root: Any, session: dict[str, Any], arrived: dict[str, str] | None = None) -> str:
    """When ``session`` was last written here (UTC ISO, ``""`` unknown): its ``updated``, and for
    an imported session the later of that and its file's modification time (``_path``, under
    ``root``: its ``updated`` is the transcript's last time) — not for another (a vault copied or
    restored has every file new: found by a breaker); on a team daemon, the later of that and
    when its last pushed version arrived (``arrived``: its ``updated`` is the laptop's clock)."""
    written = str(session.get("updated") or "")
    came = (arrived or {}).get(f"{session.get('project')}/{session.get('id')}")
    if came:
        try:
            if not written or from_iso(came) > from_iso(written):
                written = came
        except ValueError:
            pass
    if not str(session.get("source") or "").startswith("import:"):
        return written
    try:
        stamp = datetime.fromtimestamp((root / session["_path"]).stat().st_mtime, tz=timezone.utc)
    except (KeyError, TypeError, OSError, ValueError, OverflowError):
        return written
    try:
        if written and from_iso(written) >= stamp:
            return written
    except ValueError:
        pass
    return to_iso(stamp)


def _written_after(written: str, invoice: dict[str, Any], zone: Any) -> bool:
    """Whether a record last written at ``written`` (UTC ISO) was written after ``invoice`` was
    made (its ``createdAt``; an invoice of none: on its ``issued`` day or later, in ``zone``)."""
    if not written:
        return True
    made = str(invoice.get("createdAt") or "")
    try:
        if made:
            return from_iso(written) > from_iso(made)
        return from_iso(written).astimezone(zone).date().isoformat() >= str(invoice.get("issued") or "")
    except ValueError:
        return True


def _billed_minutes(store: VaultStore, client: str, since: str, until: str) -> dict[tuple[Any, Any], Any]:
    """``(project, session id) → billed minutes`` of ``client``'s sessions of a period, as
    ``memo activity`` bills them (empty when the report cannot be made)."""
    from ..analytics.activity import ActivityRequest, activity_report

    try:
        report = activity_report(store, ActivityRequest(since=since, until=until, client=client), say_left_out=False)
    except (MemoError, ValueError):
        return {}
    return {(item["project"], item["sessionId"]): item["billedMinutes"] for item in report.sessions
            if item.get("billedMinutes") is not None}


def take_snapshot(store: VaultStore, moment: datetime | None = None) -> Snapshot:
    """The records the digest joins, read from the index of ``store``'s vault and of every
    further configured vault (read-only; their records carry ``_vault``). ``moment`` (UTC; now
    when None): the month whose retainers it reads (:func:`_retainers`)."""
    from ..services.projects import last_seen_root

    moment = moment or datetime.now(timezone.utc)
    snapshot = Snapshot()
    known: dict[str, str | None] = {}  # project → its repository on this machine (lastSeenRoot), if known
    owners: dict[str, str | None] = {}  # project → the project whose checkout that repository is
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
                if name == "rule_traps":  # a rule is promoted into its project's repository, if known here
                    for record in found:
                        project = record["project"]
                        if not further and project not in known:
                            root = last_seen_root(store, project)
                            known[project] = str(root) if root is not None else None
                            # whose folder it is: a turn recorded with --project web in shop's checkout made
                            # it web's, and web's rules (another client's) were proposed for shop's file
                            owners[project] = project_from_cwd(root) if root is not None else None
                        record["_repository"] = None if further else known[project]
                        record["_repositoryProject"] = None if further else owners.get(project)
                getattr(snapshot, name).extend(found)
            # what moved in the last day (the "moving" lane: context, nothing to do), from two days
            # back as text: the digest compares the instants
            recent = (moment - timedelta(days=2)).date().isoformat()
            for name, query in (("ended_sessions", rows.sessions_ended_since),
                                ("claimed_handoffs", rows.handoffs_claimed_since)):
                getattr(snapshot, name).extend({**record, **({"_vault": source.vault} if further else {})}
                                               for record in query(source.conn, recent))
            if not further:  # a further vault's transcripts are another machine's files
                snapshot.live_conversations += _live_conversations(
                    source.conn, moment, lambda project, sid: pushed_here(store, project, sid))
            root = Path(source.vault)
            docs = _invoices(root)
            snapshot.duplicate_invoices += [{**twice, **({"_vault": source.vault} if further else {})}
                                            for twice in _duplicate_invoices(docs)]
            snapshot.invoiced_changed += [{**changed, **({"_vault": source.vault} if further else {})}
                                          for changed in _invoiced_changed(
                                              [source.conn] + [other.conn for other in sources if other is not source],
                                              docs)]
            billed = ledger.invoiced_items(docs)  # an invoiced long session was sent as it is: not asked again
            limit = round(store.settings.operator.open_too_long_hours * 60)
            snapshot.long_sessions += [{**session, **({"_vault": source.vault} if further else {})}
                                       for session in rows.long_sessions(source.conn, limit)
                                       if (session.get("project"), session.get("sessionId")) not in billed]
            for path in conflict_files(root / "projects"):
                record_path = path.with_name(f"{conflict_record_id(path)}.md")
                snapshot.sync_conflicts.append({
                    "recordId": conflict_record_id(path), "project": path.parent.parent.name,
                    "path": str(path), "recordPath": str(record_path), **({"_vault": source.vault} if further else {}),
                    "created": to_iso(datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)),
                    **_conflict_owner(source.conn, path),
                })
    snapshot.late_sessions = _late_work(store, moment)
    snapshot.unfiled_sessions, mapped = _unfiled_sessions(store)
    snapshot.unbilled_sessions += mapped
    snapshot.terms_differ = _terms_differ(store)
    snapshot.retainers = _retainers(store, moment)
    snapshot.unreadable_sessions = _unreadable_sessions(store, snapshot)
    snapshot.held_back = _held_back(store)
    snapshot.team_billed_too = _team_billed_too(store)
    from ..services.sync import push_trouble

    try:
        snapshot.push_trouble = push_trouble(store)
    except (OSError, MemoError, ValueError):
        snapshot.push_trouble = None
    snapshot.hybrid_laptop = getattr(store.settings, "mode", None) == "hybrid"
    _with_transcript_activity(snapshot.open_sessions, store.settings.idle_gap_minutes,
                              lambda project, sid: pushed_here(store, project, sid))
    return snapshot


def _with_transcript_activity(sessions: list[dict[str, Any]], idle_gap_minutes: int,
                              pushed: Callable[[str, str], bool] = lambda project, sid: False) -> None:
    """``lastActivityAt`` on each open hook session whose agent's transcript was written after its
    last turn: the agent works on after a prompt (an hour alone is an hour of work), and a session
    judged by its prompts alone was ended as stalled, 0 minutes billed, while the agent wrote.

    ``answeredUntil`` on an open hook session with a turn whose agent's transcript this machine
    cannot read (Cursor, Copilot; a remote caller's): its answer to the last prompt is unseen, so
    it counts up to an idle gap of it, as the capture ends such a session (SPEC §2.5). The
    proposal to end it stalled ended it at the prompt: 0 minutes for a one-prompt session."""
    from ..domain.clock import from_iso
    from ..services.capture import transcript_written

    now = datetime.now(timezone.utc)
    for session in sessions:
        if session.get("_vault"):
            continue  # a further vault's paths are another machine's
        # a session a laptop pushed here names a file of that laptop: never read here
        mine = not pushed(str(session.get("project")), str(session.get("sessionId")))
        written = transcript_written(session.get("transcriptPath"), now) if mine else None
        last = session.get("lastTurnAt") or session.get("startTime")
        if written is not None and last and written > from_iso(str(last)):
            session["lastActivityAt"] = to_iso(written)
        elif written is None and session.get("lastTurnAt") and str(session.get("source") or "").startswith("hook:"):
            answered = from_iso(str(session["lastTurnAt"])) + timedelta(minutes=idle_gap_minutes)
            session["answeredUntil"] = to_iso(answered)


def _live_conversations(conn: Any, moment: datetime,
                        pushed: Callable[[str, str], bool] = lambda project, sid: False) -> list[dict[str, Any]]:
    """Each conversation an import took in while its hook session was open and whose agent has
    not ended it (:func:`~memo_analytics.index.snapshot.live_imported_conversations`), as
    ``{sessionId, project, owner, hookSessionId, startTime, lastActivityAt}``: ``sessionId`` the
    newest imported session that holds its work, ``lastActivityAt`` the last sign of it (that
    session's end, a turn the hook recorded since, the transcript's last write, whichever is last)."""
    from ..domain.clock import from_iso
    from ..index.store import last_turn_created
    from ..services.capture import transcript_written

    found = []
    for hook in rows.live_imported_conversations(conn):
        keys = [tuple(str(name).split("/", 1)) for name in hook.get("supersededBy") or [] if "/" in str(name)]
        imported = [s for s in rows.sessions_keyed(conn, keys) if s.get("endTime") and s.get("status") == "completed"]
        if not imported:
            continue
        newest = max(imported, key=lambda s: (str(s["endTime"]), str(s["sessionId"])))
        moments = [from_iso(str(newest["endTime"]))]
        turn = last_turn_created(conn, str(hook.get("project")), str(hook.get("sessionId")))
        moments += [from_iso(turn)] if turn else []
        written = None if pushed(str(hook.get("project")), str(hook.get("sessionId"))) \
            else transcript_written(hook.get("transcriptPath"), moment)  # a laptop's file is not read here
        moments += [written] if written is not None else []
        found.append({"id": hook["id"], "sessionId": newest["sessionId"], "project": newest["project"],
                      "imported": [[str(s["project"]), str(s["sessionId"])] for s in imported],
                      "owner": hook.get("owner"), "hookSessionId": hook.get("sessionId"),
                      "startTime": newest["startTime"], "lastActivityAt": to_iso(max(moments)),
                      "created": hook.get("created"), "billable": newest.get("billable", True)})
    return found


def _unfiled_sessions(store: VaultStore) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """This vault's billable sessions filed under no client in projects that bill none
    (:func:`~memo_analytics.index.snapshot.unfiled_sessions`) — when the person bills clients (a
    session names one, or the config has ``[clients]`` or ``projectClients``); a person who bills
    no one is not asked. Returns ``(unfiled, mapped)``: those of projects ``projectClients`` does
    not map (``project_unbilled``), and those of projects it maps to a client — work filed before
    the mapping, or moved into the project by a rename — each with ``_projectClients`` naming it
    (``client_missing`` proposes it). A project mapped to ``internal`` is a decision made."""
    settings = store.settings
    if not store.exists or not (settings.clients or settings.project_clients or rows.bills_a_client(store.conn)):
        return [], []
    unfiled, mapped = [], []
    for session in rows.unfiled_sessions(store.conn):
        project = session.get("project")
        if project not in settings.project_clients:
            unfiled.append(session)
        elif settings.client_of_project(project):
            mapped.append({**session, "_projectClients": [settings.client_of_project(project)], "_mapped": True})
    return unfiled, mapped


def _unreadable_sessions(store: VaultStore, snapshot: Snapshot) -> list[dict[str, Any]]:
    """``{id, sessionId, project, path, reason, invoice, billedMinutes, created}`` of each session
    file of the vault that cannot be read (:meth:`VaultStore.left_out`): reports leave it out.
    One on an issued invoice is taken out of ``snapshot.invoiced_changed`` (its "record gone"
    item) and named here with its invoice: one row, one owner."""
    if not store.exists:
        return []
    missing = {(c["project"], c["id"]): c for c in snapshot.invoiced_changed if c.get("missing") and not c.get("_vault")}
    found = []
    with vault_sources(store, further=True) as sources:
        left = store.left_out(RecordKind.SESSION, say=False,
                              further=[(s.vault, s.conn) for s in sources if s.conn is not store.conn])
    for path, reason, root in left:
        where = Path(path) if Path(path).is_absolute() else root / path
        parts = where.relative_to(root).parts
        record_id, project = where.stem, parts[1] if len(parts) > 1 else "-"
        further = root != store.root
        billed = None if further else missing.pop((project, record_id), None)
        try:
            created = to_iso(datetime.fromtimestamp(os.stat(where).st_mtime, timezone.utc))
        except OSError:
            created = to_iso(datetime.now(timezone.utc))
        found.append({"id": record_id, "sessionId": record_id.removeprefix("session-"), "project": project,
                      "path": path, "reason": reason, "invoice": billed["invoice"] if billed else None,
                      "billedMinutes": int(billed.get("durationMinutes") or 0) if billed else 0, "created": created,
                      **({"_vault": str(root)} if further else {})})
    snapshot.invoiced_changed = [c for c in snapshot.invoiced_changed
                                 if not (c.get("missing") and not c.get("_vault")
                                         and (c["project"], c["id"]) not in missing)]
    return found


def _team_billed_too(store: VaultStore) -> list[dict[str, Any]]:
    """``{project, sessionId, invoice, teamInvoice, client, billedMinutes, created}`` of each
    session a standing invoice of this vault bills (a hybrid laptop's own, ``--here``) that the
    team daemon's invoice ``teamInvoice`` bills too, as the last pull said: the client was billed
    twice (found by a breaker: the laptop's late-work invoice and the lead's month on the daemon
    both billed one session, and nothing said so)."""
    team = ledger.team_invoiced(store.root)
    if not team:
        return []
    found = []
    for doc in ledger.standing_invoices(_invoices(store.root)):
        for item in doc.meta.get("sessions") or []:
            key = (item.get("project"), item.get("sessionId"))
            if key in team and team[key][0] != doc.number:
                found.append({"project": key[0], "sessionId": key[1], "invoice": doc.number,
                              "teamInvoice": team[key][0], "client": str(doc.meta.get("client") or ""),
                              "billedMinutes": int(item.get("billedMinutes", item.get("durationMinutes")) or 0),
                              "created": str(doc.meta.get("createdAt") or to_iso(datetime.now(timezone.utc)))})
    return found


def _held_back(store: VaultStore) -> list[dict[str, Any]]:
    """One row per session whose transcript an import held back for its issued invoice
    (:mod:`~memo_analytics.services.importers.held`): ``{path, source, since, project, sessionId,
    invoice, turns, minutes, standing}``; ``invoice`` is the standing invoice that bills the session
    now (the one held for when it was credited since: ``standing`` False, the next import takes
    the work in)."""
    from ..services.importers.held import held_files

    if not store.exists:
        return []
    files = held_files(store.layout.meta_dir)
    if not files:
        return []
    standing = ledger.invoiced_in(store.root)
    found = []
    for entry in files:
        for held in entry["sessions"]:
            number = standing.get((held["project"], held["sessionId"]))
            found.append({"path": entry["path"], "source": entry["source"], "since": entry["since"],
                          "project": held["project"], "sessionId": held["sessionId"],
                          "invoice": number or held["invoice"], "standing": number is not None,
                          "turns": int(held.get("turns") or 0), "minutes": int(held.get("minutes") or 0)})
    return found


def _retainers(store: VaultStore, moment: datetime) -> list[dict[str, Any]]:
    """``{client, capHours, zone, sessions}`` of each client of the config with a
    ``monthlyHoursCap``: its sessions of the month of ``moment`` (in the vault's zone) that bill
    minutes, each ``{sessionId, project, startTime, endTime, billedMinutes}``, from the activity
    report of every configured vault (SPEC §4: billed minutes after rounding and overlap). Empty
    when no client has a cap, or the report cannot be made (``memo activity`` says why)."""
    capped = {name: terms for name, terms in store.settings.clients.items() if terms.monthly_hours_cap}
    if not capped or not store.exists:
        return []
    import calendar

    from ..analytics.activity import ActivityRequest, activity_report

    today = moment.astimezone(store.zone).date()
    first = today.replace(day=1)
    try:
        report = activity_report(store, ActivityRequest(
            since=first.isoformat(), until=first.replace(day=calendar.monthrange(first.year, first.month)[1]).isoformat(),
            cross_project=True), say_left_out=False)  # the digest lists a file that cannot be read itself
    except MemoError:
        return []
    by_client: dict[str, list[dict[str, Any]]] = {}
    for session in report.sessions:
        if session.get("billedMinutes") and session.get("endTime"):
            by_client.setdefault(str(session.get("client") or "").strip().casefold(), []).append(
                {key: session.get(key) for key in ("sessionId", "project", "startTime", "endTime", "billedMinutes")})
    return [{"client": name, "capHours": str(terms.monthly_hours_cap), "zone": store.zone.key,
             "sessions": by_client.get(name.strip().casefold(), [])} for name, terms in sorted(capped.items())]


def _terms_differ(store: VaultStore) -> list[dict[str, Any]]:
    """The invoices a vault-git sync pulled whose client this machine's config bills otherwise
    (:func:`~memo_analytics.services.vault_git.terms_still_differ`), each with the projects it
    billed and ``created`` (when it was issued)."""
    from ..services.vault_git import terms_still_differ

    if not store.exists:
        return []
    try:
        found = terms_still_differ(store)
        documents = {doc.ref: doc for doc in _invoices(store.root)} if found else {}
    except (MemoError, OSError):
        return []
    items = []
    for item in found:
        meta = documents[item["invoice"]].meta if item["invoice"] in documents else {}
        lines = meta.get("lines") if isinstance(meta.get("lines"), list) else []
        projects = sorted({line["project"] for line in lines if isinstance(line, dict)
                           and isinstance(line.get("project"), str)})
        items.append({**item, "projects": projects,
                      "created": str(meta.get("createdAt") or to_iso(datetime.now(timezone.utc)))})
    return items

"""Issued invoices and credit notes, stored immutably in the vault (SPEC §9, issue 15 point 2).

Layout::

    <vault>/invoices/<number>.md    the document: YAML frontmatter (every figure, the issuer
                                    and client as they were, the lines, the sessions) + a
                                    readable summary
    <vault>/invoices/<number>.pdf   the PDF sent (Factur-X: its XML embedded)

A document is written once and never replaced: each file is written to a temporary file,
flushed to disk and *linked* to its name (``link`` fails when the name exists — no rename can
replace an issued invoice), then the folder is flushed. The PDF is written first and the
``.md`` last, so the ``.md`` is the commit: a PDF without its ``.md`` is what a crash between
the two left, and is cleared by the next issue of that number. Numbers are allocated by the
caller under the vault lock (:func:`next_number`).

Which sessions are invoiced is read from the documents: those of every invoice that no credit
note cancels. Nothing else keeps that state, so it cannot drift from what was sent.

``<vault>/invoices/.ledger.json`` keeps, beside them, the highest sequence number issued per
sequence key and the SHA-256 of every document's two files as written: a deleted document
never gives its number to another, and a document changed on disk is told apart
(:meth:`Document.changed`). It is a cache of the documents plus those two facts; lost, it is
rebuilt from the documents (the deleted one's number is then the only thing it cannot know).

Two machines of one vault (vault-git) can each issue the same next number before they sync:
both documents were sent, so both stay issued. The merge keeps the one created first as
``<number>.md`` and the other as ``<number>.duplicate-<hash8>.md`` (and ``.pdf``): its
``ref`` (the file name) names it to ``memo invoice show|credit``, its sessions stay invoiced
(never billed again), and :func:`duplicate_numbers` says which numbers need a credit note.

Every entry of the folder must be a document memo wrote: a file that is not a regular file
(a link, a FIFO, a folder), or a ``.md`` without the fields of a document, is refused with
one line naming it — skipping it could hide an invoice and bill its sessions again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import string
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..domain.clock import parse_instant
from ..domain.errors import CorruptRecordError, InvalidFieldError, InvoiceNotFoundError, MemoError
from ..domain.ids import validate_slug
from .io import TEMP_SUFFIX, atomic_write_bytes, dump_record, read_frontmatter

FOLDER = "invoices"
INVOICE = "invoice"
CREDIT_NOTE = "creditNote"
STATE = ".ledger.json"
#: Largest document file read (a document is a few kB; anything near this is not one).
MAX_DOCUMENT_BYTES = 4_000_000


class DocumentExistsError(MemoError):
    """An issued document of this number already exists (documents are never replaced)."""

    def __init__(self, number: str) -> None:
        self.number = number
        super().__init__(f"Invoice {number} already exists; issued documents are never replaced")


#: The file name (without suffix) of a document whose number another machine issued as well:
#: ``<number>.duplicate-<first 8 hex of the SHA-256 of its .md>``.
DUPLICATE = re.compile(r"^(?P<number>.+)\.duplicate-(?P<hash>[0-9a-f]{8})$")


def duplicate_ref(number: str, md: bytes) -> str:
    """The ref (file name without suffix) a merge gives the second document of ``number``."""
    return f"{number}.duplicate-{hashlib.sha256(md).hexdigest()[:8]}"


@dataclass(frozen=True)
class Document:
    """One issued document: ``meta`` is its frontmatter (camelCase), ``path`` its ``.md``;
    ``ref`` (the file name without suffix) is its number, or for the second of two documents
    another machine numbered alike, ``<number>.duplicate-<hash8>``."""

    meta: dict[str, Any]
    path: Path
    #: the SHA-256 of the ``.md`` as read (compared with the one recorded when it was written)
    digest: str = ""

    @property
    def number(self) -> str:
        return str(self.meta["number"])

    @property
    def ref(self) -> str:
        return self.path.stem

    @property
    def kind(self) -> str:
        return str(self.meta["kind"])

    @property
    def pdf(self) -> Path:
        return self.path.with_suffix(".pdf")

    def changed(self, state: dict[str, Any]) -> bool:
        """Whether the ``.md`` differs from what was written (per the ledger state)."""
        recorded = (state.get("documents") or {}).get(self.ref, {}).get("md")
        return bool(recorded) and recorded != self.digest

    @property
    def sessions(self) -> list[tuple[str, str]]:
        """``(project, sessionId)`` of each session the document bills."""
        return [(str(s["project"]), str(s["sessionId"])) for s in self.meta.get("sessions") or []]


def folder(root: Path) -> Path:
    return Path(root) / FOLDER


def _entries(base: Path) -> list[Path]:
    """The documents' ``.md`` files; anything else memo did not write is refused."""
    found = []
    for entry in sorted(base.iterdir()):
        if entry.name.startswith(".") and (entry.name == STATE or entry.name.endswith(TEMP_SUFFIX)):
            continue  # the ledger state; a temporary file an interrupted write left
        mode = entry.lstat().st_mode
        if not stat.S_ISREG(mode):
            raise CorruptRecordError(str(entry), "is not a regular file; only issued documents belong in "
                                                 f"{base} (move it out)")
        if entry.suffix == ".md":
            found.append(entry)
        elif entry.suffix != ".pdf":
            raise CorruptRecordError(str(entry), f"is not an issued document; only <number>.md and <number>.pdf "
                                                 f"belong in {base} (move it out)")
    return found


def _checked(path: Path) -> Document:
    """Read and check one document file.

    Raises
    ------
    CorruptRecordError
        Too big, unreadable, or without the fields of a document (named).
    """
    if path.stat().st_size > MAX_DOCUMENT_BYTES:
        raise CorruptRecordError(str(path), f"is over {MAX_DOCUMENT_BYTES} bytes; not an issued document")
    raw = path.read_bytes()
    meta, _ = read_frontmatter(path)
    problem = None
    if meta.get("kind") not in (INVOICE, CREDIT_NOTE):
        problem = f"kind is {meta.get('kind')!r}, not {INVOICE} or {CREDIT_NOTE}"
    elif str(meta.get("number")) != path.stem and str(meta.get("number")) != _number_of_ref(path.stem):
        problem = f"number {meta.get('number')!r} is not its file name {path.stem!r}"
    elif DUPLICATE.match(path.stem) and path.stem != duplicate_ref(str(meta.get("number")), raw):
        problem = "its name is not that of the duplicate a merge keeps (the hash of its text differs)"
    elif not isinstance(meta.get("sessions"), list) or not all(
            isinstance(s, dict) and "project" in s and "sessionId" in s for s in meta["sessions"]):
        problem = "sessions is not a list of {project, sessionId}"
    elif not isinstance(meta.get("sequence"), int) or isinstance(meta.get("sequence"), bool):
        problem = "sequence is not a whole number"
    elif meta["kind"] == CREDIT_NOTE and not isinstance(meta.get("credits"), str):
        problem = "a credit note without the number it credits"
    else:
        try:
            date.fromisoformat(str(meta.get("issued")))
        except ValueError:
            problem = f"issued {meta.get('issued')!r} is not a date (YYYY-MM-DD)"
    if problem:
        raise CorruptRecordError(str(path), f"not an issued document: {problem}")
    return Document(meta, path, hashlib.sha256(raw).hexdigest())


def _number_of_ref(ref: str) -> str | None:
    match = DUPLICATE.match(ref)
    return match.group("number") if match else None


def documents(root: Path) -> list[Document]:
    """Every issued document of the vault, in the order issued (sequence, then ``createdAt``).

    Raises
    ------
    CorruptRecordError
        A file of the folder is not a document memo wrote (named; nothing is changed).
    """
    base = folder(root)
    if not base.is_dir():
        return []
    found = [_checked(path) for path in _entries(base)]
    return sorted(found, key=lambda d: (str(d.meta.get("createdAt")), int(d.meta.get("sequence") or 0)))


def read_state(root: Path) -> dict[str, Any]:
    """The ledger state (``{sequences: {key: n}, documents: {number: {md, pdf}}}``); empty
    when missing or unreadable (it is rebuilt from the documents)."""
    try:
        data = json.loads((folder(root) / STATE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    # only what memo writes there: a sequence is a whole number below a billion, a document's
    # entry a mapping of digests (a hand-edited or pulled state must not crash or stall issuing)
    sequences = {str(k): v for k, v in (data.get("sequences") or {}).items()
                 if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10**9} \
        if isinstance(data.get("sequences"), dict) else {}
    documents = {str(k): {d: v[d] for d in ("md", "pdf") if isinstance(v.get(d), str)}
                 for k, v in (data.get("documents") or {}).items() if isinstance(v, dict)} \
        if isinstance(data.get("documents"), dict) else {}
    return {**data, "sequences": sequences, "documents": documents}


def lost_documents(root: Path, docs: list[Document]) -> list[str]:
    """The numbers the ledger state says were issued here whose document is gone from the folder
    (deleted by mistake, lost in a copy): their sessions would read as never invoiced and be
    billed again (found by a billing tester: the next invoice billed them, no word anywhere)."""
    held = {doc.ref for doc in docs}
    base = folder(root)
    recorded = {number for number in (read_state(root).get("documents") or {})
                if number not in held and not (base / f"{number}.md").exists()}
    # a PDF without its document: with the ledger state lost too, its sessions were billed again (found by a breaker)
    try:
        sent = {entry.stem for entry in base.iterdir() if entry.suffix == ".pdf" and entry.is_file()
                and entry.stem not in held and not (base / f"{entry.stem}.md").exists()}
    except OSError:
        sent = set()
    return sorted(recorded | sent)


def refuse_lost_documents(root: Path, docs: list[Document]) -> None:
    """Refuse to bill while an issued document is lost (:func:`lost_documents`).

    Raises
    ------
    MemoError
        Naming each lost number and the way back.
    """
    lost = lost_documents(root, docs)
    if lost:
        names = ", ".join(lost[:5]) + (f" and {len(lost) - 5} more" if len(lost) > 5 else "")
        known = lost[0] in (read_state(root).get("documents") or {})
        why = "the ledger keeps its digest" if known else f"its PDF lies in {FOLDER}/"
        steps = ([f"remove its entry from {FOLDER}/{STATE}"] if known else []) + \
            ([f"move {FOLDER}/{lost[0]}.pdf out of {FOLDER}/"] if (folder(root) / f"{lost[0]}.pdf").exists() else [])
        undo = " and ".join(steps)
        raise MemoError(f"Document {names} was issued here ({why}) but its file {FOLDER}/{lost[0]}.md is gone: "
                        f"without it an invoice's sessions would be billed again, or a credit note's invoice read as "
                        f"not cancelled and credited twice. Put it back (from a backup, or the vault's git history) "
                        f"before issuing or crediting; lost for good, {undo} (what it billed or cancelled is then as "
                        f"if never issued)")


def document(root: Path, number: str) -> Document:
    """The document ``number``.

    Raises
    ------
    InvalidFieldError
        ``number`` is not a safe slug.
    InvoiceNotFoundError
        No document has this number.
    """
    path = folder(root) / f"{validate_slug(number, 'number')}.md"
    if path.is_symlink() or not path.is_file():
        if path.is_symlink() or path.exists():
            raise CorruptRecordError(str(path), "is not a regular file; not an issued document")
        raise InvoiceNotFoundError(number)
    return _checked(path)


def credited(docs: list[Document]) -> dict[str, str]:
    """``{invoice ref: number of the credit note that cancels it}``. A credit note names the
    invoice by the SHA-256 of its ``.md`` (``creditsDigest``: the invoice it cancelled, even if a
    merge later renamed it a duplicate), else by ``creditsRef`` where the ref is not the number,
    else by its number (``credits``)."""
    return {invoice: note.number for note, invoice in _credit_notes(docs)}


def _credit_notes(docs: list[Document]) -> list[tuple[Document, str]]:
    """``(credit note, ref of the invoice it cancels)`` of every credit note of ``docs``: by the
    invoice's digest (``creditsDigest``), else ``creditsRef``, else its number (``credits``)."""
    by_digest = {d.digest: d.ref for d in docs if d.kind == INVOICE}
    return [(d, str(by_digest.get(str(d.meta.get("creditsDigest"))) or d.meta.get("creditsRef") or d.meta["credits"]))
            for d in docs if d.kind == CREDIT_NOTE and d.meta.get("credits")]


def invoiced_sessions(docs: list[Document]) -> dict[tuple[str, str], str]:
    """``{(project, sessionId): invoice number}`` of every session on an invoice that no
    credit note cancels (a duplicate-numbered one included)."""
    cancelled = credited(docs)
    return {key: d.number for d in docs if d.kind == INVOICE and d.ref not in cancelled for key in d.sessions}


def billed_twice(docs: list[Document]) -> dict[tuple[str, str], list[str]]:
    """``{(project, sessionId): [ref, …]}`` of every session two uncredited invoices bill (two
    machines of one vault invoiced it before they synced): a credit note must cancel one."""
    cancelled = credited(docs)
    refs: dict[tuple[str, str], list[str]] = {}
    for doc in docs:
        if doc.kind == INVOICE and doc.ref not in cancelled:
            for key in doc.sessions:
                refs.setdefault(key, []).append(doc.ref)
    return {key: found for key, found in refs.items() if len(found) > 1}


def credited_twice(docs: list[Document]) -> dict[str, list[str]]:
    """``{invoice ref: [credit note ref, …]}`` of every invoice two credit notes cancel (the
    client was credited twice: two machines cancelled it before they synced)."""
    notes: dict[str, list[str]] = {}
    for note, invoice in _credit_notes(docs):
        notes.setdefault(invoice, []).append(note.ref)
    return {ref: found for ref, found in notes.items() if len(found) > 1}


def duplicate_numbers(docs: list[Document]) -> dict[str, list[str]]:
    """``{number: [ref, …]}`` of every number two invoices carry (issued on two machines of
    one vault before they synced) while more than one of them stands uncredited: what a
    credit note must settle. Refs in the order issued."""
    cancelled = credited(docs)
    refs: dict[str, list[str]] = {}
    for doc in docs:
        if doc.kind == INVOICE and doc.ref not in cancelled:
            refs.setdefault(doc.number, []).append(doc.ref)
    return {number: found for number, found in refs.items() if len(found) > 1}


def sequence_key(number_format: str, year: int) -> str:
    """The sequence a number of ``number_format`` continues: the year when the format uses
    ``{year}`` (in any form: ``{year}``, ``{year:d}``), else one sequence for ever (``""``)."""
    fields = {name for _, name, _, _ in string.Formatter().parse(number_format) if name}
    return str(year) if "year" in fields else ""


def invoiced_in(root: Path, docs: list[Document] | None = None) -> dict[tuple[str, str], str]:
    """:func:`invoiced_sessions` of the vault at ``root`` (none when it has no invoices folder;
    ``docs``: its :func:`documents` when already read), and the sessions a hybrid laptop's last
    pull said the team daemon invoiced (:func:`team_invoiced`): ``{(project, sessionId): number}``."""
    return {**{key: number for key, (number, _) in team_invoiced(root).items()},
            **invoiced_sessions(documents(root) if docs is None else docs)}


#: Where a hybrid laptop keeps what its last pull said the team daemon invoiced (under the vault).
TEAM_INVOICED_FILE = ".memo/sync/team-invoiced.json"


def team_invoiced_known(root: Path) -> bool:
    """Whether this vault holds a readable :data:`TEAM_INVOICED_FILE` (a pull wrote it): when
    not, what the team daemon invoiced of its sessions is not known here."""
    try:
        data = json.loads((Path(root) / TEAM_INVOICED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False
    items = data.get("items") if isinstance(data, dict) else None
    # every item whole: {"items": [{}]} read as "nothing invoiced" (found by a breaker)
    return isinstance(items, list) and all(isinstance(item, dict) and all(
        isinstance(item.get(key), str) and item[key] for key in ("project", "sessionId", "invoice")) for item in items)


def team_invoiced(root: Path) -> dict[tuple[str, str], tuple[str, int | None]]:
    """``{(project, sessionId): (invoice number, billed minutes)}`` of this vault's sessions that
    its team daemon invoiced, as the last ``memo sync pull`` said (``.memo/sync/team-invoiced.json``;
    empty when there is none): a hybrid laptop leaves them off its drafts and ``--here`` invoices."""
    try:
        data = json.loads((Path(root) / TEAM_INVOICED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    items = data.get("items") if isinstance(data, dict) else None
    return {(item["project"], item["sessionId"]): (item["invoice"], item.get("billedMinutes")
                                                   if isinstance(item.get("billedMinutes"), int) else None)
            for item in (items if isinstance(items, list) else []) if isinstance(item, dict)
            and all(isinstance(item.get(key), str) for key in ("project", "sessionId", "invoice"))}


def invoiced_items(docs: list[Document]) -> dict[tuple[str, str], tuple[str, str, dict[str, Any]]]:
    """``{(project, sessionId): (invoice number, client, session item)}`` of every session on an
    invoice no credit note cancels: the item as issued (``startTime``, ``endTime``,
    ``durationMinutes``, ``billedMinutes`` …) and the client the invoice billed."""
    items: dict[tuple[str, str], tuple[str, str, dict[str, Any]]] = {}
    for doc in standing_invoices(docs):
        for item in doc.meta.get("sessions") or []:
            if isinstance(item, dict):
                key = (str(item.get("project")), str(item.get("sessionId")))
                items.setdefault(key, (doc.number, str(doc.meta.get("client") or ""), item))
    return items


def standing_invoices(docs: list[Document]) -> list[Document]:
    """The invoices no credit note cancels, in the order of ``docs`` (the one created first of a
    number issued twice before its duplicate). Told apart by their ref: two machines' invoices of
    one number matched each other's sessions by the number, and the credited duplicate's minutes
    were the ones reports billed."""
    cancelled = credited(docs)
    return [d for d in docs if d.kind == INVOICE and d.ref not in cancelled]


def differs_from_invoice(session: dict[str, Any], client: str, item: dict[str, Any]) -> list[str]:
    """The fields of a session record (wire dict) that differ from the session ``item`` of the
    invoice that billed it to ``client`` (:func:`invoiced_items`): ``startTime``, ``endTime``
    (as instants), ``durationMinutes``, ``client`` (case aside) and ``billable``, in that order.
    Pure."""
    def same_instant(one: Any, other: Any) -> bool:
        try:
            return parse_instant(one, "time") == parse_instant(other, "time")
        except (MemoError, TypeError, ValueError):
            return one == other

    fields = [name for name in ("startTime", "endTime")
              if item.get(name) is not None and not same_instant(session.get(name), item[name])]
    if "durationMinutes" in item and session.get("durationMinutes") != item["durationMinutes"]:
        fields.append("durationMinutes")
    if client and str(session.get("client") or "").casefold() != client.casefold():
        fields.append("client")
    if session.get("billable") is False:
        fields.append("billable")
    return fields


def as_invoiced(client: str, item: dict[str, Any]) -> dict[str, Any]:
    """``{startTime, endTime, durationMinutes, client}`` of a session as its invoice billed it
    (those the invoice kept). Pure."""
    return {key: value for key, value in (*((k, item.get(k)) for k in ("startTime", "endTime", "durationMinutes")),
                                          ("client", client or None)) if value is not None}


def invoiced_minutes(docs: list[Document]) -> dict[tuple[str, str], int]:
    """``{(project, sessionId): minutes}`` each session on an uncredited invoice was billed
    there (``billedMinutes`` as issued; ``durationMinutes`` for documents issued before it was
    kept)."""
    minutes: dict[tuple[str, str], int] = {}
    for doc in standing_invoices(docs):
        for item in doc.meta.get("sessions") or []:
            key = (str(item["project"]), str(item["sessionId"]))
            value = item.get("billedMinutes", item.get("durationMinutes"))
            if isinstance(value, int) and not isinstance(value, bool):
                minutes.setdefault(key, value)
    return minutes


def next_number(docs: list[Document], number_format: str, year: int,
                state: dict[str, Any] | None = None) -> tuple[str, str, int]:
    """``(number, sequence key, sequence)`` of the next document: one more than the highest
    sequence issued under the same key — by any document, whatever its format, or recorded in
    the ledger ``state`` (a deleted document keeps its number) — so invoices and credit notes
    share one gapless sequence, and changing the padding of the format continues it. (A PDF
    without its ``.md`` stops every issue before a number is taken: :func:`lost_documents`.)

    Raises
    ------
    InvalidFieldError
        The next number is already taken by a document (``numberFormat`` was changed to one
        that repeats earlier numbers).
    """
    key = sequence_key(number_format, year)
    taken = {d.number for d in docs}
    recorded = int(((state or {}).get("sequences") or {}).get(key) or 0)
    sequence = 1 + max([recorded] + [int(d.meta.get("sequence") or 0) for d in docs
                                     if str(d.meta.get("sequenceKey", "")) == key])
    number = validate_slug(number_format.format(year=year, seq=sequence), "invoice.numberFormat")
    if number in taken or number in ((state or {}).get("documents") or {}):
        raise InvalidFieldError("invoice.numberFormat", f"the next number {number} is already taken by an issued "
                                                        "document; choose a format that does not repeat earlier numbers")
    return number, key, sequence


def begins_a_sequence(docs: list[Document], number_format: str, year: int) -> bool:
    """Whether ``number_format`` numbers ``docs``' successors in a sequence of its own: the
    documents were numbered in a yearly sequence and it has no ``{year}``, or the other way (a
    yearly format after a yearly one goes on, each year beginning at 1 by design)."""
    yearly = bool(sequence_key(number_format, year))
    return bool(docs) and not any(bool(str(d.meta.get("sequenceKey", ""))) == yearly for d in docs)


def last_issued(docs: list[Document]) -> date | None:
    """The latest issue date of any document: a new one may not be dated before it (numbers
    follow issue dates)."""
    return max((date.fromisoformat(str(d.meta["issued"])) for d in docs), default=None)


def _link_new(path: Path, data: bytes) -> None:
    """Write ``data`` as the new file ``path`` (temp + fsync + link): never replaces a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o444)  # issued: read-only on disk too
        os.link(tmp, path)
    except FileExistsError:
        raise DocumentExistsError(path.stem) from None
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass


def _keep_every_document(base: Path, known: dict[str, Any]) -> None:
    """Add to the state's ``known`` documents each one the folder holds that it does not name: a
    state rebuilt (deleted, a copy that left out dotfiles) named only the documents issued since,
    and an earlier one lost next went unnoticed — its sessions billed again (found by a breaker)."""
    try:
        paths = _entries(base)
    except (OSError, MemoError):
        return
    for path in paths:
        if path.stem in known:
            continue
        try:
            doc = _checked(path)
        except (OSError, MemoError):
            continue
        entry = {"md": doc.digest}
        try:
            entry["pdf"] = hashlib.sha256(path.with_suffix(".pdf").read_bytes()).hexdigest()
        except OSError:
            pass
        known[path.stem] = entry


def write_document(root: Path, meta: dict[str, Any], body: str, pdf: bytes) -> Document:
    """Store an issued document: its PDF, then its ``.md`` (the commit), each written once.
    The caller holds the vault lock and took ``meta["number"]`` from :func:`next_number`.

    Raises
    ------
    DocumentExistsError
        A document of this number exists (nothing is written).
    OSError
        The disk refused; a PDF without its ``.md`` may remain and is cleared by the next try.
    """
    base = folder(root)
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob(f".*{TEMP_SUFFIX}"):  # an issue killed mid-write (under the lock: none is being written)
        if ".orphan-" not in stale.name:  # a PDF set aside is kept
            stale.unlink(missing_ok=True)
    number = validate_slug(meta["number"], "number")
    md, pdf_path = base / f"{number}.md", base / f"{number}.pdf"
    if md.exists() or md.is_symlink():
        raise DocumentExistsError(number)
    if pdf_path.exists() or pdf_path.is_symlink():  # left by a crash before its .md, or its .md was deleted
        os.replace(pdf_path, base / f".{number}.pdf.orphan-{os.getpid()}{TEMP_SUFFIX}")  # kept aside, never lost
    text = dump_record(meta, body).encode("utf-8")
    _link_new(pdf_path, pdf)
    _link_new(md, text)
    state = read_state(root)
    sequences = state.setdefault("sequences", {})
    key = str(meta.get("sequenceKey", ""))
    sequences[key] = max(int(sequences.get(key) or 0), int(meta.get("sequence") or 0))
    known = state.setdefault("documents", {})
    known[number] = {"md": hashlib.sha256(text).hexdigest(), "pdf": hashlib.sha256(pdf).hexdigest()}
    _keep_every_document(base, known)
    atomic_write_bytes(base / STATE, json.dumps(state, indent=1, sort_keys=True).encode("utf-8"))
    dir_fd = os.open(base, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return Document(meta, md, hashlib.sha256(text).hexdigest())

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
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from ..domain.errors import InvalidFieldError, InvoiceNotFoundError, MemoError
from ..domain.ids import validate_slug
from .io import TEMP_SUFFIX, dump_record, read_frontmatter

FOLDER = "invoices"
INVOICE = "invoice"
CREDIT_NOTE = "creditNote"


class DocumentExistsError(MemoError):
    """An issued document of this number already exists (documents are never replaced)."""

    def __init__(self, number: str) -> None:
        self.number = number
        super().__init__(f"Invoice {number} already exists; issued documents are never replaced")


@dataclass(frozen=True)
class Document:
    """One issued document: ``meta`` is its frontmatter (camelCase), ``path`` its ``.md``."""

    meta: dict[str, Any]
    path: Path

    @property
    def number(self) -> str:
        return str(self.meta["number"])

    @property
    def kind(self) -> str:
        return str(self.meta["kind"])

    @property
    def pdf(self) -> Path:
        return self.path.with_suffix(".pdf")

    @property
    def sessions(self) -> list[tuple[str, str]]:
        """``(project, sessionId)`` of each session the document bills."""
        return [(str(s["project"]), str(s["sessionId"])) for s in self.meta.get("sessions") or []]


def folder(root: Path) -> Path:
    return Path(root) / FOLDER


def documents(root: Path) -> list[Document]:
    """Every issued document of the vault, in the order issued (``createdAt``).

    Raises
    ------
    CorruptRecordError
        A document file cannot be parsed (named; nothing is changed).
    """
    base = folder(root)
    if not base.is_dir():
        return []
    found = [Document(read_frontmatter(path)[0], path) for path in sorted(base.glob("*.md")) if not path.name.startswith(".")]
    return sorted(found, key=lambda d: (str(d.meta.get("createdAt")), int(d.meta.get("sequence") or 0)))


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
    if not path.is_file():
        raise InvoiceNotFoundError(number)
    return Document(read_frontmatter(path)[0], path)


def credited(docs: list[Document]) -> dict[str, str]:
    """``{invoice number: number of the credit note that cancels it}``."""
    return {str(d.meta["credits"]): d.number for d in docs if d.kind == CREDIT_NOTE and d.meta.get("credits")}


def invoiced_sessions(docs: list[Document]) -> dict[tuple[str, str], str]:
    """``{(project, sessionId): invoice number}`` of every session on an invoice that no
    credit note cancels."""
    cancelled = credited(docs)
    return {key: d.number for d in docs if d.kind == INVOICE and d.number not in cancelled for key in d.sessions}


def next_number(docs: list[Document], number_format: str, year: int) -> tuple[str, str, int]:
    """``(number, sequence key, sequence)`` of the next document: the sequence continues the
    highest one issued under the same key (the year when the format has ``{year}``, else one
    sequence for ever); invoices and credit notes share it, so numbers have no gaps.

    Raises
    ------
    InvalidFieldError
        The next number is already taken by a document of another format (``numberFormat``
        was changed to collide with an earlier sequence).
    """
    key = str(year) if "{year}" in number_format else ""
    taken = {d.number for d in docs}
    sequence = 1 + max((int(d.meta.get("sequence") or 0) for d in docs
                        if str(d.meta.get("sequenceKey", "")) == key and d.meta.get("numberFormat") == number_format),
                       default=0)
    number = validate_slug(number_format.format(year=year, seq=sequence), "invoice.numberFormat")
    if number in taken:
        raise InvalidFieldError("invoice.numberFormat", f"the next number {number} is already taken by an issued "
                                                        "document; choose a format that does not repeat earlier numbers")
    return number, key, sequence


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
    number = validate_slug(meta["number"], "number")
    md, pdf_path = base / f"{number}.md", base / f"{number}.pdf"
    if md.exists():
        raise DocumentExistsError(number)
    if pdf_path.exists():  # left by a crash before its .md: never sent, not a document
        os.unlink(pdf_path)
    _link_new(pdf_path, pdf)
    _link_new(md, dump_record(meta, body).encode("utf-8"))
    dir_fd = os.open(base, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return Document(meta, md)

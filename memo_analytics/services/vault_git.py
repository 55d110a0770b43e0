"""Vault-git sync (SPEC §2.7, issue 7): the vault is a git repository that follows its owner.

:func:`sync` (``memo sync git``; ``session_end`` runs it with trigger ``session_end`` when
``[vaultGit] enabled = true`` and the mode is not ``remote``):

1. makes sure the vault is a git repository (``git init -b <branch>``) whose ``.gitignore``
   keeps out what is machine-local or derived: all of ``.memo/`` (the index, the lock, the
   digest cache, notification and sync state, the operator's delegations and audit log —
   ``memo reindex`` rebuilds the index and each machine keeps its own operator policy), the
   compiled views (``PROMPTS.md``, ``SESSIONS.md``, ``TRAPS.md``, ``DECISIONS.md``,
   ``INDEX.md``, regenerated after every pull) and temporary files of interrupted writes.
   Its ``.gitattributes`` marks record files ``-merge``: git never blends two versions of a
   record line by line;
2. stages every changed file and makes **one commit per batch**, its message naming the
   records (``memo sync (session_end): 3 records — prompt-a-t1, session-a, …``);
3. fetches ``vaultGit.remote``/``vaultGit.branch`` and merges it **before** pushing. When
   both sides changed a record, its fields are merged against the common version (a field
   one side changed keeps that change); where both changed a field apart, the version with
   the newer frontmatter ``updated`` wins and the other is kept beside it as
   ``<id>.conflict-<stamp>-<hash8>.md``
   (:func:`~memo_analytics.vault.conflicts.keep_conflict`, as hybrid does); a conflict in
   any other file keeps ours and keeps theirs as a conflict file. A side that deleted a
   file the other changed loses: the changed version stays. No side is ever discarded;
4. brings the index up to date with the records changed since the commit it last matched
   (``indexedCommit`` in the state file; a full reindex after a fresh clone or when records
   were deleted) and regenerates those projects' views;
5. pushes ``HEAD`` to ``remote``/``branch`` (re-fetching and merging when the remote moved
   meanwhile).

The remote is a git remote of the vault repository (``git -C VAULT remote add origin URL``,
or clone the vault on the second machine). Errors — no remote, remote down, refused
credentials — are returned in ``error`` and logged, never raised: a local commit is kept and
the next sync pushes it. The outcome is kept in ``.memo/sync/git.json`` for
``memo sync status``. Local steps hold the vault lock; network steps (fetch, push) do not.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
from datetime import datetime
from glob import escape as glob_escape
from pathlib import Path
from typing import Any, NamedTuple

from filelock import FileLock, Timeout

from ..domain.shell import shell_word
from ..config import MAX_BODY_BYTES
from ..domain.clock import EARLIEST_RECORD, from_iso, minutes_between, parse_instant, to_iso, utcnow
from ..domain.errors import CorruptRecordError, MemoError
from ..domain.records import RecordKind, subdir_for_kind
from ..index import snapshot as snapshot_rows
from ..index import store as index
from ..index.folders import folder_stamp
from ..index.reindex import parse_for_index
from ..vault import ledger
from ..vault.conflicts import is_conflict_file, keep_conflict
from ..vault.io import (atomic_write_bytes, dump_record, parse_frontmatter_text, parse_record_text,
                        read_json_state, write_json_state)
from ..vault.redact import redact_secrets
from .maintenance import reindex
from .store import VaultStore
from .record_rules import check_record

log = logging.getLogger("memo_analytics.vault_git")

#: Seconds one git command may take (a fetch from a remote that never answers ends here).
GIT_TIMEOUT_SECONDS = 120
#: Fetch-merge-push rounds when the remote moves while we merge.
PUSH_ATTEMPTS = 3
STATE_FILE = "git.json"
_NAMES_IN_SUBJECT = 5

GITIGNORE_LINES = (
    "# memo vault-git: machine-local and derived files stay out of git (memo reindex rebuilds the index)",
    "/.memo/",
    "/projects/*/PROMPTS.md",
    "/projects/*/SESSIONS.md",
    "/projects/*/TRAPS.md",
    "/projects/*/DECISIONS.md",
    "/projects/*/INDEX.md",
    ".*.tmp",
)
GITATTRIBUTES_LINES = (
    "# memo vault-git: two versions of a record are never blended; the newer `updated` wins",
    "/projects/**/*.md -merge",
)
_SUBDIRS = "|".join(re.escape(subdir_for_kind(kind)) for kind in RecordKind)
_RECORD_PATH = re.compile(rf"^projects/[^/]+/(?:{_SUBDIRS})/[^/]+\.md$")
#: The hidden files a vault repository holds: memo's git files and the invoices' ledger.
_SHARED_HIDDEN = (".gitignore", ".gitattributes", f"{ledger.FOLDER}/{ledger.STATE}")
#: Views (each machine compiles its own): never brought in by a pull.
_VIEW_PATH = re.compile(r"^projects/[^/]+/(?:PROMPTS|SESSIONS|TRAPS|DECISIONS|INDEX)\.md$")
#: The largest file a pull may bring in: a record (the body limit of local writes plus its
#: frontmatter), any other file (an issued invoice's PDF, a person's notes).
_MAX_PULLED_BYTES = {"record": MAX_BODY_BYTES + 256_000, "other": 20_000_000}
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class VaultGitError(MemoError):
    """A vault-git step failed (``step`` is the git command, e.g. ``push``)."""

    def __init__(self, step: str, reason: str) -> None:
        self.step = step
        self.reason = reason
        super().__init__(f"Vault-git sync failed (git {step}): {reason}")


# ---------------------------------------------------------------- git


class _Git:
    """The ``git`` command line in one work tree, with memo's identity when none is set."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "LANGUAGE": "C"}
        self.env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes -o ConnectTimeout=15")
        self.identity: list[str] = []
        #: the mark of a sync under way (:func:`_running`): each git it runs is named in it, so the next
        #: sync after a kill waits for that git (left running) rather than take its lock away
        self.marker: Path | None = None

    def run(self, *args: str, check: bool = True, input: bytes | None = None) -> subprocess.CompletedProcess:
        try:
            child = subprocess.Popen(["git", *self.identity, *args], cwd=self.root, env=self.env,
                                     stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except FileNotFoundError:
            raise VaultGitError(args[0], "git is not installed (no `git` on PATH)") from None
        if self.marker is not None:
            try:
                self.marker.write_text(f"{os.getpid()}\n{child.pid}\n", encoding="utf-8")
            except OSError:
                pass
        try:
            out, err = child.communicate(input, timeout=GIT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise VaultGitError(args[0], f"no answer within {GIT_TIMEOUT_SECONDS} s") from None
        proc = subprocess.CompletedProcess(child.args, child.returncode, out, err)
        if check and proc.returncode != 0:
            raise VaultGitError(args[0], _first_line(proc.stderr) or f"exit code {proc.returncode}")
        return proc

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", "replace").strip()

    def names(self, command: str, *args: str) -> list[str]:
        """Paths of a ``-z`` listing (``-z`` given right after the command: after ``--`` it
        would be a path, and the listing one name of several lines)."""
        return [p for p in self.run(command, "-z", *args).stdout.decode("utf-8", "surrogateescape").split("\0") if p]

    def ok(self, *args: str) -> bool:
        return self.run(*args, check=False).returncode == 0

    def head(self) -> str | None:
        proc = self.run("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def use_identity(self) -> None:
        """``memo <memo@localhost>`` as author and committer unless git has one configured."""
        self.identity = []
        for key, value in (("user.name", "memo"), ("user.email", "memo@localhost")):
            if not self.run("config", key, check=False).stdout.strip():
                self.identity += ["-c", f"{key}={value}"]


def _first_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:", "!"))]
    return (fatal or lines or [""])[0][:300]


# ---------------------------------------------------------------- the repository


def ensure_repository(store: VaultStore, git: _Git) -> bool:
    """Make the vault a git repository with memo's ``.gitignore`` and ``.gitattributes``
    (missing lines are appended; a person's own lines are kept). True when it was created."""
    root = store.root
    root.mkdir(parents=True, exist_ok=True)
    created = not (root / ".git").exists()
    if created:
        git.run("init", "-q", "-b", store.settings.vault_git.branch)
    for name, lines in ((".gitignore", GITIGNORE_LINES), (".gitattributes", GITATTRIBUTES_LINES)):
        path = root / name
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        have = set(text.splitlines())
        missing = [line for line in lines if line not in have]
        if missing:
            joined = (text if not text or text.endswith("\n") else text + "\n") + "\n".join(missing) + "\n"
            atomic_write_bytes(path, joined.encode("utf-8"))
    return created


def _record_id(path: str) -> str | None:
    return Path(path).stem if _RECORD_PATH.match(path) and not is_conflict_file(Path(path)) else None


def _record_key(path: str) -> str | None:
    """``project/id`` of a record file's path (SPEC §2.1: the same id may exist in several
    projects), or None for any other file."""
    record_id = _record_id(path)
    return f"{Path(path).parts[1]}/{record_id}" if record_id else None


def commit_message(trigger: str, paths: list[str]) -> str:
    """``memo sync (<trigger>): <n> records — id, id, …`` and, in the body, every changed path.

    Pure: ``paths`` are the vault-relative paths the commit holds.
    """
    ids = sorted({i for i in map(_record_id, paths) if i})
    count = len({k for k in map(_record_key, paths) if k})  # one id in two projects: two records
    others = len(paths) - sum(1 for p in paths if _record_id(p))
    what = f"{count} record{'s' if count != 1 else ''}"
    if ids:
        what += " — " + ", ".join(ids[:_NAMES_IN_SUBJECT]) + (", …" if len(ids) > _NAMES_IN_SUBJECT else "")
    if others:
        what += f" (+{others} other file{'s' if others != 1 else ''})"
    return f"memo sync ({trigger}): {what}\n\n" + "\n".join(sorted(paths)) + "\n"


_SESSION_FILE = re.compile(r"^projects/(?P<project>[^/]+)/sessions/session-(?P<session>[^/]+)\.md$")


def _commit_changes(git: _Git, trigger: str, held: list[str] | None = None,
                    invoiced: dict[tuple[str, str], str] | None = None,
                    kept_back: list[dict[str, str]] | None = None) -> list[str]:
    """Stage everything that changed and commit it as one batch; the committed paths. An issued
    document changed or deleted here since it was committed (an invoice edited by hand) is left
    out — every other machine refuses to merge it, and stops syncing — and its path added to ``held``.
    So is the deletion of a session an issued invoice (``invoiced``: ``{(project, sessionId):
    number}``) bills, when no project holds it now (deleted by hand: it went to every machine
    without a word, the billed minutes gone from every report — found by two freelancers):
    ``{path, invoice}`` added to ``kept_back``."""
    git.run("add", "-A", "--", ".")
    # what a vault never holds (a hidden file an OS or editor left, a link) is never committed: it was,
    # and every later sync — on every machine — refused the repository that tracked it
    staged = git.run("ls-files", "-s", "-z").stdout.decode("utf-8", "surrogateescape").split("\0")
    for entry in filter(None, staged):
        info, path = entry.split("\t", 1)
        if _not_synced(path, info.split()[0]) and not git.ok("cat-file", "-e", f"HEAD:{path}"):
            git.run("--literal-pathspecs", "rm", "-q", "--cached", "--", path)
    raw = git.run("diff", "--cached", "--name-status", "-z", "--no-renames").stdout.decode("utf-8", "surrogateescape")
    fields = raw.split("\0")
    for status, path in zip(fields[0::2], fields[1::2]):
        if status in ("M", "D", "T") and _INVOICE_FILE.match(path) and git.ok("cat-file", "-e", f"HEAD:{path}"):
            git.run("reset", "-q", "HEAD", "--", path)
            if held is not None:
                held.append(path)
        session = _SESSION_FILE.match(path) if status == "D" and invoiced else None
        key = (session["project"], session["session"]) if session else None
        if key is not None and key in invoiced and not any(
                git.root.glob(f"projects/*/sessions/session-{glob_escape(key[1])}.md")):
            git.run("reset", "-q", "HEAD", "--", path)
            if kept_back is not None:
                kept_back.append({"path": path, "invoice": invoiced[key]})
    paths = git.names("diff", "--cached", "--name-only", "--no-renames")
    if paths:
        # a file name of bytes that are not UTF-8 (kept as surrogates) goes into the message as those bytes
        git.run("commit", "-q", "--no-verify", "-F", "-",
                input=commit_message(trigger, paths).encode("utf-8", "surrogateescape"))
    return paths


# ---------------------------------------------------------------- merge and conflicts


def _updated(data: bytes) -> datetime:
    """The frontmatter ``updated`` of a record file's bytes (the epoch when unreadable)."""
    try:
        value = parse_record_text(data.decode("utf-8-sig"), "merge")[0].get("updated")  # no YAML aliases
        return parse_instant(value, "updated") if value is not None else EARLIEST_RECORD
    except Exception:  # noqa: BLE001 - a broken version still loses to a readable one, never raises
        return EARLIEST_RECORD


def newer_version(ours: bytes, theirs: bytes) -> tuple[bytes, bytes]:
    """``(winner, loser)``: the newer frontmatter ``updated`` wins; on a tie the larger
    SHA-256 of the bytes, so both machines pick the same winner. Pure."""
    def key(data: bytes) -> tuple[datetime, str]:
        return _updated(data), hashlib.sha256(data).hexdigest()

    return (ours, theirs) if key(ours) >= key(theirs) else (theirs, ours)


#: Fields every write changes: never a conflict of their own.
_BOOKKEEPING = frozenset({"updated"})
_MISSING = object()


def _merged_record(path: str, base: bytes | None, ours: bytes, theirs: bytes,
                   now: datetime) -> tuple[bytes, bytes | None] | None:
    """Both machines changed one record since ``base``: ``(merged, loser or None)``, field by
    field — a field only one side changed takes that side's value (one machine moved a session to
    another project while the other ended it: it is ended, in the new project); a field both
    changed apart takes the newer version's (``updated``), and then the older version is kept
    beside it (``loser``). The record names the project of the folder the merge put it in.
    None when a field merge cannot be made (no base, a version memo cannot read, or a merged
    record that breaks the record rules): the caller keeps the newer version whole."""
    if base is None:
        return None
    try:
        newer, older = newer_version(ours, theirs)
        (b_meta, b_body), (n_meta, n_body), (o_meta, o_body) = (
            parse_record_text(data.decode("utf-8-sig"), path) for data in (base, newer, older))
        meta: dict[str, Any] = {}
        apart = False
        for key in [*n_meta, *(k for k in o_meta if k not in n_meta), *(k for k in b_meta if k not in n_meta
                                                                         and k not in o_meta)]:
            was, new, old = (m.get(key, _MISSING) for m in (b_meta, n_meta, o_meta))
            value = old if new == was else new
            apart = apart or (new != was and old != was and new != old and key not in _BOOKKEEPING)
            if value is not _MISSING:
                meta[key] = value
        body = o_body if n_body == b_body else n_body
        apart = apart or (n_body != b_body and o_body != b_body and n_body != o_body)
        parts = Path(path).parts
        if len(parts) > 2 and parts[0] == "projects" and meta.get("project") not in (None, parts[1]):
            meta["project"] = parts[1]  # where the merge put it (git followed a move of the file)
        check_record(meta, body, now)
        if meta.get("kind") == "session" and meta.get("endTime") and meta.get("durationMinutes") != minutes_between(
                from_iso(meta["startTime"]), from_iso(meta["endTime"])):
            return None  # one side's start, the other's end and minutes: times neither machine wrote
        return dump_record(meta, body).encode("utf-8"), (older if apart else None)
    except Exception:  # noqa: BLE001 - any doubt: the newer version whole, as before
        return None


_INVOICE_FILE = re.compile(rf"^{re.escape(ledger.FOLDER)}/(?P<number>[^/]+)\.(?P<suffix>md|pdf)$")
_LEDGER_STATE = f"{ledger.FOLDER}/{ledger.STATE}"


def _kind(md: bytes) -> str:
    """The ``kind`` of an issued document's text (``invoice`` when it cannot be read)."""
    try:
        kind = parse_frontmatter_text(md.decode("utf-8-sig"), "merge")[0].get("kind")
    except Exception:  # noqa: BLE001 - an unreadable version is said as an invoice, never raises
        kind = None
    return ledger.CREDIT_NOTE if kind == ledger.CREDIT_NOTE else ledger.INVOICE


def _created(md: bytes) -> tuple[str, str]:
    """The order two documents of one number keep: the one created first keeps the number
    as its file name (``createdAt``; on a tie the SHA-256), the same on every machine."""
    try:
        created = str(parse_frontmatter_text(md.decode("utf-8-sig"), "merge")[0].get("createdAt") or "")
    except Exception:  # noqa: BLE001 - an unreadable version sorts last, never raises
        created = "~"
    return created, hashlib.sha256(md).hexdigest()


def _merged_ledger(ours: bytes | None, theirs: bytes | None) -> bytes:
    """The ledger state both sides kept (``invoices/.ledger.json``), merged: the highest
    sequence of each key (a number either side issued is never given again) and every
    document's digests (ours where both name one)."""
    merged: dict[str, Any] = {"sequences": {}, "documents": {}}
    for side in (theirs, ours):
        try:
            data = json.loads(side or b"{}")
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        for key, value in (data.get("sequences") or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                merged["sequences"][key] = max(value, merged["sequences"].get(key, 0))
        merged["documents"].update({k: v for k, v in (data.get("documents") or {}).items() if isinstance(v, dict)})
    return json.dumps(merged, indent=1, sort_keys=True).encode("utf-8")


class _Duplicate(NamedTuple):
    """A document renamed ``<number>.duplicate-<hash8>`` by a merge: its ``kind`` (``invoice`` or
    ``creditNote``), and ``here``: it was this machine's own (the number's file is now the other's)."""

    ref: str
    kind: str
    here: bool


def _settle_invoices(store: VaultStore, git: _Git, stages: dict[str, dict[int, str]]) -> list[_Duplicate]:
    """Settle the unmerged files of ``invoices/`` (removed from ``stages``): two machines issued
    one number, each a document that was sent — both stay issued. The one created first keeps
    ``<number>.md``/``.pdf``; the other becomes ``<number>.duplicate-<hash8>.md``/``.pdf``
    (:mod:`~memo_analytics.vault.ledger`). The ledger state is merged, never kept as a
    conflict. The duplicates: :class:`_Duplicate` each."""
    def blob(path: str, stage: int) -> bytes | None:
        found = stages.get(path, {}).get(stage)
        return git.run("cat-file", "blob", found).stdout if found else None

    duplicates: list[_Duplicate] = []
    state_changes: dict[str, dict[str, str]] = {}
    numbers = sorted({m.group("number") for p in stages if (m := _INVOICE_FILE.match(p))
                      and not ledger.DUPLICATE.match(m.group("number"))})
    for number in numbers:
        md_path, pdf_path = f"{ledger.FOLDER}/{number}.md", f"{ledger.FOLDER}/{number}.pdf"
        sides = []
        for stage in (2, 3):
            md = blob(md_path, stage)
            pdf = blob(pdf_path, stage)
            if md is not None:
                if pdf is None and pdf_path not in stages:  # no conflict on it: that side's own PDF, if it has one
                    found = git.run("cat-file", "blob", f"{'HEAD' if stage == 2 else 'MERGE_HEAD'}:{pdf_path}",
                                    check=False)
                    pdf = found.stdout if found.returncode == 0 else None
                sides.append((md, pdf, stage))
        if len(sides) != 2 or sides[0][0] == sides[1][0]:
            continue  # not two documents: the generic rule settles it
        ordered = sorted(sides, key=lambda side: _created(side[0]))
        first, second, here = ordered[0][:2], ordered[1][:2], ordered[1][2] == 2  # stage 2: this machine's HEAD
        ref = ledger.duplicate_ref(number, second[0])
        for (md, pdf), name in ((first, number), (second, ref)):
            for suffix, data in (("md", md), ("pdf", pdf)):
                if data is not None:
                    atomic_write_bytes(store.root / ledger.FOLDER / f"{name}.{suffix}", data, mode=0o444)
                    git.run("add", "--", f"{ledger.FOLDER}/{name}.{suffix}")
                elif (store.root / ledger.FOLDER / f"{name}.{suffix}").exists():  # the other's, merged in
                    git.run("rm", "-q", "-f", "--", f"{ledger.FOLDER}/{name}.{suffix}")
            state_changes[name] = {"md": hashlib.sha256(md).hexdigest(),
                                   **({"pdf": hashlib.sha256(pdf).hexdigest()} if pdf is not None else {})}
        stages.pop(md_path, None)
        stages.pop(pdf_path, None)
        duplicates.append(_Duplicate(ref, _kind(second[0]), here))
    if _LEDGER_STATE in stages or state_changes:
        current = store.root / _LEDGER_STATE
        sides = (blob(_LEDGER_STATE, 2), blob(_LEDGER_STATE, 3)) if _LEDGER_STATE in stages else (
            current.read_bytes() if current.is_file() else None, None)
        merged = json.loads(_merged_ledger(*sides))
        merged.setdefault("documents", {}).update(state_changes)
        atomic_write_bytes(store.root / _LEDGER_STATE, json.dumps(merged, indent=1, sort_keys=True).encode("utf-8"))
        git.run("add", "--", _LEDGER_STATE)
        stages.pop(_LEDGER_STATE, None)
    return duplicates


_TURN_PATH = re.compile(r"^projects/[^/]+/prompts/prompt-(?P<session>.+)-t(?P<turn>\d+)\.md$")


def _two_turns(path: str, ours: bytes, theirs: bytes) -> tuple[bytes, bytes] | None:
    """``(the turn made first, the other)`` when both versions of a turn file are turns of their
    own — the same session and number, other ``created`` instants: each machine numbered its next
    turn of a shared session alike —, else None (two versions of one turn)."""
    if not _TURN_PATH.match(path):
        return None
    try:
        metas = [parse_record_text(side.decode("utf-8-sig"), path)[0] for side in (ours, theirs)]
    except (UnicodeDecodeError, MemoError):
        return None
    if metas[0].get("created") == metas[1].get("created") or metas[0].get("sessionId") != metas[1].get("sessionId"):
        return None
    first = min((str(meta.get("created")), hashlib.sha256(side).hexdigest(), index)
                for index, (meta, side) in enumerate(zip(metas, (ours, theirs))))[2]
    return ((ours, theirs) if first == 0 else (theirs, ours))


def _renumbered_turn(store: VaultStore, path: str, text: bytes) -> str:
    """Write the turn ``text`` (a turn file of ``path``'s session) as that session's next turn
    after every one the merged work tree holds; its vault-relative path."""
    match = _TURN_PATH.match(path)
    assert match is not None
    folder = (store.root / path).parent
    taken = [int(m.group(1)) for p in folder.glob(f"prompt-{match.group('session')}-t*.md")
             if (m := re.fullmatch(rf"prompt-{re.escape(match.group('session'))}-t(\d+)\.md", p.name))]
    turn = max(taken, default=int(match.group("turn"))) + 1
    meta, body = parse_record_text(text.decode("utf-8-sig"), path)
    new_id = f"prompt-{match.group('session')}-t{turn}"
    atomic_write_bytes(folder / f"{new_id}.md", dump_record({**meta, "id": new_id, "turn": turn}, body).encode("utf-8"))
    return (folder / f"{new_id}.md").relative_to(store.root).as_posix()


def _resolve_conflicts(store: VaultStore, git: _Git, stamp: str) -> tuple[list[str], list[str], list[str]]:
    """Settle every unmerged path of a stopped merge: ``(the vault-relative conflict files kept,
    the refs of invoices two machines numbered alike, the vault-relative files of turns
    renumbered after another machine's turn of the same number)``."""
    stages: dict[str, dict[int, str]] = {}
    for entry in git.run("ls-files", "-u", "-z").stdout.decode("utf-8", "surrogateescape").split("\0"):
        if entry:
            info, path = entry.split("\t", 1)
            stages.setdefault(path, {})[int(info.split()[2])] = info.split()[1]
    duplicates = _settle_invoices(store, git, stages)
    kept: list[str] = []
    renumbered: list[str] = []
    for path, blobs in sorted(stages.items()):
        ours, theirs = (git.run("cat-file", "blob", blobs[n]).stdout if n in blobs else None for n in (2, 3))
        target = store.root / path
        if ours is None and theirs is None:  # deleted on both sides
            git.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)
            continue
        if ours is None or theirs is None:  # deleted on one side, changed on the other: it stays
            winner, loser = ours if ours is not None else theirs, None
        elif (turns := _two_turns(path, ours, theirs)) is not None:
            # two machines each recorded the next turn of one session: both are turns, the later renumbered
            winner, later = turns
            renumbered.append(_renumbered_turn(store, path, later))
            git.run("add", "--", renumbered[-1])
            loser = None
        elif _record_id(path):
            base = git.run("cat-file", "blob", blobs[1]).stdout if 1 in blobs else None
            winner, loser = _merged_record(path, base, ours, theirs, utcnow()) or newer_version(ours, theirs)
        else:
            winner, loser = ours, theirs
        atomic_write_bytes(target, winner)
        git.run("add", "--", path)
        if loser is not None and loser != winner:
            conflict = keep_conflict(target, loser, stamp)
            rel = conflict.relative_to(store.root).as_posix()
            git.run("add", "--", rel)
            kept.append(rel)
    return kept, duplicates, renumbered


def _not_synced(path: str, mode: str) -> str | None:
    """Why a vault repository may not hold ``path`` (of git file ``mode``), or None: a symbolic
    link or submodule (a write through it leaves the vault), anything under a hidden folder or
    any hidden file but ``.gitignore``, ``.gitattributes`` and the invoices' ledger (``.memo/`` — another machine's
    delegations, outbox, index — and ``.git*`` files are each machine's own), a compiled view."""
    if mode not in ("100644", "100755"):
        return "a symbolic link or submodule, which a vault never holds (a write through it would leave the vault)"
    if path not in _SHARED_HIDDEN and any(part.startswith(".") for part in path.split("/")):
        return "a hidden file or folder (.memo/ and the like are each machine's own)"
    if _VIEW_PATH.match(path):
        return "a compiled view (each machine compiles its own)"
    return None


def check_incoming(git: _Git, ref: str, where: str) -> None:
    """Refuse what ``ref`` brings in that a vault never holds, before it is merged
    (:func:`_not_synced`: ``.memo/delegations.json`` or an outbox of another machine, a
    symbolic link), a file over its size limit, or a ``.gitattributes`` line of anyone's but
    memo's (one ``working-tree-encoding`` line stopped every later sync).

    Raises
    ------
    VaultGitError
        ``merge``: the first such path of ``where`` (the remote branch), and what to do.
    """
    head = git.head()
    # every merge base: git merges against a virtual base built from all of them (a criss-cross
    # history), so a file one base lacks comes in even when another base holds it
    bases = git.run("merge-base", "--all", "HEAD", ref, check=False).stdout.decode().split() if head else []

    def refuse(path: str, why: str) -> None:
        raise VaultGitError("merge", f"{where} holds {path!r}, {why}; nothing was merged (remove it from {where}, "
                                     f"then sync again)")

    issued = {blob for _, blob, path in _tree(git, ref) if ledger.DUPLICATE.match(Path(path).stem)}
    adds: dict[str, tuple[str, str]] = {}  # path → (mode, blob) of what the remote adds or changes
    for base in bases or [_EMPTY_TREE]:
        raw = git.run("diff", "--raw", "-z", "--no-renames", "--no-abbrev", base, ref).stdout
        fields = raw.decode("utf-8", "surrogateescape").split("\0")
        for info, path in zip(fields[0::2], fields[1::2]):
            parts = info.lstrip(":").split()
            if len(parts) != 5:
                continue
            if _INVOICE_FILE.match(path) and parts[4] in ("D", "M") and parts[2] not in issued:
                # an issued document is never deleted or changed: only made a duplicate by a merge (a
                # deletion is no file to remove: what puts it back is said — found by two freelancers)
                deleted = parts[4] == "D"
                raise VaultGitError("merge", f"{where} {'deletes' if deleted else 'changes'} the issued document "
                                             f"{path!r} (its sessions would be billed again); nothing was merged "
                                             f"({'put it back on' if deleted else 'put it back as issued on'} {where} — "
                                             f"git revert the commit that {'deleted' if deleted else 'changed'} it "
                                             "on the machine that made it, and push —, then sync again)")
            if parts[4] != "D":
                adds[path] = (parts[1], parts[3])
    changed = [(mode, blob, path) for path, (mode, blob) in sorted(adds.items())]

    for mode, _, path in changed:
        why = _not_synced(path, mode)
        if why:
            refuse(path, why)
    if not changed:
        return
    sizes = git.run("cat-file", "--batch-check=%(objectname) %(objectsize)",
                    input="".join(f"{blob}\n" for _, blob, _ in changed).encode()).stdout.decode().split("\n")
    for (_, blob, path), line in zip(changed, sizes):
        kind = "record" if _RECORD_PATH.match(path) else "other"
        size = int(line.split()[1]) if len(line.split()) == 2 and line.split()[1].isdigit() else 0
        if size > _MAX_PULLED_BYTES[kind]:
            refuse(path, f"of {size:,} bytes (a {'record' if kind == 'record' else 'file'} of a vault is at most "
                         f"{_MAX_PULLED_BYTES[kind]:,})")
    records = [(blob, path) for _, blob, path in changed if _record_id(path)]
    for (blob, path), text in zip(records, _blobs(git, [blob for blob, _ in records])):
        try:
            meta, body = parse_record_text(text.decode("utf-8"), path)
        except (UnicodeDecodeError, MemoError) as exc:  # merged, it sat in the vault unindexed, said only there
            refuse(path, f"which is no record memo can read ({str(exc).splitlines()[0][:160]})")
        try:  # the rules of local writes and hybrid pushes: a session's minutes are its times, ids match …
            check_record(meta, body, utcnow())
        except MemoError as exc:
            refuse(path, f"which breaks a rule of the vault's records ({str(exc).splitlines()[0][:200]})")
    documents = [(blob, path) for _, blob, path in changed
                 if (found := _INVOICE_FILE.match(path)) and found["suffix"] == "md"]
    if documents:  # an issued document comes with the PDF it was issued as: a bare .md is none
        pdfs = {path: blob for _, blob, path in _tree(git, ref) if path.endswith(".pdf")}
        for (blob, path), text in zip(documents, _blobs(git, [blob for blob, _ in documents])):
            try:
                meta = parse_frontmatter_text(text.decode("utf-8-sig"), path)[0]
            except (UnicodeDecodeError, MemoError):
                refuse(path, "which is no issued document memo can read")
            pdf = pdfs.get(path[:-len(".md")] + ".pdf")
            if pdf is None:
                refuse(path, "an issued document without its PDF (a document is issued with the PDF sent; this "
                             "one was never sent, and would cancel or bill sessions all the same)")
            data = _blobs(git, [pdf])[0]
            if hashlib.sha256(data).hexdigest() != meta.get("pdfSha256"):
                refuse(path, "whose PDF is not the one it was issued with (no pdfSha256, or its SHA-256 differs; a "
                             "document issued by a memo older than 2026-12-01 is issued again with a current one)")
    for (_, blob, path) in changed:
        if path == ".gitignore":
            lines = git.run("cat-file", "blob", blob).stdout.decode("utf-8", "replace").splitlines()
            hiding = _ignores_synced(lines)
            if hiding:
                refuse(path, f"with the line {hiding[:80]!r}, which is not memo's: it may keep records or invoices "
                             f"out of every later commit, or bring a machine's own files in (a machine's own "
                             f"ignores go in .git/info/exclude)")
        if path == ".gitattributes":
            lines = git.run("cat-file", "blob", blob).stdout.decode("utf-8", "replace").splitlines()
            foreign = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")
                       and ln not in GITATTRIBUTES_LINES]
            if foreign:
                refuse(path, f"with the line {foreign[0][:80]!r}, which is not memo's (git would apply it to "
                             f"every record)")


def _tree(git: _Git, ref: str) -> list[tuple[str, str, str]]:
    """``(mode, blob, path)`` of every file of ``ref``'s ``invoices/`` folder."""
    listing = git.run("ls-tree", "-r", "-z", ref, "--", f"{ledger.FOLDER}/").stdout.decode("utf-8", "surrogateescape")
    found = []
    for entry in filter(None, listing.split("\0")):
        info, path = entry.split("\t", 1)
        mode, _, blob = info.split()
        found.append((mode, blob, path))
    return found


def _blobs(git: _Git, blobs: list[str]) -> list[bytes]:
    """The contents of ``blobs``, in order, through one ``git cat-file --batch``."""
    if not blobs:
        return []
    out = git.run("cat-file", "--batch", input="".join(f"{blob}\n" for blob in blobs).encode()).stdout
    found, at = [], 0
    for _ in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        found.append(out[header_end + 1: header_end + 1 + size])
        at = header_end + 1 + size + 1
    return found


def _ignores_synced(lines: list[str]) -> str | None:
    """The first ``.gitignore`` line of ``lines`` that is not memo's, or None. Any other line may
    keep records or invoices out of every later commit — ``/projects/shop/`` stopped one project
    syncing without a word, and no set of sample paths tells every such line — or, re-including
    (``!…``), bring a machine's own ``.memo/`` in; a machine's own ignores go in
    ``.git/info/exclude``."""
    for line in lines:
        text = line.strip()
        if text and not text.startswith("#") and line not in GITIGNORE_LINES:
            return line
    return None


def check_tracked(git: _Git, root: Path) -> None:
    """Refuse to sync a vault repository that tracks what a vault never holds (a clone of a
    repository someone pushed ``.memo/delegations.json`` or a symbolic link to):
    :func:`_not_synced` over every tracked file.

    Raises
    ------
    VaultGitError
        ``sync``: every such path (the first few named, with why), and one command that untracks
        them all — a vault kept in git before memo (its compiled views committed) was told one
        file a run, five runs a project.
    """
    listing = git.run("ls-files", "-s", "-z").stdout.decode("utf-8", "surrogateescape").split("\0")
    found = []
    for entry in filter(None, listing):
        info, path = entry.split("\t", 1)
        why = _not_synced(path, info.split()[0])
        if why:
            found.append((path, why))
    if found:
        named = "; ".join(f"{path!r}, {why}" for path, why in found[:3])
        more = f"; and {len(found) - 3} more" if len(found) > 3 else ""
        where = shell_word(str(root))
        paths = " ".join(shell_word(path) for path, _ in found)
        files = "the file" if len(found) == 1 else f"the {len(found)} files"
        # --literal-pathspecs: a name is that file, never a pattern (':!x/.y' untracked the whole vault)
        raise VaultGitError("sync", f"the vault repository tracks {named}{more}; nothing was synced: git -C {where} "
                                    f"--literal-pathspecs rm -r --cached -- {paths} && git -C {where} commit -m "
                                    f"untrack, after checking {files}")


def _pulled_documents(store: VaultStore, result: dict[str, Any], added: list[str],
                      duplicates: list[_Duplicate]) -> None:
    """Say in ``result`` what a merge did to the issued documents: ``invoicesPulled`` the other
    machines' (a number whose file is now theirs included: this machine's own of that number was
    renamed, and is not "pulled"), ``renamedHere`` this machine's renamed ones, and
    ``duplicateInvoices``/``duplicateCreditNotes`` each duplicate — settled by this merge, or
    pulled as another machine settled it (every machine of the vault hears of a number given twice)."""
    duplicates = list(duplicates)
    here = [d.ref for d in duplicates if d.here]
    pulled = [ref for ref in added if ref not in here] + [ref.split(".duplicate-")[0] for ref in here]
    result["invoicesPulled"] += sorted(set(pulled))
    result["renamedHere"] += here
    known = {d.ref for d in duplicates}
    for ref in pulled:
        if ledger.DUPLICATE.match(ref) and ref not in known:
            try:
                duplicates.append(_Duplicate(ref, _kind((store.root / ledger.FOLDER / f"{ref}.md").read_bytes()),
                                             False))
            except OSError:
                continue
    result["duplicateInvoices"] += [d.ref for d in duplicates if d.kind == ledger.INVOICE]
    result["duplicateCreditNotes"] += [d.ref for d in duplicates if d.kind == ledger.CREDIT_NOTE]


def _documents_added(git: _Git, before: str | None) -> list[str]:
    """The refs of the issued documents (invoices, credit notes) a merge brought in since
    ``before``: they change what is billed, so a sync names them."""
    names = git.names("diff", "--name-only", "--diff-filter=A", "--no-renames", f"--relative={ledger.FOLDER}/",
                      before or _EMPTY_TREE, "HEAD")
    return sorted(Path(name).stem for name in names if name.endswith(".md") and not Path(name).name.startswith("."))


def _terms_differ(store: VaultStore, pulled: list[str]) -> list[dict[str, Any]]:
    """The pulled invoices whose client this machine's config bills on other terms — its reports
    (and the next invoice issued here) come to other amounts than the other machine's:
    ``[{invoice, client, differences}]`` (:func:`~memo_analytics.domain.billing.differs_from_issued`).
    Billing terms are each machine's config; vault-git does not carry them."""
    from ..domain.billing import differs_from_issued

    if not pulled:
        return []
    try:
        documents = {doc.ref: doc for doc in ledger.documents(store.root)}
    except MemoError:
        return []
    settings = store.settings
    found = []
    for ref in pulled:
        doc = documents.get(ref)
        if doc is None or not isinstance(doc.meta.get("client"), str):
            continue
        differences = differs_from_issued(doc.meta, settings.billing_for(doc.meta["client"]),
                                          union=settings.overlap_policy == "union")
        if differences:
            found.append({"invoice": ref, "client": doc.meta["client"], "differences": differences})
    return found


def terms_still_differ(store: VaultStore) -> list[dict[str, Any]]:
    """The invoices a sync pulled whose client this machine's config still bills otherwise
    (:func:`_terms_differ`, compared again now): ``[{invoice, client, differences}]``, for
    ``memo sync status`` and the operator digest (a sync run in the background, at a session's
    end, said them to no one). Reads no network."""
    refs = read_state(store).get("termsDifferInvoices")
    return _terms_differ(store, [r for r in refs if isinstance(r, str)] if isinstance(refs, list) else [])


def _invoiced_sessions_changed(store: VaultStore, git: _Git, before: str | None,
                               pulled: list[str]) -> list[dict[str, Any]]:
    """Sessions on an uncredited invoice that a pull left differing from the invoice: their
    record changed in the merge (another machine edited a session this one had invoiced), or the
    pull brought the invoice in (another machine invoiced a session this one had edited). A local
    edit of an invoiced session is refused; these came in through git, so the sync names them —
    ``[{project, sessionId, invoice, fields, asInvoiced}]`` (``fields``:
    :func:`~memo_analytics.vault.ledger.differs_from_invoice`; ``asInvoiced``:
    :func:`~memo_analytics.vault.ledger.as_invoiced`) — and the digest lists them
    (``invoice_session_changed``) until they agree again. A ledger memo cannot read names
    nothing here (the sync says so otherwise)."""
    try:
        items = ledger.invoiced_items(ledger.documents(store.root))
    except MemoError:
        return []
    pulled_numbers = {ref.split(".duplicate-")[0] for ref in pulled}
    sessions_dir = subdir_for_kind(RecordKind.SESSION)
    changed: set[tuple[str, str]] = set()  # (project, record id) of each session record the merge changed
    for path in git.names("diff", "--name-only", "--no-renames", before or _EMPTY_TREE, "HEAD", "--", "projects/"):
        parts = Path(path).parts
        if len(parts) == 4 and parts[2] == sessions_dir and _record_id(path):
            changed.add((parts[1], Path(path).stem))
    projects = {project for project, _ in changed}
    keys = [key for key, (number, _, _) in items.items() if number in pulled_numbers or key[0] in projects]
    found: list[dict[str, Any]] = []
    for session in snapshot_rows.sessions_keyed(store.conn, keys):
        key = (str(session.get("project")), str(session.get("sessionId")))
        number, client, item = items[key]
        if (key[0], session.get("id")) in changed or number in pulled_numbers:
            fields = ledger.differs_from_invoice(session, client, item)
            if fields:
                found.append({"project": key[0], "sessionId": key[1], "invoice": number, "fields": fields,
                              "asInvoiced": ledger.as_invoiced(client, item)})
    return sorted(found, key=lambda f: (f["project"], f["sessionId"]))


def _merge(store: VaultStore, git: _Git, ref: str, trigger: str, stamp: str) -> tuple[list[str], list[str], list[str]]:
    """Merge ``ref`` into HEAD: :func:`_resolve_conflicts`' three lists (none when it merged
    cleanly)."""
    vg = store.settings.vault_git
    # no rename detection of files nor of folders: a session moved to another project on one
    # machine must not carry the other machine's new records of the old project along with it
    proc = git.run("-c", "merge.directoryRenames=false", "merge", "-q", "--no-edit", "--no-verify", "-X", "no-renames",
                   "--allow-unrelated-histories",
                   "-m", f"memo sync ({trigger}): merge {vg.remote}/{vg.branch}", ref, check=False)
    if proc.returncode == 0:
        return [], [], []
    if not git.names("diff", "--name-only", "--diff-filter=U"):
        git.run("merge", "--abort", check=False)
        raise VaultGitError("merge", _first_line(proc.stderr) or _first_line(proc.stdout))
    kept, duplicates, renumbered = _resolve_conflicts(store, git, stamp)
    message = (f"memo sync ({trigger}): merge {vg.remote}/{vg.branch}; {len(kept)} conflict version(s) kept"
               + (f"; invoice numbers issued on both machines: {', '.join(d.ref for d in duplicates)}"
                  if duplicates else "")
               + (f"; turns renumbered: {', '.join(renumbered)}" if renumbered else "")
               + "\n\n")
    git.run("commit", "-q", "--no-verify", "-F", "-", input=(message + "\n".join(kept) + "\n").encode("utf-8"))
    return kept, duplicates, renumbered


def _refresh_index(store: VaultStore, git: _Git) -> int:
    """Bring the index up to date with the records that changed since the commit it was
    last brought up to date with (``indexedCommit`` in the state file); a full reindex when
    that commit is unknown (a fresh clone, the first sync) or records were deleted. The
    number of records touched."""
    head = git.head()
    indexed = read_state(store).get("indexedCommit")
    if head is None or head == indexed:
        return 0
    if not indexed or not git.ok("cat-file", "-e", f"{indexed}^{{commit}}"):
        changes = None
    else:
        listing = git.names("diff", "--name-status", "--no-renames", indexed, "HEAD")
        changes = [(status, path) for status, path in zip(listing[0::2], listing[1::2]) if _record_id(path)]
    if changes is None or any(status == "D" for status, _ in changes):
        touched = reindex(store).indexed  # rebuild from the files
    else:
        touched, projects = 0, set()
        pulled = git.names("diff", "--name-only", "--no-renames", "--relative=projects/", indexed, "HEAD")
        folders = {"/".join(path.split("/")[:2]) for path in pulled if path.count("/") == 2}
        with index.transaction(store.conn):
            for _, path in changes:
                parsed = parse_for_index(store.root / path)
                if isinstance(parsed, CorruptRecordError):
                    log.warning("vault-git: %s is not indexed: %s", path, parsed.reason)
                    continue
                index.upsert_record(store.conn, parsed[0], parsed[1], path)
                projects.add(parsed[0]["project"])
                touched += 1
            # the folders the pull changed are in the index as they are now: the next command does
            # not take them for folders changed outside memo (it said so after every pull)
            index.set_folder_stamps(store.conn, {key: folder_stamp(store.layout, key) for key in sorted(folders)})
        for project in sorted(projects):
            store.refresh_views(project)
    _update_state(store, indexedCommit=head)
    return touched


# ---------------------------------------------------------------- sync


def sync(store: VaultStore, trigger: str, now: datetime | None = None) -> dict[str, Any]:
    """Commit, pull (fetch + merge) and push the vault (see the module docstring).

    Parameters
    ----------
    store : VaultStore
        The vault; ``store.settings.vault_git`` says whether, where and which branch.
    trigger : str
        What asked for the sync (``session_end``, ``manual``); named in commit messages.
    now : datetime, optional
        Aware UTC instant for conflict-file stamps and the state file (default: now).

    Returns
    -------
    dict
        ``{trigger, at, committed (records in the new commit), records (their ids), files
        (paths committed), otherFiles (those that are no record: an issued invoice, the
        ledger, memo's .gitignore), pulled (a merge brought commits in), pushed (commits went out;
        False when the remote already had them), conflicts (vault-relative paths of kept
        versions), renumberedTurns (turns another machine had numbered alike, each now the
        session's next: their vault-relative paths), invoicesPulled (refs of the invoices and
        credit notes the pull brought in: they change what is billed), duplicateInvoices (refs of
        invoices the other machine had issued under the same number — settled by this merge or
        pulled as another machine settled it: both stay issued, see
        :mod:`~memo_analytics.vault.ledger`), duplicateCreditNotes (the same for credit notes: both
        stand, each cancelling its invoice; a credit note is never cancelled), renamedHere (refs of
        this machine's own documents among those duplicates: their number's file is now the other
        machine's document), invoicedSessionsChanged (``[{project, sessionId, invoice, fields,
        asInvoiced}]``: sessions on an issued invoice whose times, client or billable flag now
        differ from the invoice's, after the pull; see :func:`_invoiced_sessions_changed`),
        termsDiffer (``[{invoice, client, differences}]``: pulled invoices whose client this
        machine's config bills otherwise, see :func:`_terms_differ`), issuedChangedHere
        (vault-relative paths of issued documents changed or deleted on this machine: not
        committed — the other machines refuse them — until put back), invoicedDeletedHere (``[{path,
        invoice}]``: session records an issued invoice bills, deleted on this machine and held in no
        project: the deletion is not committed until put back), strayTurns (``[{project, sessionId,
        sessionProject, turns, projectSessions}]`` after a merge: turns left in a project that holds
        no session of theirs, their session now in another — the other machine renamed the project
        while this one recorded into it; :func:`~memo_analytics.index.store.stray_turns`), reindexed (records the index
        took in), error (one line or None), skipped (why nothing ran, or None)}``, and
        ``recovered`` (one line) when the sync before was stopped mid-run and what it left in git
        was cleared (:func:`_take_over`). Never raises for a
        git, network or vault problem: it is in ``error`` (and logged).
    """
    now = now or utcnow()
    result: dict[str, Any] = {"trigger": trigger, "at": to_iso(now), "committed": 0, "records": [], "files": 0,
                              "otherFiles": [], "invoicesPulled": [], "renumberedTurns": [],
                              "pulled": False, "pushed": False, "conflicts": [], "duplicateInvoices": [],
                              "duplicateCreditNotes": [], "renamedHere": [], "invoicedSessionsChanged": [],
                              "termsDiffer": [], "issuedChangedHere": [], "invoicedDeletedHere": [], "strayTurns": [],
                              "reindexed": 0, "error": None, "skipped": None}
    settings = store.settings
    if not settings.vault_git.enabled:
        result["skipped"] = "vaultGit.enabled is false"
        return result
    try:
        store.layout.meta_dir.joinpath("sync").mkdir(parents=True, exist_ok=True)
        with FileLock(str(store.layout.meta_dir / "sync" / "git.lock"), timeout=GIT_TIMEOUT_SECONDS * 3):
            try:
                _sync(store, trigger, now, result)
            finally:
                _running(store).unlink(missing_ok=True)
    except Timeout:
        result["error"] = "Vault-git sync failed: another sync of this vault is still running"
    except (MemoError, OSError) as exc:
        result["error"] = str(exc) if isinstance(exc, MemoError) else f"Vault-git sync failed: {exc}"
    if result.get("recovered") and trigger != "manual":  # `memo sync git` says it itself
        log.warning("memo sync (%s): %s", trigger, result["recovered"])
    if result["error"]:
        result["error"] = redact_secrets(result["error"])[0]  # a token in a remote URL stays out of logs
        if trigger != "manual":  # a sync in the background tells its log; `memo sync git` says it itself
            log.warning("memo sync (%s): %s", trigger, result["error"])
    _save_state(store, result)
    return result


def _running(store: VaultStore) -> Path:
    """The mark a sync leaves while it runs (under its lock): found by the next one, the sync
    before it was killed (``kill -9``, a power cut) mid-run."""
    return store.layout.meta_dir / "sync" / "git-running"


def _take_over(store: VaultStore, git: _Git, result: dict[str, Any]) -> None:
    """Clear what a sync killed mid-run left in the repository — git's ``index.lock`` and a merge
    not committed (its own: memo merges no other way) — and mark this one running. A merge or an
    ``index.lock`` memo did not leave (a ``git pull`` by hand) is the person's to finish: refused
    with the commands that do. After a kill during the merge, every later sync failed ("Unable to
    create …/index.lock: File exists") until the file was deleted by hand."""
    gitdir = Path(git.out("rev-parse", "--absolute-git-dir"))
    lock, merging = gitdir / "index.lock", (gitdir / "MERGE_HEAD").exists()
    where = shell_word(str(store.root))
    if _running(store).exists():
        _wait_for_its_git(_running(store), lock)
        lock.unlink(missing_ok=True)
        if merging:
            git.run("merge", "--abort", check=False)
        result["recovered"] = "the sync before this one was stopped mid-run; what it left in git was cleared"
    elif lock.exists():
        raise VaultGitError("git", f"{lock} exists: a git command is running in the vault, or one was killed; if "
                                   f"none runs, remove it (rm {shell_word(str(lock))}), then sync again")
    elif merging:
        raise VaultGitError("git", f"a merge started by hand in the vault is not finished: finish it (git -C {where} "
                                   f"commit) or abort it (git -C {where} merge --abort), then sync again")
    _running(store).write_text(f"{os.getpid()}\n", encoding="utf-8")
    git.marker = _running(store)


def _wait_for_its_git(marker: Path, lock: Path) -> None:
    """Wait (up to :data:`GIT_TIMEOUT_SECONDS`) for the git a killed sync left running (named in
    its ``marker``) to end while it holds ``lock``: taking its lock away made the next sync fail
    ("Unable to write new index file" — found by a reliability tester: a ``git add`` runs on
    after its memo is killed)."""
    import time

    try:
        pid = int(marker.read_text(encoding="utf-8").split()[1])
    except (OSError, ValueError, IndexError):
        return
    deadline = time.monotonic() + GIT_TIMEOUT_SECONDS
    while lock.exists() and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)  # still there (a zombie of a memo killed is reaped by init soon)
        except ProcessLookupError:
            return
        except OSError:  # another user's process of that number: not the git memo ran
            return
        time.sleep(0.05)


def _sync(store: VaultStore, trigger: str, now: datetime, result: dict[str, Any]) -> None:
    vg = store.settings.vault_git
    git = _Git(store.root)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    tracking = f"refs/remotes/{vg.remote}/{vg.branch}"

    def commit() -> None:
        held: list[str] = []
        kept_back: list[dict[str, str]] = []
        paths = _commit_changes(git, trigger, held, ledger.invoiced_in(store.root), kept_back)
        result["issuedChangedHere"] = sorted(set(result.get("issuedChangedHere", [])) | set(held))
        result["invoicedDeletedHere"] = [*result.get("invoicedDeletedHere", []),
                                         *(k for k in kept_back if k not in result.get("invoicedDeletedHere", []))]
        keys = [k for k in map(_record_key, paths) if k]
        result["records"] = sorted(set(result["records"]) | set(keys))
        result["committed"] = len(result["records"])
        result["files"] += len(paths)
        result["otherFiles"] = sorted(set(result["otherFiles"]) | {p for p in paths if not _record_key(p)})

    with store.lock():
        store.conn  # the index is checked against the files now: what the pull changes, it indexes itself
        ensure_repository(store, git)
        _take_over(store, git, result)
        check_tracked(git, store.root)
        git.use_identity()
        commit()
    if not git.ok("remote", "get-url", vg.remote):
        raise VaultGitError("remote", f"the vault repository has no remote {vg.remote!r}; add one with "
                                      f"git -C {shell_word(str(store.root))} remote add {shell_word(vg.remote)} URL (local commits are kept)")
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        fetch = git.run("fetch", "-q", "--no-tags", vg.remote, f"+refs/heads/{vg.branch}:{tracking}", check=False)
        remote_empty = fetch.returncode != 0 and b"couldn't find remote ref" in fetch.stderr
        if fetch.returncode != 0 and not remote_empty:
            raise VaultGitError("fetch", _first_line(fetch.stderr))
        with store.lock():
            commit()  # records written while we fetched
            before = merged = None
            if not remote_empty and not git.ok("merge-base", "--is-ancestor", tracking, "HEAD"):
                check_incoming(git, tracking, f"{vg.remote}/{vg.branch}")
                before = git.head()
                kept, duplicates, renumbered = _merge(store, git, tracking, trigger, stamp)
                result["conflicts"] += kept
                result["renumberedTurns"] += renumbered
                _pulled_documents(store, result, _documents_added(git, before), duplicates)
                result["pulled"] = merged = True
            result["reindexed"] += _refresh_index(store, git)
            if merged:
                # turns recorded here into a project the other machine renamed meanwhile: apart from their session
                result["strayTurns"] = index.stray_turns(store.conn)
                result["invoicedSessionsChanged"] += _invoiced_sessions_changed(store, git, before,
                                                                                result["invoicesPulled"])
                result["termsDiffer"] += _terms_differ(store, result["invoicesPulled"])
        head = git.head()
        if head is None or (not remote_empty and git.out("rev-parse", tracking) == head):
            return  # nothing the remote lacks
        push = git.run("push", "-q", "--no-verify", vg.remote, f"HEAD:refs/heads/{vg.branch}", check=False)
        if push.returncode == 0:
            result["pushed"] = True
            git.run("update-ref", tracking, head)
            return
        moved = re.search(rb"\[rejected\]|non-fast-forward|fetch first", push.stderr)
        if not moved or attempt == PUSH_ATTEMPTS:
            raise VaultGitError("push", _first_line(push.stderr))


# ---------------------------------------------------------------- state for `memo sync status`


def _state_path(store: VaultStore) -> Path:
    return store.layout.meta_dir / "sync" / STATE_FILE


def _save_state(store: VaultStore, result: dict[str, Any]) -> None:
    if result["skipped"]:
        return
    changes: dict[str, Any] = {"lastAttemptAt": result["at"], "last": result}
    if result.get("termsDiffer"):  # kept for `memo sync status`, which says them until the terms agree
        before = read_state(store).get("termsDifferInvoices")
        kept = [ref for ref in before if isinstance(ref, str)] if isinstance(before, list) else []
        changes["termsDifferInvoices"] = sorted(set(kept) | {item["invoice"] for item in result["termsDiffer"]})
    if result["error"]:
        changes.update(lastError=result["error"], lastErrorAt=result["at"])
    else:
        changes["lastSuccessAt"] = result["at"]
    _update_state(store, **changes)


def _update_state(store: VaultStore, **changes: Any) -> None:
    try:
        write_json_state(_state_path(store), {**read_state(store), **changes})
    except OSError as exc:
        log.warning("memo sync: cannot write %s: %s", _state_path(store), exc)


def read_state(store: VaultStore) -> dict[str, Any]:
    """``.memo/sync/git.json``: ``lastAttemptAt``, ``lastSuccessAt``, ``lastError``,
    ``lastErrorAt`` and ``last`` (the result of the last sync); empty before the first."""
    return read_json_state(_state_path(store)) or {}


def status(store: VaultStore) -> dict[str, Any]:
    """Vault-git status without touching the network (for ``memo sync status``); ``lastError``
    and ``lastErrorAt`` are None once a later sync succeeded.

    Returns ``{enabled, remote, branch, remoteUrl, repository (bool), unpushedCommits,
    uncommittedFiles, conflictFiles, lastAttemptAt, lastSuccessAt, lastError, lastErrorAt,
    termsDiffer}``; counts are None when the vault is not a git repository yet. ``termsDiffer``:
    the invoices a sync pulled whose client this machine's config still bills otherwise
    (:func:`_terms_differ`, compared again now: a sync run in the background, at a session's end,
    said them to no one).
    """
    vg = store.settings.vault_git
    state = read_state(store)
    answer: dict[str, Any] = {"enabled": vg.enabled, "remote": vg.remote, "branch": vg.branch, "remoteUrl": None,
                              "repository": (store.root / ".git").exists(), "unpushedCommits": None,
                              "uncommittedFiles": None,
                              **{k: state.get(k) for k in ("lastAttemptAt", "lastSuccessAt", "lastError", "lastErrorAt")}}
    answer["termsDiffer"] = terms_still_differ(store)
    if answer["lastError"] and answer["lastSuccessAt"] and answer["lastSuccessAt"] > (answer["lastErrorAt"] or ""):
        answer["lastError"] = answer["lastErrorAt"] = None  # a sync since has succeeded: settled
    if answer["repository"]:
        git = _Git(store.root)
        try:
            url = git.run("remote", "get-url", vg.remote, check=False)
            text = url.stdout.decode("utf-8", "replace").strip()
            answer["remoteUrl"] = re.sub(r"//[^/@\s]+@", "//***@", text) or None  # no credentials shown
            if git.head() is not None:
                tracking = f"refs/remotes/{vg.remote}/{vg.branch}"
                span = f"{tracking}..HEAD" if git.ok("rev-parse", "-q", "--verify", tracking) else "HEAD"
                answer["unpushedCommits"] = int(git.out("rev-list", "--count", span))
            else:
                answer["unpushedCommits"] = 0
            answer["uncommittedFiles"] = len(git.names("status", "--porcelain", "--no-renames",
                                                          "--untracked-files=all"))
        except VaultGitError as exc:
            answer["lastError"] = answer["lastError"] or str(exc)
    return answer

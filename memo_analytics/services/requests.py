"""Typed request models: one per action, shared by the CLI, MCP and HTTP adapters.

Fields are snake_case in Python and camelCase on the wire (``sessionId``, ``taskSlug``).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from ..domain.clock import zone_name_problem
from ..domain.errors import InvalidFieldError
from ..domain.ids import MAX_TURN


class Request(BaseModel):
    """Base of every request: camelCase aliases, unknown fields refused, text must be UTF-8."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", defer_build=True)

    @model_validator(mode="after")
    def _utf8_text(self):
        for name in type(self).model_fields:
            value = getattr(self, name)
            if name == "client" and isinstance(value, str):
                # one spelling of a name: "Café" typed on a Mac (e + U+0301) is the configured client
                value = unicodedata.normalize("NFC", value)
                setattr(self, name, value)
            values = value if isinstance(value, list) else [value]
            for item in values:
                if isinstance(item, str):
                    try:
                        item.encode("utf-8")
                    except UnicodeEncodeError:
                        raise ValueError(f"{name}: is not valid UTF-8") from None
        return self


def _branch_name(value: str | None) -> str | None:
    """A git branch name: none starts with ``-`` (git refuses one; printed in the digest's
    command it read as an option, and the command was withheld)."""
    if value is not None and value.strip().startswith("-"):
        raise ValueError(f"{value.strip()[:60]!r} starts with '-', which no git branch name does")
    return value


class RecordContext(Request):
    """Fields shared by ``record`` and ``session_start`` (SPEC §2.3, §3.1)."""

    project: str | None = Field(None, description="Project id (safe slug); default from cwd or settings")
    cwd: str | None = Field(None, description="The caller's working directory (product repository)")
    ide: str | None = Field(None, description="IDE or agent host, e.g. cursor, claude-code (default generic)")
    model: str | None = Field(None, description="Model name")
    agent: str | None = Field(None, description="Agent name")
    client: str | None = Field(None, description="Client billed for this work (default: the session's, else internal)")
    billable: bool | None = Field(None, description="Billable work (default true)")
    task_slug: str | None = Field(None, description="Task slug")
    branch: str | None = Field(None, description="Git branch")
    git_sha: str | None = Field(None, description="Git commit sha")
    linked_paths: list[str] = Field(default_factory=list, description="Paths this turn concerns")
    tags: list[str] = Field(default_factory=list, description="Free tags")
    source: str | None = Field(None, description="Where the record came from (mcp, cli, import:claude-code ...)")
    extra: dict[str, Any] = Field(default_factory=dict, description="Extra frontmatter (importers: transcriptId ...)")

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        return _branch_name(value)


class RecordPromptRequest(RecordContext):
    """``record``: one conversational turn (SPEC §2.2–§2.4)."""

    body: str = Field(description="The turn's text; must be non-empty after stripping")
    session_id: str | None = Field(None, description="Session id; with no turn, the next turn is allocated")
    turn: int | None = Field(None, ge=1, le=MAX_TURN, description="Explicit turn number (1–1,000,000)")
    created: datetime | str | None = Field(None, description="When the turn happened (default now), ISO 8601")
    skip_existing: bool = Field(False, description="Importers: leave an existing record with this id untouched")
    owner: str | None = Field(None, description="Who records the turn: refused into another person's session")


class StartSessionRequest(RecordContext):
    """``session_start`` (SPEC §2.5)."""

    session_id: str | None = Field(None, description="Session id; generated when absent")
    start_time: datetime | str | None = Field(None, description="Start instant (default now), ISO 8601")
    summary: str | None = Field(None, description="Summary of the work")
    owner: str | None = Field(None, description="Who works this session (claims hand-offs addressed to them)")
    objective: str | None = Field(None, description="The session objective for this owner/branch (cleared on end)")


class EditSessionRequest(Request):
    """``session edit``: correct a session's billing data (SPEC §9)."""

    session_id: str | None = Field(None, description="Session id (required)")
    project: str | None = Field(None, description="Project id (default: where the session lives)")
    client: str | None = Field(None, description="The client billed ('internal': none)")
    billable: bool | None = Field(None, description="Whether the session is billed")
    summary: str | None = Field(None, description="What the session did (its invoice and timesheet description)")
    to_project: str | None = Field(None, description="Move the session and its turns to this project")

    @field_validator("client", "to_project")
    @classmethod
    def _not_blank(cls, value: str | None, info) -> str | None:
        """An empty client is refused, as the command line refuses it: ``"client": ""`` from a form
        left blank made a billed session internal, without a word (``internal`` says so)."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty: give the client's name ('internal' for none)" if info.field_name == "client"
                             else "is empty: give the project to move it to")
        return value
    start_time: datetime | str | None = Field(None, description="Correct when the session started, ISO 8601 "
                                                                "(completed sessions)")
    end_time: datetime | str | None = Field(None, description="Correct when the session ended, ISO 8601")
    minutes: int | None = Field(None, ge=0, le=7 * 24 * 60, description="Correct its length: it ends this many "
                                                                        "minutes after its start")
    reviewed: bool | None = Field(None, description="Its pull request was reviewed (true: now; false: not yet)")
    cwd: str | None = Field(None, description="The caller's working directory (chooses between projects)")


class HandoffInput(Request):
    """The baton a ``session_end`` leaves for the next session (SPEC §2.5)."""

    next_steps: list[str] | str = Field(description="What the next session should do first (required)")
    failed_approaches: list[str] | str = Field(default_factory=list, description="What was tried and did not work")
    open_questions: list[str] | str = Field(default_factory=list, description="Questions still open")
    branch: str | None = Field(None, description="Only a session on this branch claims it")
    owner: str | None = Field(None, description="Only this owner's session claims it (unless shared)")
    shared: bool = Field(False, description="Any session of the project may claim it")

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str | None) -> str | None:
        return _branch_name(value)


class CancelHandoffRequest(Request):
    """``cancel_handoff``: a pending hand-off nobody should claim (SPEC §2.5)."""

    id: str | None = Field(None, description="Hand-off id (handoff-<sessionId>)")
    session_id: str | None = Field(None, description="The session whose end wrote the hand-off")
    project: str | None = Field(None, description="Project id (default: the repository of cwd)")
    owner: str | None = Field(None, description="Without id or sessionId: cancel this owner's pending hand-offs "
                                                "(default: the cwd repository's git user.email, else user.name)")
    branch: str | None = Field(None, description="Without id or sessionId: … on this branch (default: the cwd "
                                                 "repository's branch)")
    cwd: str | None = Field(None, description="The caller's working directory (product repository)")


class EndSessionRequest(Request):
    """``session_end`` (SPEC §2.5)."""

    session_id: str | None = Field(None, description="Session id (required)")
    project: str | None = Field(None, description="Project id (default: where the session lives)")
    until: datetime | str | None = Field(None, description="End instant (default now), ISO 8601")
    summary: str | None = Field(None, description="Summary of the work")
    pr: str | None = Field(None, description="Pull-request URL; adds a {type: 'pr'} deliverable")
    deliverables: list[dict[str, Any]] = Field(default_factory=list, description="Deliverables {type, url?, sha?, title?}")
    handoff: HandoffInput | None = Field(None, description="Baton for the next session {nextSteps, failedApproaches, "
                                         "openQuestions, branch, owner, shared}; branch and owner default to the "
                                         "session's (the owner else the cwd repository's git identity)")
    cwd: str | None = Field(None, description="The caller's working directory (its git identity owns a baton)")
    owner: str | None = Field(None, description="Who ends it: refused on another person's session")
    recompute_duration: bool = Field(
        False, description="Importers: move the end of an imported session as its transcript grew"
    )


#: The orders of ``list`` and ``search`` (SPEC §2.6): by ``created``, newest or oldest first.
SortOrder = Literal["date-desc", "date-asc"]


class ZonedRequest(Request):
    """A request whose date-only bounds (``since``/``until``) are days of ``tz``."""

    tz: str | None = Field(None, description="IANA time zone for dates (e.g. Europe/Berlin; default: the configured "
                                             "zone, else the machine's)")

    @field_validator("tz", mode="before")
    @classmethod
    def _usable_zone(cls, value: object) -> object:
        """A zone the reports can use (the rule of :func:`memo_analytics.domain.clock.zone_name_problem`);
        empty means the default. Refused with ``Invalid tz: <reason>``."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        problem = zone_name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value.strip()


#: A search's words (every one must match) and characters at most: the FTS5 cost grows with
#: the square of the words (20,000 took seconds of a server's worker each), and no turn is found
#: by more than a few distinctive ones.
MAX_QUERY_WORDS = 100
MAX_QUERY_CHARS = 4000


class ListRequest(ZonedRequest):
    """``list`` and ``search`` filters (SPEC §2.6)."""

    project: str | None = None
    cross_project: bool = False
    cwd: str | None = None
    query: str | None = None
    ide: str | None = None
    model: str | None = None
    agent: str | None = None
    session_id: str | None = None
    task_slug: str | None = None
    client: str | None = None
    billable: bool | None = None
    tags: list[str] = Field(default_factory=list)
    since: str | None = None
    until: str | None = None
    limit: int | str | None = None
    offset: int | str | None = None
    sort: SortOrder | None = Field(
        None, description="date-desc (newest first) or date-asc (oldest first); default: list newest first, search "
                          "by bm25 rank")

    @field_validator("query")
    @classmethod
    def _searchable_size(cls, value: str | None) -> str | None:
        """At most :data:`MAX_QUERY_WORDS` words and :data:`MAX_QUERY_CHARS` characters;
        refused with ``Invalid query: …``."""
        if value is None:
            return value
        if "\x00" in value:  # FTS5 stops the query at it ("unterminated string"): an internal error
            raise ValueError("contains a NUL character")
        words = len(value.split())
        if words > MAX_QUERY_WORDS or len(value) > MAX_QUERY_CHARS:
            raise ValueError(f"{words:,} words, {len(value):,} characters; at most {MAX_QUERY_WORDS} words and "
                             f"{MAX_QUERY_CHARS:,} characters (every word must match: a few distinctive ones find "
                             "a turn)")
        return value


class GetRequest(Request):
    """``get``: a prompt id, a session record id or a session id (SPEC §2.6)."""

    id: str = Field(description="Record id (prompt-…, session-…) or a session id")
    project: str | None = Field(None, description="Project id (default: the one project that holds the id; the "
                                                  "repository of cwd when several do)")
    cwd: str | None = Field(None, description="The caller's working directory (its repository chooses among "
                                              "projects that hold the id)")


class SessionRequest(ZonedRequest):
    """``session``: one session's record and turns, or (without ``sessionId``) a page of sessions."""

    session_id: str | None = Field(None, description="Session id; without it, sessions are listed")
    project: str | None = Field(None, description="Project id")
    cross_project: bool = Field(False, description="Every project")
    cwd: str | None = Field(None, description="The caller's working directory")
    client: str | None = Field(None, description="Client, the exact name in any case")
    since: str | None = Field(None, description="Sessions starting at or after")
    until: str | None = Field(None, description="Sessions starting at or before (a date covers the day)")
    limit: int | str | None = Field(None, description="Page size, 1–100 (default 20)")
    offset: int | str | None = Field(None, description="Items to skip")


class FeedbackRequest(Request):
    """``feedback``: a record (prompt, session, trap or decision) was recalled (a hit), and
    what it was worth: spec-memo's ``feedback: helpful|stale|wrong`` or today's ``helpful``
    (``helpful: true`` ≡ ``feedback: helpful``; ``helpful: false`` is not helpful without
    saying why; ``stale`` and ``wrong`` are not helpful, and say why)."""

    id: str = Field(description="Record id that was used (prompt, session, trap or decision)")
    project: str | None = Field(None, description="Project id (default: the one project that holds the id; the "
                                                  "repository of cwd when several do)")
    cwd: str | None = Field(None, description="The caller's working directory")
    helpful: bool | None = Field(None, description="Whether it helped; omit to count a hit only")
    feedback: Literal["helpful", "stale", "wrong"] | None = Field(
        None, description="helpful, stale (was true, is outdated) or wrong (never was true); stale and wrong "
                          "count as not helpful")
    comment: str | None = Field(None, description="Why, in a sentence (secrets redacted; the last few are kept)")

    @model_validator(mode="after")
    def _one_verdict(self):
        """``helpful`` and ``feedback`` together must agree (``true`` with ``helpful``,
        ``false`` with ``stale`` or ``wrong``)."""
        if self.helpful is not None and self.feedback is not None \
                and self.helpful != (self.feedback == "helpful"):
            raise ValueError(f"feedback: {self.feedback} contradicts helpful: {str(self.helpful).lower()}")
        return self

    def verdict(self) -> str | None:
        """``helpful``, ``notHelpful`` (``helpful: false`` alone), ``stale``, ``wrong`` or None (a hit only)."""
        if self.feedback is not None:
            return self.feedback
        return None if self.helpful is None else ("helpful" if self.helpful else "notHelpful")


class ActivityReportRequest(ZonedRequest):
    """``activity_report`` (SPEC §4)."""

    project: str | None = Field(None, description="Project id")
    cross_project: bool = Field(False, description="Every project of the vault and of every further configured vault")
    cwd: str | None = Field(None, description="The caller's working directory")
    since: str | None = Field(None, description="Sessions starting at or after (ISO date or time)")
    until: str | None = Field(None, description="Sessions starting at or before (a date covers the day)")
    client: str | None = Field(None, description="Client (case-insensitive; 'internal' for none)")
    owner: str | None = Field(None, description="Only this person's sessions: the session's owner (their git "
                                                "identity), case-insensitive; 'unknown' for none recorded")



class ExportStoryRequest(Request):
    """``export_story`` (SPEC §5.2): one session as a Markdown intent story."""

    session_id: str = Field(description="Session id")
    project: str | None = Field(None, description="Project id (default: the one project that holds the session; "
                                                  "the repository of cwd when several do)")
    output: str | None = Field(None, description="Write the story to this file (outside the product repository and "
                                                 "the vault); without it the Markdown is returned")
    cwd: str | None = Field(None, description="The caller's working directory: a product repository, required "
                                              "with output")
    overwrite: bool = Field(False, description="With output: replace an existing file (never a symbolic link)")


class DeriveRulesRequest(Request):
    """``derive_rules`` (SPEC §5.3): rule candidates from the turns in scope."""

    project: str | None = Field(None, description="Project id")
    cross_project: bool = Field(False, description="Every project of the vault")
    cwd: str | None = Field(None, description="The caller's working directory (its repository names the project and "
                                              "is the product root a promotion writes to)")
    session_id: str | None = Field(None, description="Only this session's turns")
    since: str | None = Field(None, description="Turns created at or after (ISO date or time)")
    until: str | None = Field(None, description="Turns created at or before (a date covers the day)")
    min_confidence: float = Field(0.0, ge=0.0, le=1.0, description="Leave out candidates below this confidence")
    limit: int | str | None = Field(None, description="Candidates returned, 1–100 (default 20); all count in total")
    save_traps: bool = Field(False, description="Save candidates with confidence ≥ 0.8 as traps")
    format: str | None = Field(None, description="Render the rules as cursor, copilot, claude, gemini or markdown")
    promote: str | None = Field(None, description="Write the rules (confidence ≥ 0.8) into this instruction file of "
                                                  "the product root: CLAUDE.md, AGENTS.md, GEMINI.md, "
                                                  ".github/copilot-instructions.md or .cursor/rules/<name>.mdc")


class DigestRequest(Request):
    """``digest`` (SPEC §6): what needs the human now."""

    refresh: bool = Field(False, description="Recompute now instead of answering from the cached digest")
    as_of: str | None = Field(None, description="Evaluate the digest as of this instant (ISO date or time; "
                                                "default now); computed afresh, not cached")
    max_age_seconds: int | None = Field(None, ge=0, le=86400, description="Recompute when the cached digest is "
                                        "older than this many seconds or the vault changed since it (its ages were "
                                        "as of then); default: serve the cache while it is valid (pollers)")


class DigestApplyRequest(Request):
    """``digest_apply``: apply the proposal of one digest item (SPEC §6 phase 2)."""

    item: str = Field(..., min_length=1, max_length=300, description="The digest item id, KIND:SUBJECT")
    fingerprint: str | None = Field(None, description="The fingerprint of the proposal you reviewed, 16 hex digits "
                                                      "(default: the one of the digest now, or of asOf)")
    as_of: str | None = Field(None, description="The moment of the digest the item was picked from")
    project: str | None = Field(None, description="The item's project, when items of several projects have "
                                                  "the same id")

    @field_validator("fingerprint")
    @classmethod
    def _fingerprint(cls, value: str | None) -> str | None:
        """16 lowercase hex digits, as the digest gives them (any text went into the audit trail)."""
        if value is not None and not re.fullmatch(r"[0-9a-f]{16}", value):
            raise ValueError("must be the 16 hex digits of the proposal's fingerprint, as `memo --json digest` "
                             "shows it")
        return value


class HandoffListRequest(Request):
    """``handoffs``: the hand-offs of a project (or every project), oldest first."""

    project: str | None = Field(None, description="Project id (default: the repository of cwd, else every project)")
    cross_project: bool = Field(False, description="Every project")
    cwd: str | None = Field(None, description="The caller's working directory")
    status: Literal["pending", "claimed", "cancelled"] | None = Field(
        "pending", description="Only hand-offs with this status (pending by default)")
    limit: int | str | None = Field(None, description="At most this many (1–100; default 100)")
    offset: int | str | None = Field(None, description="Skip this many first")


def _fields_at(model: type[BaseModel] | None, path: tuple) -> type[BaseModel] | None:
    """The model nested at ``path`` (field names or wire names) of ``model``, or None."""
    import typing

    for part in path:
        if model is None or not isinstance(part, str):
            return None
        found = next((f for name, f in model.model_fields.items() if part in (name, f.alias, to_camel(name))), None)
        if found is None:
            return None
        kinds = [found.annotation, *typing.get_args(found.annotation)]
        model = next((k for k in kinds if isinstance(k, type) and issubclass(k, BaseModel)), None)
    return model


def _wire_fields(model: type[BaseModel]) -> str:
    return ", ".join(to_camel(name) for name in model.model_fields)


#: The most members (an object's fields, a list's items, counted through every level) the arguments
#: of one call of the tool ``prompt`` may hold: a call needs a few dozen; 300,000 unknown fields in one
#: 4 MB body took seconds of a worker to list as errors, and a few at once stalled the API (found by a
#: security tester).
MAX_TOOL_MEMBERS = 10_000


def refuse_oversized(arguments: Any, limit: int = MAX_TOOL_MEMBERS) -> None:
    """Refuse ``arguments`` holding more than ``limit`` members before they are validated.

    Raises
    ------
    InvalidFieldError
        ``Invalid input: holds more than 10,000 fields and list items …`` (``Invalid tags: …``
        when one field holds most of them).
    """
    count, stack = 0, [(arguments, "input")]
    held: dict[str, int] = {}
    while stack:
        item, field = stack.pop()
        if isinstance(item, dict):
            count += len(item)
            held[field] = held.get(field, 0) + len(item)
            stack.extend((value, key if field == "input" and isinstance(key, str) else field)
                         for key, value in item.items())
        elif isinstance(item, list):
            count += len(item)
            held[field] = held.get(field, 0) + len(item)
            stack.extend((value, field) for value in item)
        if count > limit:
            most = max(held, key=held.__getitem__)
            raise InvalidFieldError(most[:60] if held[most] * 2 > count else "input",
                                    f"holds more than {limit:,} fields and list items; a call of the tool prompt "
                                    "needs far fewer")


def validation_problem(exc: Any, model: type[BaseModel] | None = None,
                       unknown: str = "unknown field") -> tuple[str, str]:
    """``(field, reason)`` of a pydantic ``ValidationError`` of ``model``, wire names: a field the
    model does not know first (an agent's ``handoff.nextStep`` was said as "handoff.nextSteps:
    is required"), named with the fields its object takes; a missing one ``is required``; an
    object given as text ``must be an object {…}``; else the first error's message. ``unknown``:
    what a top-level unknown field is called (the MCP tool: ``unknown field of the tool prompt``)."""
    errors = exc.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(first["loc"])
    field = ".".join(to_camel(p) if isinstance(p, str) else str(p) for p in loc)
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        parent = _fields_at(model, loc[:-1]) if len(loc) > 1 else None
        message = (f"unknown field of {'.'.join(to_camel(str(p)) for p in loc[:-1])}; it takes {_wire_fields(parent)}"
                   if parent is not None else unknown)
    elif first["type"] == "missing":
        message = "is required"
    elif first["type"] in ("model_type", "model_attributes_type", "dict_type"):
        nested = _fields_at(model, loc)
        message = f"must be an object {{{_wire_fields(nested)}}}" if nested is not None else "must be an object"
    if not field and ": " in message:
        field, message = message.split(": ", 1)
        field = to_camel(field)
    return field or "input", message

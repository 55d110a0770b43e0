"""Record models (SPEC §2.1, §2.3).

Python attributes are snake_case; the frontmatter and every wire format use the camelCase
aliases (``sessionId``, ``durationMinutes`` ...). Timestamps are stored strings in the
format of :func:`memo_analytics.domain.clock.to_iso` (UTC, ``Z``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from .clock import from_iso, minutes_between, parse_record_instant, to_iso
from .errors import MemoError
from .ids import MAX_TURN, validate_slug


class RecordKind(str, Enum):
    """Kinds of vault records (SPEC §2.1)."""

    PROMPT = "prompt"
    SESSION = "session"
    TRAP = "trap"
    DECISION = "decision"
    HANDOFF = "handoff"


_SUBDIRS = {
    RecordKind.PROMPT: "prompts",
    RecordKind.SESSION: "sessions",
    RecordKind.TRAP: "traps",
    RecordKind.DECISION: "decisions",
    RecordKind.HANDOFF: "handoffs",
}


def subdir_for_kind(kind: RecordKind | str) -> str:
    """The project subdirectory that holds records of ``kind`` (the seed's getSubdirForKind)."""
    return _SUBDIRS[RecordKind(kind)]


#: Longest session a person's or an agent's end makes, or an edit sets: a week, in minutes (a
#: start a year off, or a session left open for days and ended now, is refused, not billed).
MAX_SESSION_MINUTES = 7 * 24 * 60


class WireModel(BaseModel):
    """Base model: snake_case in Python, camelCase on the wire; unknown keys are kept. A number
    where text is meant is its text: YAML reads an unquoted ``gitSha: 1234567`` (a short SHA of
    digits alone) or ``branch: 2026`` as a number, and the whole record was refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", use_enum_values=True,
        coerce_numbers_to_str=True,
    )

    def wire(self) -> dict[str, Any]:
        """The camelCase dict written to frontmatter and returned by every interface."""
        return self.model_dump(by_alias=True, mode="json")


class Deliverable(WireModel):
    """Something a session produced: ``{type, url?, sha?, title?}`` (SPEC §2.3)."""

    type: str
    url: str | None = None
    sha: str | None = None
    title: str | None = None

    def key(self) -> tuple[str | None, str | None, str]:
        """Merge key of SPEC §2.5: ``(url, sha, type)``."""
        return (self.url, self.sha, self.type)


class Prompt(WireModel):
    """One conversational turn (frontmatter fields of SPEC §2.3 plus the body)."""

    id: str
    kind: RecordKind = RecordKind.PROMPT
    project: str
    status: str = "recorded"
    created: str
    updated: str
    source: str = "mcp"
    ide: str = "generic"
    model: str | None = None
    agent: str | None = None
    session_id: str | None = None
    turn: int | None = Field(default=None, ge=1, le=MAX_TURN)
    task_slug: str | None = None
    client: str | None = None
    billable: bool = True
    branch: str | None = None
    git_sha: str | None = None
    linked_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    body: str = Field(default="", exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _updated_when_created(cls, data: Any) -> Any:
        """A record that names no ``updated`` (a spec-memo vault's, written by hand) was last
        changed when it was made: it reads as ``updated = created`` (it was skipped whole — its
        turn left out of search, counts and rules)."""
        if isinstance(data, dict) and data.get("updated") is None and data.get("created") is not None:
            return {**data, "updated": data["created"]}
        return data

    @field_validator("linked_paths", "tags", "deliverables", mode="before", check_fields=False)
    @classmethod
    def _lists(cls, value: Any) -> Any:
        """A list written as none (``linkedPaths: null``, ``tags: ""``) or as its one item (``tags:
        billing``, a session's one deliverable as a mapping), as spec-memo vaults and hand edits
        hold them: read as a list, never the record skipped whole (found by an integrator; a
        session's hour left every report: a breaker)."""
        if value is None or isinstance(value, str) and not value.strip():
            return []
        return [value] if isinstance(value, (str, dict)) else value

    @field_validator("id", "project", "session_id", "task_slug")
    @classmethod
    def _safe_ids(cls, value: str | None, info) -> str | None:
        if value is None:
            return None
        try:
            return validate_slug(value, info.field_name)
        except MemoError as exc:
            raise ValueError(exc.reason if hasattr(exc, "reason") else str(exc)) from None

    @field_validator("created", "updated", "start_time", "end_time", check_fields=False)
    @classmethod
    def _timestamps(cls, value: str | None, info) -> str | None:
        if value is None:
            return None
        if _without_zone(value):  # a hand edit's "2026-10-05 09:00" was read as UTC: two hours off in Berlin
            raise ValueError(f"{value} has no zone: write it with Z (UTC) or its offset (+01:00), then memo reindex")
        try:
            return to_iso(parse_record_instant(value, info.field_name))
        except MemoError:
            raise ValueError("not an ISO 8601 timestamp between 1970 and 9000") from None


def _without_zone(value: object) -> bool:
    """Whether a record's timestamp names no zone: a date, a naive datetime (YAML reads an
    unquoted ``2026-10-05 09:00`` as one) or ISO text without ``Z`` or an offset."""
    from datetime import date, datetime

    if isinstance(value, datetime):
        return value.tzinfo is None
    if isinstance(value, date):
        return True
    if isinstance(value, str):
        if value.endswith("Z"):  # as memo writes every instant: no second parse on a read
            return False
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00")).tzinfo is None
        except ValueError:
            return False  # not ISO text: the parser says what is wrong with it
    return False


class Session(Prompt):
    """One work interval with lifecycle and deliverables (SPEC §2.3, §2.5).

    ``status`` is ``active`` until ``session_end`` makes it ``completed``.
    ``duration_minutes`` is whole minutes of ``endTime − startTime`` — or fewer, as spec-memo keeps
    a session's duration when it is ended again and its ``endTime`` moves (SPEC §2.5).
    """

    kind: RecordKind = RecordKind.SESSION
    status: str = "active"
    start_time: str
    end_time: str | None = None
    duration_minutes: int | None = Field(default=None, ge=0)
    deliverables: list[Deliverable] = Field(default_factory=list)
    summary: str | None = None
    handoff_archive: str | None = None
    owner: str | None = None
    objective: str | None = None
    handoff_claimed: str | None = None

    @model_validator(mode="after")
    def _times_agree(self) -> "Session":
        """An end never before the start, and ``durationMinutes`` the minutes between them: a hand
        edit of the length alone (``durationMinutes: 99999`` on a 20-minute session) was billed
        and issued as it said (SPEC §2.5). Also: the id is its session's (``session-<sessionId>``:
        a copy under another id billed one session twice), and an ended session has an end and
        minutes (a superseded one keeps what it had). Each said with the mend."""
        if self.session_id and self.id != f"session-{self.session_id}":
            raise ValueError(f"id: {self.id} is not the id of session {self.session_id} (session-{self.session_id}); "
                             "give the file its session's id and name, then memo reindex")
        if self.status != "superseded":
            if self.status == "completed" and self.end_time is None:
                raise ValueError("endTime: missing on a completed session; write its endTime (or status: active), "
                                 "then memo reindex")
            if self.end_time is not None and self.duration_minutes is None:
                # SPEC §2.5: computed from endTime − startTime (a spec-memo session written without
                # it, or with ``null``, was skipped: its minutes billed nothing)
                end = from_iso(self.end_time)
                if end >= from_iso(self.start_time):
                    self.duration_minutes = minutes_between(from_iso(self.start_time), end)
            if self.end_time is None and self.duration_minutes is not None:
                raise ValueError("durationMinutes: given for a session without an endTime; remove it (or write its "
                                 "endTime), then memo reindex")
        if self.end_time is None:
            return self
        start, end = from_iso(self.start_time), from_iso(self.end_time)
        # said with the mend: memo cannot edit a record it cannot read (the file is put right by hand)
        if end < start:
            raise ValueError(f"endTime: {self.end_time} is before startTime {self.start_time}; correct one of "
                             "them in the file, then memo reindex")
        # fewer minutes than its times span are what spec-memo writes when a session is ended again:
        # its endTime moves, its duration is kept (SPEC §2.5) — billed as stated; more are refused
        span = minutes_between(start, end)
        if self.duration_minutes is not None and self.duration_minutes < span > MAX_SESSION_MINUTES:
            # a re-end moves the end by hours or days; fewer minutes over years spread 60 minutes over
            # 20,518 days of the activity, and a push of such a span was taken
            raise ValueError(f"durationMinutes: {self.duration_minutes} is fewer than endTime − startTime ({span} "
                             "minutes, more than a week): write the endTime it should have, then memo reindex")
        if self.duration_minutes is not None and self.duration_minutes > span:
            raise ValueError(f"durationMinutes: {self.duration_minutes} is more than endTime − startTime "
                             f"({minutes_between(start, end)} minutes); write durationMinutes: "
                             f"{minutes_between(start, end)} in the file (or the endTime it should have), then "
                             "memo reindex")
        return self

    @field_serializer("deliverables")
    def _compact_deliverables(self, items: list[Deliverable]) -> list[dict[str, Any]]:
        return [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in items]


_MODELS: dict[str, type[Prompt]] = {"prompt": Prompt, "session": Session}


#: The frontmatter keys of every record kind that the index keeps in columns of their own (one
#: text, number or boolean each; the index stores ``deliverables`` and ``tags`` as JSON).
SCALAR_KEYS = ("status", "created", "updated", "source", "ide", "model", "agent", "sessionId", "turn", "taskSlug",
               "client", "billable", "branch", "gitSha", "startTime", "endTime", "durationMinutes", "summary")


def normalize_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Validate a record's frontmatter and return it in canonical form.

    Prompt and session frontmatter goes through :class:`Prompt` / :class:`Session`
    (safe ids, turn 1–1,000,000, whole non-negative minutes, deliverable objects, UTC ``Z``
    timestamps); unknown keys are kept after the known ones. Other kinds need a known
    ``kind``, safe ``id`` and ``project``, and ``created`` (ISO 8601 with a zone).

    Raises
    ------
    ValueError
        One line naming the first bad field.
    """
    kind = meta.get("kind")
    model = _MODELS.get(kind) if isinstance(kind, str) else None
    if model is None:
        if kind not in {k.value for k in RecordKind}:
            raise ValueError(f"kind: unknown record kind {kind!r}")
        validate_slug(meta.get("id"), "id")
        validate_slug(meta.get("project"), "project")
        # every reader sorts, dates and ages a record by it: a pushed decision without one failed
        # every later push (the views' listing) and every reindex
        created = meta.get("created")
        if created is None:
            raise ValueError("created: missing; write when the record was made (created: 2026-01-31T09:00:00Z), "
                             "then memo reindex")
        if not isinstance(created, str) or _without_zone(created):
            raise ValueError(f"created: {str(created)[:40]} is not an ISO 8601 timestamp with Z or an offset")
        try:
            parse_record_instant(created, "created")
        except MemoError:
            raise ValueError(f"created: {created[:40]} is not an ISO 8601 timestamp between 1970 and 9000") from None
        for key in SCALAR_KEYS:  # what the index keeps in a column of its own: one value, not a table
            value = meta.get(key)
            if isinstance(value, (dict, list)):
                raise ValueError(f"{key}: must be one value, not a {'table' if isinstance(value, dict) else 'list'}")
            if isinstance(value, int) and not -(2 ** 63) <= value < 2 ** 63:
                raise ValueError(f"{key}: {value} is out of range")
        return dict(meta)
    try:
        record = model.model_validate(meta)
    except ValidationError as exc:
        first = exc.errors()[0]
        said = first["msg"].removeprefix("Value error, ")
        if not first["loc"]:  # a rule of several fields (a session's times): its message names them
            raise ValueError(said) from None
        raise ValueError(f"{'.'.join(str(part) for part in first['loc'])}: {said}") from None
    return record.wire()

"""Record models (SPEC §2.1, §2.3).

Python attributes are snake_case; the frontmatter and every wire format use the camelCase
aliases (``sessionId``, ``durationMinutes`` ...). Timestamps are stored strings in the
format of :func:`memo_analytics.domain.clock.to_iso` (UTC, ``Z``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


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


class WireModel(BaseModel):
    """Base model: snake_case in Python, camelCase on the wire; unknown keys are kept."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", use_enum_values=True
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
    turn: int | None = None
    task_slug: str | None = None
    client: str | None = None
    billable: bool = True
    branch: str | None = None
    git_sha: str | None = None
    linked_paths: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    body: str = Field(default="", exclude=True)


class Session(Prompt):
    """One work interval with lifecycle and deliverables (SPEC §2.3, §2.5).

    ``status`` is ``active`` until ``session_end`` makes it ``completed``.
    ``duration_minutes`` is whole minutes of ``endTime − startTime``.
    """

    kind: RecordKind = RecordKind.SESSION
    status: str = "active"
    start_time: str
    end_time: str | None = None
    duration_minutes: int | None = None
    deliverables: list[Deliverable] = Field(default_factory=list)
    summary: str | None = None
    handoff_archive: str | None = None

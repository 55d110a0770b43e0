"""The one action table (STYLE "One action table", SPEC §3.1).

Each action of the MCP tool ``prompt`` is one entry: a typed request model and the service
function that answers it with a wire dict. The MCP tool, the CLI and the HTTP API parse their
input into the same request and print or return the same dict through
:func:`memo_analytics.domain.wire.dumps`, so the same request gives byte-identical JSON.

:class:`PromptToolInput` is the tool's one flat schema (camelCase on the wire): every field
any action reads, each described; :func:`request_for` picks the fields an action uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel, to_snake

from .analytics.activity import report_for
from .domain.errors import InvalidFieldError
from .domain.ids import validate_slug
from .services.feedback import record_feedback
from .operator.service import apply_digest_item
from .reports.story import prompt_detail
from .services.handoffs import cancel_handoff, handoff_list
from .services.prompts import get_record, list_prompts, record_prompt_answer, search_prompts
from .services.requests import (
    ActivityReportRequest,
    CancelHandoffRequest,
    DeriveRulesRequest,
    DigestRequest,
    EndSessionRequest,
    ExportStoryRequest,
    FeedbackRequest,
    DigestApplyRequest,
    GetRequest,
    HandoffInput,
    HandoffListRequest,
    ListRequest,
    RecordPromptRequest,
    Request,
    SessionRequest,
    StartSessionRequest,
)
from .services.sessions import end_session_answer, session_view
from .services.sync import start_after_pull
from .services.store import VaultStore
from .operator.service import run_digest
from .services.rules import derive_rules
from .services.stories import export_story

ActionName = Literal[
    "record", "list", "get", "search", "session", "session_start", "session_end", "cancel_handoff",
    "activity_report", "derive_rules", "export_story", "feedback", "digest", "handoffs", "prompt_detail"
]


def _activity(store: VaultStore, request: ActivityReportRequest) -> dict[str, Any]:
    return report_for(store, request).wire()


@dataclass(frozen=True)
class Action:
    """One row of the action table. ``agents``: the MCP tool (and ``/api/actions``) offers it;
    an action only for people (applying a digest proposal acts with the person's authority,
    beyond what they delegated to the operator) is reached through the CLI, the dashboard
    and its own HTTP route."""

    request: type[Request]
    run: Callable[[VaultStore, Any], dict[str, Any]]
    description: str
    agents: bool = True


ACTIONS: dict[str, Action] = {
    "record": Action(RecordPromptRequest, record_prompt_answer,
                     "Record one conversational turn (body required; with sessionId and no turn, the next turn); "
                     "warnings say when its created lies outside its session's times (its time bills nothing)."),
    "list": Action(ListRequest, list_prompts, "List turns newest first with filters; {total, limit, offset, hasMore, items}."),
    "search": Action(ListRequest, search_prompts, "Full-text search (FTS5, bm25) over turns with the same filters."),
    "get": Action(GetRequest, lambda store, r: get_record(store, r.id, r.project, r.cwd),
                  "One record by id: a prompt first, then a session."),
    "session": Action(SessionRequest, session_view,
                      "With sessionId: the session and its turns in order; without: a page of sessions."),
    "session_start": Action(StartSessionRequest, start_after_pull,
                            "Open a work session (refuses a completed one; keeps start, client, billable on restart); "
                            "claims and returns the next eligible hand-off as handoff."),
    "session_end": Action(EndSessionRequest, end_session_answer,
                          "Close a session: endTime (now or until), durationMinutes, merged deliverables; "
                          "with handoff, leaves a baton for the next session; warnings say when a session ended "
                          "before keeps its times, or when turns lie outside them (their time bills nothing)."),
    "cancel_handoff": Action(CancelHandoffRequest, cancel_handoff,
                             "Cancel a pending hand-off (by id, or by the sessionId that wrote it)."),
    "activity_report": Action(ActivityReportRequest, _activity,
                              "Billable minutes and hours by client and project, sessions and prompt count "
                              "(totalSessions, openSessions of them still open and billed once they end; each client and project "
                              "entry counts the sessions that bill, also as sessionCount, and totalHours)."),
    "derive_rules": Action(DeriveRulesRequest, derive_rules,
                           "Rule candidates from instructions people repeat (items, and the same as rules with "
                           "rule and sourcePromptIds: confidence, occurrences, evidence turns); "
                           "saveTraps saves those ≥ 0.8 as traps; format renders them (formatted); promote writes them into "
                           "CLAUDE.md, AGENTS.md, GEMINI.md, .github/copilot-instructions.md or .cursor/rules/*.mdc of the "
                           "product root."),
    "export_story": Action(ExportStoryRequest, export_story,
                           "One session as a Markdown intent story: metadata, deliverables, hand-offs, turn log; "
                           "with output (and cwd in a product repository), written outside the repository."),
    "digest": Action(DigestRequest, run_digest,
                     "The operator digest: what needs the human now (stalled or overlong open sessions, unclaimed "
                     "hand-offs, PRs awaiting review, rules ready to promote, billable work without a client, a "
                     "client's monthly hours cap running out), "
                     "ranked, one line each with the command that unsticks it."),
    "feedback": Action(FeedbackRequest, record_feedback,
                       "Count a use of a memory record (prompt, session, trap or decision: id) and what it was "
                       "worth: feedback helpful, stale or wrong (or helpful true/false), with an optional comment; "
                       "{id, kind, project, feedback: {hits, helpful, notHelpful, stale, wrong, lastAt, comments}}."),
    "handoffs": Action(HandoffListRequest, handoff_list,
                       "Hand-offs of a project (or every project), oldest first; pending ones by default."),
    "prompt_detail": Action(GetRequest, prompt_detail,
                            "One record by id with its body as sanitized HTML (renderedHtml) and secretsRedacted."),
    "digest_apply": Action(DigestApplyRequest, apply_digest_item,
                           "Apply the proposal of one digest item; refused (with the new proposal) when the state "
                           "changed since the fingerprint.", agents=False),
}

#: The actions the MCP tool offers (every one of ``ActionName``).
AGENT_ACTIONS = tuple(name for name, action in ACTIONS.items() if action.agents)


class PromptToolInput(BaseModel):
    """The arguments of the MCP tool ``prompt`` (one flat model; camelCase on the wire)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    @field_validator("turn", "limit", "offset", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        """``true`` is no turn number or page size (it was taken as 1)."""
        if isinstance(value, bool):
            raise ValueError(f"{str(value).lower()} is not a whole number")
        return value

    action: ActionName = Field(description="What to do (the tool's description says what each action does and "
                                           "answers; the other fields name the actions that read them)")
    body: str | None = Field(None, description="record: the turn's text")
    session_id: str | None = Field(None, description="Session id (record, session, session_start, session_end, list/search filter)")
    turn: int | None = Field(None, description="record: explicit turn number (1–1,000,000) of sessionId; without sessionId the turn gets a random id (SPEC §2.2)")
    created: str | None = Field(None, description="record: when the turn happened (ISO 8601; default now; without "
                                                  "an offset, in the vault's time zone): a past session's turns keep "
                                                  "their times")
    id: str | None = Field(None, description="get: record id; feedback: prompt, session, trap or decision id")
    project_id: str | None = Field(None, description="Project id (safe slug); default: the repository of cwd. "
                                   "A record's key is (project, id): get, feedback, session, export_story, "
                                   "prompt_detail and cancel_handoff find an id in the one project that holds it, "
                                   "else in the cwd's; when several do, give projectId (the error lists them)")
    cwd: str | None = Field(None, description="The caller's working directory (its git repository names the project)")
    vault_root: str | None = Field(None, description="Vault folder for this call (default: the server's)")
    cross_project: bool | None = Field(None, description="Read every project of the vault "
                                                 "(activity_report: and of every further configured vault)")
    ide: str | None = Field(None, description="IDE or agent host (record/session_start: value; list/search: exact filter)")
    model: str | None = Field(None, description="Model (record/session_start: value; list/search: substring filter)")
    agent: str | None = Field(None, description="Agent (record/session_start: value; list/search: substring filter)")
    client: str | None = Field(None, description="Client billed (value, or filter: the exact name in any case)")
    billable: bool | None = Field(None, description="Billable work (value, or filter); default true")
    task_slug: str | None = Field(None, description="Task slug (value, or exact filter)")
    branch: str | None = Field(None, description="Git branch")
    git_sha: str | None = Field(None, description="Git commit sha")
    linked_paths: list[str] | None = Field(None, description="Paths a turn concerns")
    tags: list[str] | None = Field(None, description="Tags (value; as a filter all must match)")
    summary: str | None = Field(None, description="session_start / session_end: summary of the work")
    start_time: str | None = Field(None, description="session_start: when it started (ISO 8601; default now)")
    until: str | None = Field(None, description="session_end: end instant; list/search/session/activity_report: upper bound")
    since: str | None = Field(None, description="list/search/session/activity_report: lower bound (ISO date or time)")
    query: str | None = Field(None, description="search: any text (quoted safely; word* for a prefix)")
    limit: int | None = Field(None, description="Page size, clamped to 1–100 (default 20)")
    offset: int | None = Field(None, description="Items to skip (≥ 0)")
    # sort, feedback and status are checked by the action that reads them (json_schema_extra: the
    # choices shown to agents): another action ignores them and names them in `ignored`
    sort: str | None = Field(
        None, description="list/search: date-desc (newest first) or date-asc (oldest first) by created; "
                          "default: list newest first, search by bm25 rank",
        json_schema_extra={"enum": ["date-desc", "date-asc"]})
    pr: str | None = Field(None, description="session_end: pull-request URL, adds a {type: 'pr'} deliverable")
    deliverables: list[dict[str, Any]] | None = Field(None, description="session_end: [{type, url?, sha?, title?}]")
    helpful: bool | None = Field(None, description="feedback: whether the record helped (true ≡ feedback helpful; "
                                                   "false counts notHelpful)")
    feedback: str | None = Field(
        None, description="feedback: helpful, stale (was true, now outdated) or wrong; stale and wrong also count "
                          "notHelpful", json_schema_extra={"enum": ["helpful", "stale", "wrong"]})
    comment: str | None = Field(None, description="feedback: why, in a sentence (secrets redacted; the last 5 kept)")
    handoff: HandoffInput | None = Field(None, description="session_end: baton {nextSteps (required), failedApproaches, "
                                                           "openQuestions, branch, owner, shared} for the next session")
    shared: bool | None = Field(None, description="session_end: the hand-off may be claimed by any owner")
    owner: str | None = Field(None, description="session_start: who works the session (claims batons addressed to "
                                                "them); record, session_end: who records or ends it (refused on "
                                                "another person's session); activity_report: only this person's "
                                                "sessions ('unknown': none recorded)")
    objective: str | None = Field(None, description="session_start: the session objective (cleared on end)")
    tz: str | None = Field(None, description="list/search/session/activity_report: IANA time zone whose days the "
                                             "date-only since/until bound (default: the vault's)")
    output: str | None = Field(None, description="export_story: file to write (outside the product repository)")
    overwrite: bool | None = Field(None, description="export_story: replace an existing output file (default: refused)")
    min_confidence: float | None = Field(None, description="derive_rules: leave out candidates below (0–1)")
    save_traps: bool | None = Field(None, description="derive_rules: save candidates with confidence ≥ 0.8 as traps")
    format: str | None = Field(None, description="derive_rules: cursor, copilot, claude, gemini or markdown")
    refresh: bool | None = Field(None, description="digest: recompute now instead of the cached answer")
    as_of: str | None = Field(None, description="digest: evaluate as of this instant (ISO date or time)")
    status: str | None = Field(
        None, description="handoffs: only hand-offs with this status (default pending)",
        json_schema_extra={"enum": ["pending", "claimed", "cancelled"]})
    compact: bool | None = Field(None, description="Any action: an answer sized for your context — one line of JSON, "
                                                   "nulls and defaults left out, each body cut to a snippet with "
                                                   "bodyLength (get the record for the whole text), what every item "
                                                   "of a page holds alike given once as shared")
    promote: str | None = Field(None, description="derive_rules: instruction file of the product root to write the "
                                                  "rules into (CLAUDE.md, AGENTS.md, GEMINI.md, .github/copilot-instructions.md, "
                                                  ".cursor/rules/<name>.mdc)")


# tool field → request field, where the names differ
_RENAMES = {"project_id": "project"}
# context an agent may send with any call (SPEC §3.1); ignored by actions that do not use it
_CONTEXT = {"branch", "git_sha", "linked_paths", "cwd", "project", "cross_project"}


def request_for(arguments: PromptToolInput) -> Request:
    """The typed request of ``arguments.action`` built from the fields it reads (the fields
    it does not read are left out: :func:`ignored_fields` names them).

    Raises
    ------
    pydantic.ValidationError
        A value the action's request model refuses.
    """
    return _split(arguments)[0]


def ignored_fields(arguments: PromptToolInput) -> list[str]:
    """The fields of the tool's schema given to ``arguments.action`` that it does not use
    (camelCase, sorted): spec-memo's one flat schema let every action take every field, and
    its agents send them (``body`` with ``summary``, ``limit`` with ``session_end``; SPEC §2.5
    says a duration is never taken from a pagination limit). They are ignored, and named in
    the answer as ``ignored``; the context fields (``branch, gitSha, linkedPaths, cwd,
    projectId, crossProject``) are not named. A name the schema does not know is refused by
    :class:`PromptToolInput` itself."""
    return _split(arguments)[1]


def _split(arguments: PromptToolInput) -> tuple[Request, list[str]]:
    action = ACTIONS[arguments.action]
    given = {(_RENAMES.get(k, k)): v for k, v in arguments.model_dump(exclude_none=True).items()
             if k not in ("action", "vault_root", "compact")}
    if "shared" in given and isinstance(given.get("handoff"), dict):
        given["handoff"]["shared"] = given.pop("shared")
    accepted = set(action.request.model_fields)
    if "project" in given and "project" not in accepted:  # context the action ignores: still a valid id
        validate_slug(given["project"], "projectId")
    if arguments.action == "record" and "turn" in given and "session_id" not in given:
        accepted.discard("turn")  # a turn numbers a session's turns: without one the record gets a random id (SPEC §2.2)
    unused = sorted(to_camel(_WIRE.get(k, k)) for k in given if k not in accepted and k not in _CONTEXT)
    return action.request.model_validate({k: v for k, v in given.items() if k in accepted}), unused


#: request field → tool field, where the names differ (the answer names what the caller sent)
_WIRE = {v: k for k, v in _RENAMES.items()}


#: The actions that only read: on a ``vaultRoot`` that holds no vault they are refused.
READS = frozenset({"list", "search", "get", "session", "activity_report", "derive_rules", "export_story", "digest",
                   "handoffs", "prompt_detail"})


def call_tool(store: VaultStore, arguments: PromptToolInput) -> dict[str, Any]:
    """One call of the tool ``prompt`` (MCP, and ``POST /api/actions/{action}``): the action's
    answer, plus ``ignored`` (see :func:`ignored_fields`) when the call held fields the
    action does not use.

    Raises
    ------
    MemoError, pydantic.ValidationError
        As the action; ``Invalid vaultRoot`` for a reading action on a ``vaultRoot`` that holds
        no vault.
    """
    request, unused = _split(arguments)
    if arguments.vault_root is not None and arguments.action in READS and not store.exists:
        # a vault named by the caller that holds none (a typo): an empty answer would look like
        # an empty vault
        raise InvalidFieldError("vaultRoot", f"{store.root} holds no vault (no records, no index); leave vaultRoot "
                                             "out for the default vault, or record into this one first")
    result = run_action(store, arguments.action, request)
    return {**result, "ignored": unused} if unused and isinstance(result, dict) else result


#: Tool fields that name a path on the machine that runs the action.
SERVER_PATH_FIELDS = ("vaultRoot", "cwd", "output", "promote")


def refuse_server_paths(arguments: dict[str, Any]) -> None:
    """Refuse a caller who may not choose paths on this machine (the HTTP API and the MCP
    endpoint over HTTP, on loopback too: SPEC §11): ``vaultRoot``, ``cwd``, ``output``, ``promote`` (snake_case
    spellings too). Project and branch come as ``projectId``/``branch``; an export answers
    with its content (SPEC §2.7, §3.3).

    Raises
    ------
    InvalidFieldError
        ``Invalid <field>: …`` naming the first such field.
    """
    reasons = {"vaultRoot": "the daemon serves its own vault", "cwd": "means nothing on the daemon's machine; "
               "send projectId and branch", "output": "the daemon writes no files for a caller; leave it out and "
               "the export answers with its content", "promote": "promotion writes into a repository; run it "
               "on the machine that holds the repository"}
    for field in SERVER_PATH_FIELDS:
        if field in arguments or to_snake(field) in arguments:
            raise InvalidFieldError(field, f"not accepted here: {reasons[field]}")


def run_action(store: VaultStore, name: str, request: Request) -> dict[str, Any]:
    """Run one action of the table."""
    return ACTIONS[name].run(store, request)

"""The status HTTP API (SPEC §3.3): Tornado handlers that ``memo serve`` mounts beside the
Panel dashboard on one port.

Every endpoint parses its query into the same request model as the CLI and the MCP tool
and answers with the same wire dict (:func:`memo_analytics.domain.wire.dumps`), so the
same request gives the same JSON through all three. Responses are safe to embed: JSON
escapes ``<``, ``>`` and ``&`` as ``\\u003c`` … (the parsed value is unchanged), rendered
Markdown passes the nh3 allow-list sanitizer, errors are ``{"error": message}`` with the
message redacted, and downloads carry a sanitized file name. A server bound to anything
but loopback requires a token (``Authorization: Bearer <token>``, ``X-Memo-Token`` or
``?token=``); requests without it get 401.
"""

from __future__ import annotations

import concurrent.futures
import hmac
import json
import re
import sys
import time
import urllib.parse
from typing import Any, Callable

import tornado.ioloop
import tornado.web
from tornado import httputil
from pydantic import ValidationError

from ..actions import ACTIONS, AGENT_ACTIONS, PromptToolInput, call_tool, refuse_server_paths
from ..domain.errors import (
    DiskFullError,
    IndexDamagedError,
    IndexReadOnlyError,
    InvalidFieldError,
    MemoError,
    RecordNotFoundError,
    SessionCompletedError,
    SessionNotStartedError,
    VaultBusyError,
    full_disk_error,
)
from ..domain.wire import dumps
from ..domain.hosts import WRONG_TOKENS, marked_cross_site, wrong_token
from ..services.requests import (
    ActivityReportRequest,
    DeriveRulesRequest,
    DigestRequest,
    EditSessionRequest,
    ExportStoryRequest,
    ListRequest,
    SessionRequest,
    refuse_oversized,
    validation_problem,
)
from ..runtime import Runtime
from ..services.prompts import clean_owner
from ..services.store import remote_caller
from ..services.sync import apply_incoming, daemon_id, for_people, invoiced_for_people, received_push
from ..vault.redact import redact_secrets

#: Largest request body, in bytes: a hybrid push of ``batchSize`` records near the record
#: size limit; the Tornado server refuses anything bigger before reading it.
MAX_REQUEST_BYTES = 64 * 1024 * 1024
#: Request bodies of endpoints other than the sync push, in bytes (a prompt body is ≤ 1 MB).
MAX_CALL_BYTES = 4 * 1024 * 1024
#: Deepest JSON a request body may hold (a tool call or a push needs fewer than 8 levels).
MAX_JSON_DEPTH = 32

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


#: The answer to a request without the server's token.
UNAUTHORIZED = "Unauthorized: give the server's token (Authorization: Bearer <token>)"


def token_given(token: str, headers: Any, query_token: str = "") -> bool:
    """Whether a request gives ``token``: ``Authorization: Bearer``, else ``X-Memo-Token``, else
    ``?token=`` (compared in constant time)."""
    given = headers.get("X-Memo-Token") or query_token
    auth = headers.get("Authorization", "")
    if auth.lower().startswith("bearer "):
        given = auth[7:].strip()
    return bool(given) and hmac.compare_digest(given.encode(), token.encode())


def token_presented(headers: Any, query_token: str = "") -> bool:
    """Whether a request carries a token at all (right or wrong): only those count towards an
    address's wrong tokens — a request of none guesses nothing, and counting it let any web page
    (its cross-site requests carry none) or an agent configured without the token lock the person
    out of their own server (found by a security tester)."""
    return bool(headers.get("X-Memo-Token") or query_token or (headers.get("Authorization") or "").strip())


def safe_json(value: Any) -> str:
    """:func:`dumps` with ``<``, ``>``, ``&`` escaped (same parsed value; never HTML)."""
    return dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _status_for(exc: MemoError) -> int:
    if isinstance(exc, RecordNotFoundError):
        return 404
    if isinstance(exc, (SessionCompletedError, SessionNotStartedError)):
        return 409
    if isinstance(exc, (VaultBusyError, IndexReadOnlyError, IndexDamagedError)):
        return 503  # the server cannot answer now (a read-only or damaged index answered 400, the caller's fault)
    if isinstance(exc, DiskFullError):
        return 507  # Insufficient Storage
    return 400


class ApiHandler(tornado.web.RequestHandler):
    """Base: token check, JSON answers, errors as sanitized JSON. ``params`` names the query
    parameters an endpoint reads; any other is refused (a misspelt filter must not silently
    return everything)."""

    params: tuple[str, ...] = ()

    def initialize(self, runtime: Runtime, token: str | None, confined: bool = False) -> None:
        self.runtime = runtime
        self.token = token
        self.confined = confined  # bound off loopback: callers are other machines' people

    def callers_own(self) -> Any:
        """Around a write a caller asked for: off loopback, whose work it is the caller says
        (``owner``), never this machine's git identity (:func:`~memo_analytics.services.store.remote_caller`);
        on loopback the caller is this machine's person."""
        return remote_caller(self.confined)

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")

    def prepare(self) -> None:
        if not self._check_params():
            raise tornado.web.Finish()
        if not self.token:
            return
        if not token_given(self.token, self.request.headers, self.get_query_argument("token", "")):
            self.fail(401, UNAUTHORIZED)
            raise tornado.web.Finish()

    def _check_params(self) -> bool:
        unknown = sorted(set(self.request.query_arguments) - set(self.params) - {"token"})
        if unknown:
            known = ", ".join(self.params) if self.params else "none"
            self.fail(400, f"Invalid query parameter {unknown[0]!r}: this endpoint reads {known}")
            return False
        return True

    def answer(self, value: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(safe_json(value))

    def fail(self, status: int, message: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.finish(safe_json({"error": redact_secrets(message)[0]}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """An error tornado answers itself (a method the endpoint does not take, a path that is
        not UTF-8) as JSON like every other error — its HTML page was not what an API caller reads."""
        if status_code == 405:
            allowed = [m for m in ("GET", "POST", "PUT", "PATCH", "DELETE")
                       if getattr(type(self), m.lower()) is not getattr(tornado.web.RequestHandler, m.lower())]
            self.set_header("Allow", ", ".join(allowed))
            message = (f"Method {self.request.method} is not allowed on {self.request.path}; it takes "
                       f"{' or '.join(allowed) or 'none'}")
        else:
            error = kwargs.get("exc_info", (None, None))[1]
            reason = getattr(error, "log_message", None) or self._reason
            if str(reason).startswith("Invalid unicode"):  # tornado's, with the bytes' repr
                reason = "the path is not UTF-8 (percent-encode the UTF-8 bytes of each character)"
            message = f"Invalid request: {reason}" if status_code < 500 else "Internal error; see the server log"
        self.clear_header("Content-Disposition")
        self.fail(status_code, message)

    def arg(self, *names: str) -> str | None:
        for name in names:
            values = self.get_query_arguments(name)
            if len(values) > 1:
                raise InvalidFieldError(name, "is given more than once; give it once")
            if values:
                return values[0]
        return None

    def project_arg(self) -> str | None:
        """The project of the query: ``project`` (the HTTP name) or ``projectId`` (the MCP
        tool's name); both at once must agree. Taken as sent (not stripped: a control
        character or a space is refused by the id check, never read as no project)."""
        given = {}
        for name in ("project", "projectId"):
            values = self.get_query_arguments(name, strip=False)
            if len(values) > 1:
                raise InvalidFieldError(name, "is given more than once; give it once")
            if values and values[0] != "":
                given[name] = values[0]
        if len(set(given.values())) > 1:
            raise InvalidFieldError("project", f"project={given['project']!r} and projectId={given['projectId']!r} "
                                               "differ; give one")
        return next(iter(given.values()), None)

    def flag(self, name: str) -> bool | None:
        value = self.arg(name)
        if value is None or value == "":
            return None
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise InvalidFieldError(name, f"{value!r} is not true or false")

    #: Largest request body an endpoint reads, in bytes (a sync push carries whole records).
    max_body_bytes = MAX_CALL_BYTES

    def body_json(self) -> dict[str, Any]:
        """The request body as a JSON object (SPEC §3.3).

        Raises
        ------
        InvalidFieldError
            Not JSON, not an object, or nested deeper than ``MAX_JSON_DEPTH``.
        """
        if not self.request.body:
            return {}
        # the request's body, named apart from the tool's own ``body`` field (a too-deep ``tags`` was
        # said as "Invalid body: …": found by a breaker)
        try:
            data = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError):
            raise InvalidFieldError("request body", "is not JSON") from None
        except RecursionError:
            raise InvalidFieldError("request body", f"is nested deeper than {MAX_JSON_DEPTH} levels") from None
        if json_depth(data) > MAX_JSON_DEPTH:
            raise InvalidFieldError("request body", f"is nested deeper than {MAX_JSON_DEPTH} levels")
        if not isinstance(data, dict):
            raise InvalidFieldError("request body", "must be a JSON object")
        return data

    async def run(self, work: Callable[[], Any]) -> None:
        """Run ``work`` in a worker thread (one slow request never holds the others up), with
        a store of that thread's own; answer its result, or its error as JSON."""
        if len(self.request.body or b"") > self.max_body_bytes:
            self.fail(413, f"Request body is {len(self.request.body)} bytes; this endpoint reads at most "
                           f"{self.max_body_bytes}")
            return

        def call() -> Any:
            self.runtime.refresh()  # a changed config file is taken in (one stat otherwise)
            self.store = self.runtime.thread_store()
            return work()

        try:
            result = await tornado.ioloop.IOLoop.current().run_in_executor(_WORKERS, call)
        except ValidationError as exc:
            self.fail(400, "Invalid {}: {}".format(*validation_problem(exc, PromptToolInput)))
            return
        except MemoError as exc:
            self.fail(_status_for(exc), str(exc))
            return
        except tornado.web.HTTPError as exc:  # e.g. a query argument that is not UTF-8
            self.fail(exc.status_code, f"Invalid request: {exc.log_message or exc.reason or exc.status_code}")
            return
        except Exception as exc:  # noqa: BLE001 - never a traceback to the client
            full = full_disk_error(exc, self.runtime.settings.vault_root)
            if full is not None:
                self.fail(507, str(full))
                return
            self.fail(500, f"Internal error ({type(exc).__name__}); see the server log")
            raise
        if not self._finished:
            if isinstance(result, Download):
                name = re.sub(r"[^A-Za-z0-9._-]", "_", result.filename)[:120] or "download"
                self.set_header("Content-Type", result.content_type)
                self.set_header("Content-Disposition", f'attachment; filename="{name}"')
                self.finish(result.data)
            elif isinstance(result, Answer):
                self.answer(result.value, result.status)
            else:
                self.answer(result)


class Download:
    """A file answer: bytes, their content type and a file name (sanitized when sent)."""

    def __init__(self, data: bytes, content_type: str, filename: str) -> None:
        self.data, self.content_type, self.filename = data, content_type, filename


class Answer:
    """A result with a status other than 200 (work runs off the IO loop and cannot answer)."""

    def __init__(self, value: Any, status: int) -> None:
        self.value, self.status = value, status


_WORKERS = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="memo-api")


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (iterative: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


class PromptsHandler(ApiHandler):
    """``GET /api/prompts``: list (or, with ``query``, search) with the filters of SPEC §2.6."""

    params = ("project", "projectId", "query", "ide", "model", "agent", "sessionId", "session", "taskSlug", "slug",
              "client", "billable", "tag", "since", "until", "limit", "offset", "sort", "crossProject")

    async def get(self) -> None:
        def work():
            request = ListRequest(
                project=self.project_arg(), cross_project=bool(self.flag("crossProject")), query=self.arg("query"),
                ide=self.arg("ide"), model=self.arg("model"), agent=self.arg("agent"),
                session_id=self.arg("sessionId", "session"), task_slug=self.arg("taskSlug", "slug"),
                client=self.arg("client"), billable=self.flag("billable"),
                tags=self.get_query_arguments("tag"), since=self.arg("since"), until=self.arg("until"),
                limit=self.arg("limit"), offset=self.arg("offset"), sort=self.arg("sort") or None,
            )
            return ACTIONS["search" if (request.query or "").strip() else "list"].run(self.store, request)

        await self.run(work)


class PromptHandler(ApiHandler):
    """``GET /api/prompts/{id}[?project=…]``: the record plus ``renderedHtml`` (sanitized) and
    ``secretsRedacted`` (how many secrets the stored text had hidden). With ``project`` (or
    ``projectId``) that project's record (404 when it has none); without, the one project's
    that holds the id (400 naming the projects when several do: SPEC §2.1)."""

    params = ("project", "projectId")

    async def get(self, record_id: str) -> None:
        def work():
            action = ACTIONS["prompt_detail"]
            return action.run(self.store, action.request(id=record_id, project=self.project_arg()))

        await self.run(work)


class SessionTurnsHandler(ApiHandler):
    """``GET /api/prompts/sessions/{sessionId}?project=…``: the session and its turns
    (``project`` or ``projectId``, required)."""

    params = ("project", "projectId", "limit", "offset")

    async def get(self, session_id: str) -> None:
        def work():
            project = self.project_arg()
            if not project:
                raise InvalidFieldError("project", "required for a session's turns")
            return ACTIONS["session"].run(self.store, SessionRequest(session_id=session_id, project=project,
                                                                      limit=self.arg("limit"),
                                                                      offset=self.arg("offset")))

        await self.run(work)


class SessionExportHandler(ApiHandler):
    """``GET /api/prompts/sessions/{sessionId}/export[?project=…]``: the intent story as a
    Markdown download (``text/markdown``, attachment, sanitized file name). With ``project``
    (or ``projectId``) that project's session (404 when it has none); without, the one
    project's that holds it (400 naming the projects when several do)."""

    params = ("project", "projectId")

    async def get(self, session_id: str) -> None:
        def work():
            story = ACTIONS["export_story"].run(
                self.store, ExportStoryRequest(session_id=session_id, project=self.project_arg()))
            return Download(story["markdown"].encode("utf-8"), "text/markdown; charset=utf-8",
                            f"story-{story['sessionId']}.md")

        await self.run(work)


class SessionsHandler(ApiHandler):
    """``GET /api/sessions``: a page of sessions (project, crossProject, client, since, until)."""

    params = ("project", "projectId", "crossProject", "client", "since", "until", "limit", "offset")

    async def get(self) -> None:
        await self.run(lambda: ACTIONS["session"].run(self.store, SessionRequest(
            project=self.project_arg(), cross_project=bool(self.flag("crossProject")), client=self.arg("client"),
            since=self.arg("since"), until=self.arg("until"), limit=self.arg("limit"), offset=self.arg("offset"))))


class SessionEditHandler(ApiHandler):
    """``POST /api/sessions/{id}/edit`` ``{project?, client?, billable?, summary?, toProject?,
    startTime?, endTime?, minutes?, reviewed?}``: correct a session's billing data as ``memo
    session edit`` does (SPEC §9; an invoiced session's billed fields are refused as there) —
    what a machine in remote mode sends. Times carry their offset (the caller's zone is not this
    machine's). ``cwd`` is refused: the daemon finds the project where the session lives."""

    async def post(self, session_id: str) -> None:
        def work():
            from ..services.session_edit import edit_session

            data = self.body_json()
            refuse_server_paths(data)  # no cwd: it names a folder of the caller's machine
            if data.get("sessionId", session_id) != session_id:
                raise InvalidFieldError("sessionId", f"{data['sessionId']!r} differs from the session of the path "
                                                     f"({session_id!r}); give one")
            for field in ("startTime", "endTime"):  # the caller's zone is not this machine's: an instant
                if data.get(field) is not None and not (isinstance(data[field], str) and re.search(
                        r"T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$", data[field])):
                    raise InvalidFieldError(field, "must be a date and time with its offset (2026-03-10T10:30:00Z): "
                                                   "this machine's zone is not the caller's")
            # strict: billed minutes never come from true, "5" or 1 for billable
            request = EditSessionRequest.model_validate({**data, "sessionId": session_id}, strict=True)
            with self.callers_own():
                return edit_session(self.store, request)

        await self.run(work)


class ActivityHandler(ApiHandler):
    """``GET /api/activity``: ``activity_report`` (project, crossProject, since, until, client, tz,
    owner)."""

    params = ("project", "projectId", "crossProject", "since", "until", "client", "tz", "owner")

    async def get(self) -> None:
        await self.run(lambda: ACTIONS["activity_report"].run(self.store, ActivityReportRequest(
            project=self.project_arg(), cross_project=bool(self.flag("crossProject")), since=self.arg("since"),
            until=self.arg("until"), client=self.arg("client"), tz=self.arg("tz"), owner=self.arg("owner"))))


class DigestHandler(ApiHandler):
    """``GET /api/digest``: the operator digest (``refresh``, ``asOf``, ``maxAgeSeconds``: computed
    again when the cached one is older)."""

    params = ("refresh", "asOf", "maxAgeSeconds")

    async def get(self) -> None:
        await self.run(lambda: ACTIONS["digest"].run(self.store, DigestRequest(refresh=bool(self.flag("refresh")),
                                                                         max_age_seconds=self.arg("maxAgeSeconds"),
                                                                         as_of=self.arg("asOf"))))


class DigestApplyHandler(ApiHandler):
    """``POST /api/digest/apply`` ``{item, fingerprint, project?}``: apply a proposal; 409 with the new
    proposal when the state changed since it was made."""

    async def post(self) -> None:
        def work():
            action = ACTIONS["digest_apply"]
            result = action.run(self.store, action.request.model_validate(self.body_json()))
            return result if result["applied"] else Answer(result, 409)

        await self.run(work)


class DeriveRulesHandler(ApiHandler):
    """``POST /api/prompts/derive-rules``: derive, optionally save traps (JSON body with the
    fields of ``derive_rules``: project — or its MCP name projectId —, crossProject, since,
    until, minConfidence, limit, saveTraps, format). Promotion is not offered over HTTP: it
    writes into a repository."""

    async def post(self) -> None:
        def work():
            data = self.body_json()
            refuse_server_paths(data)  # promotion writes into a repository: from the CLI there
            if "projectId" in data:  # the MCP tool's name of the field
                project_id = data.pop("projectId")
                if data.setdefault("project", project_id) != project_id:
                    raise InvalidFieldError("project", f"project={data['project']!r} and projectId={project_id!r} "
                                                       "differ; give one")
            return ACTIONS["derive_rules"].run(self.store, DeriveRulesRequest.model_validate(data))

        await self.run(work)


class ActionHandler(ApiHandler):
    """``POST /api/actions/{action}``: one call of the MCP tool ``prompt`` (the JSON body holds
    its camelCase fields without ``action``): what a client in remote mode sends (SPEC §2.7).
    The daemon owns its filesystem: ``vaultRoot``, ``cwd``, ``output`` and ``promote`` are
    refused (:func:`~memo_analytics.actions.refuse_server_paths`). ``compact: true`` answers as
    the MCP tool does (:func:`~memo_analytics.domain.wire.compact`)."""

    async def post(self, action: str) -> None:
        def work():
            if action not in AGENT_ACTIONS:  # the MCP tool's actions (a remote-mode client sends its calls)
                raise InvalidFieldError("action", f"{action!r} is not one of {', '.join(AGENT_ACTIONS)}")
            data = self.body_json()
            refuse_oversized(data)  # before pydantic lists 300,000 unknown fields as errors
            refuse_server_paths(data)  # the daemon owns its filesystem
            if "project" in data and "projectId" not in data:  # the HTTP name of the field, as on every route
                data["projectId"] = data.pop("project")
            arguments = PromptToolInput.model_validate({**data, "action": action})
            with self.callers_own():
                result = call_tool(self.store, arguments)
            if arguments.compact:  # sized for an agent's context, as the MCP tool answers it
                from ..domain.wire import compact

                return compact(result, whole_bodies=action in ("get", "prompt_detail"))
            return result

        await self.run(work)


class HookEventHandler(ApiHandler):
    """``POST /api/hooks/{agent}`` ``{payload, event?, receivedAt, captureId, project?, owner?,
    branch?, gitSha?, answeredSince?}``:
    a hook event captured on a machine in remote mode (issue 14), recorded here as ``memo hook``
    records it locally; ``project`` is the project of the caller's repository (its ``cwd`` means
    nothing on this machine), ``owner`` the person working there (their git identity; without it
    the session's owner is unknown, never this machine's), ``branch``/``gitSha`` its repository's
    HEAD; ``showsHandoff``: the event is a live session start whose hook answer the agent reads,
    so a hand-off it claims is answered too (SPEC §2.5); ``answeredSince``: the caller read in its
    agent's transcript an answer since the session's previous prompt (the same short prompt again is
    then another turn). ``{outcome, handoff?}``."""

    async def post(self, agent: str) -> None:
        def work():
            from ..domain.clock import parse_record_instant
            from ..domain.ids import validate_slug
            from ..services.capture import BATON_AGENTS, apply_event, parse_event

            data = self.body_json()
            capture_id = data.get("captureId")
            if not isinstance(capture_id, str) or not re.fullmatch(r"[0-9a-f]{8,32}", capture_id):
                raise InvalidFieldError("captureId", "must be 8–32 lowercase hex digits")
            received = parse_record_instant(data.get("receivedAt"), "receivedAt", self.store.zone)
            project = validate_slug(data["project"], "project") if data.get("project") else None
            name = data.get("event") if isinstance(data.get("event"), str) else None
            event = parse_event(agent, data.get("payload"), received, name)
            # the caller's paths name its own machine: none may choose a folder here (the
            # repository a rule would be promoted into, its instruction files, its git branch)
            event.cwd = event.transcript_path = None
            if data.get("answeredSince") is True:  # its agent answered since its last prompt (the caller read it)
                event.extra["answeredSince"] = True
            owner = clean_owner(data["owner"]) if isinstance(data.get("owner"), str) else None
            # its branch and commit, as the caller's repository has them (text only, checked as typed ones are)
            head = tuple(data.get(key) if isinstance(data.get(key), str) else None for key in ("branch", "gitSha"))
            # a live start of an agent that shows its hook's answer: the hand-off it claims goes back
            batons = [] if data.get("showsHandoff") is True and event.agent in BATON_AGENTS else None
            with self.callers_own():  # the laptop's person (owner)
                outcome = apply_event(self.store, event, capture_id, project, owner=owner, head=head, batons=batons)
            return {"outcome": outcome, **({"handoff": batons[-1]} if batons else {})}

        await self.run(work)


#: Records one hybrid push may hold: the most a laptop sends (``hybrid.batchSize`` ≤ 10,000). The
#: byte limit alone let a token holder push 150,001 small records at once (found by an attacker).
MAX_PUSH_RECORDS = 10_000


class SyncRecordsHandler(ApiHandler):
    """``POST /api/sync/records`` ``{records: [{id, project, text, base, sent, owner}], pulls?}``: the
    hybrid push of another vault, each record admitted by the rules of local writes
    (validation, size, capture-ignore, redaction), then applied as idempotent upserts by id
    (newer ``updated`` wins a conflict, the other version kept beside it; another person's
    session of an id held here kept apart under its own id)."""

    max_body_bytes = MAX_REQUEST_BYTES

    async def post(self) -> None:
        def work():
            data = self.body_json()
            records = data.get("records")
            if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
                raise InvalidFieldError("records", "must be a list of {id, text, base}")
            if len(records) > MAX_PUSH_RECORDS:  # 150,001 small records in 54 MB: 900 MB of files, minutes of writing
                raise InvalidFieldError("records", f"{len(records):,} in one push; a push holds at most "
                                                   f"{MAX_PUSH_RECORDS:,} (hybrid.batchSize): nothing was stored")
            # first: an id that cannot be kept refuses the push before anything is stored (it was a
            # bare 500 after the records were, and the laptop sent them again and again)
            ident = daemon_id(self.store)  # a laptop tells this daemon from another by it
            # how many of the laptop's pushes this vault holds: fewer than it was answered, it was restored
            # (a push of no record asks it too: a laptop with nothing new learns the daemon lost its work)
            had = received_push(self.store, data.get("vault"), data.get("seq"))
            # a laptop that pulls claims its batons at its own start (the daemon claims none for it)
            return {"results": apply_incoming(self.store, records, claims=data.get("pulls") is not True),
                    "daemonId": ident, **({"received": had} if had is not None else {})}

        await self.run(work)


class SyncPullHandler(ApiHandler):
    """``POST /api/sync/pull`` ``{owners: [names]}``: what this team vault holds for a hybrid
    laptop's people — pending hand-offs addressed to them, and their sessions corrected here
    since their push — as ``{records: [{id, project, kind, text, base?}], invoiced: [{project,
    sessionId, invoice, billedMinutes}]}`` (:func:`~memo_analytics.services.sync.for_people`,
    :func:`~memo_analytics.services.sync.invoiced_for_people`: their sessions invoiced here)."""

    async def post(self) -> None:
        def work():
            owners = self.body_json().get("owners")
            return {"records": for_people(self.store, owners), "invoiced": invoiced_for_people(self.store, owners)}

        await self.run(work)


#: What the status API serves (``GET /api/health`` lists them; an unknown path names them).
ENDPOINTS = (
    "GET /api/health", "GET /api/prompts", "GET /api/prompts/{id}", "GET /api/prompts/sessions/{id}",
    "GET /api/prompts/sessions/{id}/export", "POST /api/prompts/derive-rules", "GET /api/sessions",
    "POST /api/sessions/{id}/edit", "GET /api/activity", "GET /api/digest", "POST /api/digest/apply",
    "POST /api/actions/{action}", "POST /api/sync/records", "POST /api/sync/pull", "POST /api/hooks/{agent}",
)


class HealthHandler(ApiHandler):
    """``GET /api/health``: ``{status, version, mode, endpoints}`` — the server answers and its
    vault's index opens (a monitor's probe; a broken index is a 500 with the reason); ``status``
    is ``ok``, or ``degraded`` with ``problems`` (one line each) while writes into the vault
    fail — read-only, not writable, its disk full: reads answer, every push and record is refused."""

    async def get(self) -> None:
        from .. import __version__
        from ..index.store import answers
        from ..services.maintenance import write_problems

        def work():
            answers(self.store.conn)  # the index opens and reads
            problems = write_problems(self.store.root)
            return {"status": "degraded" if problems else "ok", **({"problems": problems} if problems else {}),
                    "version": __version__, "mode": self.runtime.settings.mode, "endpoints": list(ENDPOINTS)}

        await self.run(work)


class NotFoundHandler(ApiHandler):
    """Any other path under ``/api/``: a JSON 404 (never an HTML page) naming the endpoints."""

    def prepare(self) -> None:
        self.fail(404, f"No such endpoint: {self.request.method} {self.request.path} (GET /api/health lists them)")
        raise tornado.web.Finish()


#: Where the dashboard's page loads :data:`DASHBOARD_SCRIPT` from (``memo serve``).
DASHBOARD_SCRIPT_PATH = "/memo/dashboard.js"
#: The dashboard page's own script: when its connection to the server is lost (``memo serve``
#: stopped or restarted) it says so at the top of the page and, once the server answers again,
#: loads the page afresh — a page left open kept showing the figures of before the restart, its ↻
#: doing nothing, without a word (found by an operator); and the page is laid out for the width
#: of the device (Panel's page names no viewport: a phone showed it 980 px wide, zoomed out).
DASHBOARD_SCRIPT = """\
(() => {
  if (!document.querySelector("meta[name=viewport]")) {  // a phone laid the page out 980 px wide, zoomed out
    const meta = document.createElement("meta")
    meta.name = "viewport"
    meta.content = "width=device-width, initial-scale=1"
    document.head.appendChild(meta)
  }
  let lost = false
  const say = () => {
    const bar = document.createElement("div")
    bar.id = "memo-connection-lost"
    bar.setAttribute("role", "alert")
    bar.textContent = "The dashboard lost its server (memo serve stopped or restarted): what it shows is " +
      "not updated. It loads again by itself once the server answers."
    bar.style.cssText = "position:fixed;top:0;left:0;right:0;z-index:10000;background:#b42318;color:#fff;" +
      "padding:10px 16px;font:14px system-ui,sans-serif"
    document.body.appendChild(bar)
  }
  const poll = () => fetch("/api/health", {cache: "no-store", credentials: "same-origin"})
    .then(() => location.reload(), () => setTimeout(poll, 3000))
  const watch = () => {
    const docs = window.Bokeh && window.Bokeh.documents
    if (!docs || !docs.length) { setTimeout(watch, 500); return }
    docs[0].on_event("connection_lost", () => {
      if (lost) return
      lost = true
      say()
      setTimeout(poll, 2000)
    })
  }
  watch()
  // the keyboard: a tab's header takes Enter or Space as a click, arrows move between the headers
  // (Bokeh's tabs took a click alone: the Activity & Invoicing and Rules tabs were out of a
  // keyboard user's reach), and Escape closes the open drawer or question (found by an operator)
  document.addEventListener("keydown", (event) => {
    const target = event.composedPath()[0]
    if (!(target instanceof HTMLElement)) return
    if (["Enter", " ", "Escape"].includes(event.key)) keyed = Date.now()
    if (event.key === "Tab" || event.key === "Escape") closeCalendars()
    if (event.key === "Tab") {
      // Tab moves through the page's controls in its order, shadow roots and all: the browser took it into a
      // table for good, or out to the page's body, where it stayed (found by an operator and a breaker)
      // of a table: its body (one stop) and its pager's buttons — not each of its cells
      const stop = (el) => !el.closest(".tabulator") || el.classList.contains("tabulator-tableholder") ||
        el.tagName === "BUTTON"
      const order = ordered(FOCUSABLE).filter((el) => el.tabIndex >= 0 && !el.disabled && stop(el) &&
                                                      el.checkVisibility())
      if (!order.length) return
      const path = event.composedPath()
      let at = -1
      for (const el of path) {  // the control that has the focus, or the table a focused cell of it is in
        const k = order.indexOf(el.classList && el.classList.contains("tabulator") ?
                                el.querySelector(".tabulator-tableholder") : el)
        if (k >= 0) { at = k; break }
      }
      const step = event.shiftKey ? -1 : 1
      const next = at < 0 ? order[event.shiftKey ? order.length - 1 : 0] : order[(at + step + order.length) % order.length]
      event.preventDefault()
      next.focus()
      return
    }
    if (target.classList.contains("tabulator-tableholder") &&
        ["ArrowDown", "ArrowUp", "Enter", " "].includes(event.key)) {
      // a table's rows by keyboard: the arrows move a marked row, Enter (or Space) opens it as a click does —
      // the prompt drawer opened by a click alone (found by an operator)
      const rows = Array.from(target.querySelectorAll(".tabulator-row")).filter((row) => row.checkVisibility())
      if (!rows.length) return
      event.preventDefault()
      let at = Math.min(Number(target.dataset.memoRow || -1), rows.length - 1)
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        at = Math.max(0, Math.min(rows.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)))
        target.dataset.memoRow = String(at)
        rows.forEach((row, k) => { row.style.outline = k === at ? "2px solid #2f5d8a" : "" })
        rows[at].scrollIntoView({block: "nearest"})
      } else {
        // a cell of the row's own columns (not the frozen index column, which no click opens)
        const cell = rows[Math.max(at, 0)].querySelector(".tabulator-cell:not(.tabulator-frozen)")
        opened = target  // the drawer's close gives the focus back to this table
        if (cell) cell.click()
      }
      return
    }
    if (target.classList.contains("bk-tab")) {
      const tabs = Array.from(target.parentElement.querySelectorAll(".bk-tab"))
      const at = tabs.indexOf(target)
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault()
        target.click()
      } else if ((event.key === "ArrowRight" || event.key === "ArrowLeft") && at >= 0) {
        event.preventDefault()
        const next = tabs[(at + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length]
        next.focus()
        next.click()
      }
    } else if (event.key === "Escape") {
      const shown = deep(".memo-drawer-close, .memo-issue-cancel").find((host) => host.checkVisibility())
      const button = shown && (shown.shadowRoot || shown).querySelector("button")
      if (button) button.click()
    }
  }, true)
  const FOCUSABLE = "button, input, select, textarea, a[href], [tabindex]"
  // a date field's calendar opens as the focus passes by, and stayed open over the page once it went on
  // (on a phone two of them made it scroll sideways: found by a breaker): leaving it, or Escape, closes it
  const closeCalendars = () => {
    for (const input of ordered("input")) {
      const picker = input._flatpickr
      if (picker && picker.isOpen) picker.close()
    }
  }
  // after an action by keyboard the page builds anew what held the focus, and the focus fell to the
  // page's body: the next Tab began at the top (found by an operator). It goes back to the table a
  // drawer was opened from, else to the control of the same name, else to where the acted one was
  let keyed = 0, acted = null, opened = null
  const reachable = () => ordered(FOCUSABLE).filter((el) => el.tabIndex >= 0 && !el.disabled && el.checkVisibility())
  document.addEventListener("click", (event) => {
    const holder = event.composedPath().find((node) => node instanceof HTMLElement && node.matches(".tabulator"))
    if (holder) opened = holder.querySelector(".tabulator-tableholder")  // a row clicked: its drawer's table
    if (Date.now() - keyed > 500) return  // a mouse's click: the focus is the mouse user's own
    const el = event.composedPath().find((node) => node instanceof HTMLElement && node.matches(FOCUSABLE))
    if (!el) return
    // a digest item's button: its item leaves the list, and the place it held is the next item's button,
    // whose Enter acted on an item nobody chose (found by an operator): the focus goes to the digest's ↻
    const item = (el.getRootNode().host || el).closest(".memo-digest-apply, .memo-digest-reviewed")
    acted = {label: item ? "↻ Refresh" : (el.textContent || "").trim(), at: item ? -1 : reachable().indexOf(el),
             when: Date.now(),
             table: el.closest(".memo-drawer-close") || (el.getRootNode().host || el).closest(".memo-drawer-close") ?
                    opened : null}
  }, true)
  setInterval(() => {
    if (!acted || Date.now() - acted.when > 4000) return
    if (document.activeElement && document.activeElement !== document.body) return
    const order = reachable()
    const back = acted.table && acted.table.isConnected && acted.table.checkVisibility() ? acted.table : null
    const same = acted.label ? order.find((el) => (el.textContent || "").trim() === acted.label) : null
    const target = back || same || (order.length ? order[Math.min(Math.max(acted.at, 0), order.length - 1)] : null)
    if (target && Date.now() - acted.when > 150) { target.focus(); acted = null }
  }, 100)
  // the page's widgets each live in a shadow root: queries that look into them all (in the page's order)
  const ordered = (selector) => {
    const found = []
    const visit = (node) => {
      for (const el of node.children) {
        if (el.matches(selector)) found.push(el)
        if (el.shadowRoot) visit(el.shadowRoot)
        visit(el)
      }
    }
    visit(document.body)
    return found
  }
  const deep = ordered
  // the tabs said as tabs to a screen reader (Bokeh's headers carry no role: found by an operator); a chip
  // chosen said as pressed (shown by its colour alone), a date field named by its label (its label's `for`
  // named nothing: found by an operator)
  setInterval(() => {
    for (const chip of ordered(".memo-ide-chips .bk-btn, .bk-btn-group .bk-btn")) {
      const pressed = chip.classList.contains("bk-active") ? "true" : "false"
      if (chip.getAttribute("aria-pressed") !== pressed) chip.setAttribute("aria-pressed", pressed)
    }
    for (const input of ordered("input")) {
      if (input.getAttribute("aria-label") || input.labels && input.labels.length) continue
      const label = input.getRootNode().querySelector && input.getRootNode().querySelector("label")
      const text = label && (label.textContent || "").trim()
      if (text) input.setAttribute("aria-label", text)
    }
    for (const tab of ordered(".bk-tab")) {
      if (tab.getAttribute("role") !== "tab") tab.setAttribute("role", "tab")
      const selected = tab.classList.contains("bk-active") ? "true" : "false"
      if (tab.getAttribute("aria-selected") !== selected) tab.setAttribute("aria-selected", selected)
      const list = tab.parentElement
      if (list && list.getAttribute("role") !== "tablist") list.setAttribute("role", "tablist")
    }
  }, 500)
})()
"""


class DashboardScriptHandler(tornado.web.RequestHandler):
    """``GET /memo/dashboard.js``: :data:`DASHBOARD_SCRIPT` (the same for everyone: no secret);
    routed by ``memo serve`` beside the API (:data:`DASHBOARD_SCRIPT_ROUTE`)."""

    def get(self) -> None:
        self.set_header("Content-Type", "text/javascript; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.finish(DASHBOARD_SCRIPT)


#: The route of the dashboard page's script, for ``extra_patterns`` beside :func:`api_patterns`.
DASHBOARD_SCRIPT_ROUTE = (DASHBOARD_SCRIPT_PATH.replace(".", r"\."), DashboardScriptHandler, {})


def api_patterns(runtime: Runtime, token: str | None, confined: bool = False) -> list[tuple[str, type, dict[str, Any]]]:
    """The Tornado routes of the API, for ``extra_patterns`` of the Panel server; ``confined``:
    bound off loopback (other machines call it)."""
    args = {"runtime": runtime, "token": token, "confined": confined}
    return [
        (r"/api/health", HealthHandler, args),
        (r"/api/prompts", PromptsHandler, args),
        (r"/api/prompts/derive-rules", DeriveRulesHandler, args),
        (r"/api/prompts/sessions/([^/]+)/export", SessionExportHandler, args),
        (r"/api/prompts/sessions/([^/]+)", SessionTurnsHandler, args),
        (r"/api/prompts/([^/]+)", PromptHandler, args),
        (r"/api/sessions", SessionsHandler, args),
        (r"/api/sessions/([^/]+)/edit", SessionEditHandler, args),
        (r"/api/activity", ActivityHandler, args),
        (r"/api/digest", DigestHandler, args),
        (r"/api/digest/apply", DigestApplyHandler, args),
        (r"/api/actions/([A-Za-z_]+)", ActionHandler, args),
        (r"/api/sync/records", SyncRecordsHandler, args),
        (r"/api/sync/pull", SyncPullHandler, args),
        (r"/api/hooks/([a-z-]{1,20})", HookEventHandler, args),
        (r"/api/.*", NotFoundHandler, args),
    ]


# ---------------------------------------------------------------- the browser boundary


class BrowserBoundary:
    """What a request must show before any route sees it (SPEC §3.3; loopback is not a trust
    boundary: any page the person visits can send requests to ``127.0.0.1``).

    - ``Host`` must name this server: the bound address or a loopback name, with its port
      (421 otherwise) — a DNS-rebinding page sends its own name. A wildcard bind
      (``0.0.0.0``, ``::``) accepts any name: it needs the token anyway.
    - ``Origin``, when sent, must be this server's own (``http(s)://<Host>``); ``null`` and
      every other origin get 403, as do requests a browser marks ``Sec-Fetch-Site:
      cross-site|same-site`` (another page, another port) unless they are a top-level
      navigation to the dashboard's page or its sign-in (a link the person clicks).
    - Panel's component resources (``/components/<module>/…``) only of a module already loaded:
      Panel imports the module a URL names (404 otherwise).
    - A websocket upgrade must name a subprotocol (the dashboard's session token): 400.
    - A write to ``/api/`` (POST, PUT, PATCH, DELETE) must be ``Content-Type:
      application/json`` (415): a cross-site form or ``text/plain`` fetch cannot send that
      without a preflight, which gets no CORS answer.
    - With a token: an address that gave :data:`~memo_analytics.domain.hosts.WRONG_TOKEN_LIMIT`
      wrong ones (an API call, a sign-in) within a minute gets 429 for every request needing the
      token, unread, until a minute passes without one (logged once per block).
    - A body over :data:`MAX_CALL_BYTES` is refused from its ``Content-Length`` (413), and one
      sent in chunks (411), on every route but the sync push (the dashboard's too), before it is read; a
      ``Content-Length`` that is not one number (``N,N``, two headers) on any route (400).
    """

    WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
    #: What a top-level navigation from another site may open: the dashboard and its sign-in.
    PAGES = frozenset({"/", "/login"})
    #: Panel's route of component resources (``/components/<module>/<class>/<attribute>/<path>``).
    COMPONENTS = "/components/"
    #: The routes whose body may be :data:`MAX_REQUEST_BYTES` (every other: :data:`MAX_CALL_BYTES`).
    BIG_BODIES = ("/api/sync/",)

    def __init__(self, host: str, port: int, token: str | None = None) -> None:
        self.token = token
        self.wrong_tokens = WRONG_TOKENS  # per address, with the MCP endpoint: past a limit 429 (README)
        self.signed_out: set[str] = set()  # sign-in cookies /logout revoked (until the server stops)
        bound = host.strip("[]").lower()
        self.wildcard = bound in ("0.0.0.0", "::", "")
        self.port = port
        # ``[::1]`` only where the server listens on IPv6: a request to 127.0.0.1 never names it
        names = {"localhost", "127.0.0.1", f"[{bound}]" if ":" in bound else bound}
        self.hosts = {f"{name}:{port}" for name in names} | (names if port == 80 else set())

    #: The sign-in's cookies (Panel's): a signed-out one is dropped from every later request.
    SIGN_IN_COOKIES = ("user", "id_token")

    def screen_cookies(self, path: str, headers: Any) -> None:
        """Drop from ``headers`` a sign-in cookie signed out here (``/logout`` revokes the one it
        is sent: a copy another local server read — cookies go to every port of a host — no
        longer signs in), and a ``next_url`` that is not a path of this server (one another
        port's page planted made every sign-in fail with 400)."""
        raw = "; ".join(headers.get_list("Cookie")) if hasattr(headers, "get_list") else headers.get("Cookie", "")
        cookies = httputil.parse_cookie(raw)
        if path == "/logout" and cookies.get("user"):
            self.signed_out.add(cookies["user"])
        drop = set(self.SIGN_IN_COOKIES) if cookies.get("user") in self.signed_out else set()
        nxt = cookies.get("next_url")
        if nxt is not None and not (nxt.startswith("/") and not nxt.startswith(("//", "/\\"))):
            drop.add("next_url")
        if drop:
            kept = [part for part in raw.split(";") if part.split("=", 1)[0].strip() not in drop and part.strip()]
            del headers["Cookie"]
            if kept:
                headers["Cookie"] = ";".join(kept).strip()

    def refusal(self, method: str, path: str, headers: Any, query: str = "") -> tuple[int, str] | None:
        """``(status, message)`` when the request is refused, else None."""
        lengths = headers.get_list("Content-Length") if hasattr(headers, "get_list") else (
            [headers["Content-Length"]] if "Content-Length" in headers else [])
        if len(lengths) > 1 or any(not value.strip().isdigit() for value in lengths):
            # "N,N" or two headers: the server would take one and read the body it announces
            # past the size checks below
            return 400, "Bad request: send one Content-Length, a number of bytes"
        host = (headers.get("Host") or "").strip().lower()
        if not self.wildcard and host not in self.hosts:
            return 421, "Misdirected request: the Host header does not name this server"
        if host.startswith("[") and not path.startswith(("/api/", "/mcp")):
            # the dashboard (Panel) cannot read a bracketed address: it answered 500 with a traceback
            return 421, f"Misdirected request: open the dashboard at http://localhost:{self.port}/"
        origin = headers.get("Origin")
        if origin is not None and origin.strip().lower() not in (f"http://{host}", f"https://{host}"):
            return 403, "Forbidden: cross-origin request"
        if marked_cross_site(headers.get("Sec-Fetch-Site")):
            navigation = (method == "GET" and (headers.get("Sec-Fetch-Mode") or "").lower() == "navigate"
                          and (headers.get("Sec-Fetch-Dest") or "document").lower() == "document")
            if not navigation or path not in self.PAGES:  # a link opens the dashboard, no other route
                return 403, "Forbidden: cross-site request"
        if query and not path.startswith(("/api/", "/mcp")) and _names_a_token(query):
            # a token in the dashboard's address went into its sign-in redirect (next=…), a cookie
            # scripts read, the page's session arguments and the log (found by an attacker)
            return 400, ("Bad request: the dashboard takes its token at its sign-in page, never in its address "
                         "(an address's token stays in the browser's history and cookies): open the dashboard's "
                         "address without it and sign in")
        if path.startswith(self.COMPONENTS):
            # Panel's component resources import the module the URL names, before any check:
            # `venv.__main__` ended the server (found by an attacker: one GET, no token). Only a
            # module the dashboard has loaded serves its resources (importing it again does nothing).
            module = urllib.parse.unquote(path[len(self.COMPONENTS):]).split("/", 1)[0]
            if module not in sys.modules:
                return 404, "Not found"
        if (headers.get("Upgrade") or "").strip().lower() == "websocket" and \
                not (headers.get("Sec-WebSocket-Protocol") or "").strip():
            # the dashboard's websocket takes its session token as a subprotocol (Bokeh's page always
            # sends one): a bare upgrade ended in a 56-line traceback in the log, per request
            return 400, "Bad request: the dashboard's websocket takes its session as a Sec-WebSocket-Protocol"
        if method in self.WRITES and path.startswith("/api/"):
            content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if content_type != "application/json":
                return 415, "Unsupported media type: send the body as Content-Type: application/json"
        if self.token and path.startswith("/api/"):  # before a body (up to 64 MB for a push) is read
            values = urllib.parse.parse_qs(query, keep_blank_values=True).get("token", [""])
            if not token_given(self.token, headers, values[-1]):
                return 401, UNAUTHORIZED
        if not path.startswith(self.BIG_BODIES):
            # refused from its headers, before the body is read and kept in memory (the server reads
            # up to MAX_REQUEST_BYTES for the sync push): no caller, with a token or not, makes the
            # server hold 64 MB per request on any other route — the dashboard's pages, its login and
            # static files included (a POST of 63 MB to / was read and held for a minute, no token asked)
            length = (headers.get("Content-Length") or "").strip()
            if length.isdigit() and int(length) > MAX_CALL_BYTES:
                return 413, f"Request body is {int(length)} bytes; this endpoint reads at most {MAX_CALL_BYTES}"
            if "Transfer-Encoding" in headers:
                return 411, "Length required: send the body with a Content-Length"
        return None


def _names_a_token(query: str, depth: int = 12) -> bool:
    """Whether a query string names ``token`` (however its key is percent-encoded), itself or in
    an address one of its values holds (``next=/%3Ftoken%3D…``), up to ``depth`` levels; a ``;``
    parts pairs as ``&`` does (``/?a=1;token=…`` went into the sign-in's ``next_url`` cookie, and
    four levels of ``next=`` got through: found by a breaker)."""
    for key, values in urllib.parse.parse_qs(query.replace(";", "&"), keep_blank_values=True).items():
        if key.strip().lower().removesuffix("[]") == "token":
            return True
        for value in values:  # an address (``/?token=…``), not any text holding "token=" (a search)
            if depth > 1 and "?" in value and _names_a_token(value.split("?", 1)[1], depth - 1):
                return True
    return False


class _Refusal(httputil.HTTPMessageDelegate):
    """Answers a refused request once its body has been read (never passed to a route)."""

    def __init__(self, connection: Any, status: int, message: str) -> None:
        self.connection, self.status, self.message = connection, status, message

    def data_received(self, chunk: bytes) -> None:
        return None

    def finish(self) -> None:
        body = safe_json({"error": self.message}).encode("utf-8")
        headers = httputil.HTTPHeaders({"Content-Type": "application/json; charset=utf-8",
                                        "Content-Length": str(len(body)), "Cache-Control": "no-store",
                                        "X-Content-Type-Options": "nosniff", "Connection": "close"})
        reason = httputil.responses.get(self.status, "Refused")
        if self.status == 429:  # when to ask again, in seconds (the message says it too)
            headers["Retry-After"] = (re.search(r"in (\d+) s", self.message) or re.search("()", "")).group(1) or "60"
        self.connection.write_headers(httputil.ResponseStartLine("HTTP/1.1", self.status, reason), headers, body)
        self.connection.finish()

    def on_connection_close(self) -> None:
        return None


class _Unframeable:
    """A request's connection whose every response says no other site may frame it
    (``X-Frame-Options: SAMEORIGIN``, ``Content-Security-Policy: frame-ancestors 'self'``):
    a page that framed the dashboard could trick a click on Issue invoice or Promote —
    ``Sec-Fetch-Dest`` refuses such frames only in browsers that send it."""

    def __init__(self, connection: Any, answered: Callable[[int, Any], None] | None = None) -> None:
        self._connection = connection
        self._answered = answered  # told the status and headers of the answer (a sign-in's outcome)

    def write_headers(self, start_line: Any, headers: httputil.HTTPHeaders, chunk: bytes | None = None) -> Any:
        if self._answered is not None and isinstance(start_line, httputil.ResponseStartLine):
            self._answered(start_line.code, headers)
        if "X-Frame-Options" not in headers:
            headers["X-Frame-Options"] = "SAMEORIGIN"
        policy = headers.get("Content-Security-Policy")
        if policy is None:
            headers["Content-Security-Policy"] = "frame-ancestors 'self'"
        elif "frame-ancestors" not in policy:
            headers["Content-Security-Policy"] = f"{policy}; frame-ancestors 'self'"
        return self._connection.write_headers(start_line, headers, chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


class _Guarded(httputil.HTTPMessageDelegate):
    """Checks the headers against the boundary, then hands the request to the application."""

    def __init__(self, app: Any, boundary: BrowserBoundary, server_conn: Any, request_conn: Any) -> None:
        self.app, self.boundary, self.server_conn, self.request_conn = app, boundary, server_conn, request_conn
        self.inner: httputil.HTTPMessageDelegate | None = None

    def headers_received(self, start_line: Any, headers: httputil.HTTPHeaders):
        path, _, query = start_line.path.partition("?")
        self.address = str(getattr(getattr(self.request_conn, "context", None), "remote_ip", "") or "")
        signing_in = bool(self.boundary.token) and start_line.method == "POST" and path == "/login"
        if self.boundary.token and (path.startswith("/api/") or signing_in):
            wait = self.boundary.wrong_tokens.wait(self.address, time.monotonic())
            if wait is not None:  # unread, the right token too: a guess learns nothing
                self.inner = _Refusal(self.request_conn, 429, f"Too many requests: too many wrong tokens from "
                                                              f"this address; try again in {wait} s")
                return None
        if signing_in and query:
            # a token in the sign-in's address: Panel read it there, and sent it back in the address of its
            # answer ("…?password=…?error=…": found by a breaker)
            self.inner = _Refusal(self.request_conn, 400, "Bad request: sign in with the sign-in page's form; the "
                                                          "token never goes into an address")
            return None
        if self.boundary.token and "Cookie" in headers:
            self.boundary.screen_cookies(path, headers)
        refused = self.boundary.refusal(start_line.method, path, headers, query)
        if refused:
            if refused[0] == 401 and token_presented(
                    headers, urllib.parse.parse_qs(query, keep_blank_values=True).get("token", [""])[-1]):
                wrong_token(self.boundary.wrong_tokens, self.address)
            self.inner = _Refusal(self.request_conn, *refused)
            return None
        # a sign-in is counted by its answer — Panel sends a wrong token back to the sign-in page with an
        # error — whatever form it came in (a multipart form was never counted: found by a breaker)
        answered = (lambda code, found: wrong_token(self.boundary.wrong_tokens, self.address)
                    if code in (301, 302, 303) and "error=" in (found.get("Location") or "") else None) \
            if signing_in else None
        self.inner = self.app.start_request(self.server_conn, _Unframeable(self.request_conn, answered))
        return self.inner.headers_received(start_line, headers)

    def data_received(self, chunk: bytes):
        return self.inner.data_received(chunk) if self.inner else None

    def finish(self) -> None:
        if self.inner:
            self.inner.finish()

    def on_connection_close(self) -> None:
        if self.inner:
            self.inner.on_connection_close()


class GuardedApplication(httputil.HTTPServerConnectionDelegate):
    """The Tornado application behind :class:`BrowserBoundary`: installed as the HTTP
    server's request callback, so every route — API, dashboard page, static files, the
    dashboard's websocket — is checked the same way."""

    def __init__(self, app: Any, boundary: BrowserBoundary) -> None:
        self.app, self.boundary = app, boundary

    def start_request(self, server_conn: Any, request_conn: Any) -> httputil.HTTPMessageDelegate:
        return _Guarded(self.app, self.boundary, server_conn, request_conn)

    def on_close(self, server_conn: Any) -> None:
        self.app.on_close(server_conn)


# ---------------------------------------------------------------- no secret in the logs

_LOGGED_SECRET = re.compile(
    r"""(?ix)
    ( \b(?:authorization|x-memo-token)['"]?\s*[:=,]\s*['"]?(?:bearer\s+|basic\s+)? ) [^\s'",}]+  # headers
  | ( \bbearer\s+ ) [A-Za-z0-9._~+/=-]{6,}
    """)


_QUERY_PAIR = re.compile(r"([?&;])([^=&;?\s\"'#]+)=([^&;\s#]*)")


#: ``token=`` percent-encoded inside another query value (``next=https%3A%2F%2F…%3Ftoken%3D…``),
#: once or twice: its value up to the next encoded ``&``, ``;`` or ``#``.
_ENCODED_TOKEN = re.compile(r"(?i)((?:%3F|%26|%3B|%253F|%2526)token(?:%5B%5D|%255B%255D)?(?:%3D|%253D))"
                            r"((?:(?!%26|%3B|%23|%2526)[^&;\s#\"'])+)")


def _mask_query_token(match: re.Match[str]) -> str:
    key = urllib.parse.unquote_plus(match.group(2)).strip().lower()  # Tornado reads ?%74oken= as token
    return f"{match.group(1)}{match.group(2)}=[REDACTED:token]" if key.removesuffix("[]") == "token" \
        else match.group(0)


def redact_log_text(text: str) -> str:
    """``text`` of a log line with tokens masked: ``?token=`` (however the key is
    percent-encoded), ``Authorization``/``X-Memo-Token`` header values, bearer tokens, then
    any secret shape :func:`redact_secrets` knows."""
    for token in _KNOWN_TOKENS:  # the server's own token, wherever a caller put it (?tokn=, ?project=: a tester)
        for shown in (token, urllib.parse.quote(token, safe=""), urllib.parse.quote_plus(token)):
            text = text.replace(shown, "[REDACTED:token]")
    text = _QUERY_PAIR.sub(_mask_query_token, text)
    text = _ENCODED_TOKEN.sub(lambda m: m.group(1) + "[REDACTED:token]", text)  # next=/%3Ftoken%3D…
    masked = _LOGGED_SECRET.sub(lambda m: (m.group(1) or m.group(2)) + "[REDACTED:token]", text)
    return redact_secrets(masked)[0]


_installed = False
#: The tokens of this process's servers: masked wherever they appear in a log line.
_KNOWN_TOKENS: set[str] = set()


def _not_a_closed_tab(record: Any) -> bool:
    """Whether a log record is more than a browser tab closed while the dashboard wrote to it
    (Tornado's ``WebSocketClosedError`` / ``StreamClosedError``, logged by asyncio as "Task
    exception was never retrieved" with a 50-line traceback: an operator read an ERROR for every
    tab closed)."""
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None and hasattr(record, "msg"):
        text = str(record.msg)
        return not ("WebSocketClosedError" in text or "StreamClosedError" in text)
    return type(exc).__name__ not in ("WebSocketClosedError", "StreamClosedError")


def quiet_closed_tabs() -> None:
    """Leave out of ``memo serve``'s log the traceback of each browser tab closed (:func:`_not_a_closed_tab`);
    every other error stays. Idempotent."""
    import logging

    for name in ("asyncio", "tornado.application", "bokeh.server.protocol_handler"):
        logger = logging.getLogger(name)
        if _not_a_closed_tab not in logger.filters:
            logger.addFilter(_not_a_closed_tab)


def install_log_redaction(token: str | None = None) -> None:
    """Mask tokens in every log record of this process (access and error logs of Tornado,
    uvicorn, Bokeh and ours): the record's message is formatted and masked as it is made,
    tracebacks as they are formatted; ``token`` (the server's own) wherever it appears.
    Idempotent."""
    global _installed
    if token and len(token) >= 8:
        _KNOWN_TOKENS.add(token)
    if _installed:
        return
    import logging

    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is logged as it is
            return record
        record.msg, record.args = redact_log_text(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact_log_text(logging.Formatter().formatException(record.exc_info))
        return record

    logging.setLogRecordFactory(factory)
    _installed = True

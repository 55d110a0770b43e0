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

import hmac
import ipaddress
import json
import re
from typing import Any, Callable

import tornado.web
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from ..actions import ACTIONS, PromptToolInput, request_for, run_action
from ..domain.errors import (
    InvalidFieldError,
    MemoError,
    RecordNotFoundError,
    SessionCompletedError,
    SessionNotStartedError,
    VaultBusyError,
)
from ..domain.wire import dumps
from ..operator.acting import apply_item
from ..reports.story import story_html_fragment
from ..services.requests import (
    ActivityReportRequest,
    DeriveRulesRequest,
    DigestRequest,
    ExportStoryRequest,
    ListRequest,
    SessionRequest,
)
from ..services.store import VaultStore
from ..services.sync import apply_incoming
from ..vault.redact import redact_secrets

_REDACTED = re.compile(r"\[REDACTED:[a-z-]+\]")
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds the loopback interface only."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def safe_json(value: Any) -> str:
    """:func:`dumps` with ``<``, ``>``, ``&`` escaped (same parsed value; never HTML)."""
    return dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _status_for(exc: MemoError) -> int:
    if isinstance(exc, RecordNotFoundError):
        return 404
    if isinstance(exc, (SessionCompletedError, SessionNotStartedError)):
        return 409
    if isinstance(exc, VaultBusyError):
        return 503
    return 400


class ApiHandler(tornado.web.RequestHandler):
    """Base: token check, JSON answers, errors as sanitized JSON. ``params`` names the query
    parameters an endpoint reads; any other is refused (a misspelt filter must not silently
    return everything)."""

    params: tuple[str, ...] = ()

    def initialize(self, store: VaultStore, token: str | None) -> None:
        self.store = store
        self.token = token

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")

    def prepare(self) -> None:
        if not self._check_params():
            raise tornado.web.Finish()
        if not self.token:
            return
        given = self.request.headers.get("X-Memo-Token") or self.get_query_argument("token", "")
        auth = self.request.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            given = auth[7:].strip()
        if not given or not hmac.compare_digest(given.encode(), self.token.encode()):
            self.fail(401, "Unauthorized: give the server's token (Authorization: Bearer <token>)")
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

    def arg(self, *names: str) -> str | None:
        for name in names:
            value = self.get_query_argument(name, None)
            if value is not None:
                return value
        return None

    def flag(self, name: str) -> bool | None:
        value = self.arg(name)
        if value is None or value == "":
            return None
        if value.lower() in _TRUE:
            return True
        if value.lower() in _FALSE:
            return False
        raise InvalidFieldError(name, f"{value!r} is not true or false")

    def body_json(self) -> dict[str, Any]:
        if not self.request.body:
            return {}
        try:
            data = json.loads(self.request.body)
        except (ValueError, UnicodeDecodeError):
            raise InvalidFieldError("body", "is not JSON") from None
        if not isinstance(data, dict):
            raise InvalidFieldError("body", "must be a JSON object")
        return data

    def run(self, work: Callable[[], Any]) -> None:
        try:
            result = work()
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(to_camel(str(p)) for p in first["loc"]) or "input"
            self.fail(400, f"Invalid {field}: {first['msg'].removeprefix('Value error, ')}")
            return
        except MemoError as exc:
            self.fail(_status_for(exc), str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - never a traceback to the client
            self.fail(500, f"Internal error ({type(exc).__name__}); see the server log")
            raise
        if not self._finished:
            self.answer(result)


class PromptsHandler(ApiHandler):
    """``GET /api/prompts``: list (or, with ``query``, search) with the filters of SPEC §2.6."""

    params = ("project", "query", "ide", "model", "agent", "sessionId", "session", "taskSlug", "slug", "client",
              "billable", "tag", "since", "until", "limit", "offset", "sort", "crossProject")

    def get(self) -> None:
        def work():
            request = ListRequest(
                project=self.arg("project"), cross_project=bool(self.flag("crossProject")), query=self.arg("query"),
                ide=self.arg("ide"), model=self.arg("model"), agent=self.arg("agent"),
                session_id=self.arg("sessionId", "session"), task_slug=self.arg("taskSlug", "slug"),
                client=self.arg("client"), billable=self.flag("billable"),
                tags=self.get_query_arguments("tag"), since=self.arg("since"), until=self.arg("until"),
                limit=self.arg("limit"), offset=self.arg("offset"), sort=self.arg("sort") or "date-desc",
            )
            return ACTIONS["search" if (request.query or "").strip() else "list"].run(self.store, request)

        self.run(work)


class PromptHandler(ApiHandler):
    """``GET /api/prompts/{id}``: the record plus ``renderedHtml`` (sanitized) and
    ``secretsRedacted`` (how many secrets the stored text had hidden)."""

    def get(self, record_id: str) -> None:
        def work():
            record = ACTIONS["get"].run(self.store, ACTIONS["get"].request(id=record_id))
            body = record.get("body") or ""
            return {**record, "renderedHtml": story_html_fragment(body),
                    "secretsRedacted": len(_REDACTED.findall(json.dumps(record, ensure_ascii=False)))}

        self.run(work)


class SessionTurnsHandler(ApiHandler):
    """``GET /api/prompts/sessions/{sessionId}?project=…``: the session and its turns."""

    params = ("project", "limit", "offset")

    def get(self, session_id: str) -> None:
        def work():
            project = self.arg("project")
            if not project:
                raise InvalidFieldError("project", "required for a session's turns")
            result = ACTIONS["session"].run(self.store, SessionRequest(session_id=session_id, project=project,
                                                                        limit=self.arg("limit"),
                                                                        offset=self.arg("offset")))
            session = result.get("session")
            owner = (session or {}).get("project") or (result["items"][0]["project"] if result["items"] else None)
            if owner != project:
                raise RecordNotFoundError(session_id)
            return result

        self.run(work)


class SessionExportHandler(ApiHandler):
    """``GET /api/prompts/sessions/{sessionId}/export``: the intent story as a Markdown
    download (``text/markdown``, attachment, sanitized file name)."""

    def get(self, session_id: str) -> None:
        try:
            story = ACTIONS["export_story"].run(self.store, ExportStoryRequest(session_id=session_id))
        except ValidationError:
            self.fail(400, "Invalid sessionId")
            return
        except MemoError as exc:
            self.fail(_status_for(exc), str(exc))
            return
        name = re.sub(r"[^A-Za-z0-9._-]", "_", story["sessionId"])[:120] or "session"
        self.set_header("Content-Type", "text/markdown; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="story-{name}.md"')
        self.finish(story["markdown"].encode("utf-8"))


class SessionsHandler(ApiHandler):
    """``GET /api/sessions``: a page of sessions (project, crossProject, client, since, until)."""

    params = ("project", "crossProject", "client", "since", "until", "limit", "offset")

    def get(self) -> None:
        self.run(lambda: ACTIONS["session"].run(self.store, SessionRequest(
            project=self.arg("project"), cross_project=bool(self.flag("crossProject")), client=self.arg("client"),
            since=self.arg("since"), until=self.arg("until"), limit=self.arg("limit"), offset=self.arg("offset"))))


class ActivityHandler(ApiHandler):
    """``GET /api/activity``: ``activity_report`` (project, crossProject, since, until, client, tz)."""

    params = ("project", "crossProject", "since", "until", "client", "tz")

    def get(self) -> None:
        self.run(lambda: ACTIONS["activity_report"].run(self.store, ActivityReportRequest(
            project=self.arg("project"), cross_project=bool(self.flag("crossProject")), since=self.arg("since"),
            until=self.arg("until"), client=self.arg("client"), tz=self.arg("tz"))))


class DigestHandler(ApiHandler):
    """``GET /api/digest``: the operator digest (``refresh``, ``asOf``)."""

    params = ("refresh", "asOf")

    def get(self) -> None:
        self.run(lambda: ACTIONS["digest"].run(self.store, DigestRequest(refresh=bool(self.flag("refresh")),
                                                                         as_of=self.arg("asOf"))))


class DigestApplyHandler(ApiHandler):
    """``POST /api/digest/apply`` ``{item, fingerprint}``: apply a proposal; 409 with the new
    proposal when the state changed since it was made."""

    def post(self) -> None:
        def work():
            data = self.body_json()
            item, fingerprint = data.get("item"), data.get("fingerprint")
            if not isinstance(item, str) or not item:
                raise InvalidFieldError("item", "required: the digest item id (kind:subject)")
            if not isinstance(fingerprint, str) or not fingerprint:
                raise InvalidFieldError("fingerprint", "required: the fingerprint of the proposal you reviewed")
            result = apply_item(self.store, item, fingerprint)
            if not result["applied"]:
                self.answer(result, status=409)
            return result

        self.run(work)


class DeriveRulesHandler(ApiHandler):
    """``POST /api/prompts/derive-rules``: derive, optionally save traps (JSON body with the
    fields of ``derive_rules``: project, crossProject, since, until, minConfidence, limit,
    saveTraps, format). Promotion is not offered over HTTP: it writes into a repository."""

    def post(self) -> None:
        def work():
            data = self.body_json()
            if "promote" in data or "cwd" in data:
                raise InvalidFieldError("promote", "not over HTTP; promote from the repository with the CLI")
            return ACTIONS["derive_rules"].run(self.store, DeriveRulesRequest.model_validate(data))

        self.run(work)


class ActionHandler(ApiHandler):
    """``POST /api/actions/{action}``: one call of the MCP tool ``prompt`` (the JSON body holds
    its camelCase fields without ``action``): what a client in remote mode sends (SPEC §2.7).
    The caller's ``vaultRoot`` is refused: the daemon owns its vault."""

    def post(self, action: str) -> None:
        def work():
            if action not in ACTIONS:
                raise InvalidFieldError("action", f"{action!r} is not one of {', '.join(ACTIONS)}")
            data = self.body_json()
            if "vaultRoot" in data or "vault_root" in data:
                raise InvalidFieldError("vaultRoot", "not accepted by the daemon; it serves its own vault")
            if "cwd" in data:
                raise InvalidFieldError("cwd", "means nothing on the daemon's machine; send projectId")
            arguments = PromptToolInput.model_validate({**data, "action": action})
            return run_action(self.store, action, request_for(arguments))

        self.run(work)


class SyncRecordsHandler(ApiHandler):
    """``POST /api/sync/records`` ``{records: [{id, text, base}]}``: the hybrid push of
    another vault, applied as idempotent upserts by id (newer ``updated`` wins a conflict,
    the other version kept beside it)."""

    def post(self) -> None:
        def work():
            data = self.body_json()
            records = data.get("records")
            if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
                raise InvalidFieldError("records", "must be a list of {id, text, base}")
            return {"results": apply_incoming(self.store, records)}

        self.run(work)


class NotFoundHandler(ApiHandler):
    """Any other path under ``/api/``: a JSON 404 (never an HTML page)."""

    def prepare(self) -> None:
        self.fail(404, f"No such endpoint: {self.request.method} {self.request.path}")
        raise tornado.web.Finish()


def api_patterns(store: VaultStore, token: str | None) -> list[tuple[str, type, dict[str, Any]]]:
    """The Tornado routes of the API, for ``extra_patterns`` of the Panel server."""
    args = {"store": store, "token": token}
    return [
        (r"/api/prompts", PromptsHandler, args),
        (r"/api/prompts/derive-rules", DeriveRulesHandler, args),
        (r"/api/prompts/sessions/([^/]+)/export", SessionExportHandler, args),
        (r"/api/prompts/sessions/([^/]+)", SessionTurnsHandler, args),
        (r"/api/prompts/([^/]+)", PromptHandler, args),
        (r"/api/sessions", SessionsHandler, args),
        (r"/api/activity", ActivityHandler, args),
        (r"/api/digest", DigestHandler, args),
        (r"/api/digest/apply", DigestApplyHandler, args),
        (r"/api/actions/([A-Za-z_]+)", ActionHandler, args),
        (r"/api/sync/records", SyncRecordsHandler, args),
        (r"/api/.*", NotFoundHandler, args),
    ]

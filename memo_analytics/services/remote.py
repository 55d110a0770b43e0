"""Remote mode (SPEC §2.7): every tool call goes to a memo daemon (``remote.url``,
``POST /api/actions/{action}``); the local vault is not read or written at all.

The caller's ``cwd`` means nothing on the daemon's machine, so it is resolved here first:
the repository folder names the project (as a preference for a lookup by id, see
:func:`call`) and its HEAD gives branch and commit, unless the call names them; then ``cwd``
is dropped.
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from typing import Any, Callable

from ..config import Settings
from ..domain.errors import MemoError
from ..domain.shell import one_line
from ..vault.redact import mask_url
from .store import git_head, git_identity, project_from_cwd, repository_root


def without_userinfo(url: str) -> tuple[str, str | None]:
    """``(url without user:password@, "Basic …" header or None)``: a password inside a URL is
    sent as HTTP Basic authentication, never as part of a host name to resolve."""
    import base64
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    credentials = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode("utf-8")).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), f"Basic {credentials}"


#: Actions that find a record by id: the caller's repository only chooses among the projects
#: that hold it (as :meth:`VaultStore.locate` does locally), it is not where they must look.
_LOOKUPS = ("get", "feedback", "export_story", "prompt_detail")


def _localize(arguments: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The call as the daemon can take it, and the project of the caller's repository (when
    ``cwd`` names one and the call gives no ``projectId``): for a lookup by id it is kept
    back as a preference, otherwise it becomes ``projectId``."""
    arguments = dict(arguments)
    cwd = arguments.pop("cwd", None)
    preferred = None
    root = repository_root(cwd) if cwd else None
    if cwd:
        if not arguments.get("projectId") and not arguments.get("crossProject"):
            # (a read of every project: the caller's repository names none — sent as projectId, it would
            # narrow the read to that project, which a project named with crossProject now does)
            preferred = project_from_cwd(cwd)
        branch, sha = git_head(root)
        if arguments.get("action") in ("record", "session_start"):
            arguments.setdefault("branch", branch)
            arguments.setdefault("gitSha", sha)
    if arguments.get("action") in ("session_start", "record", "session_end", "cancel_handoff") \
            and not arguments.get("owner"):
        # whose work it is: this machine's person, not the daemon's (a turn or an end never goes
        # into another person's session of the same id)
        arguments["owner"] = git_identity(root)
    return {k: v for k, v in arguments.items() if v is not None}, preferred


def _is_lookup(arguments: dict[str, Any]) -> bool:
    action = arguments.get("action")
    return action in _LOOKUPS or (action == "session" and bool(arguments.get("sessionId"))) or (
        action == "cancel_handoff" and bool(arguments.get("id") or arguments.get("sessionId")))


def call(settings: Settings, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool call on the remote daemon and return its JSON answer (SPEC §2.7).

    The repository of ``cwd`` names the project of the call, as locally: for a lookup by id
    it chooses only when several projects hold the id (the call is sent without it, and again
    with it when the daemon names the id ambiguous); a turn or a restart of a session goes
    where the daemon holds that session (:func:`_session_home`).

    Raises
    ------
    MemoError
        The daemon refused the call (its one-line message), or could not be reached.
    """
    arguments, preferred = _localize(arguments)
    if preferred is None:
        return _send(settings, arguments)
    if _is_lookup(arguments):
        try:
            return _send(settings, arguments)
        except MemoError as exc:
            if not _daemon_said(exc, "Ambiguous id "):
                raise
        return _send(settings, {**arguments, "projectId": preferred})
    if arguments.get("action") in ("record", "session_start") and arguments.get("sessionId"):
        return _send(settings, {**arguments, "projectId": _session_home(settings, arguments["sessionId"], preferred)})
    return _send(settings, {**arguments, "projectId": preferred})


_HOMES: dict[tuple[str, str, str], str] = {}


def unusable_answer(settings: Settings, what: str) -> MemoError:
    """The error of a daemon's answer memo cannot use: ``Remote daemon URL answered something
    memo cannot use: WHAT`` (one wording for every check of an answer)."""
    return MemoError(f"Remote daemon {mask_url(settings.remote.url or '(remote.url)')} answered something memo "
                     f"cannot use: {what}")


class DaemonRefusal(MemoError):
    """The daemon refused a call (HTTP 4xx); ``said`` is its one-line message, and the error's
    text says it is the daemon's."""

    def __init__(self, url: str, said: str) -> None:
        self.said = said
        super().__init__(f"Remote daemon {url} answered: {said}")


def _daemon_said(exc: MemoError, start: str) -> bool:
    """Whether ``exc`` is the daemon's refusal and its message starts with ``start``."""
    return isinstance(exc, DaemonRefusal) and exc.said.startswith(start)


def _session_home(settings: Settings, session_id: str, preferred: str) -> str:
    """The project of the daemon's vault a turn of ``session_id`` goes to when the caller's
    repository is ``preferred``: ``preferred`` when it holds the session or no project does,
    else the one project that does (remembered for the process: a session does not move)."""
    key = (settings.remote.url or "", session_id, preferred)
    if key in _HOMES:
        return _HOMES[key]
    home = preferred
    try:
        _send(settings, {"action": "session", "sessionId": session_id, "projectId": preferred, "limit": 1})
    except MemoError as exc:
        if not _daemon_said(exc, "Record not found"):
            raise
        try:
            found = _send(settings, {"action": "session", "sessionId": session_id, "limit": 1})
            holder = (found.get("session") or (found.get("items") or [{}])[0]).get("project")
            home = holder or preferred
        except MemoError as again:
            if not _daemon_said(again, "Record not found"):
                raise
    _HOMES[key] = home
    return home


def _send(settings: Settings, arguments: dict[str, Any]) -> dict[str, Any]:
    """POST one call to the daemon's ``/api/actions/{action}``; its JSON answer."""
    arguments = dict(arguments)
    action = arguments.pop("action")
    if "vaultRoot" in arguments:
        raise MemoError("Invalid vaultRoot: not available in remote mode (the daemon owns its vault)")
    return post(settings, f"/api/actions/{action}", arguments)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is not followed: it is answered as an ``HTTPError`` of its 3xx status.
    urllib would send the request again, as a GET and with its ``Authorization`` header (the
    daemon's token), to whatever host the answer names."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: D102, PLR0913
        return None


def _opener(connections: list[http.client.HTTPConnection]) -> urllib.request.OpenerDirector:
    """An opener that follows no redirect and keeps each connection it opens in ``connections``
    (so that :func:`exchange` can cut one that outlives its deadline)."""

    class Plain(http.client.HTTPConnection):
        def connect(self) -> None:
            connections.append(self)
            super().connect()

    class Secure(http.client.HTTPSConnection):
        def connect(self) -> None:
            connections.append(self)
            super().connect()

    class PlainHandler(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(Plain, req)

    class SecureHandler(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(Secure, req, context=self._context)

    return urllib.request.build_opener(PlainHandler, SecureHandler, _NoRedirect)


def exchange(request: urllib.request.Request, seconds: float,
             read: Callable[[Any, float], Any] | None = None) -> Any:
    """Send ``request`` and read its JSON answer (:func:`read_json_answer`; ``read(response,
    seconds)`` instead, e.g. its status only), all within
    ``seconds`` — connecting, the status line and headers too (a socket timeout bounds each
    read only: a daemon sending a header byte now and then held the caller, an agent's hook
    too, for ever) — following no redirect (a 3xx is an ``HTTPError``: the daemon's token never
    goes to another host).

    Raises
    ------
    urllib.error.HTTPError
        The answer's status is not 2xx (its body still readable).
    TimeoutError
        Not done within ``seconds``.
    ValueError, OSError, http.client.HTTPException
        As :func:`read_json_answer`; the daemon could not be reached.
    """
    import socket
    import threading

    connections: list[http.client.HTTPConnection] = []
    expired = threading.Event()

    def cut() -> None:
        expired.set()
        for connection in list(connections):
            try:
                if connection.sock is not None:
                    connection.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(seconds, cut)
    timer.daemon = True
    timer.start()
    try:
        with _opener(connections).open(request, timeout=seconds) as response:
            answer = (read or read_json_answer)(response, seconds)
        if expired.is_set():  # cut at the deadline: what was read may end there (cut headers read as whole)
            raise TimeoutError(f"the answer did not arrive within {seconds:g} s")
        return answer
    except (OSError, ValueError, http.client.HTTPException):  # HTTPError too (an OSError)
        if expired.is_set():
            raise TimeoutError(f"the answer did not arrive within {seconds:g} s") from None
        raise
    finally:
        timer.cancel()


#: The largest answer read from a daemon (a page of records, a report, a sync answer are far
#: smaller): a larger one is refused, not read to its end.
MAX_ANSWER_BYTES = 64 * 1024 * 1024


def read_json_answer(response: Any, seconds: float) -> Any:
    """The JSON of a daemon's ``response`` (an ``http.client.HTTPResponse``), read whole within
    ``seconds`` in all — a socket timeout bounds one read only, and a daemon sending a byte now
    and then would hold the caller for ever — and within :data:`MAX_ANSWER_BYTES`.

    Raises
    ------
    ValueError
        Not in time, too large, nested too deeply to parse, or not JSON.
    """
    deadline = time.monotonic() + seconds
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            raise ValueError(f"the answer did not arrive within {seconds:g} s")
        chunk = getattr(response, "read1", response.read)(65536)
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ValueError(f"the answer is larger than {MAX_ANSWER_BYTES:,} bytes")
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks).decode("utf-8"))
    except RecursionError:
        raise ValueError("the answer is nested too deeply to read") from None
    except UnicodeDecodeError:
        raise ValueError("the answer is not UTF-8") from None


def post(settings: Settings, route: str, payload: dict[str, Any], answers: tuple[int, ...] = ()) -> dict[str, Any]:
    """POST ``payload`` as JSON to the daemon's ``route``; its JSON answer (also under an HTTP
    status of ``answers``: a refused digest apply answers 409 with the new proposal).

    Raises
    ------
    MemoError
        The daemon refused it (its one-line message), or could not be reached, is busy or
        failing, or refused this machine's token (the message starts ``Remote daemon``: nothing
        about the request itself; a hook event is kept for the next run).
    """
    if not settings.remote.url:
        raise MemoError("Invalid remote.url: mode is remote but no daemon URL is configured")
    arguments = payload
    headers = {"Content-Type": "application/json", "User-Agent": "memo-remote"}
    base, basic = without_userinfo(settings.remote.url)
    if basic:
        headers["Authorization"] = basic
    if settings.remote.token:
        headers["Authorization"] = f"Bearer {settings.remote.token}"
    request = urllib.request.Request(f"{base.rstrip('/')}{route}",
                                     data=json.dumps(arguments).encode("utf-8"), headers=headers, method="POST")
    try:
        answer = exchange(request, settings.remote.timeout_seconds)
        if not isinstance(answer, dict):
            raise ValueError("the answer is not a JSON object")
        return answer
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:  # kept (spooled) as for a daemon not reached: the address is what is wrong
            exc.close()
            raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} answered with a redirect "
                            f"(HTTP {exc.code}); memo follows none (its token would go along): set remote.url to "
                            "the daemon's own address") from None
        try:
            answer = read_json_answer(exc, settings.remote.timeout_seconds)
            if exc.code in answers and isinstance(answer, dict):
                return answer
            message = (answer["error"][:300] if isinstance(answer, dict) and isinstance(answer.get("error"), str)
                       else None) or f"HTTP {exc.code}"
        except (ValueError, OSError):
            message = f"HTTP {exc.code}"
        finally:
            exc.close()
        if exc.code in (401, 403):  # not the event's fault: kept (spooled) until the token is right
            raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} refused this machine (HTTP {exc.code}: "
                            f"{message}); check remote.token (memo config set remote.token TOKEN, the daemon's "
                            "MEMO_TOKEN)") from None
        if exc.code in (408, 429) or exc.code >= 500:  # busy or failing: kept for the next run too
            raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} unreachable for now (HTTP {exc.code}: "
                            f"{message})") from None
        # the daemon's words, said to be its own: as memo's, "… run this once to repair it: bash -c …"
        # read as memo's advice
        raise DaemonRefusal(mask_url(settings.remote.url), one_line(message)) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = " ".join(str(getattr(exc, "reason", exc) or type(exc).__name__).split())[:200]
        raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} unreachable: {reason}") from None
    except ValueError as exc:
        raise unusable_answer(settings, str(exc) if "answer" in str(exc) else "not JSON") from None


_RECORD = {"id": str, "project": str}
_PAGE = {"items": list, "total": int}
#: The fields each forwarded action's answer must have, of these types (a record, a page, a report).
_ANSWER_SHAPES: dict[str, dict[str, type]] = {
    "record": _RECORD, "get": _RECORD, "prompt_detail": _RECORD, "session_start": _RECORD, "session_end": _RECORD,
    "list": _PAGE, "search": _PAGE, "session": _PAGE,
    "activity_report": {"totalDurationMinutes": int, "sessions": list, "byClient": dict},
}
#: The fields of a record printed on one line: a line end in one printed a forged line below it.
_ONE_LINE_FIELDS = ("id", "project", "sessionId", "status", "source", "ide", "model", "agent", "taskSlug", "client",
                    "branch", "gitSha", "owner", "created", "updated", "startTime", "endTime")


def checked_answer(settings: Settings, action: str, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer``, the daemon's to the tool action ``action``, when it has the shape a vault's
    answer has (SPEC §2.7): a record is a record (its one-line fields on one line), a page holds
    at most 100 records, a report its totals. For every interface that shows a daemon's answer
    (the CLI's tables and ``--json``, the MCP tool).

    Raises
    ------
    MemoError
        ``Remote daemon … answered something memo cannot use``: the first thing wrong with it.
    """
    shape = _ANSWER_SHAPES.get(action, {})
    problem = next((f"has no {key} of the right type" for key, kind in shape.items()
                    if not isinstance(answer.get(key), kind) or isinstance(answer.get(key), bool) or (
                        kind is list and not all(isinstance(item, dict) for item in answer[key]))), None)
    if problem is None and action == "activity_report":
        problem = _activity_problem(answer)
    if problem is None and shape is _PAGE:
        problem = _page_problem(answer)
    elif problem is None and shape is _RECORD:
        problem = _record_problem(answer)
    if problem:
        raise unusable_answer(settings, f"its {action} answer {problem}")
    return answer


def _activity_problem(report: dict[str, Any]) -> str | None:
    """What a daemon's activity report holds that no report does, or None: a client, project
    or session field on more than one line (a forged table row in a cell), or totals that are
    not the sum of its sessions (a vault's report always adds up: SPEC §4)."""
    from ..domain.wire import is_one_plain_line

    for table in ("byClient", "byProject"):
        names = report.get(table)
        if isinstance(names, dict) and any(not is_one_plain_line(str(name)) for name in names):
            return f"has a {table} name that is not one plain line"
    for item in report["sessions"]:
        field = _not_one_line(item)
        if field:
            return f"holds a session whose {field} is not one plain line"
    billed = [item.get("billedMinutes") or 0 for item in report["sessions"]]
    clients = [row.get("durationMinutes") if isinstance(row, dict) else None for row in report["byClient"].values()]
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (*billed, *clients)):
        return "holds minutes that are not whole numbers"
    if not sum(billed) == sum(clients) == report["totalDurationMinutes"]:
        return (f"does not add up: totalDurationMinutes {report['totalDurationMinutes']}, its sessions bill "
                f"{sum(billed)}, its clients {sum(clients)}")
    return None


def _page_problem(page: dict[str, Any]) -> str | None:
    """What a daemon's page of records holds that no vault record does (a table printed 5,000
    rows before failing on one, a string printed as a session's minutes), or None."""
    if len(page["items"]) > 100:  # a page holds at most limit ≤ 100 items
        return f"holds {len(page['items'])} items on one page (at most 100)"
    for record in [*page["items"], *([page["session"]] if isinstance(page.get("session"), dict) else [])]:
        problem = _record_problem(record)
        if problem:
            return problem
    return None


def _record_problem(record: dict[str, Any]) -> str | None:
    """What a daemon's record holds that no vault record does, or None."""
    from ..domain.records import normalize_meta

    try:
        normalize_meta(record)
    except (ValueError, MemoError) as exc:
        return f"holds a record that is none ({str(exc)[:120]})"
    field = _not_one_line(record)
    return f"holds a record whose {field} is not one plain line" if field else None


def _not_one_line(record: dict[str, Any]) -> str | None:
    """The first of a record's :data:`_ONE_LINE_FIELDS` that is not one plain line, or None."""
    from ..domain.wire import is_one_plain_line

    return next((name for name in _ONE_LINE_FIELDS
                 if isinstance(record.get(name), str) and not is_one_plain_line(record[name])), None)

"""The MCP server: one tool ``prompt`` over stdio or streamable HTTP (SPEC §3.1).

A thin adapter: arguments are validated into :class:`~memo_analytics.actions.PromptToolInput`,
turned into the action's typed request and answered by the action table; the result is the
same JSON text the CLI prints with ``--json``. Every refused request comes back as an MCP
tool error carrying the one-line message (secrets redacted), never as a crash.
"""

from __future__ import annotations

import inspect
import os
import json
import sqlite3
import sys
import threading
import time
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from pydantic import Field, ValidationError

from ..actions import ACTIONS, AGENT_ACTIONS, PromptToolInput, call_tool, refuse_server_paths
from ..config import Settings
from ..domain.errors import MemoError, full_disk_error
from ..domain.hosts import host_port, is_loopback
from ..domain.wire import compact, dumps, dumps_compact
from ..runtime import Runtime
from ..services import remote
from ..services.requests import refuse_oversized, validation_problem
from ..services.store import VaultStore, remote_caller, shell_cwd
from ..services.stories import export_remote_story
from ..vault.redact import redact_secrets

INSTRUCTIONS = (
    "memo_analytics keeps your conversation turns and work sessions in a vault outside the product "
    "repository. Call prompt with action session_start when work begins, record for each turn the "
    "person asks, session_end (with summary and pr) when it is done; recall with search, list, session "
    "and get; activity_report gives billable hours."
)

TOOL_DESCRIPTION = (
    "Prompt history, work sessions and billable activity, kept outside the product repository. "
    "Actions: " + " ".join(f"{name}: {ACTIONS[name].description}" for name in AGENT_ACTIONS)
)


def _message(exc: ValidationError) -> str:
    return "Invalid {}: {}".format(*validation_problem(exc, PromptToolInput, "unknown field of the tool prompt"))


class PromptTool:
    """The ``prompt`` tool bound to a default vault; other vaults are opened per ``vaultRoot``.

    ``confined``: callers may reach it from other machines (the MCP endpoint bound off
    loopback): each says whose work it is. ``over_http``: served over HTTP, on loopback too
    (any local process or web page can reach 127.0.0.1), so callers never choose a path here:
    ``vaultRoot``, ``cwd``, ``output`` and ``promote`` are refused
    (:func:`~memo_analytics.actions.refuse_server_paths`, SPEC §11)."""

    def __init__(self, runtime: Runtime, confined: bool = False, launch_dir: str | None = None,
                 over_http: bool = False) -> None:
        self.runtime = runtime
        self.confined = confined
        self.over_http = over_http or confined
        self.launch_dir = launch_dir  # over stdio: where the agent started the server (its repository)

    def store_for(self, vault_root: str | None) -> VaultStore:
        """This thread's store of ``vault_root`` (default: the runtime's vault)."""
        return self.runtime.thread_store(vault_root)

    def __call__(self, **arguments: Any) -> CallToolResult:
        """One call: the action's answer as JSON text (the CLI's ``--json`` bytes, or one
        compact line with ``compact``) and as structured content (the same value)."""
        if self.over_http:
            try:
                refuse_server_paths(arguments)
            except MemoError as exc:
                raise ToolError(redact_secrets(str(exc))[0]) from None
        self.runtime.refresh()  # a changed config file is taken in (one stat otherwise)
        if self.launch_dir is not None and arguments.get("cwd") is None:
            # a call without cwd is made where the agent started the server, as memo run there
            # reads (an agent that left cwd out read every client's turns from inside one's repository)
            if os.path.isdir(self.launch_dir):
                arguments = {**arguments, "cwd": self.launch_dir}
            elif not (arguments.get("projectId") or arguments.get("crossProject")):
                raise ToolError(f"Invalid cwd: the folder memo mcp was started in ({self.launch_dir}) is gone, and "
                                "a call without cwd is made there; give cwd or projectId (or start the server again)")
        try:
            refuse_oversized(arguments)  # before pydantic lists 300,000 unknown fields as errors
            parsed = PromptToolInput.model_validate(arguments)
            if self.runtime.remote:
                result = self._remote(parsed)
            else:
                if self.over_http:
                    self._refuse_no_project(parsed)
                with remote_caller(self.confined):  # another machine's caller says whose work it is
                    result = call_tool(self.store_for(parsed.vault_root), parsed)
        except MemoError as exc:
            raise ToolError(redact_secrets(str(exc))[0]) from None
        except ValidationError as exc:
            raise ToolError(redact_secrets(_message(exc))[0]) from None
        except (OSError, sqlite3.Error) as exc:
            full = full_disk_error(exc, self.runtime.settings.vault_root)
            if full is not None:
                raise ToolError(str(full)) from None
            raise
        if parsed.compact:
            whole = parsed.action in ("get", "prompt_detail")  # the record asked for: its whole text
            return CallToolResult(content=[TextContent(type="text", text=dumps_compact(result, whole))],
                                  structured_content=compact(result, whole))
        text = dumps(result)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))

    def _refuse_no_project(self, parsed: PromptToolInput) -> None:
        """Over HTTP nothing stands in for the caller's folder (``cwd`` is refused): a turn or a
        start without ``projectId`` of a session the vault does not hold went to the server's
        ``default`` project, said only as a warning (found by an agent's user). Refused unless
        the server's ``defaultProject`` is configured.

        Raises
        ------
        ToolError
            ``Invalid projectId: …``."""
        if parsed.action not in ("record", "session_start") or parsed.project_id:
            return
        store = self.store_for(parsed.vault_root)
        if "default_project" in store.settings.model_fields_set:
            return
        if parsed.session_id and store.exists and store.locate_session(parsed.session_id)[1] is not None:
            return  # a session the vault holds: its project
        raise ToolError("Invalid projectId: over HTTP memo cannot see the folder you work in, so it cannot tell the "
                        "project; give projectId (your repository's name), or configure the server's "
                        "defaultProject")

    def _remote(self, parsed: PromptToolInput) -> dict[str, Any]:
        """SPEC §2.7: the call goes to the daemon; nothing local is read or written (a story
        export's file is written here, by the local rules, from the daemon's answer)."""
        settings = self.runtime.settings
        if parsed.action == "export_story":
            sent = parsed.model_dump(by_alias=True, exclude_none=True, exclude={"action", "output", "overwrite"})
            return export_remote_story(settings, sent, parsed.output, bool(parsed.overwrite))
        answer = remote.call(settings, {"action": parsed.action,
                                        **parsed.model_dump(by_alias=True, exclude_none=True, exclude={"action"})})
        return remote.checked_answer(settings, parsed.action, answer)  # as the CLI takes it


#: What every answer of the tool is: the action's JSON object (each action's description
#: names its fields), in the text content and as structured content.
OUTPUT_SCHEMA = {
    "type": "object",
    "description": "The action's answer (see the action's description): a record, a page "
                   "{total, limit, offset, hasMore, items}, a report or a story; 'ignored' names the "
                   "given fields the action does not use.",
    "additionalProperties": True,
}


def _tool_function(tool: PromptTool):
    """A function whose signature is :class:`PromptToolInput` flattened (camelCase names, types
    and descriptions), so the SDK publishes one flat, typed, described input schema."""

    def prompt(**arguments: Any) -> CallToolResult:
        return tool(**{k: v for k, v in arguments.items() if v is not None})

    parameters = []
    for name, field in PromptToolInput.model_fields.items():
        alias = field.alias or name
        annotation = Annotated[field.annotation, Field(description=field.description)]
        default = inspect.Parameter.empty if field.is_required() else None
        parameters.append(inspect.Parameter(alias, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=annotation))
    prompt.__signature__ = inspect.Signature(parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    prompt.__doc__ = TOOL_DESCRIPTION
    return prompt


class _OwnValidation(FuncMetadata):
    """Hands the raw arguments to the tool, which validates them with
    :class:`PromptToolInput` itself: unknown fields refused (the SDK would drop them),
    one-line messages, secrets redacted (the SDK's messages echo the input)."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return dict(self.pre_parse_json(arguments_to_validate))


def build_server(settings: Settings | Runtime, confined: bool = False, launch_dir: str | None = None,
                 over_http: bool = False) -> MCPServer:
    """An MCP server with the one tool ``prompt`` on the vault of ``settings`` (or of a
    :class:`~memo_analytics.runtime.Runtime` shared with other servers of the process);
    ``over_http`` (served over HTTP, loopback too) and ``confined`` (reachable from other
    machines) refuse caller-chosen paths (SPEC §11); ``launch_dir``
    (over stdio: the folder the agent started ``memo mcp`` in) is the ``cwd`` of a call that
    gives none (SPEC §2.6: inside a repository, reads cover its project). The server stays up:
    hybrid pushes go out in the background."""
    runtime = settings if isinstance(settings, Runtime) else Runtime(settings, long_running=True)
    runtime.stay_up()
    tool = Tool.from_function(_tool_function(PromptTool(runtime, confined, launch_dir, over_http)), name="prompt",
                              description=TOOL_DESCRIPTION, structured_output=False)
    tool.parameters["additionalProperties"] = False  # an unknown field is refused: the schema says so
    metadata = tool.fn_metadata
    tool.fn_metadata = _OwnValidation(**{**{name: getattr(metadata, name) for name in type(metadata).model_fields},
                                         "output_schema": OUTPUT_SCHEMA})
    return MCPServer(name="memo_analytics", version=_version(), instructions=INSTRUCTIONS, log_level="WARNING",
                     tools=[tool])


def _version() -> str:
    """The installed package's version (the server reports it to every client)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memo-analytics")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"




def own_origin_only(port: int, host: str = "127.0.0.1"):
    """The SDK's Host/Origin checks for an endpoint on loopback ``host:port``: the bound
    address or a loopback name with this port as ``Host`` (421 otherwise) and, when a browser
    sends one, this endpoint's own ``Origin`` (403 otherwise) — a page on another local port
    is another origin."""
    from mcp.server.transport_security import TransportSecuritySettings

    authorities = sorted({host_port(name, port) for name in ("127.0.0.1", "localhost", "::1", host)})
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=authorities,
                                     allowed_origins=[f"http://{authority}" for authority in authorities])


def serve(settings: Settings | Runtime, http: bool = False, host: str = "127.0.0.1", port: int = 3125) -> None:
    """Run the server over stdio (default) or streamable HTTP at ``http://host:port/mcp``.

    Raises
    ------
    MemoError
        A non-loopback ``host``: this server has no token check yet, so it only listens on
        this machine.
    """
    if http and not is_loopback(host):
        raise MemoError(f"Invalid host: {host} is not a loopback address; the MCP server listens on 127.0.0.1 only")
    # over stdio the agent starts the server in its working folder (Claude Code, Codex: the
    # repository); over HTTP the server's folder says nothing about a caller's
    server = build_server(settings, launch_dir=None if http else shell_cwd(), over_http=http)
    if http:
        from ..domain.hosts import connection_cap, raise_open_files_limit

        cap = connection_cap(raise_open_files_limit())  # one file handle per connection
        app = _CrossSiteGate(server.streamable_http_app(host=host, transport_security=own_origin_only(port, host),
                                                        max_sessions=MAX_MCP_SESSIONS))
        authority = f"[{host}]" if ":" in host else host
        sys.stderr.write(f"memo mcp: streamable HTTP at http://{authority}:{port}/mcp — Ctrl-C to stop\n")
        sys.stderr.flush()
        capped_server(app, host, port, cap).run()
    else:
        server.run("stdio")


#: MCP sessions one endpoint keeps open at once (each about 40 KB until its 30-minute idle
#: timeout; the SDK's default, 10,000, let a script grow the server by 400 MB).
MAX_MCP_SESSIONS = 1000

#: Connections the event loop accepts in one go (uvicorn's default, 2048, took every file
#: handle in one pass of a flood before a single one could be closed).
ACCEPT_BACKLOG = 128


def capped_server(app: Any, host: str, port: int, cap: int) -> Any:
    """The uvicorn server of ``app`` at ``host:port`` holding at most ``cap`` connections
    (:func:`capped_protocol`), accepting :data:`ACCEPT_BACKLOG` at a time."""
    import uvicorn

    # proxy_headers off: uvicorn took X-Forwarded-For from loopback as the client's address, and each
    # guess of the token came from an address of its own choosing (found by a breaker)
    return uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", http=capped_protocol(cap),
                                         backlog=ACCEPT_BACKLOG, proxy_headers=False))


#: How long a request may take to arrive whole — its header and its body — before the
#: connection is closed (s), as the status port's ``IDLE_CONNECTION_SECONDS``.
REQUEST_READ_SECONDS = 60.0


def capped_protocol(cap: int) -> type:
    """uvicorn's HTTP/1.1 protocol holding at most ``cap`` connections
    (:func:`~memo_analytics.domain.hosts.connection_cap`): one beyond is closed as it arrives,
    and one that sends nothing is closed after the keep-alive timeout (uvicorn starts that
    timer only after a first answer) — a flood of idle connections took every file handle and
    stopped the server. A request must arrive whole within :data:`REQUEST_READ_SECONDS`: a
    connection that sent half a header stayed open for ever (uvicorn cancels the keep-alive
    timer on the first byte), and 8,300 of them held every place of the cap."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class CappedH11Protocol(H11Protocol):
        read_deadline = None

        def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
            super().connection_made(transport)
            if len(self.connections) > cap:
                transport.close()
                return
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)
            self._arm_read_deadline()

        def _arm_read_deadline(self) -> None:
            self._disarm_read_deadline()
            self.read_deadline = self.loop.call_later(REQUEST_READ_SECONDS, self._read_too_long)

        def _disarm_read_deadline(self) -> None:
            if self.read_deadline is not None:
                self.read_deadline.cancel()
                self.read_deadline = None

        def _read_too_long(self) -> None:
            self.read_deadline = None
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
                self.transport.close()  # half a request: never answered, its place given back

        def _follow_request(self) -> None:
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                if self.read_deadline is None:
                    self._arm_read_deadline()
            else:  # the request is in whole (a long answer, a stream, may follow): no deadline
                self._disarm_read_deadline()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow_request()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._disarm_read_deadline()
                self._follow_request()  # the next request: in time as well

        def connection_lost(self, exc) -> None:  # type: ignore[no-untyped-def]
            self._disarm_read_deadline()
            super().connection_lost(exc)

    return CappedH11Protocol


def serve_http_in_thread(settings: Settings | Runtime, host: str, port: int, token: str | None = None):
    """Serve the tool over streamable HTTP at ``http://host:port/mcp`` in a daemon thread
    (``memo serve`` runs it beside the status API). Off loopback a token is required and
    every request must carry ``Authorization: Bearer <token>``. Returns the uvicorn server
    (``should_exit = True`` stops it)."""
    from mcp.server.transport_security import TransportSecuritySettings

    loopback = is_loopback(host)
    if not loopback and not token:
        raise MemoError(f"Invalid token: the MCP endpoint on {host} (not loopback) requires one")
    security = own_origin_only(port, host) if loopback else \
        TransportSecuritySettings(enable_dns_rebinding_protection=False)  # off loopback the token guards it
    app = build_server(settings, confined=not loopback, over_http=True).streamable_http_app(host=host, max_sessions=MAX_MCP_SESSIONS,
                                                                                   transport_security=security)
    if token:
        app = _TokenGate(app, token)
    # outermost: a page's cross-site request is refused before its (missing) token is read — read
    # first, twenty of them locked the person's right token out of every port (found by a security tester);
    # on loopback so is a Host of another name (a DNS-rebinding page's requests are "same-origin" and carry
    # tokens it guesses: the SDK's own Host check came after the token's count — a security tester)
    app = _CrossSiteGate(app, {authority.lower() for authority in security.allowed_hosts} if loopback else None)
    from ..domain.hosts import connection_cap, raise_open_files_limit

    # beside the status server, in one process: half the file handles each
    cap = connection_cap(raise_open_files_limit()) // 2
    server = capped_server(app, host, port, cap)
    thread = threading.Thread(target=server.run, name="memo-mcp-http", daemon=True)
    thread.start()
    # listening before the caller says it is: `memo serve` announces (and opens its own port)
    # only once the endpoint answers
    deadline = time.monotonic() + STARTUP_SECONDS
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        raise MemoError(f"Invalid mcpPort: the MCP endpoint on {host}:{port} did not start; choose another "
                        "with --mcp-port, or 0 to serve no MCP endpoint")
    return server


#: Seconds ``serve_http_in_thread`` waits for the endpoint to listen.
STARTUP_SECONDS = 30


class _CrossSiteGate:
    """ASGI wrapper: a request a browser marks ``Sec-Fetch-Site: cross-site`` or ``same-site``
    (a page of another origin) gets 403, as on the status port — with or without an ``Origin``
    header, which the SDK's own check needs; and so does one whose ``Origin`` is not the address
    it was sent to (``http(s)://<Host>``), bound off loopback too, where the SDK's check is off
    (a team daemon's endpoint took any Origin with the token: found by a security tester)."""

    def __init__(self, app, hosts: set[str] | None = None) -> None:
        self.app, self.hosts = app, hosts  # hosts: the Host names it answers to (loopback), None: any

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            from ..domain.hosts import marked_cross_site

            headers = dict(scope.get("headers") or [])
            site = headers.get(b"sec-fetch-site", b"")
            origin = headers.get(b"origin")
            host = headers.get(b"host", b"").decode("latin-1").strip().lower()
            if self.hosts is not None and host not in self.hosts:
                await send({"type": "http.response.start", "status": 421,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error": "Misdirected request: this endpoint '
                                                                  b'answers to its own loopback address only"}'})
                return
            foreign = origin is not None and origin.decode("latin-1").strip().lower() not in (
                f"http://{host}", f"https://{host}")
            if marked_cross_site(site.decode("latin-1")) or foreign:
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error": "Forbidden: cross-site request"}'})
                return
        await self.app(scope, receive, send)


class _TokenGate:
    """ASGI wrapper: HTTP requests without the bearer token get 401; an address that gave
    :data:`~memo_analytics.domain.hosts.WRONG_TOKEN_LIMIT` wrong ones within a minute gets 429
    (a request of no token is not counted)."""

    def __init__(self, app, token: str) -> None:
        from ..domain.hosts import WRONG_TOKENS

        self.app, self.token = app, token.encode()
        self.wrong_tokens = WRONG_TOKENS  # the process's, with memo serve's routes: per address, past a limit 429

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            import hmac
            import time

            from ..domain.hosts import wrong_token

            client = scope.get("client")
            address = str(client[0]) if client else ""
            wait = self.wrong_tokens.wait(address, time.monotonic())
            if wait is not None:  # unread, the right token too: a guess learns nothing
                await send({"type": "http.response.start", "status": 429,
                            "headers": [(b"content-type", b"application/json"), (b"retry-after", str(wait).encode())]})
                await send({"type": "http.response.body", "body": json.dumps(
                    {"error": f"Too many requests: too many wrong tokens from this address; try again in {wait} s"}
                ).encode()})
                return
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"")
            if not (given.lower().startswith(b"bearer ") and hmac.compare_digest(given[7:].strip(), self.token)):
                if given.strip():  # a request of no token guesses nothing: not counted
                    wrong_token(self.wrong_tokens, address)
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json")]})
                await send({"type": "http.response.body", "body": b'{"error": "Unauthorized"}'})
                return
        await self.app(scope, receive, send)

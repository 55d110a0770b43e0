"""``memo serve``: one Tornado server (Panel's) for the status API and the dashboard
(SPEC §3.3–§3.4), on ``127.0.0.1:3124`` by default (config ``ports.status``)."""

from __future__ import annotations

import secrets
from typing import Any

from tornado.ioloop import PeriodicCallback

from ..domain.hosts import check_bind, connection_cap, host_port, is_loopback, raise_open_files_limit
from ..runtime import Runtime
from .http import (
    DASHBOARD_SCRIPT_PATH,
    DASHBOARD_SCRIPT_ROUTE,
    MAX_REQUEST_BYTES,
    BrowserBoundary,
    GuardedApplication,
    api_patterns,
    install_log_redaction,
    quiet_closed_tabs,
)

#: How often ``memo serve`` looks whether the config file changed (milliseconds).
CONFIG_CHECK_MS = 2000
#: How long a connection may stay idle, or a request body take to arrive, before the server
#: closes it (s): idle connections cost a file handle each (Tornado's default keeps them an hour).
IDLE_CONNECTION_SECONDS = 60
#: Request headers the dashboard's session never carries (the session token embeds the rest).
SESSION_HIDDEN_HEADERS = ("Authorization", "Proxy-Authorization", "X-Memo-Token", "Cookie")


def build_server(runtime: Runtime, host: str = "127.0.0.1", port: int | None = None, token: str | None = None,
                 start: bool = False) -> Any:
    """The Panel/Bokeh ``Server`` with the API routes mounted beside the dashboard at ``/``.

    Every request first passes :class:`~memo_analytics.interfaces.http.BrowserBoundary`
    (Host 421, Origin 403, JSON writes 415), bodies over ``MAX_REQUEST_BYTES`` are refused
    before they are read, and tokens are masked in every log line.

    Raises
    ------
    InvalidFieldError
        ``Invalid token: …`` when binding a non-loopback address without a token.
    """
    import panel as pn

    from ..reports.render import templates_dir

    from ..dashboards.app import create_app

    check_bind(host, token)
    cap = connection_cap(raise_open_files_limit()) // 2  # the other half: the MCP endpoint beside it
    store = runtime.store()
    port = runtime.settings.ports.status if port is None else port
    # bokeh's websocket allow-list cannot parse an IPv6 literal: bound to ::1 the dashboard is
    # reached as localhost (BrowserBoundary still checks every Host, IPv6 ones included)
    names = {name for name in ("localhost", "127.0.0.1", host) if ":" not in name}
    origins = [host_port(name, port) for name in names] + ["*"] if not is_loopback(host) \
        else sorted(host_port(name, port) for name in names)
    install_log_redaction(token)
    quiet_closed_tabs()
    # the page's own script: says a lost server and loads the page again once it answers
    pn.config.js_files = {**pn.config.js_files, "memo_dashboard": DASHBOARD_SCRIPT_PATH}
    server = pn.serve(
        {"/": lambda: create_app(store)}, port=port, address=host, websocket_origin=origins, show=False,
        # verbose=False: `memo serve` says where it listens itself (Panel's line went to stdout)
        start=start, title="memo", verbose=False,
        extra_patterns=[*api_patterns(runtime, token, confined=not is_loopback(host)), DASHBOARD_SCRIPT_ROUTE],
        # the sign-in cookie is signed with the token and a secret of this run: a copy of it (cookies go
        # to every port of the host, another local server reads them) dies with the server, and with
        # /logout (BrowserBoundary.screen_cookies); another `memo serve` of the same token takes none
        basic_auth=token if token else None, cookie_secret=f"{token}:{secrets.token_hex(16)}" if token else None,
        threaded=False,
        # the page's session token carries the request's headers and cookies, readable by any script
        # in it (found by an attacker: the Authorization header and the HttpOnly sign-in cookies were
        # there): none of them, the dashboard reads neither
        exclude_headers=list(SESSION_HIDDEN_HEADERS), include_cookies=[],
        # our sign-in page: Panel's loads its logo from a CDN (a request out of loopback on every visit)
        login_template=str(templates_dir() / "dashboard_login.html.j2") if token else None,
        logout_template=str(templates_dir() / "dashboard_logout.html.j2") if token else None,
        http_server_kwargs={"max_body_size": MAX_REQUEST_BYTES, "idle_connection_timeout": IDLE_CONNECTION_SECONDS,
                            "body_timeout": IDLE_CONNECTION_SECONDS},
    )
    http_server = server._http  # bokeh's HTTPServer: every route goes through its request callback
    http_server.request_callback = GuardedApplication(http_server.request_callback,
                                                     BrowserBoundary(host, server.port, token))
    _cap_connections(http_server, cap)
    # a changed config file reaches the dashboard too (its digest thresholds, rates): checked
    # every couple of seconds, one stat each time
    server.io_loop.add_callback(lambda: PeriodicCallback(runtime.refresh, CONFIG_CHECK_MS).start())
    # hybrid: what a `memo session edit` on this machine queued is pushed as the server's own writes are
    server.io_loop.add_callback(lambda: PeriodicCallback(runtime.push_queued_elsewhere, CONFIG_CHECK_MS).start())
    return server


#: Of a server's connections, the share one address may hold at once (at least
#: :data:`MIN_PER_ADDRESS`): one host on the network held every place of a team daemon with idle
#: connections, no token needed, and nobody else got in (found by an attacker).
PER_ADDRESS_SHARE = 8
MIN_PER_ADDRESS = 16


def _cap_connections(http_server: Any, cap: int, per_address: int | None = None) -> None:
    """Close a connection that arrives while ``cap`` are open (:func:`connection_cap`), or while
    its address holds ``per_address`` (default: ``cap // PER_ADDRESS_SHARE``, at least
    :data:`MIN_PER_ADDRESS`). Counted through Tornado's public ``HTTPServer.handle_stream`` (a
    connection comes) and ``on_close`` (its HTTP serving ends: also when a websocket takes it
    over); it has no limit of its own."""
    accept, closed = http_server.handle_stream, http_server.on_close
    open_now = [0]
    each = per_address if per_address is not None else max(MIN_PER_ADDRESS, cap // PER_ADDRESS_SHARE)
    by_address: dict[str, int] = {}
    of_stream: dict[int, str] = {}

    def handle_stream(stream: Any, address: Any) -> None:
        where = str(address[0]) if isinstance(address, tuple) and address else str(address)
        # a proxy on this machine (the README's TLS proxy) brings every laptop from loopback: one address
        # for all, whose share locked the whole team out (found by a breaker); loopback is the cap's alone
        shared = not is_loopback(where)
        if open_now[0] >= cap or (shared and by_address.get(where, 0) >= each):
            stream.close()
            return
        open_now[0] += 1
        by_address[where] = by_address.get(where, 0) + 1
        of_stream[id(stream)] = where
        try:
            accept(stream, address)
        except BaseException:
            release(stream)
            raise

    def release(stream: Any) -> None:
        open_now[0] = max(0, open_now[0] - 1)
        where = of_stream.pop(id(stream), None)
        if where is not None:
            left = by_address.get(where, 1) - 1
            if left > 0:
                by_address[where] = left
            else:
                by_address.pop(where, None)

    def on_close(server_conn: Any) -> None:
        release(getattr(server_conn, "stream", None))
        closed(server_conn)

    http_server.handle_stream, http_server.on_close = handle_stream, on_close

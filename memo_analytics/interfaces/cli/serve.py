"""``memo serve``: the status API and the Panel dashboard on one port (SPEC §3.3)."""

from __future__ import annotations

import os
import signal
import socket
from typing import Optional

import typer

from ...domain.errors import InvalidFieldError
from ...domain.hosts import check_bind
from ...runtime import server as server_launcher
from .common import app, err, state


def _check_free(host: str, port: int, field: str, hint: str) -> None:
    """Refuse a port this process cannot bind, before the web framework loads (seconds)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        # as the servers bind (tornado, uvicorn): a port whose old connections linger in
        # TIME_WAIT is free, one with a listener is not
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            raise InvalidFieldError(field, f"{host}:{port} cannot be used ({exc.strerror or exc}); {hint}") from None


@app.command("serve")
def serve(
    port: Optional[int] = typer.Option(None, "--port", min=1, max=65535,
                                       help="Port (default: config ports.status, 3124)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; anything but loopback needs --token."),
    token: Optional[str] = typer.Option(None, "--token", help="Token the API and dashboard require "
                                        "(default: MEMO_TOKEN, which other users of the machine cannot "
                                        "read in the process list as they can an option)."),
    mcp_port: Optional[int] = typer.Option(None, "--mcp-port", min=0, max=65535,
                                           help="Port of the MCP tool over streamable HTTP (default: config "
                                                "ports.mcp, else the status port + 1; 0 = off)."),
) -> None:
    """Serve the status API (/api/…, sync included), the operator dashboard (/) and the MCP
    tool over streamable HTTP until interrupted."""
    host = host.strip().strip("[]")  # an IPv6 address binds without its URL brackets
    if token:
        err.print("warning: --token is in the process list, where every user of this machine can read it; "
                  "give it as MEMO_TOKEN instead")
    token = token or os.environ.get("MEMO_TOKEN") or None
    check_bind(host, token)  # argument errors first: the web framework takes seconds to load
    wanted = state.settings.ports.status if port is None else port
    mcp_port = state.settings.ports.mcp if mcp_port is None else mcp_port
    mcp_port = wanted + 1 if mcp_port is None else mcp_port
    _check_free(host, wanted, "port", "choose another with --port")
    _check_not_itself(state.settings, host, wanted)
    if mcp_port:
        _check_free(host, mcp_port, "mcpPort", "choose another with --mcp-port, or 0 to serve no MCP endpoint")
    state.runtime.stay_up()  # hybrid pushes go out in the background
    state.store  # a remote-mode machine keeps no vault: said before the framework loads

    build_server = server_launcher("status")
    serve_http_in_thread = server_launcher("mcp-beside") if mcp_port else None

    if mcp_port:  # listening first: once the status port takes connections, both answer
        serve_http_in_thread(state.runtime, host, mcp_port, token)
    try:
        server = build_server(state.runtime, host=host, port=port, token=token)
    except OSError as exc:
        raise InvalidFieldError("port", f"{host}:{wanted} cannot be used ({exc.strerror or exc}); "
                                        "choose another with --port") from None
    mcp_line = f"; MCP at http://{host}:{mcp_port}/mcp" if mcp_port else ""
    # SIGTERM (a service manager, `kill`) stops it as Ctrl-C does, from before the ready line on
    # (whoever reads that line may stop the server at once). Through the event loop's own signal
    # handling: a signal taken by another thread (polars' and jemalloc's run beside it) wakes the
    # loop through its self-pipe, where a plain handler waited for the loop's next event
    stopped_by: list[str] = []
    loop = server.io_loop.asyncio_loop

    def stop(name: str) -> None:
        stopped_by.append(name)
        loop.stop()

    for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")):
        loop.add_signal_handler(sig, stop, name)
    try:
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL is bracketed
        err.print(f"memo serve: http://{shown}:{server.port}/ (API under /api/: GET /api/health lists it){mcp_line} "
                  "— Ctrl-C to stop")
        server.start()
        server.io_loop.start()
    except KeyboardInterrupt:
        stopped_by.append("Ctrl-C")
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
            # stopping already: a second signal while it winds down exited 143 (130) after the stop line
            signal.signal(sig, signal.SIG_IGN)
    err.print(f"memo serve: stopped ({stopped_by[0] if stopped_by else 'Ctrl-C'})")


def _check_not_itself(settings, host: str, port: int) -> None:
    """Refuse a hybrid push to the server being started: a team daemon that shares a laptop's
    config pushed every record it took to itself, for ever (a daemon keeps a config of its own)."""
    from urllib.parse import urlsplit

    from ...domain.hosts import is_loopback

    url = settings.hybrid.remote_url if settings.mode == "hybrid" else None
    if not url:
        return
    parts = urlsplit(url)
    try:
        target = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return
    name = (parts.hostname or "").strip("[]")
    every = is_loopback(host) or host in ("0.0.0.0", "::")  # the addresses this server answers on loopback
    if target == port and (name == host or (is_loopback(name) and every)):
        raise InvalidFieldError("hybrid.remoteUrl", f"{url} is this server itself: it would push every record to "
                                                    "itself; give the team daemon a config of its own "
                                                    "(MEMO_CONFIG=FILE memo serve), mode local")


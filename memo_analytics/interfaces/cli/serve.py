"""``memo serve``: the status API and the Panel dashboard on one port (SPEC §3.3)."""

from __future__ import annotations

import os
from typing import Optional

import typer

from .common import app, err, state


@app.command("serve")
def serve(
    port: Optional[int] = typer.Option(None, "--port", min=1, max=65535,
                                       help="Port (default: config ports.status, 3124)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; anything but loopback needs --token."),
    token: Optional[str] = typer.Option(None, "--token", help="Token the API and dashboard require "
                                        "(default: MEMO_TOKEN)."),
) -> None:
    """Serve the status API (/api/…) and the operator dashboard (/) until interrupted."""
    from ..server import build_server

    server = build_server(state.store, host=host, port=port, token=token or os.environ.get("MEMO_TOKEN") or None)
    err.print(f"memo serve: http://{host}:{server.port}/ (API under /api/) — Ctrl-C to stop")
    server.start()
    server.io_loop.start()

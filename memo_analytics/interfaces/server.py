"""``memo serve``: one Tornado server (Panel's) for the status API and the dashboard
(SPEC §3.3–§3.4), on ``127.0.0.1:3124`` by default (config ``ports.status``)."""

from __future__ import annotations

from typing import Any

from ..domain.errors import InvalidFieldError
from ..services.store import VaultStore
from .http import api_patterns, is_loopback


def build_server(store: VaultStore, host: str = "127.0.0.1", port: int | None = None, token: str | None = None,
                 start: bool = False) -> Any:
    """The Panel/Bokeh ``Server`` with the API routes mounted beside the dashboard at ``/``.

    Raises
    ------
    InvalidFieldError
        ``Invalid token: …`` when binding a non-loopback address without a token.
    """
    import panel as pn

    from ..dashboards.app import create_app

    if not is_loopback(host) and not token:
        raise InvalidFieldError("token", f"binding {host} (not loopback) requires --token or MEMO_TOKEN")
    port = store.settings.ports.status if port is None else port
    origins = [f"{name}:{port}" for name in {host, "localhost", "127.0.0.1"}] + ["*"] if not is_loopback(host) \
        else [f"{name}:{port}" for name in ("localhost", "127.0.0.1", host)]
    return pn.serve(
        {"/": lambda: create_app(store)}, port=port, address=host, websocket_origin=origins, show=False,
        start=start, title="memo", extra_patterns=api_patterns(store, token),
        basic_auth=token if token else None, cookie_secret=token if token else None, threaded=False,
    )

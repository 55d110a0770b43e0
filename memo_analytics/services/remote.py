"""Remote mode (SPEC §2.7): every tool call goes to a memo daemon (``remote.url``,
``POST /api/actions/{action}``); the local vault is not read or written at all.

The caller's ``cwd`` means nothing on the daemon's machine, so it is resolved here first:
the repository folder names the project and its HEAD gives branch and commit, unless the
call names them; then ``cwd`` is dropped.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from typing import Any

from ..config import Settings
from ..domain.errors import MemoError
from ..vault.redact import mask_url
from .store import git_head, project_from_cwd, repository_root


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


def _localize(arguments: dict[str, Any]) -> dict[str, Any]:
    arguments = dict(arguments)
    cwd = arguments.pop("cwd", None)
    if cwd:
        arguments.setdefault("projectId", project_from_cwd(cwd))
        branch, sha = git_head(repository_root(cwd))
        if arguments.get("action") in ("record", "session_start"):
            arguments.setdefault("branch", branch)
            arguments.setdefault("gitSha", sha)
    return {k: v for k, v in arguments.items() if v is not None}


def call(settings: Settings, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run one tool call on the remote daemon and return its JSON answer.

    Raises
    ------
    MemoError
        The daemon refused the call (its one-line message), or could not be reached.
    """
    if not settings.remote.url:
        raise MemoError("Invalid remote.url: mode is remote but no daemon URL is configured")
    arguments = _localize(arguments)
    action = arguments.pop("action")
    if "vaultRoot" in arguments:
        raise MemoError("Invalid vaultRoot: not available in remote mode (the daemon owns its vault)")
    headers = {"Content-Type": "application/json", "User-Agent": "memo-remote"}
    base, basic = without_userinfo(settings.remote.url)
    if basic:
        headers["Authorization"] = basic
    if settings.remote.token:
        headers["Authorization"] = f"Bearer {settings.remote.token}"
    request = urllib.request.Request(f"{base.rstrip('/')}/api/actions/{action}",
                                     data=json.dumps(arguments).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.remote.timeout_seconds) as response:  # noqa: S310
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read().decode("utf-8")).get("error") or f"HTTP {exc.code}"
        except ValueError:
            message = f"HTTP {exc.code}"
        raise MemoError(message) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = " ".join(str(getattr(exc, "reason", exc) or type(exc).__name__).split())[:200]
        raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} unreachable: {reason}") from None
    except ValueError:
        raise MemoError(f"Remote daemon {mask_url(settings.remote.url)} answered something that is not JSON") from None

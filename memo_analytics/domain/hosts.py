"""Which addresses a server may bind without a token (SPEC §3.3): pure, so every entry point
can refuse a bad ``--host`` before it loads a web framework."""

from __future__ import annotations

import ipaddress

from .errors import InvalidFieldError


def is_loopback(host: str) -> bool:
    """Whether ``host`` binds the loopback interface only (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


#: A token that guards a server reachable from the network: at least this long, of at least
#: this many distinct characters ("a" and "aaaaaaaaaaaaaaaa" were taken).
MIN_TOKEN_CHARS = 16
MIN_TOKEN_DISTINCT = 8


def check_bind(host: str, token: str | None) -> None:
    """Refuse binding a non-loopback address without a token, or with one short or plain
    enough to guess (:data:`MIN_TOKEN_CHARS`, :data:`MIN_TOKEN_DISTINCT`).

    Raises
    ------
    InvalidFieldError
        ``Invalid token: binding 0.0.0.0 (not loopback) requires --token or MEMO_TOKEN``.
    """
    if is_loopback(host):
        return
    if not token:
        raise InvalidFieldError("token", f"binding {host} (not loopback) requires --token or MEMO_TOKEN")
    if len(token) < MIN_TOKEN_CHARS or len(set(token)) < MIN_TOKEN_DISTINCT or _repeats(token):
        raise InvalidFieldError("token", f"binding {host} (not loopback), the token is the network's only lock: "
                                         f"give one of at least {MIN_TOKEN_CHARS} characters, not a word nor one "
                                         "said again (e.g. python3 -c 'import secrets; "
                                         "print(secrets.token_urlsafe(24))')")


def _repeats(token: str) -> bool:
    """Whether ``token`` is one shorter piece said again (``abcdefghabcdefgh``): a word twice."""
    return any(len(token) % size == 0 and token == token[:size] * (len(token) // size)
               for size in range(1, len(token) // 2 + 1))


def marked_cross_site(sec_fetch_site: str | None) -> bool:
    """Whether a browser marked the request as made by a page of another origin
    (``Sec-Fetch-Site: cross-site`` or ``same-site``: another site, or another port of this
    one): every HTTP surface refuses it (SPEC §11; the dashboard lets a top-level navigation
    through). Pure."""
    return (sec_fetch_site or "").strip().lower() in ("cross-site", "same-site")


def host_port(host: str, port: int) -> str:
    """``host:port`` as it appears in a ``Host`` header or URL (``[::1]:3124`` for IPv6)."""
    bare = host.strip("[]")
    return f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"


#: Open files a server keeps for itself beyond its connections (the index, the vault's files,
#: the MCP endpoint's connections, the dashboard's sessions).
FILES_RESERVE = 512


def connection_cap(open_files: int) -> int:
    """How many HTTP connections a server holds at once with ``open_files`` as its limit of open
    files (-1 unknown): a connection beyond it is closed when it arrives, so a flood of idle
    connections never takes the last file handles (with none left, the server could not even
    read the code that reports the error, and stopped)."""
    if open_files <= 0:
        return 1024
    return max(32, min(open_files - FILES_RESERVE, 16_384))


def raise_open_files_limit() -> int:
    """Raise this process's limit of open files to the most it may have (the soft limit is
    often 1024, the hard one far more): a server holds one per connection. The new limit."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, ValueError, OSError):
        return -1

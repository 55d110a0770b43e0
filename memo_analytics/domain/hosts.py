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
                                         f"said again ({_A_TOKEN})")
    guesses = _guesses_log10(token)
    if guesses < MIN_TOKEN_GUESSES_LOG10:
        # words, dates, keyboard runs and digits after them ("Password1234567!", "Summer2026Summer!") passed the
        # length rule (found by an attacker)
        raise InvalidFieldError("token", f"binding {host} (not loopback), the token is the network's only lock and "
                                         f"this one is guessable in about 10^{guesses:.0f} tries (words, dates, "
                                         f"runs): give a random one ({_A_TOKEN})")


#: How to make a token a network bind takes.
_A_TOKEN = "e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(24))'"
#: The fewest guesses (log10, as ``zxcvbn`` estimates them: words, names, dates, keyboard runs and
#: their common twists) a network-bound server's token must take: 10^14 tries at the server's
#: 20 wrong tokens a minute per address is beyond any address's reach.
MIN_TOKEN_GUESSES_LOG10 = 14.0


def _guesses_log10(token: str) -> float:
    """``zxcvbn``'s estimate of the guesses ``token`` takes (log10): of its first 72 characters, the
    most ``zxcvbn`` reads (a longer token raised ValueError: found by a breaker), each one beyond
    counted as a digit of guesses more."""
    from zxcvbn import zxcvbn

    return float(zxcvbn(token[:72])["guesses_log10"]) + max(0, len(token) - 72)


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


#: Wrong tokens one address may give within :data:`WRONG_TOKEN_WINDOW_S` seconds before every
#: request of it that needs the token is refused (429) until that many seconds pass without one:
#: a team daemon took a thousand guesses a second from one address, and logged none.
WRONG_TOKEN_LIMIT = 20
WRONG_TOKEN_WINDOW_S = 60.0


class WrongTokens:
    """Wrong tokens per client address (a sign-in, an API or MCP call): once an address gave
    :data:`WRONG_TOKEN_LIMIT` within :data:`WRONG_TOKEN_WINDOW_S` seconds, :meth:`wait` answers
    how many seconds it must wait — every request of it needing the token is refused unread, the
    right token too, so a guess learns nothing — until the window since its last wrong token
    has passed. Refused requests count no further. :meth:`failed` answers the line to log when
    it starts refusing an address (once per block), else None. Pure: ``now`` is given (seconds,
    monotonic)."""

    def __init__(self, limit: int = WRONG_TOKEN_LIMIT, window: float = WRONG_TOKEN_WINDOW_S) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, list[float]] = {}

    def wait(self, address: str, now: float) -> int | None:
        """Whole seconds ``address`` must wait before its token is read again, or None."""
        times = self._failures.get(address)
        if not times or len(times) < self.limit:
            return None
        left = times[-1] + self.window - now
        if left <= 0:
            del self._failures[address]
            return None
        return max(1, int(left + 0.999))

    def failed(self, address: str, now: float) -> str | None:
        """Count a wrong token of ``address``; the line to log when this one starts its block."""
        times = [t for t in self._failures.get(address, []) if now - t < self.window]
        times.append(now)
        self._failures[address] = times[-self.limit:]
        if len(self._failures) > 10_000:  # a spray of addresses: the oldest are forgotten, not kept forever
            for key in sorted(self._failures, key=lambda k: self._failures[k][-1])[:5_000]:
                del self._failures[key]
        if len(times) == self.limit:
            return (f"{self.limit} wrong tokens from {address} within {int(self.window)} s: its requests that "
                    f"need the token are refused for {int(self.window)} s")
        return None


#: The process's count of wrong tokens: ``memo serve``'s routes and its MCP endpoint share it (each
#: counting apart gave an address twice the guesses: found by a breaker).
WRONG_TOKENS = WrongTokens()


def wrong_token(count: WrongTokens, address: str) -> None:
    """Count a wrong token given from ``address`` in ``count`` (a server's :class:`WrongTokens`);
    the server's log (``memo_analytics.serve``) says when an address starts being refused."""
    import logging
    import time

    said = count.failed(address, time.monotonic())
    if said:
        logging.getLogger("memo_analytics.serve").warning(said)

"""The composition root: one :class:`Runtime` per entry point (a CLI run, ``memo mcp``,
``memo serve``, ``memo operator watch``), built from the settings.

It alone decides what the mode means (SPEC §2.7):

- **local**: the vault on this machine; nothing is sent anywhere (vault-git, when enabled,
  still runs after a session ends);
- **hybrid**: the local vault, and every write queued for the team daemon's push
  (``hybrid.remoteUrl``), sent ``hybrid.debounceMs`` after the last write in a long-running
  process, or right after a session ends;
- **remote**: no vault here; interfaces proxy calls to ``remote.url``
  (:attr:`Runtime.remote`) and :meth:`Runtime.store` refuses.

The stores it opens emit ``"write"`` and ``"session_end"`` events
(:meth:`~memo_analytics.services.store.VaultStore.subscribe`); the runtime subscribes the sync
to them. No module below this one knows about modes.

A long-running process calls :meth:`Runtime.refresh` (every request, every pass, or a timer):
when the config file changed, the settings are read again and every open store takes them
(thresholds, rates, the mode's wiring) without a restart. A config file that no longer
validates is logged and the previous settings stay.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any

from .config import Settings, config_path
from .domain.errors import MemoError
from .services.store import VaultStore

log = logging.getLogger("memo_analytics.runtime")

__all__ = ["RemoteModeError", "Runtime", "server"]

#: The entry-point group of the servers a command line can start (``pyproject.toml``): the
#: interfaces stay independent of each other; ``memo serve`` and ``memo mcp`` find them here.
SERVERS_GROUP = "memo_analytics.servers"


class RemoteModeError(MemoError):
    """A local vault was asked for on a machine in remote mode (SPEC §2.7: it keeps none)."""

    def __init__(self, url: str | None, command: str | None = None) -> None:
        self.url = url
        hint = REMOTE_HINTS.get((command or "").split(" ")[0], "run it on the daemon's host")
        super().__init__(f"remote mode: this machine keeps no vault, and {f'memo {command}' if command else 'this command'}"
                         f" needs one; {hint}. From here `memo prompt record/list/search/get/show`, "
                         "`memo session start/end/show/edit`, `memo activity` and `memo digest` ask the team daemon at "
                         f"{url or '(remote.url)'}; agents reach it through `memo mcp`, people through its dashboard")

    def for_command(self, command: str | None) -> "RemoteModeError":
        """The same refusal naming ``command`` (the CLI's) and what to do instead."""
        return RemoteModeError(self.url, command)


#: What a person in remote mode does instead of a command that needs a vault here, by command
_HYBRID = ('to bring this machine\'s transcripts into the team\'s vault, set mode = "hybrid" (a vault here whose '
           'records are pushed to the daemon, [hybrid] remoteUrl); mode = "local" keeps them on this machine only')
_ON_DAEMON = ("timesheets, invoices and reports come from the daemon's vault: open its dashboard (Activity & "
              "Invoicing tab) or run the command on the daemon's host")
REMOTE_HINTS = {"import": _HYBRID, "watch": _HYBRID, "report": _ON_DAEMON, "invoice": _ON_DAEMON}


#: Seconds a changed config file must stay unchanged before it is read: an editor that writes
#: in place leaves a half-written file for a moment, and one that saves by rename none at all.
SETTLE_SECONDS = 0.5


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


class Runtime:
    """The settings of one entry point, the stores it opened, and the mode's wiring.

    Parameters
    ----------
    settings : Settings
        The settings the entry point built (its one-line errors are the entry point's).
    overrides : dict, optional
        The fields given explicitly (``vault_root`` from ``--vault-root``, …), kept when the
        config file is read again.
    long_running : bool
        A process that stays up (``memo serve``, ``memo mcp``): hybrid pushes go out in the
        background after ``hybrid.debounceMs``; otherwise only when a session ends or on
        ``memo sync push``.
    settle_seconds : float
        How long a changed config file must stay unchanged before :meth:`refresh` reads it.
    """

    def __init__(self, settings: Settings, overrides: dict[str, Any] | None = None,
                 long_running: bool = False, settle_seconds: float = SETTLE_SECONDS) -> None:
        self._settings = settings
        self._settle = settle_seconds
        self._pending: tuple[tuple[int, int, int] | None, float] | None = None
        self._absent_noted = False
        self._overrides = dict(overrides or {})
        self.long_running = long_running
        self._stores: dict[str, VaultStore] = {}
        self._guard = threading.RLock()
        self._local = threading.local()
        self._config = config_path()
        self._stamp = _file_stamp(self._config)

    @classmethod
    def around(cls, store: VaultStore, long_running: bool = False) -> "Runtime":
        """A runtime whose default vault is the already open ``store`` (wired like its own)."""
        runtime = cls(store.settings, {"vault_root": store.settings.vault_root}, long_running)
        runtime._stores[str(store.settings.vault_root)] = store
        runtime._wire(store)
        return runtime

    def stay_up(self) -> None:
        """This process stays up (it became a server): hybrid pushes go out in the background
        from now on, for the stores already open too."""
        with self._guard:
            self.long_running = True
            for store in self._stores.values():
                self._wire(store)

    # ------------------------------------------------------------ what the mode is

    @property
    def settings(self) -> Settings:
        """The current settings (after the last :meth:`refresh`)."""
        return self._settings

    @property
    def mode(self) -> str:
        """``local``, ``hybrid`` or ``remote``."""
        return self._settings.mode

    @property
    def remote(self) -> bool:
        """Calls go to the daemon at ``remote.url``; this machine keeps no vault."""
        return self._settings.mode == "remote"

    # ------------------------------------------------------------ stores

    def store(self, vault_root: str | Path | None = None) -> VaultStore:
        """The store of ``vault_root`` (default: the settings' vault), opened once and wired
        to the sync the mode asks for.

        Raises
        ------
        RemoteModeError
            In remote mode (no vault here).
        InvalidFieldError
            ``vault_root`` is not a usable folder (``Invalid vaultRoot: …``).
        """
        with self._guard:
            if self.remote:
                raise RemoteModeError(self._settings.remote.url)
            settings = self._settings_for(vault_root)
            key = str(settings.vault_root)
            store = self._stores.get(key)
            if store is None:
                store = VaultStore(settings)
                self._wire(store)
                self._stores[key] = store
            return store

    def thread_store(self, vault_root: str | Path | None = None) -> VaultStore:
        """The calling thread's own store on the vault of :meth:`store` (SQLite connections
        and the re-entrant vault lock are per thread; the listeners are shared); a new one
        once the vault's store took new settings. Servers answer each request with this: its
        index is checked against the files again when that was last done a while ago
        (:meth:`VaultStore.recheck`).

        Raises
        ------
        RemoteModeError, InvalidFieldError
            As :meth:`store`.
        IndexDamagedError, IndexReadOnlyError, VaultBusyError, DiskFullError
            As :attr:`VaultStore.conn`.
        """
        base = self.store(vault_root)
        mine = self._local.__dict__.setdefault("stores", {})
        store = mine.get(id(base))
        if store is None or store.settings is not base.settings:
            if store is not None:
                store.close()
            store = base.sibling()
            mine[id(base)] = store
        store.recheck()  # what changed in the files behind the index's back since (at most every 2 s)
        return store

    def _settings_for(self, vault_root: str | Path | None) -> Settings:
        if vault_root is None:
            return self._settings
        root = Settings(vault_root=vault_root).vault_root  # the same path rules as the config's
        if root == self._settings.vault_root:
            return self._settings
        return self._settings.model_copy(update={"vault_root": root})

    def _wire(self, store: VaultStore) -> None:
        """Subscribe the sync of the current mode to ``store``'s events, replacing what was
        there in one step (the per-thread siblings of the store share its listeners)."""
        settings = store.settings
        hybrid = settings.mode == "hybrid" and bool(settings.hybrid.remote_url)
        if not (hybrid or settings.vault_git.enabled):
            store.set_listeners({})  # local: nothing to wire (and the sync's HTTP client is not even loaded)
            return
        from .services import sync

        store.set_listeners({"write": [sync.hybrid_listener(self.long_running)] if hybrid else [],
                             "session_end": [sync.session_end_listener]})
        if hybrid and self.long_running:
            sync.resume_pushes(store)

    def push_queued_elsewhere(self) -> bool:
        """Hybrid mode, a long-running process: push what another process of this machine
        queued (:func:`~memo_analytics.services.sync.push_queued_elsewhere`; one ``stat``).
        Called every couple of seconds by ``memo serve``."""
        settings = self._settings
        if not (self.long_running and settings.mode == "hybrid" and settings.hybrid.remote_url):
            return False
        from .services import sync

        return sync.push_queued_elsewhere(self.store())

    # ------------------------------------------------------------ a changed config file

    def settling(self) -> float | None:
        """Seconds until a config file change seen by :meth:`refresh` may be read (it must stay
        unchanged that long first); None when no change waits. A polling caller asks again then,
        not a whole interval later."""
        pending = self._pending
        if pending is None:
            return None
        return max(self._settle - (time.monotonic() - pending[1]), 0.0)

    def refresh(self) -> bool:
        """Read the config file again once it changed and then stayed unchanged for
        ``settle_seconds`` (one ``stat`` otherwise); every open store takes the new settings
        and its wiring follows the mode. Returns whether the settings changed.

        A file that does not validate is logged (one line) and the previous settings stay; so
        do they while the file is missing or empty after it existed (an editor saving it):
        nothing falls back to the defaults (another vault) while the process runs.
        """
        stamp = _file_stamp(self._config)
        if stamp == self._stamp:
            self._pending = None
            return False
        with self._guard:
            if stamp is None or stamp[1] == 0:  # gone or empty: mid-save, or removed by hand
                if self._stamp is not None and not self._absent_noted:
                    self._absent_noted = True
                    log.warning("memo: %s is %s; the settings read before stay until it holds settings again "
                                "(restart to use the defaults)", self._config, "gone" if stamp is None else "empty")
                return False
            now = time.monotonic()
            if self._pending is None or self._pending[0] != stamp:
                self._pending = (stamp, now)
            if now - self._pending[1] < self._settle:
                return False  # still changing, perhaps: read it once it settled
            self._stamp, self._pending, self._absent_noted = stamp, None, False
            try:
                fresh = type(self._settings)(**self._overrides)
            except Exception as exc:  # noqa: BLE001 - a bad edit must not stop a running server
                log.warning("memo: %s changed but is not valid (%s); the previous settings stay",
                            self._config, _first_problem(exc))
                return False
            fresh = self._keep_structure(fresh)
            self._settings = fresh
            for store in list(self._stores.values()):
                same = fresh.vault_root == store.settings.vault_root
                store.reconfigure(fresh if same else fresh.model_copy(update={"vault_root": store.settings.vault_root}))
                self._wire(store)
            log.info("memo: read %s again", self._config)
            return True

    def _keep_structure(self, fresh: Settings) -> Settings:
        """What a running process does not change under its clients: its vault, and whether it
        keeps one at all (a switch to or from ``remote``). Those apply at the next start; the
        process says so once. Everything else (thresholds, rates, hybrid push, vault-git) applies."""
        kept: dict[str, Any] = {}
        if fresh.vault_root != self._settings.vault_root:
            kept["vault_root"] = self._settings.vault_root
        if (fresh.mode == "remote") != (self._settings.mode == "remote"):
            kept["mode"] = self._settings.mode
        if kept:
            log.warning("memo: %s changes %s; that applies when this process starts again (the rest applies now)",
                        self._config, " and ".join("vaultRoot" if k == "vault_root" else k for k in kept))
            fresh = fresh.model_copy(update=kept)
        return fresh

    def close(self) -> None:
        """Close every store this runtime opened (their SQLite connections)."""
        with self._guard:
            for store in self._stores.values():
                store.close()
            self._stores.clear()

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"Runtime(mode={self.mode!r}, vault={str(self._settings.vault_root)!r}, stores={len(self._stores)})"


def _first_problem(exc: Exception) -> str:
    """One line for a refused config file: the key and the reason (``operator.stalledMinutes:
    Input should be greater than or equal to 1``)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            first = errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ())) or "settings"
            return f"{where}: {first.get('msg', '')}".replace("\n", " ")
        except Exception:  # noqa: BLE001 - fall back to the text
            pass
    text = " ".join(str(exc).split())
    return text[:200] or type(exc).__name__


def server(name: str) -> Any:
    """The server launcher registered as ``name`` in the ``memo_analytics.servers``
    entry-point group (``mcp``: run the MCP tool over stdio or HTTP; ``mcp-beside``: the MCP
    endpoint in a thread beside another server; ``status``: the status API and dashboard).

    Raises
    ------
    MemoError
        ``name`` is not registered (the package is not installed: ``pip install -e .``).
    """
    from importlib.metadata import entry_points

    found = list(entry_points(group=SERVERS_GROUP, name=name))
    if not found:
        raise MemoError(f"Invalid server: {name!r} is not installed (entry point group {SERVERS_GROUP}; "
                        "install the package: pip install -e .)")
    return found[0].load()


#: An event larger than the capture takes is still read to its end (the agent's write would fail
#: on a closed pipe), up to this many MiB.
_DRAIN_CHUNKS = 1024


def run_hook(agent: str, payload: str | None, event_name: str | None, vault_root: str | None) -> list[str]:
    """``memo hook AGENT``: record an agent's hook event (a prompt, a session's start or end) and
    every spooled one, through :func:`~memo_analytics.services.capture.capture`; never raises.

    Parameters
    ----------
    agent : str
        ``claude-code``, ``codex``, ``gemini``, ``cursor`` or ``copilot``.
    payload : str | None
        The event's JSON given as an argument (Codex's legacy ``notify``); None: read from stdin
        (at most ``MAX_EVENT_BYTES``).
    event_name : str | None
        The event's name, for agents whose payload leaves it out.
    vault_root : str | None
        ``--vault-root`` (or ``MEMO_VAULT``); None: the configured vault.

    Returns
    -------
    list[str]
        The outcome lines (also in the spool's ``hooks.log``). A config and vault that
        cannot be used and leave nowhere safe to spool are said on stderr (never stdout: an
        agent puts a hook's stdout into the model's context). Stdout gets one thing only: the
        hand-off a session start of Claude Code, Codex or Gemini CLI claimed
        (:func:`~memo_analytics.services.capture.hook_answer`, SPEC §2.5).
    """
    import os
    import sys

    from .config import default_vault_root
    from .services.capture import MAX_EVENT_BYTES, capture, fallback_vault, hook_answer, remote_sender

    if payload is not None:
        raw = payload.encode("utf-8", "surrogateescape")
    else:
        try:
            raw = b"" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.buffer.read(MAX_EVENT_BYTES + 1)
            if len(raw) > MAX_EVENT_BYTES:  # read to its end (not kept): the agent's write must not fail
                for _ in range(_DRAIN_CHUNKS):
                    if not sys.stdin.buffer.read(1 << 20):
                        break
        except (OSError, ValueError):
            raw = b""
    overrides = {"vault_root": vault_root} if vault_root is not None else {}
    try:
        settings: Settings | None = Settings(**overrides)
        root = settings.vault_root
    except Exception:  # noqa: BLE001 — a broken config file: spool beside the vault it would name
        settings = None
        root = fallback_vault(vault_root or os.environ.get("MEMO_VAULT") or str(default_vault_root()))
        if root is None:  # nowhere safe to keep it
            sys.stderr.write(f"memo hook {agent}: the config or vault is unusable (run `memo doctor`); event not kept\n")
            return [f"{agent}: the config or vault is unusable; event not kept"]
    opened: list[Runtime] = []

    def open_store() -> VaultStore:
        if settings is None:
            raise RuntimeError("the config file cannot be read (run `memo doctor`)")
        opened.append(Runtime(settings, overrides))
        return opened[-1].store()

    import logging

    # the hook prints nothing but the hand-off: a sync push that failed ("memo sync push failed …; 3
    # records wait in the outbox") went to stderr, which an agent shows; `memo sync status` says it
    logger = logging.getLogger("memo_analytics")
    quiet = not os.environ.get("MEMO_HOOK_DEBUG")
    kept = logger.propagate
    silencer = logging.NullHandler()
    if quiet:
        logger.addHandler(silencer)
        logger.propagate = False
    try:
        send = remote_sender(settings) if settings is not None and settings.mode == "remote" else None
        batons: list[dict] = []
        # the vault the config would name is unknown only when nothing else names one (a vault given
        # by --vault-root or MEMO_VAULT is the event's whatever the config says)
        unconfigured = settings is None and vault_root is None and not os.environ.get("MEMO_VAULT")
        lines = capture(open_store, root, agent, raw, event_name, send=send, batons=batons,
                        unconfigured=unconfigured)
        answer = hook_answer(batons)
        if answer is not None:  # the hand-off the session start claimed, into the agent's context
            sys.stdout.write(answer + "\n")
            sys.stdout.flush()
        return lines
    except BaseException as exc:  # noqa: BLE001 — capture never raises; if it ever does, the agent still goes on
        return [f"{agent}: internal error: {type(exc).__name__}"]
    finally:
        for runtime in opened:
            runtime.close()
        if quiet:
            logger.removeHandler(silencer)
            logger.propagate = kept

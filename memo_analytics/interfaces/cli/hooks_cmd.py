"""``memo hooks install|uninstall|status [AGENT]``: put memo's managed entry into an agent's
own settings file (user level by default, ``--project`` for the repository's), take it out
again, or say what is installed where (:mod:`memo_analytics.services.agent_hooks`)."""

from __future__ import annotations

import shutil

from pathlib import Path
from typing import Any, Optional

import typer
from rich.table import Table

from ...domain.errors import InvalidFieldError, MemoError
from ...services import agent_hooks
from ...services.store import repository_root
from .common import _emit, _safe, app, err, on_path_command, out, state

hooks_app = typer.Typer(help="Capture every turn automatically: memo's entries in the agents' hook settings.",
                        no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")

_AGENT_HELP = "claude-code, codex, gemini, cursor or copilot."
_PROJECT_HELP = "The repository's own settings (of the current folder's repository) instead of your user settings."

#: What an agent needs besides its settings file before a new hook runs (user level, repository level).
_NOTES = {
    "codex": ("Codex runs a new hook only after you trust it: open /hooks in Codex once (a Codex older than its "
              "hooks' release also needs [features] hooks = true in ~/.codex/config.toml). A Codex that sends no "
              "SessionEnd (before that event) leaves its sessions to end at their last work, as the digest "
              "proposes.",) * 2,
    "cursor": ("", "Cursor runs a repository's hooks only in a trusted workspace."),
    "gemini": ("", "Gemini CLI asks before it runs a repository's changed hooks."),
}


def _root(project: bool) -> Path | None:
    if not project:
        return None
    root = repository_root(Path.cwd())
    if root is None:
        raise InvalidFieldError("project", f"{Path.cwd()} is not inside a git repository; leave out --project for "
                                           "your user settings")
    return root


def _vault(lenient: bool = False) -> Path:
    """The configured vault. ``lenient`` (status): with a config file that cannot be read, the
    vault it would name (``--vault-root``, ``MEMO_VAULT``, else the default), after a warning.

    Raises
    ------
    MemoError
        The config file cannot be read (and not ``lenient``).
    """
    if state.config_error is None:
        return state.settings.vault_root
    if not lenient:
        raise state.config_error
    from ...config import default_vault_root

    err.print(_safe(f"warning: {state.config_error}; the hooks still spool every event until it is repaired "
                    "(memo doctor)"))
    return Path(state.vault_root or default_vault_root()).expanduser()


@hooks_app.command("install")
def hooks_install(agent: Optional[str] = typer.Argument(None, metavar="[AGENT]", help=_AGENT_HELP + " Without it: "
                                                        "every one of them whose folder is in your home (~/.claude, "
                                                        "~/.codex, ~/.gemini, ~/.cursor, ~/.copilot)."),
                  project: bool = typer.Option(False, "--project", help=_PROJECT_HELP)) -> None:
    """Add memo's hook entries (prompt, session start, session end) to the agent's settings file;
    every other key, value, comment and the formatting stay as they were (a backup is kept in the vault)."""
    if agent is None:
        _install_every_agent_here(project)
        return
    _install_one(agent, project)


def _install_every_agent_here(project: bool) -> None:
    """``memo hooks install`` naming no agent (as the README's first lines and ``memo demo`` say it):
    every agent whose folder is in the home directory — it had ended "Missing argument 'AGENT'"
    (found by a developer's first hour). One already set up is said; none found, or none left to
    do, exits non-zero."""
    if project:
        raise MemoError(f"Invalid agent: name the agent whose repository settings to write: memo hooks install "
                        f"AGENT --project ({', '.join(agent_hooks.AGENT_HOOKS)})")
    home = Path.home()
    found = agent_hooks.agents_at_home(home)
    if not found:
        raise MemoError(f"Invalid agent: no agent's folder in {home} (~/.claude, ~/.codex, ~/.gemini, ~/.cursor, "
                        f"~/.copilot): name one: memo hooks install AGENT ({', '.join(agent_hooks.AGENT_HOOKS)})")
    done, in_place, failed = 0, [], []
    collected: list[dict[str, Any]] | None = [] if state.json else None  # one JSON document for them all
    for name in found:
        try:
            _install_one(name, project, collected)
            done += 1
        except MemoError as exc:  # already there, a file memo cannot parse: said, the others go on
            err.print(_safe(f"note: {exc}"))
            (in_place if str(exc).endswith(": nothing to do") else failed).append(name)
    if collected is not None:
        _emit({"installed": collected, "inPlace": in_place, "failed": failed}, lambda r: None)
    if failed:  # an agent left without memo's hooks is no success (found by an attacker: exit 0)
        raise MemoError(f"memo's hooks could not be installed for {', '.join(failed)} (the notes above say why)"
                        + (f"; in place for {', '.join(in_place)}" if in_place else ""))
    if not done:
        raise MemoError(f"nothing to do: memo's hooks are in place for {', '.join(in_place)}")


def _install_one(agent: str, project: bool, collect: list[dict[str, Any]] | None = None) -> None:
    """Install ``agent``'s hooks and say so — under ``--json`` into ``collect`` when given (the
    caller prints one document for several agents: it printed one per agent, no JSON as a whole)."""
    chosen = Path(state.vault_root).expanduser().resolve() if state.vault_root else None
    result = agent_hooks.install(agent, _vault(), _root(project), hook_vault=chosen)
    if collect is not None:
        collect.append(result)
        return

    def human(r: dict[str, Any]) -> None:
        updated = list(r.get("updated") or [])
        new = [event for event in r["added"] if event not in updated]
        parts = ([", ".join(new)] if new else []) + ([f"{', '.join(updated)} replaced (they ran another vault's or "
                                                      "another memo's command)"] if updated else [])
        out.print(_safe(f"memo's hooks for {r['agent']} are in {r['path']}: {'; '.join(parts)}"
                        + (f" (already there: {', '.join(r['already'])})" if r["already"] else "")))
        if r["backup"]:
            out.print(_safe(f"the file as it was: {r['backup']}"))
        note = _NOTES.get(agent, ("", ""))[r["level"] == "project"]
        if note:
            out.print(note)
        if r["level"] == "project" and chosen is not None:  # hooks always exit 0: nothing would say where it went
            err.print(_safe(f"note: this repository's hooks record into each person's own vault (MEMO_VAULT in the "
                            f"agent's environment, else the config's vaultRoot), not into {chosen}: the file is "
                            f"shared, so no path of this machine is written; for this vault install without "
                            f"--project (your own settings)"))
        found = shutil.which("memo")
        if r["level"] == "project" and (found is None or agent_hooks.in_a_virtual_environment(found)):
            # hooks always exit 0: nothing said it (found by a new user: the README's .venv was on the shell's PATH
            # alone, and the agent ran `memo: not found` — "Now just work" all the same)
            where = ("this PATH has none" if found is None else
                     f"this PATH has it only from a virtual environment ({found}), which an agent started "
                     "elsewhere does not have")
            err.print(_safe(f"note: this repository's hooks run `memo` from the agent's PATH (the file is shared, "
                            f"so no path of this machine is written), and {where}: nothing would be captured; put "
                            f"it on every PATH: {on_path_command()}"))
        out.print("Now just work: each prompt goes to the team daemon (its dashboard lists them; `memo doctor` "
                  "checks it takes this machine's token)." if state.settings.mode == "remote" else
                  "Now just work: each prompt lands in the vault (`memo prompt list`).")

    _emit(result, human)




@hooks_app.command("uninstall")
def hooks_uninstall(agent: str = typer.Argument(..., metavar="AGENT", help=_AGENT_HELP),
                    project: bool = typer.Option(False, "--project", help=_PROJECT_HELP)) -> None:
    """Remove exactly the entries `memo hooks install` added (the file comes back as it was when
    nobody changed it since)."""
    result = agent_hooks.uninstall(agent, _vault(), _root(project))

    def human(r: dict[str, Any]) -> None:
        how = "the file as it was restored" if r["restored"] else "the file memo created removed" if r["deleted"] \
            else "the rest of the file as it is"
        out.print(_safe(f"memo's hooks for {r['agent']} removed from {r['path']} ({', '.join(r['removed'])}); {how}"))

    _emit(result, human)


@hooks_app.command("status")
def hooks_status(agent: Optional[str] = typer.Argument(None, metavar="[AGENT]", help=_AGENT_HELP + " Default: all.")) -> None:
    """Which agents run memo's hooks, in which settings file, for which events; and how many
    hook events wait in the vault's spool."""
    agents = [agent_hooks.spec_for(agent).agent] if agent else list(agent_hooks.AGENT_HOOKS)
    result = agent_hooks.status(agents, _vault(lenient=True), repository_root(Path.cwd()))

    def human(r: dict[str, Any]) -> None:
        table = Table(title="memo's agent hooks")
        for column in ("agent", "level", "settings file", "installed", "missing"):
            table.add_column(column, overflow="fold")
        for item in r["items"]:
            installed = ", ".join(item["installed"]) or ("—" if item["exists"] else "no file")
            if item.get("coveredByUserLevel"):
                installed = "— (the user level's run here)"
            elif not item.get("agentHere", True):
                installed = "— (the agent is not on this machine)"
            table.add_row(item["agent"], item["level"], _safe(item["path"]), _safe(item["error"] or installed),
                          ", ".join(item["missing"]) or "—")
        out.print(table)
        for item in r["items"]:
            for program in item["notFound"]:
                # a repository's hooks always run `memo` from the PATH: installing them again changes nothing
                mend = on_path_command() if item["level"] == "project" else f"memo hooks install {item['agent']} again"
                err.print(_safe(f"warning: {item['agent']}'s hooks in {item['path']} run {program}, which is not "
                                f"there: the agent's hook fails and nothing is captured; {mend}"))
        if r["spooled"]:
            out.print(f"{r['spooled']} hook events wait in the spool; the next hook run records them, or now: "
                      "memo hooks replay")

    _emit(result, human)


@hooks_app.command("replay")
def hooks_replay() -> None:
    """Record the hook events waiting in the vault's spool now, oldest first, as the next hook
    run would (memo operator watch does it on every pass). Exits 1 when nothing waited or an
    event still cannot be recorded (it stays in the spool, and the line says why)."""
    from ...services.capture import drain_spool, remote_sender, spooled

    root = state.settings.vault_root  # in remote mode: where this machine spools for the daemon
    waiting = len(spooled(root))
    remote = state.settings.mode == "remote"
    lines = drain_spool(root, None if remote else state.store, "hooks replay",
                        remote_sender(state.settings) if remote else None) if waiting else []
    left = len(spooled(root))
    result = {"waiting": waiting, "recorded": waiting - left, "left": left, "lines": lines}

    def human(r: dict[str, Any]) -> None:
        for line in r["lines"]:
            out.print(_safe(line), soft_wrap=True)
        out.print("nothing waits in the spool" if not r["waiting"] else
                  f"{r['waiting'] - r['left']} of {r['waiting']} spooled hook events applied"
                  + (f"; {r['left']} still wait (see the line above)" if r["left"] else ""))

    _emit(result, human)
    if not waiting or left:
        raise typer.Exit(1)

"""``memo hooks install|uninstall|status AGENT``: the managed entries that make an agent run
``memo hook AGENT`` on its prompt and session events.

Each agent keeps its hooks in its own settings file (:data:`AGENT_HOOKS`: where, under which
event names, in which shape). Install adds one managed entry per event and changes nothing
else: the file is edited in place at the positions of its values (``json-source-map``), so
every other key, value, comment and the file's indentation stay as they were; the file as it
was is kept in ``<vault>/.memo/hooks/backups/`` and what install did in
``<vault>/.memo/hooks/installed.json``. Uninstall removes exactly the managed entries (and the
containers install created, when they are empty again); when nobody touched the file since,
the backup's bytes come back as they were. A file that cannot be parsed — or whose ``hooks``
is not what the agent expects — is never touched: the error says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..domain.errors import InvalidFieldError, MemoError
from ..vault.io import atomic_write_bytes, read_json_state, write_json_state


@dataclass(frozen=True)
class AgentHooks:
    """Where and how one agent keeps its hooks.

    ``grouped``: ``hooks.<Event>`` is a list of matcher groups ``{hooks: [handler]}`` (Claude
    Code, Codex, Gemini CLI); else a flat list of handlers (Cursor, Copilot CLI, whose files
    carry ``version: 1``). ``timeout`` is in the agent's unit (Gemini: milliseconds).
    ``pass_event``: the payload does not name its event, so the command does (Copilot).
    """

    agent: str
    user_file: str  # relative to the home folder
    project_file: str  # relative to the repository root
    events: tuple[str, ...]
    grouped: bool
    command_key: str = "command"
    timeout_key: str = "timeout"
    timeout: int = 10
    version: bool = False
    pass_event: bool = False
    extra: tuple[tuple[str, Any], ...] = ()


AGENT_HOOKS: dict[str, AgentHooks] = {
    "claude-code": AgentHooks("claude-code", ".claude/settings.json", ".claude/settings.json",
                              ("SessionStart", "UserPromptSubmit", "Notification", "Stop", "SessionEnd"),
                              grouped=True),
    "codex": AgentHooks("codex", ".codex/hooks.json", ".codex/hooks.json",
                        ("SessionStart", "UserPromptSubmit", "SessionEnd"), grouped=True),
    "gemini": AgentHooks("gemini", ".gemini/settings.json", ".gemini/settings.json",
                         ("SessionStart", "BeforeAgent", "Notification", "AfterAgent", "SessionEnd"), grouped=True,
                         timeout=10_000,
                         extra=(("name", "memo"),)),
    "cursor": AgentHooks("cursor", ".cursor/hooks.json", ".cursor/hooks.json",
                         ("sessionStart", "beforeSubmitPrompt", "sessionEnd"), grouped=False, version=True),
    "copilot": AgentHooks("copilot", ".copilot/hooks/memo.json", ".github/hooks/memo.json",
                          ("sessionStart", "userPromptSubmitted", "sessionEnd"), grouped=False, command_key="bash",
                          timeout_key="timeoutSec", version=True, pass_event=True, extra=(("type", "command"),)),
}


def agents_at_home(home: Path | None = None) -> list[str]:
    """The agents whose own folder is in the home directory (``~/.claude``, ``~/.codex``, …: each
    agent makes it on its first run), in :data:`AGENT_HOOKS` order."""
    home = home or Path.home()
    return [name for name, spec in AGENT_HOOKS.items() if (home / spec.user_file.split("/")[0]).is_dir()]


def spec_for(agent: str) -> AgentHooks:
    """The :class:`AgentHooks` of ``agent``.

    Raises
    ------
    InvalidFieldError
        Not one of :data:`AGENT_HOOKS`.
    """
    if agent not in AGENT_HOOKS:
        raise InvalidFieldError("agent", f"{agent!r} is not one of {', '.join(AGENT_HOOKS)}")
    return AGENT_HOOKS[agent]


def settings_path(spec: AgentHooks, project_root: Path | None, home: Path | None = None) -> Path:
    """The settings file of ``spec``: the repository's (``project_root``) or the user's."""
    if project_root is not None:
        return project_root / spec.project_file
    return (home or Path.home()) / spec.user_file


def hook_command(spec: AgentHooks, event: str, memo: str | None = None, vault_root: Path | None = None) -> str:
    """The shell command of the managed entry: ``<memo> hook AGENT`` (``--event`` for an agent
    whose payload does not name its event, ``--vault-root`` when a vault was chosen). ``memo``
    by default is this install's own program by its full path (an agent's PATH may lack the
    virtual environment it sits in: a bare ``memo`` there captured nothing), else the one on
    the PATH."""
    memo = memo or this_memo() or shutil.which("memo") or "memo"
    args = [memo, "hook", spec.agent]
    if spec.pass_event:
        args += ["--event", event]
    if vault_root is not None:
        args += ["--vault-root", str(vault_root)]
    return shlex.join(args)


def this_memo() -> str | None:
    """The full path of the ``memo`` program installed beside the Python running now (a
    virtual environment's ``bin``), when there is one."""
    program = Path(sys.executable).with_name("memo")
    return str(program) if program.is_file() and os.access(program, os.X_OK) else None


def is_managed(command: object, agent: str) -> bool:
    """Whether a hook command is one of memo's managed entries for ``agent``."""
    return isinstance(command, str) and re.search(
        rf"(^|[/\s'\"])memo(\.exe)?['\"]?\s+hook\s+{re.escape(agent)}(\s|$)", command) is not None


def managed_entry(spec: AgentHooks, command: str) -> dict[str, Any]:
    handler = {**dict(spec.extra), spec.command_key: command, spec.timeout_key: spec.timeout}
    if spec.agent != "copilot" and spec.grouped:
        handler = {"type": "command", **handler}
    return {"hooks": [handler]} if spec.grouped else handler


# ---------------------------------------------------------------- editing JSON text in place


def _blank_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside strings replaced by spaces (newlines
    kept): the same length, so every position stays where it was."""
    out, i, n = list(text), 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
            continue
        i += 1
    return "".join(out)


class SettingsText:
    """A JSON (or JSON-with-comments) settings file edited in place.

    Raises
    ------
    InvalidFieldError
        ``Invalid settings: PATH …`` — not JSON, or its top level is not an object.
    """

    def __init__(self, text: str, path: Path) -> None:
        from json_source_map import calculate

        self.text, self.path = text, path
        plain = _blank_comments(text)
        try:
            self.data = json.loads(plain) if plain.strip() else {}
            self.map = calculate(plain) if plain.strip() else {}
        except (ValueError, Exception) as exc:  # json_source_map raises its own error type
            # said where, and what memo reads: comments are fine, a trailing comma is not
            trailing = re.search(r",\s*[}\]]", plain)
            hint = (f"; a comma before a closing bracket at line {plain.count(chr(10), 0, trailing.start()) + 1} "
                    "(comments are read, trailing commas are not)") if trailing else ""
            raise InvalidFieldError("settings", f"{path} is not valid JSON ({str(exc).splitlines()[0]}{hint}); "
                                                "memo left it as it is") from None
        if not isinstance(self.data, dict) or (not plain.strip() and text.strip()):
            raise InvalidFieldError("settings", f"{path} does not hold a JSON object; memo left it as it is")
        self.unit = self._indent_unit()

    def _indent_unit(self) -> str:
        for line in self.text.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                return line[: len(line) - len(stripped)]
        return "  "

    def value(self, pointer: str) -> Any:
        node: Any = self.data
        for part in [p for p in pointer.split("/")[1:]]:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def _line_indent(self, position: int) -> str:
        start = self.text.rfind("\n", 0, position) + 1
        line = self.text[start:position]
        return line[: len(line) - len(line.lstrip(" \t"))]

    def _dump(self, value: Any, indent: str) -> str:
        text = json.dumps(value, indent=len(self.unit.expandtabs(4)) or 2, ensure_ascii=False)
        if "\t" in self.unit:
            text = re.sub(r"(?m)^( {4})+", lambda m: "\t" * (len(m.group(0)) // 4), text)
        return text.replace("\n", "\n" + indent)

    def _reload(self, text: str) -> None:
        self.__init__(text, self.path)  # type: ignore[misc]

    def _splice(self, start: int, end: int, piece: str) -> None:
        """Replace ``text[start:end]`` with ``piece``, its line breaks in the file's own style."""
        if "\r\n" in self.text:
            piece = piece.replace("\r\n", "\n").replace("\n", "\r\n")
        self._reload(self.text[:start] + piece + self.text[end:])

    @staticmethod
    def _key(pointer: str, key: str) -> str:
        return f"{pointer}/{key.replace('~', '~0').replace('/', '~1')}"

    def add_member(self, pointer: str, key: str, value: Any) -> None:
        """Add ``"key": value`` as the last member of the object at ``pointer``."""
        obj = self.value(pointer)
        entry = self.map[pointer]
        start, end = entry.value_start.position, entry.value_end.position
        if obj:
            last = self.map[self._key(pointer, list(obj)[-1])]
            indent = self._line_indent(last.key_start.position)
            at = last.value_end.position
            multiline = "\n" in self.text[start:last.key_start.position]
            sep = f",\n{indent}" if multiline else ", "
            piece = f'{sep}{json.dumps(key, ensure_ascii=False)}: {self._dump(value, indent)}'
            self._splice(at, at, piece)
        else:
            outer = self._line_indent(start)
            inner = outer + self.unit
            member = f"{json.dumps(key, ensure_ascii=False)}: {self._dump(value, inner)}"
            if self.text[start + 1:end - 1].strip():  # only comments in it: they stay, after the new member
                self._splice(start + 1, start + 1, f"\n{inner}{member}")
                return
            piece = f'{{\n{inner}{member}\n{outer}}}'
            self._splice(start, end, piece)

    def append_item(self, pointer: str, value: Any) -> None:
        """Add ``value`` as the last item of the array at ``pointer``."""
        items = self.value(pointer)
        entry = self.map[pointer]
        start, end = entry.value_start.position, entry.value_end.position
        if items:
            last = self.map[f"{pointer}/{len(items) - 1}"]
            indent = self._line_indent(last.value_start.position)
            at = last.value_end.position
            multiline = "\n" in self.text[start:last.value_start.position]
            sep = f",\n{indent}" if multiline else ", "
            # on one line with its items, the new item's further lines one step in from that line
            self._splice(at, at, sep + self._dump(value, indent if multiline else self._line_indent(at) + self.unit))
        else:
            outer = self._line_indent(start)
            inner = outer + self.unit
            inside = self.text[start + 1:end - 1]
            if inside.strip():  # only comments in it: they stay, after the new item
                self._splice(start + 1, start + 1, f"\n{inner}{self._dump(value, inner)}")
                return
            piece = f"[\n{inner}{self._dump(value, inner)}\n{outer}]"
            self._splice(start, end, piece)

    def remove(self, pointer: str) -> None:
        """Remove the array item or object member at ``pointer`` with its separator."""
        parent, _, last = pointer.rpartition("/")
        container = self.value(parent)
        entry = self.map[pointer]
        begin = entry.key_start.position if entry.key_start is not None else entry.value_start.position
        finish = entry.value_end.position
        keys = list(range(len(container))) if isinstance(container, list) else list(container)
        index = keys.index(int(last) if isinstance(container, list) else last.replace("~1", "/").replace("~0", "~"))
        if index > 0:  # from the end of the one before it
            before = self.map[parent + "/" + str(keys[index - 1]).replace("~", "~0").replace("/", "~1")]
            begin = before.value_end.position
        elif len(keys) > 1:  # the first of several: up to the start of the next one
            after = self.map[parent + "/" + str(keys[1]).replace("~", "~0").replace("/", "~1")]
            finish = after.key_start.position if after.key_start is not None else after.value_start.position
        else:  # the only one: the container becomes empty
            outer = self.map[parent]
            begin, finish = outer.value_start.position + 1, outer.value_end.position - 1
        self._reload(self.text[:begin] + self.text[finish:])


# ---------------------------------------------------------------- install, uninstall, status


def _state_path(vault_root: Path) -> Path:
    return Path(vault_root) / ".memo" / "hooks" / "installed.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hooks_object(settings: SettingsText, spec: AgentHooks) -> dict[str, Any]:
    hooks = settings.data.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidFieldError("settings", f"{settings.path}: \"hooks\" is not an object; memo left the file as it is")
    for event in spec.events:
        if event in hooks and not isinstance(hooks[event], list):
            raise InvalidFieldError("settings", f"{settings.path}: \"hooks.{event}\" is not a list; memo left the "
                                                "file as it is")
    return hooks


def _managed_pointers(settings: SettingsText, spec: AgentHooks) -> dict[str, list[str]]:
    """Per event, the pointers of memo's managed entries (whole groups, or handlers inside a
    group that holds other handlers too), last first (so they can be removed in order)."""
    found: dict[str, list[str]] = {}
    hooks = _hooks_object(settings, spec)
    for event in spec.events:
        pointers = []
        for i, item in enumerate(hooks.get(event) or []):
            base = f"/hooks/{event}/{i}"
            if spec.grouped and isinstance(item, dict) and isinstance(item.get("hooks"), list):
                mine = [j for j, h in enumerate(item["hooks"])
                        if isinstance(h, dict) and is_managed(h.get(spec.command_key), spec.agent)]
                if mine and len(mine) == len(item["hooks"]):
                    pointers.append(base)
                else:
                    pointers += [f"{base}/hooks/{j}" for j in mine]
            elif isinstance(item, dict) and (is_managed(item.get(spec.command_key), spec.agent)
                                             or is_managed(item.get("command"), spec.agent)):
                pointers.append(base)
        if pointers:
            found[event] = sorted(pointers, key=lambda p: [int(x) if x.isdigit() else x for x in p.split("/")],
                                  reverse=True)
    return found


def _commands_at(settings: SettingsText, spec: AgentHooks, pointer: str) -> list[str]:
    """The hook commands of the managed entry at ``pointer`` (a group's handlers, or one handler)."""
    item = settings.value(pointer)
    handlers = item["hooks"] if isinstance(item, dict) and isinstance(item.get("hooks"), list) else [item]
    return [h.get(spec.command_key) or h.get("command") for h in handlers
            if isinstance(h, dict) and isinstance(h.get(spec.command_key) or h.get("command"), str)]


def _read(path: Path) -> tuple[bytes | None, SettingsText]:
    if path.is_symlink() and not path.exists():
        raise InvalidFieldError("settings", f"{path} is a broken symbolic link; memo left it as it is")
    if path.exists() and not path.is_file():  # a folder, a FIFO, a device (also through a link)
        raise InvalidFieldError("settings", f"{path} is not a regular file; memo left it as it is")
    raw = path.read_bytes() if path.exists() else None
    if raw is not None:
        try:
            text = raw.decode("utf-8-sig" if raw.startswith(b"\xef\xbb\xbf") else "utf-8")
        except UnicodeDecodeError:
            raise InvalidFieldError("settings", f"{path} is not UTF-8 text; memo left it as it is") from None
    else:
        text = ""
    return raw, SettingsText(text, path)


def _replaceable(path: Path, purpose: str) -> None:
    """Refuse to write a settings file whose replacement by rename would go behind its owner's
    back: one made read-only (write-protected on purpose), or one with other hard links (they
    would keep the old text). A link to a file is followed; a missing file is fine.

    Raises
    ------
    InvalidFieldError
        ``settings``: the file is read-only or hard-linked; nothing was written.
    """
    try:
        found = path.resolve().stat()
    except FileNotFoundError:
        return
    if not found.st_mode & stat.S_IWUSR:
        raise InvalidFieldError("settings", f"{path} is read-only; memo left it as it is (make it writable "
                                            f"to {purpose})")
    if found.st_nlink > 1:
        raise InvalidFieldError("settings", f"{path} has {found.st_nlink} hard links, which a new file would "
                                            f"leave as they were; memo left it as it is (to {purpose}, make it "
                                            f"a file of its own or a symbolic link)")


def _write(path: Path, text: str, raw: bytes | None) -> bytes:
    data = text.encode("utf-8")
    if raw is not None and raw.startswith(b"\xef\xbb\xbf"):
        data = b"\xef\xbb\xbf" + data
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path.resolve() if path.is_symlink() else path, data, mode=mode)
    return data


def install(agent: str, vault_root: Path, project_root: Path | None = None, home: Path | None = None,
            memo: str | None = None, hook_vault: Path | None = None) -> dict[str, Any]:
    """Add memo's managed entry for each of the agent's events to its settings file.

    Returns
    -------
    dict
        ``{agent, level, path, added: [events], already: [events], backup}`` (``backup`` None
        when the file did not exist).

    Raises
    ------
    InvalidFieldError
        ``agent`` unknown; the file cannot be parsed or holds ``hooks`` of another shape, or is
        read-only or hard-linked (nothing is written).
    MemoError
        Every event already has memo's entry: nothing to do.
    """
    spec = spec_for(agent)
    path = settings_path(spec, project_root, home)
    raw, settings = _read(path)
    present = _managed_pointers(settings, spec)

    def wanted(event: str) -> str:
        # a repository's settings are shared: no path of this machine in them (teammates run their own memo)
        return hook_command(spec, event, "memo", None) if project_root is not None else \
            hook_command(spec, event, memo, hook_vault)

    # memo's entry of an event that runs another command (the vault or memo moved since): replaced
    stale = [e for e in spec.events if e in present
             and wanted(e) not in {c for p in present[e] for c in _commands_at(settings, spec, p)}]
    for event in stale:
        for pointer in present.pop(event):  # last first: the earlier pointers stay valid
            settings.remove(pointer)
    todo = [e for e in spec.events if e not in present]
    result = {"agent": agent, "level": "project" if project_root else "user", "path": str(path),
              "added": todo, "already": [e for e in spec.events if e in present], "updated": stale, "backup": None}
    if not todo:
        raise MemoError(f"memo's hooks for {agent} are already in {path}: nothing to do")
    _replaceable(path, f"install memo's hooks for {agent}")
    created: list[str] = []
    if not settings.text.strip():  # no file yet (or an empty one): an empty object to add to
        settings = SettingsText("{}\n", path)
    if spec.version and "version" not in settings.data:
        settings.add_member("", "version", 1)
        created.append("/version")
    if "hooks" not in settings.data:
        settings.add_member("", "hooks", {})
        created.append("/hooks")
    for event in todo:
        command = wanted(event)
        if event not in settings.data["hooks"]:
            settings.add_member("/hooks", event, [])
            created.append(f"/hooks/{event}")
        settings.append_item(f"/hooks/{event}", managed_entry(spec, command))
    backup = None
    if raw is not None:
        folder = Path(vault_root) / ".memo" / "hooks" / "backups"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
        backup = folder / f"{agent}-{hashlib.sha1(str(path).encode()).hexdigest()[:8]}-{stamp}-{path.name}"
        atomic_write_bytes(backup, raw, mode=0o600)  # settings may hold API keys: for this user only
    missing_dirs = [str(d) for d in [path.parent, *path.parent.parents] if not d.exists()]
    written = _write(path, settings.text, raw)
    state = read_json_state(_state_path(vault_root)) or {}
    previous = state.get(str(path), {})
    if raw is not None and previous.get("written") != _digest(raw):
        previous = {}  # changed by someone else since memo wrote it: this install starts afresh from it
    state[str(path)] = {"agent": agent, "backup": str(backup) if backup else previous.get("backup"),
                        "createdFile": raw is None or previous.get("createdFile", False),
                        "createdDirs": previous.get("createdDirs") or missing_dirs,
                        "created": sorted(set(previous.get("created", [])) | set(created)),
                        "written": _digest(written), "original": previous.get("original") if previous else
                        (_digest(raw) if raw is not None and not stale else None)}  # a file holding memo's
    # entries of another vault is no state to come back to: uninstall then removes memo's entries
    write_json_state(_state_path(vault_root), state)
    return {**result, "backup": str(backup) if backup else None}


def uninstall(agent: str, vault_root: Path, project_root: Path | None = None, home: Path | None = None) -> dict[str, Any]:
    """Remove memo's managed entries for ``agent`` from its settings file (and what install
    created, when it is empty again). When the file is byte for byte what install wrote, the
    file as it was before comes back from the backup (or is removed, when install created it).

    Returns
    -------
    dict
        ``{agent, level, path, removed: [events], restored: bool, deleted: bool}``.

    Raises
    ------
    InvalidFieldError
        ``agent`` unknown; the file cannot be parsed, or is read-only or hard-linked (nothing
        is written).
    MemoError
        The file holds no managed entry of ``agent``: nothing to do.
    """
    spec = spec_for(agent)
    path = settings_path(spec, project_root, home)
    result = {"agent": agent, "level": "project" if project_root else "user", "path": str(path), "removed": [],
              "restored": False, "deleted": False}
    if not path.exists():
        raise MemoError(f"{path} does not exist: no hooks of memo's to remove")
    raw, settings = _read(path)
    present = _managed_pointers(settings, spec)
    if not present:
        raise MemoError(f"{path} holds none of memo's hooks for {agent}: nothing to do")
    _replaceable(path, f"remove memo's hooks for {agent}")
    state = read_json_state(_state_path(vault_root)) or {}
    record = state.pop(str(path), None) or {}
    result["removed"] = [e for e in spec.events if e in present]
    if record.get("written") == _digest(raw or b""):  # untouched since install: as it was
        backup = Path(record["backup"]) if record.get("backup") else None
        if record.get("createdFile"):
            path.unlink()
            result["deleted"] = True
            _remove_empty(record.get("createdDirs") or [])
        elif backup is not None and backup.is_file() and _digest(backup.read_bytes()) == record.get("original"):
            _write(path, backup.read_bytes().decode("utf-8-sig"), backup.read_bytes())
            result["restored"] = True
    if not (result["restored"] or result["deleted"]):
        for event in spec.events:
            for pointer in present.get(event, []):
                settings.remove(pointer)
        # what install created, when it is empty again; without a record of it (installed from
        # another vault) the containers memo's entries live in, when they are empty now
        created = record.get("created") or ([f"/hooks/{e}" for e in present] + ["/hooks"])
        for pointer in sorted(created, key=len, reverse=True):
            if pointer in settings.map and settings.value(pointer) in ({}, []):
                settings.remove(pointer)
        if "/version" in record.get("created", []) and "hooks" not in settings.data and "version" in settings.data:
            settings.remove("/version")  # memo added it for its hooks, which are gone
        if record.get("createdFile") and settings.data == ({"version": 1} if spec.version else {}):
            path.unlink()
            result["deleted"] = True
            _remove_empty(record.get("createdDirs") or [])
        else:
            _write(path, settings.text, raw)
    write_json_state(_state_path(vault_root), state)
    return result


def _remove_empty(folders: list[str]) -> None:
    """Remove the folders install created for a settings file, deepest first, while empty."""
    for folder in folders:  # recorded deepest first
        try:
            Path(folder).rmdir()
        except OSError:
            return  # not empty (something else lives there now), or gone


def status(agents: list[str], vault_root: Path, project_root: Path | None, home: Path | None = None) -> dict[str, Any]:
    """What is installed where: ``{items: [{agent, level, path, exists, installed: [events],
    missing: [events], error, notFound: [programs], coveredByUserLevel, agentHere}], spooled}`` for the user
    level and, inside a repository, the repository's level (its ``missing`` is empty and
    ``coveredByUserLevel`` true when it has none of memo's hooks and the user level has them all;
    ``agentHere`` false, and nothing missing, for an agent whose folder is not in the home and
    whose settings file is not there: ``memo hooks install`` skips it); ``notFound`` the programs installed entries run that
    are not there (a virtual environment moved or made again: the agent's hook fails, nothing is
    captured); ``spooled`` is how many hook events wait in the vault's spool."""
    from .capture import spooled

    items = []
    for agent in agents:
        spec = spec_for(agent)
        for level, root in (("user", None), ("project", project_root)):
            if level == "project" and root is None:
                continue
            path = settings_path(spec, root, home)
            item = {"agent": agent, "level": level, "path": str(path), "exists": path.exists(), "installed": [],
                    "missing": list(spec.events), "error": None, "notFound": []}
            if path.exists():
                try:
                    settings = _read(path)[1]
                    present = _managed_pointers(settings, spec)
                    item["installed"] = [e for e in spec.events if e in present]
                    item["missing"] = [e for e in spec.events if e not in present]
                    programs = {_program(command) for pointers in present.values() for pointer in pointers
                                for command in _commands_at(settings, spec, pointer)}
                    item["notFound"] = sorted(p for p in programs if p and not _runnable(p))
                    # a bare `memo` this PATH finds only in a virtual environment: an agent started elsewhere
                    # runs `memo: not found` (found by a freelancer: doctor said all was well)
                    item["onlyInAVirtualEnvironment"] = sorted(
                        p for p in programs if p and "/" not in p and p not in item["notFound"]
                        and (found := shutil.which(p)) and in_a_virtual_environment(found))
                except MemoError as exc:
                    item["error"] = str(exc)
            items.append(item)
    _covered_by_the_user_level(items)
    here = set(agents_at_home(home or Path.home()))
    for item in items:  # an agent not on this machine misses nothing: install said it was skipped (a newcomer)
        item["agentHere"] = item["agent"] in here or item["exists"]
        if not item["agentHere"]:
            item["missing"] = []
    return {"items": items, "spooled": len(spooled(vault_root))}


def _covered_by_the_user_level(items: list[dict[str, Any]]) -> None:
    """A repository's level with none of memo's hooks, where the user level has every event and
    runs a program that is there: nothing is missing (the user level's hooks run in every
    repository); ``coveredByUserLevel`` says so. Listing every event as missing there sent a
    newcomer who had run ``memo hooks install`` to install them twice."""
    whole = {i["agent"] for i in items if i["level"] == "user" and not i["missing"] and not i["notFound"]
             and not i["error"]}
    for item in items:
        covered = item["level"] == "project" and item["agent"] in whole and not item["installed"] \
            and not item["error"]
        item["coveredByUserLevel"] = covered
        if covered:
            item["missing"] = []


def in_a_virtual_environment(program: str) -> bool:
    """Whether ``program`` lies in a Python virtual environment's ``bin`` (a ``pyvenv.cfg`` beside
    it): on the PATH of the shell that activated it, not of an agent started elsewhere."""
    return (Path(program).parent.parent / "pyvenv.cfg").is_file()


def _program(command: str) -> str | None:
    """The program a hook command runs (its first word), or None when it cannot be split."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def _runnable(program: str) -> bool:
    """Whether ``program`` (a path, or a name looked up on PATH) is an executable file here."""
    if os.sep in program:
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program) is not None


def hook_vault_override() -> Path | None:
    """The vault a managed entry names: ``MEMO_VAULT`` when set (an agent may not inherit it)."""
    value = os.environ.get("MEMO_VAULT")
    return Path(value).expanduser().resolve() if value else None

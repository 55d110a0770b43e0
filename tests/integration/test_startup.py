"""Fast start (issue 12): the commands an agent hook or a person runs on every prompt load no
analytics, PDF or dashboard library, and the CLI loads only the module of the command it runs.

The import checks start a fresh interpreter: what a process has loaded is what is tested.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memo_analytics.interfaces.cli as cli

#: loaded on first use only: never by the commands of ``QUICK_COMMANDS``
HEAVY = ("polars", "pyarrow", "pandas", "numpy", "duckdb", "weasyprint", "panel", "bokeh", "tornado", "mcp",
         "jinja2", "uvicorn", "starlette", "nbformat",
         # the settings are read without pydantic-settings, which loaded asyncio, argparse and dotenv
         "pydantic_settings", "asyncio", "dotenv")

QUICK_COMMANDS = [
    ["--help"],
    ["prompt", "record", "--body", "make the export faster", "--project", "p1", "--session-id", "s1"],
    ["session", "start", "s2", "--project", "p1"],
    ["session", "end", "s2", "--project", "p1", "--summary", "done"],
    ["serve", "--host", "0.0.0.0"],  # refused before any web framework loads
    ["mcp", "--http", "--host", "0.0.0.0"],
    # an agent's hook (Codex notify: the event as the last argument)
    ["hook", "codex", json.dumps({"type": "agent-turn-complete", "thread-id": "t1", "turn-id": "u1",
                                  "input-messages": ["make the import faster"]})],
]

_PROBE = """
import json, sys
sys.argv = ["memo", *json.loads(sys.argv[1])]
from memo_analytics.interfaces.cli import main
try:
    main()
except SystemExit as exc:
    code = exc.code
else:
    code = 0
sys.stderr.write("\\nPROBE " + json.dumps({"code": code, "loaded": sorted(m for m in sys.modules)}) + "\\n")
"""


def _probe(args: list[str], vault: Path, cwd: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    (vault.parent / "empty.toml").write_text("", encoding="utf-8")  # (a missing one is said by every command)
    env.update(MEMO_VAULT=str(vault), MEMO_CONFIG=str(vault.parent / "empty.toml"), MEMO_TIMEZONE="UTC",
               PYTHONPATH=str(Path(cli.__file__).parents[3]))
    proc = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=60)
    line = [x for x in proc.stderr.splitlines() if x.startswith("PROBE ")][-1]
    return {**json.loads(line[len("PROBE "):]), "stdout": proc.stdout}, proc.stderr


def test_the_quick_commands_load_no_heavy_library(tmp_path):
    cwd = tmp_path / "work"
    cwd.mkdir()
    results = {}
    for args in QUICK_COMMANDS:
        probe, stderr = _probe(args, tmp_path / "vault", cwd)
        heavy = sorted({name.split(".")[0] for name in probe["loaded"]} & set(HEAVY))
        results[" ".join(args[:2])] = (probe["code"], heavy, stderr.splitlines()[0] if probe["code"] else "")
    # the commands did their work (the refusals refused, with the message about the argument)
    assert {name: r[0] for name, r in results.items()} == {
        "--help": 0, "prompt record": 0, "session start": 0, "session end": 0, "serve --host": 1, "mcp --http": 1,
        "hook codex": 0}
    assert "Invalid token" in results["serve --host"][2]
    assert "Invalid host" in results["mcp --http"][2]
    assert (tmp_path / "vault" / "projects" / "p1" / "prompts" / "prompt-s1-t1.md").is_file()
    assert (tmp_path / "vault" / "projects" / "default" / "prompts" / "prompt-codex-t1-t1.md").is_file()
    assert {name: r[1] for name, r in results.items()} == {name: [] for name in results}


def test_a_report_command_still_loads_what_it_needs(tmp_path):
    """The analytics load on first use: ``memo activity`` works and has polars loaded."""
    (tmp_path / "vault" / "projects").mkdir(parents=True)  # a vault of nothing yet (a missing one is refused)
    probe, stderr = _probe(["--json", "activity", "--all"], tmp_path / "vault", tmp_path)
    assert probe["code"] == 0, stderr
    assert "polars" in probe["loaded"]


def test_the_activity_table_loads_neither_duckdb_nor_pyarrow_nor_the_pdf_templates(tmp_path):
    """``memo activity`` on a vault with a billed session (issue 16: ≤ 0.5 s) is computed on
    polars frames alone: without DuckDB (about 40 ms to load), pyarrow and numpy (about 0.1 s),
    and prints its table without the timesheet's template engine."""
    vault = tmp_path / "vault"
    for args in (["session", "start", "s1", "--project", "p1", "--client", "Acme", "--start-time",
                  "2026-03-02T09:00:00Z"],
                 ["session", "end", "s1", "--project", "p1", "--summary", "done", "--until", "2026-03-02T10:30:00Z"],
                 ["session", "start", "s2", "--project", "p2"]):
        assert _probe(args, vault, tmp_path)[0]["code"] == 0
    probe, stderr = _probe(["activity", "--all"], vault, tmp_path)
    assert probe["code"] == 0, stderr
    assert "Total billable: 1:30 (1.50 h)" in probe["stdout"]
    loaded = {name.split(".")[0] for name in probe["loaded"]}
    assert "polars" in loaded
    assert loaded & {"duckdb", "pyarrow", "numpy", "pandas", "jinja2", "weasyprint"} == set()


def _top_level_sources(app) -> dict[str, set[str]]:
    """Each top-level command name of ``app`` → the CLI modules that define it or anything under it."""
    def modules_of(typer_app) -> set[str]:
        found = {c.callback.__module__ for c in typer_app.registered_commands}
        if typer_app.registered_callback is not None:
            found.add(typer_app.registered_callback.callback.__module__)
        for group in typer_app.registered_groups:
            found |= modules_of(group.typer_instance)
        return found

    sources = {c.name: {c.callback.__module__} for c in app.registered_commands}
    for group in app.registered_groups:
        sources.setdefault(group.name, set()).update(modules_of(group.typer_instance))
    return {name: {m.rsplit(".", 1)[-1] for m in mods} for name, mods in sources.items()}


def test_the_command_table_names_every_command_and_the_modules_that_define_it():
    sources = _top_level_sources(cli.app)
    assert sorted(sources) == sorted(cli.COMMAND_MODULES)
    assert {name: set(mods) for name, mods in cli.COMMAND_MODULES.items()} == sources


@pytest.mark.parametrize("argv, expected", [
    (["prompt", "record"], "prompt"),
    (["--vault-root", "/tmp/v", "--json", "session", "end"], "session"),
    (["--json", "--help"], None),
    (["--vault-root", "report", "activity"], "activity"),  # the folder may be called "report"
    ([], None),
])
def test_the_command_name_is_found_after_the_global_options(argv, expected):
    assert cli._command_name(argv) == expected


def test_a_taken_port_is_refused_before_any_web_framework_loads(tmp_path):
    import socket

    with socket.socket() as taken, socket.socket() as spare:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        spare.bind(("127.0.0.1", 0))  # a port no other test's server holds (not port + 1, which one may)
        free = spare.getsockname()[1]
        spare.close()
        for args in (["serve", "--port", str(port), "--mcp-port", "0"],
                     ["serve", "--port", str(free), "--mcp-port", str(port)]):
            probe, stderr = _probe(args, tmp_path / "vault", tmp_path)
            assert probe["code"] == 1, stderr
            assert f"127.0.0.1:{port} cannot be used" in stderr
            assert ("Invalid port" if args[2] == str(port) else "Invalid mcpPort") in stderr
            assert sorted({name.split(".")[0] for name in probe["loaded"]} & set(HEAVY)) == []


@pytest.mark.parametrize(("argv", "expected"), [
    (["hook", "claude-code"], ("claude-code", None, None, None)),
    (["hook", "gemini", "--event", "BeforeAgent", "--vault-root", "/v"], ("gemini", None, "BeforeAgent", "/v")),
    (["--vault-root", "/v", "hook", "codex", '{"type": "agent-turn-complete"}'],
     ("codex", '{"type": "agent-turn-complete"}', None, "/v")),
    (["hook", "--help"], None), (["hook", "claude-code", "--help"], None), (["hook", "claude-code", "--json"], None),
    (["--json", "hook", "claude-code"], None), (["hook", "claude-code", "--event=x"], None),
    (["hook", "claude-code", "--event"], None), (["hook", "claude-code", "--vault-root", "--json"], None),
    (["hook", "claude-code", "a", "b"], None), (["hook"], None), (["prompt", "list"], None), ([], None),
    (["hook", "cursor", "--event", "a", "--event", "b"], None),
])
def test_only_a_plain_hook_call_skips_the_command_line(argv, expected, monkeypatch):
    from memo_analytics.interfaces.launch import hook_call

    monkeypatch.delenv("MEMO_VAULT", raising=False)
    assert hook_call(argv) == expected


def test_the_hook_entry_records_a_prompt_without_loading_the_command_line(tmp_path):
    """What ``memo hooks install`` writes runs on every prompt the person types: it loads neither
    Typer nor rich nor the other commands (about a third of its start-up) and records the turn."""
    vault = tmp_path / "vault"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(MEMO_CONFIG=str(tmp_path / "none.toml"), PYTHONPATH=str(Path(cli.__file__).parents[3]))
    payload = json.dumps({"session_id": "abc", "hook_event_name": "UserPromptSubmit", "prompt": "make it faster",
                          "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")})
    probe = ("import json, sys, runpy\nsys.argv = ['memo', 'hook', 'claude-code', '--vault-root', sys.argv[1]]\n"
             "try:\n    runpy.run_module('memo_analytics', run_name='__main__')\nexcept SystemExit as exc:\n"
             "    code = exc.code\n"
             "sys.stderr.write('\\nPROBE ' + json.dumps({'code': code, 'loaded': sorted(sys.modules)}) + '\\n')\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(vault)], input=payload, capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=60)
    found = json.loads([x for x in proc.stderr.splitlines() if x.startswith("PROBE ")][-1][len("PROBE "):])
    assert (found["code"], proc.stdout) == (0, "")
    loaded = {name.split(".")[0] for name in found["loaded"]}
    assert loaded & {"typer", "rich", "click", *HEAVY} == set(), loaded & {"typer", "rich", "click", *HEAVY}
    assert not any(name.startswith("memo_analytics.interfaces.cli") for name in found["loaded"])
    [turn] = [p for p in vault.rglob("prompt-*.md")]
    assert "make it faster" in turn.read_text(encoding="utf-8")

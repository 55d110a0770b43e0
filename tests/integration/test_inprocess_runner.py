"""The in-process runner (:mod:`tests.inprocess`) answers as the real ``memo`` process does:
the same exit code, stdout and stderr byte for byte, and nothing of one run reaches the next
or the test around it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inprocess import memo


def process(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m memo_analytics ARGS`` as a real process, in this test's environment plus ``env``."""
    return subprocess.run([sys.executable, "-m", "memo_analytics", *args], capture_output=True, text=True,
                          env={**{k: v for k, v in os.environ.items() if k != "MEMO_VAULT"}, **(env or {})},
                          timeout=120)


@pytest.fixture
def vault(tmp_path) -> Path:
    vault = tmp_path / "v"
    memo("session", "start", "s", "--project", "p", "--client", "Acme", "--start-time", "2026-03-02T09:00:00Z",
         vault=vault)
    memo("prompt", "record", "--body", "Fix the \x1b[31mlogin\x1b[0m redirect", "--session-id", "s", "--project", "p",
         "--created", "2026-03-02T09:10:00Z", vault=vault)
    memo("session", "end", "s", "--until", "2026-03-02T10:00:00Z", "--summary", "done", vault=vault)
    return vault


def test_every_kind_of_answer_is_the_real_process_answer(vault, tmp_path):
    with socket.socket() as sock:  # a port nothing listens on: the hybrid push fails and says so
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    config = tmp_path / "hybrid.toml"
    config.write_text(f'mode = "hybrid"\n[hybrid]\nremoteUrl = "http://127.0.0.1:{closed}"\n')
    memo("prompt", "record", "--body", "queued for the push", "--project", "p", vault=vault,
         env={"MEMO_CONFIG": str(config)})
    runs = [
        ([], {}),  # the help
        (["prompt", "list", "--all"], {}),  # a table, stored text without its escape sequences
        (["--json", "prompt", "get", "prompt-s-t1"], {}),
        (["activity", "--all", "--tz", "Europe/Berlin"], {}),
        (["prompt", "get", "nothing-here"], {}),  # a refusal: one line, exit 1
        (["nosuch"], {}),  # a usage error: exit 2
        (["activity", "--json"], {}),  # the misplaced --json hint
        (["--json", "sync", "push"], {"MEMO_CONFIG": str(config)}),  # a logged warning on stderr, exit 1
    ]
    for args, env in runs:
        argv = ["--vault-root", str(vault), *args]
        real = process(*argv, env=env)
        ran = memo(*argv, env=env, check=False)
        assert (ran.returncode, ran.stdout, ran.stderr) == (real.returncode, real.stdout, real.stderr), args
    assert "memo sync push failed" in ran.stderr and ran.returncode == 1  # the last run: logging reached stderr


def test_nothing_of_a_run_reaches_the_next_or_the_test(vault, tmp_path, monkeypatch):
    here = os.getcwd()
    before = dict(os.environ)
    shown = memo("--json", "prompt", "list", "--all", vault=vault, env={"MEMO_TIMEZONE": "Asia/Tokyo"},
                 cwd=tmp_path)
    assert json.loads(shown.stdout)["total"] == 1
    assert os.getcwd() == here and dict(os.environ) == before
    human = memo("prompt", "list", "--all", vault=vault)  # no --json left over from the run before
    assert human.stdout.startswith(" ") and "1 prompt (showing" in human.stdout and not human.stdout.startswith("{")
    # MEMO_VAULT of the test's environment reaches a run only when passed (as the process helper had it)
    monkeypatch.setenv("MEMO_VAULT", str(vault))
    assert json.loads(memo("--json", "prompt", "list", "--all", env={"HOME": str(tmp_path)}).stdout)["total"] == 0
    assert json.loads(memo("--json", "prompt", "list", "--all", env={"MEMO_VAULT": str(vault)}).stdout)["total"] == 1


def test_stdin_is_the_input_given_and_empty_otherwise(tmp_path):
    vault = tmp_path / "v"
    memo("prompt", "record", "--body-file", "-", "--session-id", "i", "--project", "p", vault=vault,
         input="from stdin")
    refused = memo("prompt", "record", "--body-file", "-", "--session-id", "i", "--project", "p", vault=vault,
                   check=False)
    assert refused.returncode == 1 and refused.stderr.startswith("error: Invalid body: must not be empty")
    assert "from stdin" in (vault / "projects/p/prompts/prompt-i-t1.md").read_text()
    assert not (vault / "projects/p/prompts/prompt-i-t2.md").exists()

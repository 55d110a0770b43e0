"""Processes end with the command that started them (issue "Trust every surface", point 8 C).

``memo reindex`` parses a large vault in a pool of worker processes. Killing the command —
SIGKILL, or SIGTERM of the parent — must not leave those workers parsing on (for a minute,
holding the vault lock they inherited): they die with it, through ``PR_SET_PDEATHSIG`` on
Linux and, everywhere, a watchdog thread that notices the parent is gone. Real processes,
real signals; liveness read from ``/proc``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memo_analytics.domain.records import Prompt
from memo_analytics.index.reindex import PARALLEL_FROM
from memo_analytics.vault.io import dump_record

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

RECORDS = 12_000


def _stat(pid: int) -> tuple[str, int, int] | None:
    """``(state, ppid, start time)`` of a process, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def _children(pid: int) -> dict[int, int]:
    """``{pid: start time}`` of the live children of ``pid``."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            info = _stat(int(entry))
            if info is not None and info[1] == pid and info[0] != "Z":
                found[int(entry)] = info[2]
    return found


def _alive(pid: int, started: int) -> bool:
    info = _stat(pid)
    return info is not None and info[2] == started and info[0] not in ("Z", "X")


@pytest.fixture(scope="module")
def big_vault(tmp_path_factory) -> Path:
    """A vault of 12,000 turn files (written directly: the index is what reindex builds)."""
    assert RECORDS > 4 * PARALLEL_FROM  # parsed in worker processes, for a few seconds
    root = tmp_path_factory.mktemp("big") / "v"
    meta = Prompt(id="prompt-s-t1", project="p", created="2026-03-02T10:00:00Z", updated="2026-03-02T10:00:00Z",
                  session_id="s", turn=1).wire()
    template = dump_record(meta, "a turn about invoices, pagination and the login redirect " * 30)
    for project in range(4):
        folder = root / f"projects/p{project}/prompts"
        folder.mkdir(parents=True)
        for turn in range(1, RECORDS // 4 + 1):
            record_id = f"prompt-s{project}-t{turn}"
            text = (template.replace("prompt-s-t1", record_id).replace("project: p\n", f"project: p{project}\n")
                    .replace("sessionId: s\n", f"sessionId: s{project}\n").replace("turn: 1\n", f"turn: {turn}\n"))
            (folder / f"{record_id}.md").write_text(text)
    return root


def _reindex(vault: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memo_analytics", "--vault-root", str(vault), "reindex"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: reindex parses in-process, without workers")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_killing_reindex_kills_its_workers_and_frees_the_vault(big_vault, sig):
    proc = _reindex(big_vault)
    deadline = time.monotonic() + 60
    workers: dict[int, int] = {}
    while not workers and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
        workers = _children(proc.pid)
    assert workers, f"no worker process appeared (exit {proc.poll()}): {proc.stderr.read().decode()[-500:]}"
    time.sleep(0.3)  # the workers are parsing
    workers.update(_children(proc.pid))
    proc.send_signal(sig)
    proc.wait(10)
    proc.stdout.close()
    proc.stderr.close()
    gone_by = time.monotonic() + 3
    while any(_alive(pid, started) for pid, started in workers.items()) and time.monotonic() < gone_by:
        time.sleep(0.05)
    assert not [pid for pid, started in workers.items() if _alive(pid, started)], "workers outlived memo reindex"

    started = time.monotonic()
    again = subprocess.run([sys.executable, "-m", "memo_analytics", "--vault-root", str(big_vault), "--json",
                            "reindex"], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["indexed"] == RECORDS
    assert time.monotonic() - started < 60  # the vault lock was not held by a left-over worker


WATCHED = textwrap.dedent("""
    import os, sys, time
    from memo_analytics.index import reindex
    reindex.sys.platform = "other"  # no prctl: the watchdog alone
    reindex.WATCHDOG_INTERVAL_S = 0.05
    parent = os.getpid()
    child = os.fork()
    if child == 0:
        reindex.die_with_parent(parent)
        time.sleep(30)
        os._exit(0)
    print(child, flush=True)
    time.sleep(30)
""")


def test_without_prctl_the_watchdog_ends_a_worker_whose_parent_died():
    proc = subprocess.Popen([sys.executable, "-c", WATCHED], stdout=subprocess.PIPE, text=True)
    child = int(proc.stdout.readline())
    started = _stat(child)[2]
    time.sleep(0.2)
    assert _alive(child, started)
    proc.kill()
    proc.wait(10)
    proc.stdout.close()
    gone_by = time.monotonic() + 3
    while _alive(child, started) and time.monotonic() < gone_by:
        time.sleep(0.02)
    assert not _alive(child, started)

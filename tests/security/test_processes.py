"""Processes end with the command that started them (issue "Trust every surface", point 8 C), and
a command never waits for ever on its workers (issue 16 point 4).

``memo reindex`` parses a large vault in a pool of worker processes. Killing the command —
SIGKILL, or SIGTERM of the parent — must not leave those workers parsing on (for a minute,
holding the vault lock they inherited): they die with it, through ``PR_SET_PDEATHSIG`` on
Linux and, everywhere, a watchdog thread that notices the parent is gone. A first import
parses on both cores too: a worker killed while it sends its result does not leave the import
waiting, and Ctrl-C stops the import at once, without the workers' tracebacks. Real processes,
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
    from memo_analytics.index import workers as reindex
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


REPO = Path(__file__).resolve().parents[2]

#: An import on both cores of the real Claude Code files, with one file's parse sabotaged in the
#: worker that reads it (argv: corpus, vault, what to do) — ``half-sent``: the worker dies
#: holding the result pipe's lock, half a result written to it, as a worker the out-of-memory
#: killer hits while it sends; ``slow``: the parse takes a minute (for Ctrl-C); ``clean``: nothing. In the parent
#: (the parse the import does itself once a worker is lost) the file parses as usual.
_SABOTAGED = """
import os, signal, struct, sys, time
from pathlib import Path
from memo_analytics.services.importers import claude_code, common
from memo_analytics.interfaces.cli import main
common.PARALLEL_FROM = 1
corpus, vault, what = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
parent, read_from = os.getpid(), claude_code.parse_from


def sabotaged(path, options, start=None):
    if what != "clean" and os.getpid() != parent and path.name.startswith("005-"):
        if what == "half-sent":
            frame = sys._getframe()
            while frame.f_code.co_name != "_process_worker":
                frame = frame.f_back
            results = frame.f_locals["result_queue"]
            (Path(vault).parent / "worker-died-mid-send").touch()
            results._wlock.acquire()
            os.write(results._writer.fileno(), struct.pack("!i", 1 << 20) + b"half a result")
            os.kill(os.getpid(), signal.SIGKILL)
        (Path(vault).parent / "slow-parse-started").touch()
        time.sleep(60)
    return read_from(path, options, start)


claude_code.parse_from = sabotaged
sys.argv = ["memo", "--vault-root", vault, "--json", "import", "claude-code", str(corpus)]
main()
"""


def _corpus(realdata: Path, folder: Path) -> Path:
    folder.mkdir()
    files = sorted(p for p in (realdata / "claude-code-jsonl").rglob("*.jsonl") if "subagents" not in p.parts)
    for number, path in enumerate(files):
        (folder / f"{number * 10 + 5:03d}-{path.stem}.jsonl").write_bytes(path.read_bytes())
    return folder


def _records(vault: Path) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted((vault / "projects").rglob("*.md"))}


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the import's workers need two cores")
def test_a_worker_killed_while_it_sends_its_result_does_not_leave_the_import_waiting(realdata, tmp_path):
    """CPython's pool reads on for ever from a worker killed in the middle of sending its result
    (it died holding the pipe's lock, half a message in it) and never reports the pool broken:
    the import ends that pool, parses the rest itself, and writes what a clean import writes."""
    corpus = _corpus(realdata, tmp_path / "projects")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(MEMO_CONFIG=str(tmp_path / "none.toml"), MEMO_TIMEZONE="UTC", PYTHONPATH=str(REPO))
    runs = {}
    for what in ("half-sent", "clean"):
        vault = tmp_path / what
        started = time.monotonic()
        ran = subprocess.run([sys.executable, "-c", _SABOTAGED, str(corpus), str(vault), what], capture_output=True,
                             text=True, env=env, timeout=120, cwd=tmp_path)
        assert ran.returncode == 0, ran.stderr[-2000:]
        runs[what] = (json.loads(ran.stdout), time.monotonic() - started)
    assert (tmp_path / "worker-died-mid-send").exists()
    summary, took = runs["half-sent"]
    assert took < runs["clean"][1] + 15  # the pool was given up a second after the worker died
    assert summary["turns"] == runs["clean"][0]["turns"] > 20
    assert summary["errors"] == runs["clean"][0]["errors"]
    assert _records(tmp_path / "half-sent") == _records(tmp_path / "clean")


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the import's workers need two cores")
def test_ctrl_c_stops_an_import_on_both_cores_at_once_without_the_workers_tracebacks(realdata, tmp_path):
    """Ctrl-C (SIGINT to the terminal's whole process group) during a first import on both cores:
    the import exits with 130 within seconds — it does not wait for the queued parses, one of
    them a minute long — no worker prints a traceback, and no worker is left."""
    corpus = _corpus(realdata, tmp_path / "projects")
    vault = tmp_path / "vault"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
    env.update(MEMO_CONFIG=str(tmp_path / "none.toml"), MEMO_TIMEZONE="UTC", PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", _SABOTAGED, str(corpus), str(vault), "slow"], env=env,
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: (signal.signal(signal.SIGINT, signal.SIG_DFL), os.setsid()))
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "slow-parse-started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None
        workers = _children(proc.pid)
        assert len(workers) >= 2
        time.sleep(0.3)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    assert not [pid for pid, born in workers.items() if _alive(pid, born)]

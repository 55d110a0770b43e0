"""Start-up benchmark: the wall time of the commands an agent hook or a person runs most,
beside the floor of starting Python at all on the same machine (issue 12).

Every figure is the median of ``--runs`` runs of a fresh process, the commands interleaved
round-robin so that the machine's noise falls on all of them alike:

- floor: ``python -c "import yaml, sqlite3"``
- ``memo --help``
- ``memo prompt record`` (one turn into a session of a small vault)
- ``memo session start`` / ``memo session end``
- ``memo hook claude-code`` (an event on stdin), once the command exists
- ``memo serve --host 0.0.0.0`` without ``--token`` (the refusal)
- ``memo activity --all`` (loads the analytics: for comparison, no target)

Target (issue 12): ``memo prompt record`` ≤ 0.35 s median and ≤ 7× the floor.

The package's bytecode is compiled first (``compileall``), as a wheel install does: with
``PYTHONDONTWRITEBYTECODE`` set, an editable install would otherwise compile every module
on every run, which is not what a user's install pays.

Usage: ``python benchmarks/bench_startup.py [--runs 15]``
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import memo_analytics

TARGET_SECONDS = 0.35
TARGET_RATIO = 7.0
#: ``memo hook AGENT`` runs on every prompt an agent submits (issue 14)
HOOK_TARGET_SECONDS = 0.3


def _memo() -> list[str]:
    script = Path(sys.executable).with_name("memo")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "memo_analytics"]


def _has_hook_command(env: dict[str, str]) -> bool:
    probe = subprocess.run([*_memo(), "hook", "--help"], env=env, capture_output=True, text=True)
    return probe.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compileall.compile_dir(str(Path(memo_analytics.__file__).parent), quiet=1)

    with tempfile.TemporaryDirectory(prefix="memo-startup-") as tmp:
        home, cwd = Path(tmp) / "home", Path(tmp) / "work"
        home.mkdir()
        cwd.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMO_")}
        env.update(HOME=str(home), MEMO_VAULT=str(Path(tmp) / "vault"), MEMO_CONFIG=str(home / "none.toml"),
                   MEMO_TIMEZONE="UTC")
        memo = _memo()
        counter = iter(range(10**9))
        subprocess.run([*memo, "session", "start", "s-bench", "--project", "bench"], env=env, cwd=cwd,
                       check=True, capture_output=True)

        def record() -> list[str]:
            return [*memo, "prompt", "record", "--body", f"benchmark turn {next(counter)}", "--project", "bench",
                    "--session-id", "s-bench"]

        def start() -> list[str]:
            return [*memo, "session", "start", f"s-{next(counter)}", "--project", "bench"]

        ended = iter(range(10**9))

        def end() -> list[str]:  # ends the sessions `start` opened, in order (or none yet: a refusal)
            return [*memo, "session", "end", f"s-{next(ended)}", "--project", "bench", "--summary", "done"]

        commands: dict[str, tuple] = {
            'python -c "import yaml, sqlite3" (floor)': (lambda: [sys.executable, "-c", "import yaml, sqlite3"], None),
            "memo --help": (lambda: [*memo, "--help"], None),
            "memo prompt record": (record, None),
            "memo session start": (start, None),
            "memo session end": (end, None),
            "memo serve --host 0.0.0.0 (refused)": (lambda: [*memo, "serve", "--host", "0.0.0.0"], None),
            "memo activity --all": (lambda: [*memo, "--json", "activity", "--all"], None),
        }
        if _has_hook_command(env):
            event = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "hook-bench",
                                "cwd": str(cwd), "prompt": "benchmark hook turn"})
            commands["memo hook claude-code"] = (lambda: [*memo, "hook", "claude-code"], event)

        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.runs):
            for name, (argv, stdin) in commands.items():
                started = time.perf_counter()
                subprocess.run(argv(), env=env, cwd=cwd, input=stdin, capture_output=True, text=True)
                times[name].append(time.perf_counter() - started)

    floor = statistics.median(times['python -c "import yaml, sqlite3" (floor)'])
    print(f"start-up, median of {args.runs} runs each (s); ratio to the floor of the same run")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<42} {median:6.3f} s  {median / floor:5.1f}×")
    record_median = statistics.median(times["memo prompt record"])
    verdict = "meets" if record_median <= TARGET_SECONDS and record_median / floor <= TARGET_RATIO else "MISSES"
    print(f"target: memo prompt record ≤ {TARGET_SECONDS} s and ≤ {TARGET_RATIO:g}× the floor: "
          f"{record_median:.3f} s, {record_median / floor:.1f}× — {verdict}")
    if "memo hook claude-code" not in times:
        print("memo hook: not measured (the command does not exist yet)")
    else:
        hook_median = statistics.median(times["memo hook claude-code"])
        verdict = "meets" if hook_median <= HOOK_TARGET_SECONDS else "MISSES"
        print(f"target: memo hook claude-code ≤ {HOOK_TARGET_SECONDS} s (issue 14, interpreter start included): "
              f"{hook_median:.3f} s, {hook_median / floor:.1f}× — {verdict}")


if __name__ == "__main__":
    main()

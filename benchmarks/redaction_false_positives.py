"""Secret redaction on the code blocks of the real transcripts: how much does it hide?

Extracts every fenced code block (```…```) from every text of ``../shared/realdata``
(JSONL strings decoded, Markdown as is), runs :func:`redact_secrets` on each block and
prints every redaction with its context, so that each one can be judged by eye: a real (or
fake-but-real-looking) credential, or a false positive. Also times the redactor.

Usage: ``python benchmarks/redaction_false_positives.py [REALDATA_DIR]``
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

from memo_analytics.vault.redact import redact_secrets

FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def texts(root: Path):
    for folder, _, files in os.walk(root):
        for name in sorted(files):
            path = Path(folder) / name
            if name.endswith(".jsonl"):
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    try:
                        yield from strings(json.loads(line))
                    except ValueError:
                        continue
            elif name.endswith((".md", ".json")) or "ai_rules_backups" in folder:
                raw = path.read_text(encoding="utf-8", errors="replace")
                if name.endswith(".json"):
                    try:
                        yield from strings(json.loads(raw))
                        continue
                    except ValueError:
                        pass
                yield raw


def main() -> None:
    default = Path(__file__).resolve().parents[2] / "shared" / "realdata"
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(os.environ.get("MEMO_REALDATA", default))
    blocks = [block for text in texts(root) for block in FENCE.findall(text)]
    unique = sorted(set(blocks))
    started = time.perf_counter()
    kinds: Counter[str] = Counter()
    shown = []
    for block in unique:
        redacted, count = redact_secrets(block)
        if count:
            for match in re.finditer(r"(.{0,50})\[REDACTED:([a-z-]+)\]", redacted):
                kinds[match.group(2)] += 1
                shown.append(match.group(0).replace("\n", "⏎"))
    elapsed = time.perf_counter() - started
    size = sum(len(b) for b in unique)
    print(f"code blocks: {len(blocks)} ({len(unique)} distinct, {size / 1e6:.2f} MB); "
          f"redactions: {sum(kinds.values())} {dict(kinds)}; {elapsed:.2f} s ({size / 1e6 / elapsed:.1f} MB/s)")
    for line in shown:
        print("  ", line)
    adversarial()


#: Texts built to make a pattern backtrack: each own pattern's anchor repeated with what its runs
#: take, 100 KB and 200 KB. Twice the text should take about twice the time (linear); four
#: times says a pattern scans in the square of the length.
ADVERSARIAL = {
    "url with '/' in the password": "a://:b/",
    "URLs with ports (minified JSON)": '"http://host1:8001",',
    "env assignments": "DB_PASS=x ",
    "digit passwords": "password: 1",
    "cookie headers": "Cookie: a=",
    "secret options": "--password ",
    "keyword runs": "_secret_",
}


def adversarial() -> None:
    print("adversarial texts (median of 3; ratio 200 KB / 100 KB, about 2 when linear):")
    for name, unit in ADVERSARIAL.items():
        times = []
        for size in (100_000, 200_000):
            text = unit * (size // len(unit))
            runs = []
            for _ in range(3):
                started = time.perf_counter()
                redact_secrets(text)
                runs.append(time.perf_counter() - started)
            times.append(sorted(runs)[1])
        print(f"   {name:34s} {times[0]:.3f} s · {times[1]:.3f} s · ratio {times[1] / max(times[0], 1e-9):.1f}")


if __name__ == "__main__":
    main()

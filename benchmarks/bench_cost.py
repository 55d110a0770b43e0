"""AI cost and tokens per day beside ccusage's, on the same Claude Code JSONL (issue 15 point 6).

Copies the real Claude Code transcripts of ``../shared/realdata/claude-code-jsonl`` into a
temporary ``CLAUDE_CONFIG_DIR/projects`` (nothing is written into the project), runs
``npx ccusage@20.0.24 daily --json --offline --timezone UTC`` on it when npx can fetch it, imports
the same files into a temporary vault with ``memo import claude-code`` (the real importer) and
prints, per UTC day, the tokens (input, output, cache read, cache write) and the cost of both,
with the ratio of the totals against the target (within 1 %).

Our figures are the turns' ``tokens`` (each human turn holds the usage of the assistant
messages that answered it, the last usage record per message id) priced with ``genai-prices``
at the turn's date; ccusage sums every assistant message by the message's own date, priced with
its bundled LiteLLM table. Where they differ the script says by how much, per day.

Known remainder (measured with ccusage 20.0.24): all of it on 2025-06-14, the hand-written
fixtures of daaain-claude-code-log. Their lines are JSON with a space after each colon
(``"type": "assistant"``), which ccusage's line filter does not take (the same lines written
compactly, as Claude Code writes them, are counted). Every other day, real Claude Code output,
agrees to the token and to the cent: the sub-agents' files (``<session>/subagents/``, copied as
they lie) and their responses relayed into the parent transcript as ``agent_progress`` records
count once for the turn.

Usage: ``python benchmarks/bench_cost.py [--realdata PATH] [--ccusage-version 20.0.24]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOKENS = ("input", "output", "cacheRead", "cacheWrite")
CCUSAGE_KEYS = {"input": "inputTokens", "output": "outputTokens", "cacheRead": "cacheReadTokens",
                "cacheWrite": "cacheCreationTokens"}


def stage(realdata: Path, folder: Path) -> list[Path]:
    """The Claude Code JSONL files copied under ``folder/projects/<repo>/`` as they lie there (a
    session's ``<session>/subagents/`` beside its transcript, as ~/.claude keeps them: both
    tools count the sub-agents' calls); the transcripts, without the sub-agents' files."""
    root = realdata / "claude-code-jsonl"
    target = folder / "projects"
    shutil.copytree(root, target, ignore=lambda where, names: [n for n in names if (Path(where) / n).is_file()
                                                                and not n.endswith(".jsonl")])
    return sorted(p for p in target.rglob("*.jsonl") if "subagents" not in p.parts)


def ccusage_daily(folder: Path, version: str) -> dict[str, dict] | None:
    npx = shutil.which("npx")
    if npx is None:
        return None
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(folder)}
    ran = subprocess.run([npx, "-y", f"ccusage@{version}", "daily", "--json", "--offline", "--timezone", "UTC"],
                         capture_output=True, text=True, env=env, timeout=600)
    if ran.returncode != 0:
        print(f"ccusage did not run: {ran.stderr.strip().splitlines()[-1:]}")
        return None
    return {day["period"]: day for day in json.loads(ran.stdout)["daily"]}


def ours_daily(files: list[Path], vault: Path) -> dict[str, dict]:
    from memo_analytics.analytics.cost import stored_turn_cost
    from memo_analytics.config import Settings
    from memo_analytics.domain.clock import from_iso
    from memo_analytics.services.importers import claude_code
    from memo_analytics.services.importers.common import ImportOptions, run_import
    from memo_analytics.services.store import VaultStore

    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    try:
        run_import(store, files, claude_code.parse, ImportOptions(), source="claude-code")
        rows = store.conn.execute("SELECT created, model, source, meta FROM records WHERE kind = 'prompt'").fetchall()
    finally:
        store.close()
    days: dict[str, dict] = defaultdict(lambda: {**dict.fromkeys(TOKENS, 0), "cost": Decimal(0), "unpriced": 0})
    for created, model, source, meta in rows:
        stored = json.loads(meta)
        tokens = stored.get("tokens")
        if not tokens:
            continue
        day = days[created[:10]]
        for key in TOKENS:
            day[key] += int(tokens.get(key) or 0)
        cost, _ = stored_turn_cost(stored, model, from_iso(created), source)
        if cost is None:
            day["unpriced"] += 1
        else:
            day["cost"] += cost
    return dict(days)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path,
                        default=Path(os.environ.get("MEMO_REALDATA") or REPO.parent / "shared" / "realdata"))
    parser.add_argument("--ccusage-version", default="20.0.24")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memo-bench-cost-") as tmp:
        folder = Path(tmp) / "claude"
        if not (args.realdata / "claude-code-jsonl").is_dir():
            raise SystemExit(f"no Claude Code transcripts under {args.realdata}: give --realdata (or MEMO_REALDATA)")
        files = stage(args.realdata, folder)
        ours = ours_daily(files, Path(tmp) / "vault")
        theirs = ccusage_daily(folder, args.ccusage_version)
    print(f"{len(files)} Claude Code transcripts, {len(ours)} days with tokens")
    if theirs is None:
        print("ccusage is not installable here (npx missing or offline): our figures only")
        for day, figures in sorted(ours.items()):
            print(f"  {day}  " + "  ".join(f"{k} {figures[k]:,}" for k in TOKENS) + f"  cost {figures['cost']:.4f}")
        return 0
    header = f"{'day':10}  {'tokens (ours / ccusage)':>44}  {'cost USD ours':>13}  {'ccusage':>9}  ratio"
    print(header)
    totals = {"ours": defaultdict(Decimal), "theirs": defaultdict(Decimal)}
    for day in sorted(set(ours) | set(theirs)):
        mine = ours.get(day, {**dict.fromkeys(TOKENS, 0), "cost": Decimal(0)})
        their = theirs.get(day, {})
        their_tokens = {k: int(their.get(CCUSAGE_KEYS[k], 0)) for k in TOKENS}
        their_cost = Decimal(str(their.get("totalCost", 0)))
        mine_sum, their_sum = sum(mine[k] for k in TOKENS), sum(their_tokens.values())
        for key in TOKENS:
            totals["ours"][key] += mine[key]
            totals["theirs"][key] += their_tokens[key]
        totals["ours"]["cost"] += mine["cost"]
        totals["theirs"]["cost"] += their_cost
        ratio = f"{float(mine['cost'] / their_cost):.4f}" if their_cost else "—"
        print(f"{day:10}  {mine_sum:>21,} / {their_sum:<20,}  {mine['cost']:>13.4f}  {their_cost:>9.4f}  {ratio}")
    print("totals per kind (ours / ccusage):")
    for key in TOKENS:
        a, b = totals["ours"][key], totals["theirs"][key]
        print(f"  {key:10} {a:>12,} / {b:<12,} ratio {float(a / b) if b else float('nan'):.4f}")
    cost_ratio = float(totals["ours"]["cost"] / totals["theirs"]["cost"]) if totals["theirs"]["cost"] else float("nan")
    print(f"  cost USD   {totals['ours']['cost']:.4f} / {totals['theirs']['cost']:.4f} ratio {cost_ratio:.4f} "
          f"(target: within 1 %: {'meets' if abs(cost_ratio - 1) <= 0.01 else 'misses'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

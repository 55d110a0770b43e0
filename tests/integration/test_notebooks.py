"""The analyst notebooks (``notebooks/*.ipynb``) run on the sample vault and reproduce their
stored outputs under nbval; ``notebooks/sanitize.cfg`` masks only what differs between runs
(the temporary folder, memory addresses).

nbval runs in a pytest subprocess of its own: its kernel is this environment's Python
(``--nbval-current-env``), and warnings of the Jupyter machinery in that process do not touch
this run's warnings-as-errors.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
SANITIZE = NOTEBOOKS / "sanitize.cfg"
EXPECTED = ["activity.ipynb", "invoicing.ipynb", "rules_review.ipynb"]


def nbval(paths: list[Path], tmp_path: Path) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
               "--nbval-sanitize-with", str(SANITIZE), "--nbval-cell-timeout", "300",
               "-p", "no:cacheprovider", "-q", "-W", "ignore::DeprecationWarning",
               "-W", "ignore::PendingDeprecationWarning", *map(str, paths)]
    # the machine's own config file must not change what the notebooks show
    # nor does this run's pytest (its options, or the xdist worker it may be)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # and the notebooks' default vault is the sample, not one this machine has configured
    # (a named vault that holds none is an error: the default vault of a home that has none)
    env.update(MEMO_CONFIG=str(tmp_path / "no-config.toml"), TMPDIR=str(tmp_path), HOME=str(tmp_path / "home"))
    for name in ("MEMO_TIMEZONE", "MEMO_PROJECT", "MEMO_VAULT"):
        env.pop(name, None)
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


def summary(proc: subprocess.CompletedProcess) -> str:
    return f"exit {proc.returncode}\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"


def test_every_notebook_reproduces_its_stored_outputs(tmp_path):
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert [p.name for p in notebooks] == EXPECTED
    for path in notebooks:  # outputs are stored, and charts are among them
        cells = nbformat.read(path, as_version=4).cells
        outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs]
        assert outputs and all(o.output_type != "error" for o in outputs), path.name
        assert any("image/png" in o.get("data", {}) for o in outputs), f"{path.name} has no chart"
        assert any("text/html" in o.get("data", {}) for o in outputs), f"{path.name} has no table"
    proc = nbval(notebooks, tmp_path)
    assert proc.returncode == 0, summary(proc)
    cells = sum(1 for p in notebooks for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")
    assert re.search(rf"\b{cells} passed\b", proc.stdout), summary(proc)
    # the sample vault each notebook builds is removed when its kernel stops (runs left a folder each)
    assert sorted(p.name for p in tmp_path.glob("memo-notebook-*")) == []


def test_a_changed_total_fails_the_notebook_check(tmp_path):
    copy = tmp_path / "activity.ipynb"
    text = (NOTEBOOKS / "activity.ipynb").read_text(encoding="utf-8")
    assert "billable hours       : 16.34" in text
    copy.write_text(text.replace("billable hours       : 16.34", "billable hours       : 16.35"), encoding="utf-8")
    proc = nbval([copy], tmp_path)
    assert proc.returncode == 1, summary(proc)
    assert "1 failed" in proc.stdout and "16.35" in proc.stdout, summary(proc)


def test_the_sanitizer_masks_only_the_sample_folder_and_addresses(tmp_path):
    """A fixed value (a date of the sample, an amount) is never masked."""
    from nbval.plugin import get_sanitize_patterns

    patterns = get_sanitize_patterns(SANITIZE.read_text(encoding="utf-8"))
    volatile = "Vault('/tmp/memo-notebook-k2x_9abc/vault', further=[]) at 0x7f3a2c1d9e50"
    fixed = "2026-03-05 22:40:00 CET  16.34  EUR 1005.41  prompt-demo-20260305-1115-acme-web-t1"

    def sanitize(text: str) -> str:
        for regex, replacement in patterns:
            text = re.sub(regex, replacement, text)
        return text

    assert sanitize(volatile) == "Vault('<sample-folder>/vault', further=[]) at 0x<address>"
    assert sanitize(fixed) == fixed


def test_every_notebook_runs_on_an_analysts_own_vault(realdata, tmp_path):
    """Issue 15 point 7: the parameters cell points a notebook at one's own vault (imported real
    transcripts, billed to a client priced in one's own config file, its minutes rounded up to a
    quarter hour with a minimum, and others imported without a client: billable to ``internal``,
    which has no price; June 2025 already on an issued invoice): every cell runs, with no assertion
    that holds only on the sample."""
    import nbclient

    from tests.inprocess import environment, memo

    from .test_issued_invoices import ACME, ISSUER

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    # an AI usage line too (one unit at its amount): its quantity was shown as hours and added to them
    config.write_text(ISSUER + ACME + 'roundingMinutes = 15\nminimumMinutes = 30\naiCostMargin = "10"\n'
                      'aiCostExchangeRate = "0.9"\n', encoding="utf-8")
    memo("import", "claude-code", str(realdata / "claude-code-jsonl"), "--client", "Acme Corp", vault=vault,
         env={"MEMO_CONFIG": str(config)})
    memo("import", "codex", str(realdata / "codex-rollouts"), vault=vault, env={"MEMO_CONFIG": str(config)})
    # a model no price is known for (a freelancer: the notebook's cost table said 0.0000 where the CLI says no price)
    memo("import", "codex", str(realdata / "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions/codex.jsonl"),
         vault=vault, env={"MEMO_CONFIG": str(config)})
    memo("invoice", "issue", "--all", "--client", "Acme Corp", "--since", "2025-06-01", "--until", "2025-06-30",
         vault=vault, env={"MEMO_CONFIG": str(config)})
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
        parameters.source = parameters.source.replace("VAULT = None", f"VAULT = {str(vault)!r}")
        with environment({"MEMO_CONFIG": str(config), "MEMO_VAULT": None}):
            nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                    resources={"metadata": {"path": str(tmp_path)}}).execute()
        errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, (path.name, errors)
        shown = "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                        for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
        assert f"Vault({str(vault)!r}" in shown  # the analyst's vault was opened, not the sample
        if path.name == "activity.ipynb":  # the model without a price: null in the cost table, not 0
            rows = [line for line in shown.splitlines() if line.startswith("│ aide-gpt-5 ")]
            assert rows and all(row.rstrip().rstrip("│").rstrip().endswith("null") for row in rows), rows
        if path.name == "invoicing.ipynb":  # the codex sessions have no client: named, not billed
            assert "clients left out, no hourlyRate in the config: internal" in shown
            assert "sessions left out, already invoiced: 4" in shown
            assert "AI usage" in shown  # the line is there, its hours empty (the checks of the hours held)


@pytest.mark.parametrize("client", ["Acme Corp", None])
def test_the_invoicing_notebook_on_a_vault_without_terms_stops_with_what_to_set(realdata, tmp_path, client):
    """Found by a new user: on a vault whose clients have no billing terms the invoicing notebook
    ended in a ReportError traceback; it stops with one line saying what to set, where. (An
    analyst's: on a vault of no client at all it named nothing to set.)"""
    import nbclient

    from tests.inprocess import environment, memo

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n', encoding="utf-8")
    memo("import", "claude-code", str(realdata / "claude-code-jsonl"), *(["--client", client] if client else []),
         vault=vault, env={"MEMO_CONFIG": str(config)})
    notebook = nbformat.read(NOTEBOOKS / "invoicing.ipynb", as_version=4)
    [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    parameters.source = parameters.source.replace("VAULT = None", f"VAULT = {str(vault)!r}")
    with environment({"MEMO_CONFIG": str(config), "MEMO_VAULT": None}):
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert [e["ename"] for e in errors][:1] == ["SystemExit"], errors
    assert errors[0]["evalue"].startswith("Nothing to invoice: ")
    assert (f'set hourlyRate and currency under [clients."Acme Corp"] in {config}; then run the notebook again'
            if client else "memo project client PROJECT NAME); then run the notebook again") in errors[0]["evalue"]


@pytest.mark.parametrize("name", ["activity.ipynb", "rules_review.ipynb"])
def test_a_period_without_work_runs_every_cell_and_the_period_bounds_what_is_shown(realdata, tmp_path, name):
    """Found by an analyst: ``activity.ipynb`` stopped with ``ColumnNotFoundError:
    "durationMinutes"`` on a month without sessions (and on an empty vault), ``rules_review.ipynb``
    with ``OutOfBoundsError`` where no turn gave an instruction — and it listed the candidates of
    every period whatever SINCE/UNTIL said, as the activity notebook's "bills nothing" table did."""
    import nbclient

    from tests.inprocess import environment, memo

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n', encoding="utf-8")
    memo("import", "specstory", str(realdata / "specstory-md"), vault=vault, env={"MEMO_CONFIG": str(config)})

    def run(since: str, until: str) -> str:
        notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
        [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
        parameters.source = (parameters.source.replace("VAULT = None", f"VAULT = {str(vault)!r}")
                             .replace("SINCE = None", f"SINCE = {since!r}").replace("UNTIL = None", f"UNTIL = {until!r}"))
        with environment({"MEMO_CONFIG": str(config), "MEMO_VAULT": None}):
            nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                    resources={"metadata": {"path": str(tmp_path)}}).execute()
        errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
        assert not errors, (name, since, errors)
        return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                       for c in notebook.cells if c.cell_type == "code" for o in c.outputs)

    empty = run("2024-01-01", "2024-01-31")
    if name == "activity.ipynb":
        assert "sessions selected    : 0" in empty and "billable minutes     : 0" in empty
        assert "shape: (0, 6)" in empty  # the "bills nothing" table: none of the period either
    else:
        assert "0 candidates from the turns of 2024-01-01 to 2024-01-31" in empty
        assert "no candidate: no turn of the period gives an instruction" in empty
        everything = run("2000-01-01", "2099-12-31")
        count = int(re.search(r"(\d+) candidates from the turns", everything).group(1))
        assert count > 0


def test_the_invoicing_notebook_names_sessions_of_no_minutes_it_leaves_off(tmp_path):
    """Found by an analyst: the notebook's line said ``sessions 19`` for Acme Corp where ``memo
    activity`` said 22 — three sessions of 0 minutes left off without a word (the draft names them)."""
    from tests.inprocess import memo

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[clients."Acme Corp"]\nhourlyRate = "100"\ncurrency = "EUR"\n',
                      encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for sid, end in (("a1", "2026-06-02T10:00:00Z"), ("z1", "2026-06-03T09:00:10Z")):
        memo("session", "start", sid, "--project", "web", "--client", "Acme Corp", "--start-time",
             f"{end[:10]}T09:00:00Z", vault=vault, env=env)
        memo("session", "end", sid, "--project", "web", "--until", end, vault=vault, env=env)
    notebook = _invoicing_of_june(vault, config, tmp_path)
    shown = "".join(str(o.get("text", "")) for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    assert "sessions of 0 minutes left out: 1 (vault.invoice(..., zero_minutes=True) bills them)" in shown


def test_the_invoicing_notebook_on_a_period_of_no_work_asks_for_no_terms(tmp_path):
    """Found by a billing person: on a month already invoiced, or one with no work, the notebook
    stopped with "to bill a client, give it terms … and file its work under it" — both clients had
    terms and every session was filed."""
    import nbclient

    from tests.inprocess import environment, memo

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[clients."Acme Corp"]\nhourlyRate = "100"\ncurrency = "EUR"\n',
                      encoding="utf-8")
    memo("session", "start", "a1", "--project", "web", "--client", "Acme Corp", "--start-time",
         "2026-06-02T09:00:00Z", vault=vault, env={"MEMO_CONFIG": str(config)})
    memo("session", "end", "a1", "--project", "web", "--until", "2026-06-02T10:00:00Z", vault=vault,
         env={"MEMO_CONFIG": str(config)})
    notebook = nbformat.read(NOTEBOOKS / "invoicing.ipynb", as_version=4)
    [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    parameters.source = (parameters.source.replace("VAULT = None", f"VAULT = {str(vault)!r}")
                         .replace("SINCE = None", "SINCE = '2026-10-01'").replace("UNTIL = None", "UNTIL = '2026-10-31'"))
    with environment({"MEMO_CONFIG": str(config), "MEMO_VAULT": None}):
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    error = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"][0]
    assert error["ename"] == "SystemExit" and error["evalue"].startswith("Nothing to invoice: no billable session with a duration for these filters; "
                                      "then run the notebook again"), error["evalue"]
    assert "give it terms" not in error["evalue"]


def test_the_invoicing_notebook_on_the_sample_leaves_the_kernel_reading_your_config_again(tmp_path):
    """Found by an analyst: on the sample the invoicing notebook points MEMO_CONFIG at a config
    file of its own, and its last cell removes that file — the kernel's later ``open_vault`` read
    no config at all, without a word (client rounding and zone gone). MEMO_CONFIG is put back; and
    one naming a missing file is said (a warning from ``open_vault``)."""
    import nbclient

    from tests.inprocess import environment

    mine = tmp_path / "mine.toml"
    mine.write_text('timezone = "UTC"\n', encoding="utf-8")
    (tmp_path / "home").mkdir()  # no vault there: the notebook runs on the sample
    notebook = nbformat.read(NOTEBOOKS / "invoicing.ipynb", as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell(
        "import os, warnings\nprint('config:', os.environ.get('MEMO_CONFIG'))\n"
        "os.environ['MEMO_CONFIG'] = os.path.join(os.path.dirname(os.environ['MEMO_CONFIG']), 'gone.toml')\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    memo.open_vault(memo.sample_vault({str(tmp_path / 'sample')!r}))\n"
        "print('warned:', [str(w.message) for w in caught])"))
    with environment({"MEMO_CONFIG": str(mine), "MEMO_VAULT": None, "HOME": str(tmp_path / "home")}):
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = "".join(str(o.get("text", "")) for o in notebook.cells[-1].outputs)
    assert f"config: {mine}\n" in shown
    assert f"warned: ['MEMO_CONFIG names {tmp_path / 'gone.toml'}, which does not exist: no config file is read" \
        in shown


def test_the_invoicing_notebook_bills_yen_and_dinars_in_their_own_places(tmp_path):
    """Found by an analyst: with a client billed in JPY the notebook stopped at its check (it
    rounded every amount to the cent: 24497.55 where the invoice bills 24498), and the tables cut
    a BHD rate of 12.345 to 12.34 and an amount of 4.691 to 4.69."""
    from tests.inprocess import memo

    vault, config = tmp_path / "vault", tmp_path / "config.toml"
    config.write_text('timezone = "UTC"\n[clients."Yen Co"]\nhourlyRate = "9999"\ncurrency = "JPY"\n'
                      '[clients."Gulf"]\nhourlyRate = "12.345"\ncurrency = "BHD"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config)}
    for sid, client, end in (("y1", "Yen Co", "2026-06-02T11:27:00Z"), ("g1", "Gulf", "2026-06-03T09:23:00Z")):
        memo("session", "start", sid, "--project", sid, "--client", client, "--start-time",
             f"{end[:10]}T09:00:00Z", vault=vault, env=env)
        memo("session", "end", sid, "--project", sid, "--until", end, vault=vault, env=env)
    notebook = _invoicing_of_june(vault, config, tmp_path)
    shown = "".join(str(o.get("text", "")) + str((o.get("data") or {}).get("text/plain", ""))
                    for c in notebook.cells if c.cell_type == "code" for o in c.outputs)
    # 2.45 h × 9999 = 24497.55 → JPY 24498; 0.38 h × 12.345 = 4.6911 → BHD 4.691
    assert "24498" in shown and "24497.55" not in shown
    assert "12.345" in shown and "4.691" in shown
    draft = memo("--json", "report", "invoice", "--all", "--since", "2026-06-01", "--until", "2026-06-30",
                 vault=vault, env=env)
    assert {c: t["amount"] for c, t in json.loads(draft.stdout)["totals"].items()} == {"JPY": "24498", "BHD": "4.691"}


def _invoicing_of_june(vault: Path, config: Path, folder: Path) -> "nbformat.NotebookNode":
    """``invoicing.ipynb`` run on ``vault`` for June 2026 with the config file ``config``: the
    executed notebook."""
    import nbclient

    from tests.inprocess import environment

    notebook = nbformat.read(NOTEBOOKS / "invoicing.ipynb", as_version=4)
    [parameters] = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    parameters.source = (parameters.source.replace("VAULT = None", f"VAULT = {str(vault)!r}")
                         .replace("SINCE = None", "SINCE = '2026-06-01'").replace("UNTIL = None", "UNTIL = '2026-06-30'"))
    with environment({"MEMO_CONFIG": str(config), "MEMO_VAULT": None}):
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(folder)}}).execute()
    return notebook

"""The API-equivalent AI cost (issue 15 point 6): each turn's tokens priced offline with the
``genai-prices`` data at the turn's own date, per session, client and model. The figures below
are worked out by hand from the published prices the data holds (USD per million tokens) —
claude-sonnet-4-5 up to 200k input tokens: input 3, cache read 0.30, cache write 5 min 3.75,
cache write 1 h 6, output 15; above 200k input: input 6, output 22.50."""

from __future__ import annotations

import json
import re
from pathlib import Path
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from memo_analytics.analytics.cost import turn_cost, usage_of
from memo_analytics.config import Settings
from memo_analytics.services.prompts import record_prompt
from memo_analytics.services.requests import EndSessionRequest, RecordPromptRequest, StartSessionRequest
from memo_analytics.services.sessions import end_session, start_session
from memo_analytics.services.store import VaultStore
from tests.inprocess import memo

JAN = datetime(2026, 1, 5, 12, tzinfo=timezone.utc)
SMALL = {"input": 1000, "cacheRead": 3000, "cacheWrite": 200, "cacheWrite5m": 100, "cacheWrite1h": 100, "output": 200}


def test_a_turn_is_priced_with_its_cache_tiers():
    # 1000 × 3 + 3000 × 0.30 + 100 × 3.75 + 100 × 6 + 200 × 15 = 3000 + 900 + 375 + 600 + 3000 = 7875 per million
    assert turn_cost(SMALL, "claude-sonnet-4-5-20250929", JAN, "import:claude-code") == Decimal("0.007875")
    assert usage_of(SMALL, "import:claude-code") == {
        "input_tokens": 4200, "output_tokens": 200, "cache_read_tokens": 3000, "cache_write_tokens": 200,
        "cache_write_5m_tokens": 100, "cache_write_1h_tokens": 100}


def test_long_context_prices_apply_above_200k_input_tokens():
    # 300,000 × 6 + 1,000 × 22.50 = 1,822,500 per million
    assert turn_cost({"input": 300_000, "output": 1000}, "claude-sonnet-4-5", JAN) == Decimal("1.8225")


def test_reasoning_is_output_where_the_agent_logs_it_apart():
    tokens = {"input": 1000, "output": 100, "reasoning": 400}
    assert usage_of(tokens, "import:gemini")["output_tokens"] == 500
    assert usage_of(tokens, "import:codex")["output_tokens"] == 100  # Codex's output already holds its reasoning


def test_an_unknown_model_is_unpriced_never_guessed():
    assert turn_cost(SMALL, "<synthetic>", JAN) is None
    assert turn_cost(None, "claude-sonnet-4-5", JAN) == 0


@pytest.fixture
def costed(tmp_path):
    root = tmp_path / "vault"
    store = VaultStore(Settings(vault_root=root, timezone="UTC"))
    for sid, client, model, tokens in (("s1", "Acme", "claude-sonnet-4-5-20250929", SMALL),
                                       ("s2", "Acme", "claude-sonnet-4-5", {"input": 300_000, "output": 1000}),
                                       ("s3", "Globex", "<synthetic>", SMALL), ("s9", "Globex", "gpt-4o", {})):
        start_session(store, StartSessionRequest(session_id=sid, project="web", client=client,
                                                 start_time="2026-01-05T09:00:00Z"))
        record_prompt(store, RecordPromptRequest(body=f"work {sid}", session_id=sid, project="web", model=model,
                                                 created="2026-01-05T09:01:00Z",
                                                 extra={"tokens": tokens} if tokens else {}))
        end_session(store, EndSessionRequest(session_id=sid, project="web", until="2026-01-05T09:30:00Z"))
    store.close()
    return root


def test_costs_add_up_per_session_client_and_model(costed):
    report = json.loads(memo("--json", "activity", "--all", vault=costed).stdout)
    # unknown is null, not "0.0000" (read as free): s3's model has no price, s9 recorded no token counts
    # (a SpecStory export)
    assert {s["sessionId"]: s["costUsd"] for s in report["sessions"]} == {"s1": "0.0079", "s2": "1.8225",
                                                                          "s3": None, "s9": None}
    assert report["totalCostUsd"] == "1.8304"  # 0.007875 + 1.8225, rounded once
    assert report["costByClient"] == {"Acme": "1.8304", "Globex": "0.0000"}
    assert report["unpricedModels"] == ["<synthetic>"]
    assert report["costByModel"]["claude-sonnet-4-5"]["tokens"] == {"input": 300_000, "cacheRead": 0,
                                                                    "cacheWrite": 0, "output": 1000, "reasoning": 0}
    assert report["costByModel"]["<synthetic>"]["unpricedTurns"] == 1
    text = memo("activity", "--all", vault=costed).stdout
    assert "AI cost: USD 1.8304 (no price for <synthetic>)" in text


def test_a_turn_answered_by_two_models_is_priced_part_by_part(realdata, tmp_path):
    """A real Claude Code turn answered by Opus and by Haiku (titles, sub-tasks): each model's
    tokens are kept apart (``tokensByModel``) and priced at that model — one model's price for
    all of them would be a third off on this day (benchmarks/bench_cost.py)."""
    from memo_analytics.analytics.cost import stored_turn_cost
    from memo_analytics.domain.clock import from_iso

    source = realdata / "claude-code-jsonl/moredip-session-share/samples/claude-code-projects"
    vault = tmp_path / "v"
    memo("import", "claude-code", str(source / "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"), vault=vault)
    store = VaultStore(Settings(vault_root=vault, timezone="UTC"))
    rows = store.conn.execute("SELECT created, model, source, meta FROM records WHERE kind = 'prompt'").fetchall()
    store.close()
    split = [(created, model, src, json.loads(meta)) for created, model, src, meta in rows
             if "tokensByModel" in json.loads(meta)]
    assert split, "a turn with two models"
    created, model, src, meta = split[0]
    parts = meta["tokensByModel"]
    assert set(parts) == {"claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"}
    for key in ("input", "output", "cacheRead", "cacheWrite"):
        assert sum(p.get(key, 0) for p in parts.values()) == meta["tokens"][key]
    cost, priced = stored_turn_cost(meta, model, from_iso(created), src)
    at = from_iso(created)
    assert cost == sum(turn_cost(p, m, at, src) for m, p in parts.items())
    assert cost != turn_cost(meta["tokens"], model, at, src)  # one model's price would be wrong


def test_an_invoice_passes_the_ai_cost_through_with_the_clients_margin(costed, tmp_path):
    """``aiCostMargin`` adds one line: Acme's sessions cost USD 0.0079 + 1.8225 = 1.8304 (their
    printed costs); + 15 % and × 0.90 EUR/USD = 1.894464 → EUR 1.89. The hours stay the sessions'."""
    from .test_issued_invoices import ISSUER, xml_of

    config = tmp_path / "config.toml"
    acme = ('[clients.Acme]\nhourlyRate = "100"\ncurrency = "EUR"\ntaxRate = "19"\naddress = ["1 rue X"]\n'
            'city = "Paris"\ncountry = "FR"\naiCostMargin = "15"\n')
    config.write_text(ISSUER + acme, encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    refused = memo("activity", "--all", vault=costed, env=env, check=False)
    assert refused.returncode == 1 and "set aiCostExchangeRate (EUR per USD)" in refused.stderr
    config.write_text(ISSUER + acme + 'aiCostExchangeRate = "0.90"\n', encoding="utf-8")
    draft = json.loads(memo("--json", "report", "invoice", "--all", "--client", "Acme", "-o", str(tmp_path / "d.csv"),
                            vault=costed, env=env).stdout)
    # two parallel 30-minute sessions bill their union, 0.50 h × 100 = 50.00, + the AI usage line 1.89
    assert (draft["totals"]["EUR"]["amount"], draft["totalBillableHours"]) == ("51.89", 0.5)
    rows = (tmp_path / "d.csv").read_text(encoding="utf-8-sig")
    assert '"AI usage"' in rows and ',1.89' in rows
    preview = memo("report", "invoice", "--all", "--client", "Acme", vault=costed, env=env).stdout
    [usage] = [line for line in preview.splitlines() if "AI usage" in line]
    assert usage.endswith(": 1 × 1.89 = EUR 1.89") and " h ×" not in usage, usage  # one item, not an hour (billing person)
    issued = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme", "--since", "2026-01-01",
                             "--until", "2026-01-31", vault=costed, env=env).stdout)
    assert (issued["net"], issued["billableHours"]) == ("51.89", "0.50")
    root = xml_of(Path(issued["pdf"]))  # the XSD and the EN 16931 rules accept the one-unit line
    units = [n.get("unitCode") for n in root.xpath("//ram:BilledQuantity", namespaces={
        "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"})]
    assert units == ["HUR", "C62"]
    shown = memo("invoice", "show", issued["number"], vault=costed, env=env).stdout.splitlines()
    lines = [line.split(": ", 1)[1] for line in shown if line.startswith("  ") and not line.startswith("    ")]
    assert lines[0].endswith(" — 0.50 h × 100.00 = 50.00") and lines[1].endswith(" — 1.89"), shown  # no hours, no rate
    sessions = [line for line in shown if line.startswith("    session ")]
    assert [line.split(", ")[0] for line in sessions] == [  # the parallel second session bills nothing more
        "    session s1 (web): 30 minutes billed", "    session s2 (web): 0 minutes billed"]


def _copies(realdata: Path, tmp_path: Path, copies: int) -> Path:
    """The real Claude Code transcripts written ``copies`` times under other session ids: other
    conversations, whose costs add up."""
    folder = tmp_path / "projects"
    folder.mkdir()
    files = [p for p in sorted((realdata / "claude-code-jsonl").rglob("*.jsonl")) if "subagents" not in p.parts]
    for copy in range(copies):
        for number, path in enumerate(files):
            text = path.read_text(encoding="utf-8")
            for found in sorted(set(re.findall(r'"sessionId":\s*"([^"]+)"', text))):
                text = text.replace(found, f"{found}-c{copy}")
            (folder / f"c{copy}-{number:03d}.jsonl").write_text(text, encoding="utf-8")
    return folder


def test_the_lines_by_model_add_up_to_the_total_cost(realdata, tmp_path):
    """The AI cost table by model adds up to the total printed under it (each a sum of what a
    model cost in a session, rounded): on the real Claude Code transcripts, whose
    turns Opus, Sonnet and Haiku answered, and on the same transcripts imported three times over
    under other ids, where each session's rounding adds up."""
    folder = _copies(realdata, tmp_path, 3)
    vault = tmp_path / "vault"
    memo("import", "claude-code", str(folder), vault=vault)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    lines = {model: Decimal(totals["costUsd"]) for model, totals in report["costByModel"].items()}
    assert len([cost for cost in lines.values() if cost]) >= 3
    assert sum(lines.values()) == Decimal(report["totalCostUsd"]) == sum(Decimal(s["costUsd"]) for s in report["sessions"])


def test_a_client_filter_never_changes_what_a_session_or_a_model_cost(realdata, tmp_path):
    """Every cost figure is a sum of what one model cost in one session (rounded to 0.0001 USD):
    a model's cost over all clients is the sum of its cost per client, a model only one client's
    sessions used costs what that client's AI cost is, and a session costs the same in every
    report. Apportioned from the total, Opus cost 1.5156 in the whole report and 1.5157 with
    ``--client``, and Codex's model 7.4581 against its only client's 7.4579 (found by a helper)."""
    folder = _copies(realdata, tmp_path, 2)
    vault = tmp_path / "vault"
    memo("import", "claude-code", str(folder), "--client", "Acme", vault=vault)
    memo("import", "codex", str(realdata / "codex-rollouts"), "--client", "Feishu", vault=vault)
    whole = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    parts = {client: json.loads(memo("--json", "activity", "--all", "--client", client, vault=vault).stdout)
             for client in ("Acme", "Feishu")}
    for model, totals in whole["costByModel"].items():
        assert Decimal(totals["costUsd"]) == sum(Decimal(p["costByModel"].get(model, {}).get("costUsd", "0"))
                                                 for p in parts.values()), model
    codex_models = set(parts["Feishu"]["costByModel"]) - set(parts["Acme"]["costByModel"])
    assert codex_models and sum(Decimal(whole["costByModel"][m]["costUsd"]) for m in codex_models) == Decimal(
        whole["costByClient"]["Feishu"]) == Decimal(parts["Feishu"]["totalCostUsd"]) > 0
    costs = {s["id"]: s["costUsd"] for s in whole["sessions"]}
    assert all(costs[s["id"]] == s["costUsd"] for p in parts.values() for s in p["sessions"])
    assert Decimal(whole["totalCostUsd"]) == sum(Decimal(c) for c in whole["costByClient"].values())


@pytest.mark.parametrize("bad", ["abc", "NaN", "-1", "Infinity", ["1"], {"a": 1}, 7])
def test_a_damaged_price_in_the_cost_cache_is_worked_out_again(costed, bad):
    """A value of ``.memo/cost-cache.json`` that is not a finite price text (or null) is priced
    again — the report is the one without a cache — and replaced in the file."""
    clean = memo("--json", "activity", "--all", vault=costed).stdout
    cache = costed / ".memo" / "cost-cache.json"
    data = json.loads(cache.read_text())
    key = next(k for k, v in data["prices"].items() if v is not None)
    data["prices"][key] = bad
    cache.write_text(json.dumps(data))
    assert memo("--json", "activity", "--all", vault=costed).stdout == clean
    assert json.loads(cache.read_text())["prices"][key] not in (bad, None)


def test_a_session_of_0_minutes_left_off_an_invoice_is_said_with_its_ai_cost(costed, tmp_path):
    """A session of 0 minutes is left off an invoice by default — its AI cost too — and the
    note says so; ``--zero-minutes`` bills it: the AI line grows by its cost (USD 0.0079 more,
    the s1 figures: 1.8304 + 0.0079 = 1.8383; + 15 % = 2.114045 → USD 2.11 against 2.10)."""
    from .test_issued_invoices import ISSUER

    store = VaultStore(Settings(vault_root=costed, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="s4", project="web", client="Acme",
                                             start_time="2026-01-06T09:00:00Z"))
    record_prompt(store, RecordPromptRequest(body="one question", session_id="s4", project="web",
                                             model="claude-sonnet-4-5-20250929", created="2026-01-06T09:00:00Z",
                                             extra={"tokens": SMALL}))
    end_session(store, EndSessionRequest(session_id="s4", project="web", until="2026-01-06T09:00:00Z"))
    store.close()
    config = tmp_path / "config.toml"
    config.write_text(ISSUER + '[clients.Acme]\nhourlyRate = "100"\ncurrency = "USD"\naddress = ["1 rue X"]\n'
                      'city = "Paris"\ncountry = "FR"\naiCostMargin = "15"\ntaxRate = "20"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    args = ["report", "invoice", "--all", "--client", "Acme", "--force"]
    draft = memo(*args, "-o", str(tmp_path / "d.csv"), vault=costed, env=env)
    assert draft.stderr.strip().splitlines()[0] == ("note: billable sessions of the period left off: 1 session of 0 "
                                                    "minutes, with its AI cost (--zero-minutes bills it)")
    assert json.loads(memo("--json", *args, "-o", str(tmp_path / "d.csv"), vault=costed, env=env).stdout)[
        "leftOff"] == {"alreadyInvoiced": 0, "zeroMinutes": 1, "open": 0, "unpricedTurns": 0}
    assert ',2.10' in (tmp_path / "d.csv").read_text(encoding="utf-8-sig")
    memo(*args, "--zero-minutes", "-o", str(tmp_path / "z.csv"), vault=costed, env=env)
    assert ',2.11' in (tmp_path / "z.csv").read_text(encoding="utf-8-sig")
    issued = json.loads(memo("--json", "invoice", "issue", "--all", "--client", "Acme", "--since", "2026-01-01",
                             "--until", "2026-01-31", "--zero-minutes", "--exchange-rate", "0.92",  # VAT in USD
                             vault=costed, env=env).stdout)
    assert (issued["net"], issued["leftOff"]["zeroMinutes"]) == ("52.11", 0)


def test_turns_of_a_model_without_a_price_are_said_to_be_left_out_of_the_invoices_ai_cost(costed, tmp_path):
    """A session whose model has no price cost "0.0000" and the invoice's AI line left its turns
    out without a word (found by a helper): the line says so, and so does the command."""
    from .test_cli import pdf_text

    store = VaultStore(Settings(vault_root=costed, timezone="UTC"))
    start_session(store, StartSessionRequest(session_id="s4", project="web", client="Acme",
                                             start_time="2026-01-06T09:00:00Z"))
    record_prompt(store, RecordPromptRequest(body="work s4", session_id="s4", project="web", model="aide-gpt-5",
                                             created="2026-01-06T09:01:00Z", extra={"tokens": SMALL}))
    end_session(store, EndSessionRequest(session_id="s4", project="web", until="2026-01-06T09:30:00Z"))
    store.close()
    config = tmp_path / "config.toml"
    config.write_text('[clients.Acme]\nhourlyRate = "100"\ncurrency = "USD"\naiCostMargin = "15"\n', encoding="utf-8")
    env = {"MEMO_CONFIG": str(config), "HOME": str(tmp_path)}
    pdf = tmp_path / "d.pdf"
    draft = memo("report", "invoice", "--all", "--client", "Acme", "-o", str(pdf), vault=costed, env=env)
    assert "note: the AI cost leaves out 1 turn of models without a price (memo activity names them)" in draft.stderr
    assert "left off" not in draft.stderr  # no session was: a turn is not one
    assert "1 turn of models without a price (aide-gpt-5) not in it" in " ".join(pdf_text(pdf).split())
    said = json.loads(memo("--json", "report", "invoice", "--all", "--client", "Acme", "-o", str(tmp_path / "j.csv"),
                           vault=costed, env=env).stdout)
    assert said["leftOff"]["unpricedTurns"] == 1


def test_two_runs_saving_the_cost_cache_keep_each_others_prices(tmp_path):
    """Two runs that loaded the same ``cost-cache.json`` and priced different turns both keep
    their prices: the second save takes in what the first wrote (it had replaced the file with
    its own entries alone, and the first run's prices were worked out again next time)."""
    from memo_analytics.services.pricing import PriceCache

    path = tmp_path / "cost-cache.json"
    PriceCache(path).save()  # nothing added: nothing written
    assert not path.exists()
    one, two = PriceCache(path), PriceCache(path)
    one.add({"claude-sonnet-4-5|2026-01-05|input=10": "0.00003"})
    two.add({"gpt-5|2026-01-05|input=10": "0.0000125", "unknown|2026-01-05|input=1": None})
    one.save()
    two.save()
    assert PriceCache(path).entries == {"claude-sonnet-4-5|2026-01-05|input=10": "0.00003",
                                        "gpt-5|2026-01-05|input=10": "0.0000125", "unknown|2026-01-05|input=1": None}


def test_the_prompts_frame_gives_each_turns_tokens_as_the_report_counts_them(realdata, tmp_path):
    """An analyst's wish: tokens per turn in ``vault.prompts()`` (and so in the Parquet export and
    DuckDB), not only the report's totals. Summed per session they are each session's ``tokens``
    in ``memo activity``, on the real Claude Code and Codex transcripts."""
    import polars as pl

    import memo_analytics

    vault = tmp_path / "vault"
    memo("import", "claude-code", str(_copies(realdata, tmp_path, 1)), vault=vault)
    memo("import", "codex", str(realdata / "codex-rollouts"), vault=vault)
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    columns = {"input": "input_tokens", "cacheRead": "cache_read_tokens", "cacheWrite": "cache_write_tokens",
               "output": "output_tokens", "reasoning": "reasoning_tokens"}
    with memo_analytics.open_vault(vault) as opened:
        turns = opened.prompts()
    assert all(turns.schema[c] == pl.Int64 for c in columns.values())
    summed = {(row["project"], row["session_id"]): row for row in turns.group_by("project", "session_id").agg(
        pl.col(*columns.values()).sum()).iter_rows(named=True)}
    counted = [s for s in report["sessions"] if s["tokens"]["output"]]
    assert len(counted) >= 10 and any(s["tokens"]["reasoning"] for s in counted)
    for session in report["sessions"]:
        row = summed[(session["project"], session["sessionId"])]
        assert {key: row[column] for key, column in columns.items()} == session["tokens"], session["sessionId"]


def test_a_token_count_no_turn_can_have_counts_nothing_and_never_breaks_a_report(tmp_path):
    """Found by an attacker: a Gemini chat whose message claimed 10**30 input tokens was imported
    as it stood, and every cost report of the vault — `memo activity`, the timesheet, MCP, the
    API — died of decimal.InvalidOperation; 10**26 priced the turn at USD 2.5e20. A count above a
    billion tokens counts nothing, at import and in a record edited by hand."""
    chats = tmp_path / "g"
    chats.mkdir()
    (chats / "chat.json").write_text(json.dumps({
        "sessionId": "t", "projectHash": "ab", "startTime": "2026-10-01T10:00:00Z", "lastUpdated": "2026-10-01T10:10:00Z",
        "messages": [{"id": "1", "timestamp": "2026-10-01T10:00:00Z", "type": "user", "content": "hello"},
                     {"id": "2", "timestamp": "2026-10-01T10:05:00Z", "type": "gemini", "content": "ok",
                      "model": "gemini-2.5-pro", "tokens": {"input": 10**30, "output": 10}}]}), encoding="utf-8")
    vault = tmp_path / "vault"
    memo("import", "gemini", str(chats), vault=vault)
    [turn_file] = (vault / "projects").glob("*/prompts/*.md")
    assert "1000000000000000000000000000000" not in turn_file.read_text(encoding="utf-8")
    report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert report["costByModel"]["gemini-2.5-pro"]["tokens"]["input"] == 0
    assert report["costByModel"]["gemini-2.5-pro"]["tokens"]["output"] == 10
    # the same count put into the file by hand
    text = turn_file.read_text(encoding="utf-8").replace("output: 10", f"output: {10**30}", 1)
    assert f"output: {10**30}" in text
    turn_file.write_text(text, encoding="utf-8")
    memo("reindex", vault=vault)
    again = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
    assert Decimal(again["totalCostUsd"]) < 1 and again["costByModel"]["gemini-2.5-pro"]["tokens"]["output"] == 0
    import memo_analytics

    with memo_analytics.open_vault(vault) as analyst:  # the analyst's frame counts what the report counts
        assert analyst.prompts()["output_tokens"].to_list() == [None]


def test_a_turn_split_into_many_model_parts_counts_no_more_than_a_turn_can(tmp_path):
    """Found by an attacker: the billion-token bound held per count, so a turn whose
    ``tokensByModel`` had 300 parts of just under a billion each (in a transcript, or written by
    hand) priced USD 33 million — and reached invoices through a client's AI-cost margin. Each
    kind summed over a turn's parts is bounded as one count is: beyond it the turn counts nothing."""
    vault = tmp_path / "vault"
    memo("session", "start", "s1", "--project", "shop", "--start-time", "2026-11-02T09:00:00+00:00", vault=vault)
    memo("prompt", "record", "--session-id", "s1", "--project", "shop", "--created", "2026-11-02T09:05:00+00:00",
         "--body", "hello", vault=vault)
    memo("session", "end", "s1", "--project", "shop", "--until", "2026-11-02T10:00:00+00:00", vault=vault)
    [turn_file] = (vault / "projects").glob("*/prompts/*.md")
    original = turn_file.read_text(encoding="utf-8")

    def cost_with(parts: int, each: int) -> Decimal:
        head, rest = original[4:].split("\n---", 1)
        head = head.replace("\nmodel: null", "")  # named once: a key given twice is refused
        head += "\nmodel: claude-opus-4-1-20250805\ntokens: {input: 1000, output: 10}\ntokensByModel:\n" + "\n".join(
            f"  claude-opus-4-1-20250805-{n}: {{input: {each}, output: 10}}" for n in range(parts))
        turn_file.write_text("---\n" + head + "\n---" + rest, encoding="utf-8")
        memo("reindex", vault=vault)
        return Decimal(json.loads(memo("--json", "activity", "--all", vault=vault).stdout)["totalCostUsd"])

    assert 0 < cost_with(3, 1000) < 1  # a turn answered by three models: priced part by part
    assert cost_with(300, 999_999_999) == 0  # 3 × 10**11 input tokens in one turn: no turn has them


def test_a_claude_code_sessions_sub_agent_calls_count_in_its_tokens(realdata, tmp_path):
    """Found by an analyst: newer Claude Code keeps each sub-agent's model calls in
    ``<session>/subagents/agent-*.jsonl``; memo counted only those the transcript relayed
    (``agent_progress``), so 0ccf1a04's five sub-agents (10 calls) cost nothing and 4b2030ed's
    second call was dropped. Each call counts once (per message id, its last record), for the
    session's prompts, as ccusage counts them."""
    import memo_analytics as memo_api
    import polars as pl

    folder = realdata / "claude-code-jsonl" / "moredip-session-share" / "samples" / "claude-code-projects"
    vault = tmp_path / "v"
    memo("import", "claude-code", str(folder), vault=vault)
    usage = memo_api.open_vault(str(vault)).usage()
    for session in ("0ccf1a04", "4b2030ed"):
        calls: dict[str, dict] = {}
        files = [folder / f"{session_file.name}" for session_file in folder.glob(f"{session}*.jsonl")]
        files += sorted(folder.glob(f"{session}*/subagents/*.jsonl"))
        for path in files:
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                message = record.get("message") if record.get("type") == "assistant" else (
                    ((record.get("data") or {}).get("message") or {}).get("message")
                    if record.get("type") == "progress" else None)
                if isinstance(message, dict) and isinstance(message.get("usage"), dict) and message.get("id"):
                    calls[message["id"]] = message["usage"]
        expected = {name: sum(int(call.get(field) or 0) for call in calls.values()) for name, field in (
            ("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
            ("cache_read_tokens", "cache_read_input_tokens"), ("cache_write_tokens", "cache_creation_input_tokens"))}
        got = usage.filter(pl.col("session_id").str.contains(session)).select(list(expected)).sum().row(0, named=True)
        assert got == expected, session
    assert expected["cache_write_tokens"] > 11560 + 6682  # 4b2030ed: the main file's and both sub-agent calls


def test_an_answer_written_before_a_sessions_first_prompt_counts_for_it(realdata, tmp_path):
    """Found by an analyst beside ccusage: a resumed Claude Code session replays the answer its
    last run did not write (msg_015oywKF9VvNjAdXTg7S4ZDm: 40,088 tokens read from the cache, 1,004
    written) before its first human prompt; memo billed the session from that moment but dropped
    its tokens. It counts for the session's first prompt: the file's totals are ccusage's."""
    import memo_analytics as memo_api

    fixture = realdata / "multi-agent/Mai0313-VibeCodingTracker/tests/fixtures/sessions/claude_code.jsonl"
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    (folder / "claude_code.jsonl").write_bytes(fixture.read_bytes())
    vault = tmp_path / "v"
    memo("import", "claude-code", str(folder.parent), vault=vault)
    usage = memo_api.open_vault(str(vault)).usage()
    totals = usage.select("cache_read_tokens", "cache_write_tokens", "output_tokens").sum().row(0, named=True)
    assert totals == {"cache_read_tokens": 1_093_509, "cache_write_tokens": 99_004, "output_tokens": 3_860}


def test_a_transcript_cut_from_the_top_counts_no_answer_twice(realdata, tmp_path):
    """Found by an operator leaving ``memo watch`` running: a Claude Code transcript cut from the
    top (its first 219 lines gone, turn 1's answers going on after the cut) kept its turns and
    minutes, but the answers left before the file's first prompt counted again — for turn 2 —
    and the AI cost rose from USD 2.3932 to 3.5846. They are turn 1's, counted already."""
    import memo_analytics as memo_api

    source = realdata / ("claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/"
                         "sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    folder, vault = tmp_path / "projects" / "p", tmp_path / "v"
    folder.mkdir(parents=True)
    copy = folder / source.name
    copy.write_bytes(source.read_bytes())

    def totals() -> dict:
        report = json.loads(memo("--json", "activity", "--all", vault=vault).stdout)
        usage = memo_api.open_vault(str(vault)).usage()
        return {"minutes": report["totalDurationMinutes"], "prompts": report["totalPrompts"],
                "cost": report["totalCostUsd"],
                **usage.select("input_tokens", "output_tokens", "cache_read_tokens").sum().row(0, named=True)}

    memo("import", "claude-code", str(folder.parent), vault=vault)
    before = totals()
    assert before["cost"] == "2.3932"
    copy.write_bytes(b"".join(source.read_bytes().splitlines(keepends=True)[219:]))
    memo("import", "claude-code", str(folder.parent), vault=vault)
    assert totals() == before


def test_a_sub_agent_file_written_after_its_transcript_was_imported_is_counted_at_the_next_import(tmp_path):
    """Found by an attacker: a transcript imported before its ``subagents/`` file existed (or was
    complete) stayed "unchanged" — its sub-agent's tokens never counted, by import or ``memo watch``.
    What the importer reads beside a transcript is part of what "unchanged" compares."""
    import memo_analytics as memo_api

    session = "cccccccc-1111-2222-3333-444444444444"
    folder = tmp_path / "projects" / "p"
    folder.mkdir(parents=True)
    lines = [{"type": "user", "sessionId": session, "uuid": "u1", "timestamp": "2026-03-02T09:00:00Z",
              "message": {"role": "user", "content": "fix the login"}},
             {"type": "assistant", "sessionId": session, "uuid": "a1", "timestamp": "2026-03-02T09:01:00Z",
              "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
                          "usage": {"input_tokens": 100, "output_tokens": 50}}}]
    (folder / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    vault = tmp_path / "v"
    memo("import", "claude-code", str(folder.parent), vault=vault)

    def tokens():
        return memo_api.open_vault(str(vault)).usage().select("input_tokens", "output_tokens").sum().row(0)

    assert tokens() == (100, 50)
    sub = folder / session / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.jsonl").write_text(json.dumps(
        {"type": "assistant", "sessionId": session, "uuid": "s1", "timestamp": "2026-03-02T09:05:00Z", "isSidechain": True,
         "message": {"id": "sub1", "model": "claude-sonnet-4-5", "content": [],
                     "usage": {"input_tokens": 7777, "output_tokens": 3333}}}) + "\n")
    again = json.loads(memo("--json", "import", "claude-code", str(folder.parent), vault=vault).stdout)
    assert tokens() == (7877, 3383), again
    assert "unchanged" in memo("import", "claude-code", str(folder.parent), vault=vault).stdout  # and then it is

"""A grown JSON Lines transcript read on from its checkpoint gives what a whole read gives (issue 16
point 3): every real Claude Code, Codex and Copilot file, cut at many line boundaries and inside a
line."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import orjson
import pytest

from memo_analytics.services.importers import claude_code, codex, copilot, resume
from memo_analytics.services.importers.common import ImportOptions
from memo_analytics.services.importers.resume import Start, write_checkpoint

OPTIONS = ImportOptions()
KINDS = {"claude-code-jsonl": claude_code, "codex-rollouts": codex}
#: the multi-agent fixtures, by file name
BY_NAME = {"claude_code": claude_code, "codex": codex, "copilot": copilot}


def _files(realdata: Path) -> list[tuple[object, Path]]:
    found = [(module, path) for folder, module in KINDS.items() for path in sorted((realdata / folder).rglob("*.jsonl"))]
    for path in sorted((realdata / "multi-agent").rglob("*.jsonl")):
        module = next((m for name, m in BY_NAME.items() if path.name.startswith(name)), None)
        if module is not None:
            found.append((module, path))
    assert {m for m, _ in found} == {claude_code, codex, copilot}
    return found


def _same(result) -> dict:
    return dataclasses.asdict(result)


def _read_on(module, path: Path, cache: Path, checkpoint) -> tuple[object, object, bool]:
    write_checkpoint(cache, checkpoint)
    return module.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache))


@pytest.fixture(autouse=True)
def _every_file_keeps_a_checkpoint(monkeypatch):
    monkeypatch.setattr(resume, "RESUME_FROM_BYTES", 0)


def test_a_file_read_on_from_any_line_or_inside_one_equals_the_whole_read(realdata, tmp_path):
    files = _files(realdata)
    assert len(files) >= 20
    compared = 0
    for module, source in files:
        data = source.read_bytes()
        copy = tmp_path / "whole" / source.name
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(data)
        whole = _same(module.parse(copy, OPTIONS))
        ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
        cuts = sorted({ends[i * len(ends) // 6] for i in range(6) if ends} | {len(data) // 2 + 1, len(data) - 1})
        for cut in cuts:
            grown = tmp_path / source.name  # the same path: the transcripts name it
            grown.write_bytes(data[:cut])
            _, checkpoint, resumed = module.parse_from(grown, OPTIONS)
            assert not resumed and checkpoint is not None
            assert checkpoint.offset == max(data.rfind(b"\n", 0, cut) + 1, 3 if data.startswith(b"\xef\xbb\xbf") else 0)
            with grown.open("ab") as handle:  # appended in place: the same file
                handle.write(data[cut:])
            result, after, resumed = _read_on(module, grown, tmp_path / "cache.fold", checkpoint)
            assert resumed, (source.name, cut)
            assert _same(dataclasses.replace(result, transcripts=[dataclasses.replace(t, path=copy) for t in result.transcripts])) \
                == whole, (source.name, cut)
            assert after.offset == data.rfind(b"\n") + 1
            compared += 1
    assert compared >= 100


def test_a_file_rewritten_truncated_or_replaced_is_read_whole(realdata, tmp_path):
    source = realdata / "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    data = source.read_bytes()
    assert len(data) > 300_000
    path = tmp_path / source.name
    path.write_bytes(data)
    _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    cache = tmp_path / "cache.fold"

    def whole_read_after(change) -> None:
        change()
        result, _, resumed = _read_on(claude_code, path, cache, checkpoint)
        assert not resumed and _same(result) == _same(claude_code.parse(path, OPTIONS))

    def in_the_middle() -> None:  # one byte of a line in the middle, same size, then a line more
        middle = data.find(b'"isSidechain":true', len(data) // 2)
        assert middle > 0
        with path.open("r+b") as handle:
            handle.seek(middle)
            handle.write(b'"isSidechain":null')
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")

    def first_line() -> None:
        with path.open("r+b") as handle:
            handle.write(data[:20].replace(b"{", b" ", 1))

    def truncated() -> None:
        path.write_bytes(data[: checkpoint.offset // 2])

    def replaced() -> None:  # another file with the same bytes and more (a new inode)
        other = tmp_path / "other.jsonl"
        other.write_bytes(data + b"\n")
        os.replace(other, path)

    for change in (in_the_middle, first_line, truncated, replaced):
        path.write_bytes(data)
        _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
        whole_read_after(change)
    # another importer's checkpoint (another fold version), or another file's, is not used either
    path.write_bytes(data)
    _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    write_checkpoint(cache, checkpoint, "claude-code:one")
    assert not codex.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache, "claude-code:one"))[2]
    assert not claude_code.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache, "claude-code:other"))[2]
    assert claude_code.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache, "claude-code:one"))[2]


def _copied(realdata: Path, tmp_path: Path, name: str) -> tuple[Path, object, object]:
    """A real Claude Code transcript copied into ``tmp_path``: ``(its path, the checkpoint a
    whole read leaves, what a whole read gives)``."""
    copy = tmp_path / name
    copy.write_bytes((realdata / "claude-code-jsonl/moredip-session-share/samples/claude-code-projects/" / name).read_bytes())
    _, checkpoint, _ = claude_code.parse_from(copy, OPTIONS)
    return copy, checkpoint, _same(claude_code.parse(copy, OPTIONS))


def test_a_tampered_checkpoint_is_refused_runs_nothing_and_changes_no_class(realdata, tmp_path, monkeypatch):
    """The state is never unpickled: a pickle, a state naming another class, one that sets a
    class's attribute, one that does not fold (a set turned into a dict) — each costs a whole read."""
    monkeypatch.chdir(tmp_path)
    copy, checkpoint, whole = _copied(realdata, tmp_path, "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    cache = tmp_path / "cache.fold"

    class Boom:
        def __reduce__(self):
            return (os.system, ("touch pwned",))

    good = resume.decode_state(checkpoint.state, claude_code._Fold(copy))
    assert type(good) is claude_code._Fold
    encoded = orjson.loads(checkpoint.state)
    broken = orjson.loads(checkpoint.state)
    at = broken.index("seen_uuids") + 1
    broken[at] = ["d", 10**6]  # a dict where the fold keeps a set: the next line fails to fold
    states = [
        pickle.dumps(Boom()),
        orjson.dumps(["o", 0, "posix.system", "x", 1]),
        orjson.dumps(["o", 0, "pathlib.PosixPath", "_str", "/tmp/pwned"]),
        orjson.dumps(["l", 0, ["o", 1, "memo_analytics.services.importers.claude_code.PromptSieve"], "junk"]),
        orjson.dumps(["dt", "2026-01-01T00:00:00+05:00"]),
        orjson.dumps(broken),
        orjson.dumps(encoded)[:-9],
    ]
    last = next(orjson.loads(line) for line in reversed(copy.read_bytes().splitlines()) if b'"sessionId"' in line)
    with copy.open("ab") as handle:  # a new prompt: its uuid goes into the set of those seen
        handle.write(orjson.dumps({"type": "user", "sessionId": last["sessionId"], "uuid": "7f3c2a10-0000-4000-8000-0000000000d4",
                                   "timestamp": "2026-01-23T10:00:00.000Z", "message": {"role": "user", "content": "and the docs"}})
                     + b"\n")
    grown = _same(claude_code.parse(copy, OPTIONS))
    for state in states:
        write_checkpoint(cache, dataclasses.replace(checkpoint, state=state))
        result, _, resumed = claude_code.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))
        assert not resumed and _same(result) == grown, state[:60]
    assert not (tmp_path / "pwned").exists()
    assert not hasattr(claude_code.PromptSieve, "junk") and Path("/x").as_posix() == "/x"
    assert whole != grown  # the line added counts
    # the real state, written back, is used again
    write_checkpoint(cache, checkpoint)
    assert claude_code.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))[2]


def test_the_state_keeps_shared_objects_shared():
    """A prompt that both the sieve and a usage entry hold is one object after a round trip: the
    tokens added to it at the end count for the turn."""
    fold = claude_code._Fold(Path("/t.jsonl"))
    fold.feed(1, {"type": "user", "sessionId": "s", "uuid": "u1", "timestamp": "2026-01-01T00:00:00Z",
                  "message": {"role": "user", "content": "hello"}}, OPTIONS)
    fold.feed(2, {"type": "assistant", "sessionId": "s", "uuid": "a1", "timestamp": "2026-01-01T00:00:05Z",
                  "message": {"id": "m1", "model": "claude-x", "usage": {"input_tokens": 7, "output_tokens": 3}}},
              OPTIONS)
    back = resume.decode_state(resume.encode_state(fold), claude_code._Fold(Path("/t.jsonl")))
    session = back.sessions["s"]
    assert session.usage["m1"][0] is session.sieve.prompts[0]
    result = back.finish()
    assert result.transcripts[0].prompts[0].tokens == {"input": 7, "output": 3}
    assert result.transcripts[0].activity[0].tzinfo is not None


def test_a_checkpoint_file_that_is_a_fifo_a_link_or_cut_short_is_not_used(realdata, tmp_path):
    path, checkpoint, whole = _copied(realdata, tmp_path, "4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl")
    fifo = tmp_path / "fifo.fold"
    os.mkfifo(fifo)  # opened for reading it would wait for a writer for ever
    real = tmp_path / "real.fold"
    write_checkpoint(real, checkpoint)
    link = tmp_path / "link.fold"
    link.symlink_to(real)
    cut = tmp_path / "cut.fold"
    cut.write_bytes(real.read_bytes()[:-40])
    for cache in (fifo, link, cut, tmp_path / "missing.fold"):
        result, _, resumed = claude_code.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache))
        assert not resumed and _same(result) == whole, cache.name
    assert claude_code.parse_from(path, OPTIONS, Start(checkpoint.meta(), real))[2]  # the file itself holds


def test_a_state_with_other_attributes_keys_or_types_is_refused_or_read_whole(realdata, tmp_path):
    """Found by a second attempt to break it: a state that decodes and folds but would hand the
    import values of other types, attributes no such object has, or set members crafted to share
    one hash — each costs a whole read, never a traceback or a hang."""
    copy, checkpoint, _ = _copied(realdata, tmp_path, "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    with copy.open("ab") as handle:
        handle.write(b"\n")
    whole = _same(claude_code.parse(copy, OPTIONS))
    cache = tmp_path / "cache.fold"
    base = orjson.loads(checkpoint.state)

    def changed(attribute: str, value) -> bytes:
        state = list(base)
        state[state.index(attribute) + 1] = value
        return orjson.dumps(state)

    def extra(attribute: str, value) -> bytes:
        return orjson.dumps([*base, attribute, value])

    states = {
        "problems of another type": changed("problems", ["l", 10**6, 5]),
        "a mapping with a number for a key": changed("uuid_session", ["d", 10**6, 1, "x"]),
        "hash-colliding set members": changed("seen_uuids", ["s", 10**6, [-1, -2], [-2, -1]]),
        "an attribute a fold does not have": extra("junk", 1),
        "a fold without one of its attributes": orjson.dumps(base[:-2]),
        "set members that are not text": changed("seen_uuids", ["s", 10**6, 5]),
        "pairs that are not texts": changed("seen_uuids", ["S2", 10**6, -1, -2]),
        "an odd number of pair members": changed("seen_uuids", ["S2", 10**6, "a", "b", "c"]),
        "instants in another zone": changed("seen_uuids", ["L", 10**6, "2026-01-01T00:00:00+05:00"]),
    }
    for why, state in states.items():
        write_checkpoint(cache, dataclasses.replace(checkpoint, state=state))
        result, _, resumed = claude_code.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))
        assert not resumed and _same(result) == whole, why


def test_a_resumed_result_of_other_types_is_not_used(realdata, tmp_path):
    copy, checkpoint, whole = _copied(realdata, tmp_path, "0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl")
    fold = resume.decode_state(checkpoint.state, claude_code._Fold(copy))
    session = next(iter(fold.sessions.values()))
    cache = tmp_path / "cache.fold"
    for spoil in (lambda: fold.problems.append(5),  # noqa: B023
                  lambda: session.transcript.activity.append("hello"),  # noqa: B023
                  lambda: setattr(session.sieve.prompts[0], "text", 12345)):  # noqa: B023
        fold = resume.decode_state(checkpoint.state, claude_code._Fold(copy))
        session = next(iter(fold.sessions.values()))
        spoil()
        write_checkpoint(cache, dataclasses.replace(checkpoint, state=resume.encode_state(fold)))
        result, _, resumed = claude_code.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))
        assert not resumed and _same(result) == whole


def test_a_resumed_read_checks_for_secrets_only_the_texts_its_checkpoint_did_not_hold(realdata, tmp_path, monkeypatch):
    """The texts of the checkpoint a read went on from were checked when it was kept (by the same
    redaction: its code is part of the checkpoint's version); keeping the state anew checks only
    the new ones — a grown file no longer pays the secret detector for its whole history — and a
    new text holding a secret still keeps no checkpoint."""
    source = realdata / "claude-code-jsonl/d-kimuson-claude-code-viewer/mock-global-claude-dir/projects/sample-project/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl"
    data = source.read_bytes()
    cut = data.rfind(b"\n", 0, len(data) // 2) + 1
    grown = tmp_path / source.name
    grown.write_bytes(data[:cut])
    _, checkpoint, _ = claude_code.parse_from(grown, OPTIONS)
    old_texts = {t for t in _texts(orjson.loads(checkpoint.state)) if len(t) > 3}
    checked: list[str] = []
    real = resume._secret_free
    monkeypatch.setattr(resume, "_secret_free", lambda text: checked.append(text) or real(text))
    with grown.open("ab") as handle:
        handle.write(data[cut:])
    _, after, resumed = _read_on(claude_code, grown, tmp_path / "cache.fold", checkpoint)
    assert resumed and after is not None
    new_texts = {t for t in _texts(orjson.loads(after.state)) if len(t) > 3 and not _instant(t)} - old_texts
    assert new_texts and {t for t in checked if len(t) > 3} == new_texts  # every new text checked, no old one

    secret = "sk-ant-api03-" + "Qx7" * 31 + "AA"
    last = orjson.loads(data.splitlines()[-1])
    with grown.open("ab") as handle:
        handle.write(orjson.dumps({"type": "user", "sessionId": last["sessionId"], "cwd": last.get("cwd"),
                                   "uuid": "7f3c2a10-0000-4000-8000-0000000000c9", "timestamp": "2026-01-21T21:12:00.000Z",
                                   "message": {"role": "user", "content": f"the key is {secret}"}}) + b"\n")
    _, none, resumed = _read_on(claude_code, grown, tmp_path / "cache2.fold", after)
    assert resumed and none is None


def _instant(text: str) -> bool:
    """An instant as the state keeps it (a datetime, not a text)."""
    from datetime import datetime

    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _texts(tree) -> set[str]:
    if isinstance(tree, str):
        return {tree}
    return set().union(*map(_texts, tree)) if isinstance(tree, list) else set()


def test_a_text_longer_than_any_record_holds_keeps_no_checkpoint(tmp_path):
    """A 1.2 MB prompt is refused as a turn (over MAX_BODY_BYTES); the checkpoint kept its whole
    text in the vault's folder all the same (a 200 MB line made a 191 MB vault: found by a helper)."""
    from memo_analytics.config import MAX_BODY_BYTES

    line = {"type": "user", "sessionId": "big", "uuid": "7f3c2a10-0000-4000-8000-0000000000d1", "cwd": "/w/app",
            "timestamp": "2026-01-21T21:12:00.000Z", "message": {"role": "user", "content": "x" * (MAX_BODY_BYTES + 1)}}
    path = tmp_path / "big.jsonl"
    path.write_bytes(orjson.dumps(line) + b"\n")
    result, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    assert checkpoint is None and len(result.transcripts[0].prompts) == 1
    line["message"]["content"] = "x" * MAX_BODY_BYTES
    path.write_bytes(orjson.dumps(line) + b"\n")
    assert claude_code.parse_from(path, OPTIONS)[1] is not None

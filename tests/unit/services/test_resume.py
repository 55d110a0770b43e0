"""A grown JSON Lines transcript read on from its checkpoint gives what a whole read gives (issue 16
point 3): every real Claude Code, Codex and Copilot file, cut at many line boundaries and inside a
line."""

from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

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
            assert checkpoint.offset == data.rfind(b"\n", 0, cut) + 1 or checkpoint.offset == 3  # complete lines only
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
    source = realdata / "claude-code-jsonl/moredip-session-share/samples/claude-code-projects/4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    data = source.read_bytes()
    path = tmp_path / source.name
    path.write_bytes(data)
    _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    cache = tmp_path / "cache.fold"
    # the first line edited in place (same inode, grown): the head digest differs
    with path.open("r+b") as handle:
        handle.write(data[:20].replace(b"{", b" ", 1))
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n")
    result, _, resumed = _read_on(claude_code, path, cache, checkpoint)
    assert not resumed and _same(result) == _same(claude_code.parse(path, OPTIONS))
    # truncated below the checkpoint
    path.write_bytes(data[: checkpoint.offset // 2])
    result, _, resumed = _read_on(claude_code, path, cache, checkpoint)
    assert not resumed and _same(result) == _same(claude_code.parse(path, OPTIONS))
    # replaced by another file with the same bytes and more (a new inode)
    other = tmp_path / "other.jsonl"
    other.write_bytes(data + b"\n")
    os.replace(other, path)
    result, _, resumed = _read_on(claude_code, path, cache, checkpoint)
    assert not resumed and _same(result) == _same(claude_code.parse(path, OPTIONS))
    # another importer's checkpoint (another fold version) is not used either
    path.write_bytes(data)
    _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    assert not codex.parse_from(path, OPTIONS, Start(checkpoint.meta(), cache))[2]


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_a_tampered_checkpoint_is_refused_and_runs_nothing(realdata, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    source = realdata / "codex-rollouts"
    path = next(p for p in sorted(source.rglob("*.jsonl")) if p.stat().st_size > 100_000)
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    _, checkpoint, _ = codex.parse_from(copy, OPTIONS)
    cache = tmp_path / "cache.fold"
    write_checkpoint(cache, dataclasses.replace(checkpoint, state=pickle.dumps(_Boom())))
    result, _, resumed = codex.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))
    assert not resumed and not (tmp_path / "pwned").exists()
    assert _same(result) == _same(codex.parse(copy, OPTIONS))
    # a cache file of another checkpoint of the same file (its header differs): not used
    copy.write_bytes(path.read_bytes() + b"\n")
    _, later, _ = codex.parse_from(copy, OPTIONS)
    write_checkpoint(cache, later)
    assert not codex.parse_from(copy, OPTIONS, Start(checkpoint.meta(), cache))[2]


def test_a_checkpoint_file_that_is_a_fifo_a_link_or_cut_short_is_not_used(realdata, tmp_path):
    source = realdata / "claude-code-jsonl/moredip-session-share/samples/claude-code-projects/4b2030ed-5563-49ea-b703-6a002f2d3cc8.jsonl"
    path = tmp_path / source.name
    path.write_bytes(source.read_bytes())
    _, checkpoint, _ = claude_code.parse_from(path, OPTIONS)
    whole = _same(claude_code.parse(path, OPTIONS))
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

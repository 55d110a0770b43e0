"""Atomic Markdown + YAML frontmatter I/O (SPEC §2.3, §2.4).

Writes go to a temporary file in the same folder, are fsynced, then renamed over the
target, so a crash leaves either the old or the new file, never a torn one.
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import os
import re
import stat
import sys
from datetime import date, datetime, timezone
from pathlib import Path
from functools import lru_cache
from typing import Any, BinaryIO, Callable, Iterable


from ..domain.clock import to_iso
from ..domain.errors import CorruptRecordError
from ..domain.records import normalize_meta


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Permissions of files we create: what ``open()`` would give under the process umask.
_FILE_MODE = 0o666 & ~_current_umask()


#: Suffix of the temporary files of :func:`atomic_write_bytes` (a crash may leave one).
TEMP_SUFFIX = ".tmp"


def open_regular(path: Path | str, follow_links: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, when it is a regular file when opened: it is opened
    without waiting (``O_NONBLOCK``) and its type read from the open handle. Checking the type
    first and opening after let a file swapped for a named pipe in between (a symbolic link
    flipped) hold the reader for good, waiting for a writer. ``follow_links=False``: a symbolic
    link is not opened either (``O_NOFOLLOW``).

    Raises
    ------
    OSError
        The file cannot be opened, or is not a regular file (a pipe, a device, a folder: ``EINVAL``).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags if follow_links else flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe, a device or a folder): memo reads files only",
                          str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular_file(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` when it is a regular file of at most ``max_bytes``, else None: a
    missing file, a FIFO or a device (:func:`open_regular`), a symbolic link or a larger file
    is never read. For machine-local caches memo keeps under ``.memo/``.
    """
    try:
        with open_regular(path, follow_links=False) as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                return None
            data = handle.read(max_bytes + 1)
    except OSError:
        return None
    return data if len(data) <= max_bytes else None


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically (temp file + fsync + rename + dir fsync).

    ``durable=False`` skips the fsyncs (still atomic: readers see the old or the new file);
    for derived files such as compiled views, which a rebuild regenerates. ``mode``: the
    file's permissions (default: what ``open()`` gives under the umask).
    """
    tmp = write_temporary(path, data, mode=mode, durable=durable)
    try:
        os.replace(tmp, path)
    except BaseException:
        remove_quietly(tmp)
        raise
    if not durable:
        return
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def write_temporary(path: Path, data: bytes, mode: int | None = None, durable: bool = False) -> Path:
    """Write ``data`` to a new temporary file beside ``path`` (not renamed; synced only when
    ``durable``) and return it: the first step of :func:`atomic_write_bytes` and of a group
    commit (:func:`group_commit`)."""
    fd, tmp = _create_temporary(path)
    try:
        os.fchmod(fd, _FILE_MODE if mode is None else mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove_quietly(Path(tmp))
        raise
    os.close(fd)
    return Path(tmp)


#: Names of temporary files: 8 hex digits counted on from a random start in each process (what
#: ``tempfile.mkstemp`` gives, without its per-call parameter checks and random draws — a tenth
#: of a first import's writing).
_TEMPORARY_NAMES = itertools.count(int.from_bytes(os.urandom(4), "big"))


def _create_temporary(path: Path) -> tuple[int, str]:
    """A new file ``.<name>.<8 hex>.tmp`` beside ``path``, created exclusively (never an existing
    file or a link followed), readable by this user only until its mode is set; the folder is
    made when missing."""
    folder = os.fspath(path.parent)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    made = False
    for _ in range(1000):
        tmp = os.path.join(folder, f".{path.name}.{next(_TEMPORARY_NAMES) & 0xFFFFFFFF:08x}{TEMP_SUFFIX}")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue  # left by a crash, or another process's
        except FileNotFoundError:
            if made:  # the folder is there and takes no new file (/proc): said as the system says it
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            made = True
    raise FileExistsError(f"no free temporary file name beside {path}")


def remove_quietly(path: Path) -> None:
    """Delete ``path`` if it is there (a temporary file left by a write that failed)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _syncfs() -> Callable[[int], int] | None:
    """Linux ``syncfs(2)``: every dirty page of one file system flushed in one call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _syncfs()


#: Up to this many files or folders a group makes durable one by one (``fsync`` each); more, with
#: one ``syncfs`` of their file system. ``syncfs`` flushes everything dirty there, other programs'
#: writes too: for a group of a few files (a watcher's import of one grown transcript) it would
#: wait for all of them.
FSYNC_UP_TO = 32


def _flush(paths: Iterable[Path], anchor: Path) -> None:
    """Make ``paths`` (files or folders) durable: an ``fsync`` of each up to
    :data:`FSYNC_UP_TO`, else one ``syncfs`` of ``anchor``'s file system on Linux (an ``fsync``
    of each where there is none)."""
    paths = list(paths)
    if not paths:
        return
    if _SYNCFS is not None and len(paths) > FSYNC_UP_TO:
        fd = os.open(anchor, os.O_RDONLY)
        try:
            if _SYNCFS(fd) == 0:
                return
        finally:
            os.close(fd)
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def group_commit(renames: list[tuple[Path, Path]], anchor: Path) -> None:
    """Put many written temporary files in place at once, as crash-safe as
    :func:`atomic_write_bytes` one by one: every temporary file made durable, then each renamed
    over its target, then the folders made durable (``renames``: ``(temporary, target)``;
    ``anchor``: a folder on the same file system, e.g. the vault root). A crash leaves each
    target old or new, never torn; temporary files a crash leaves behind are hidden
    (``.name.….tmp``) and never read as records."""
    _flush((tmp for tmp, _ in renames), anchor)
    for tmp, target in renames:
        os.replace(tmp, target)
    _flush(sorted({target.parent for _, target in renames}), anchor)


@lru_cache(maxsize=1)
def _yaml_handler() -> Any:
    """python-frontmatter's YAML handler on libyaml (the C loader/dumper of PyYAML) when
    present: the same safe types, several times faster on large vaults. Made on first use: a
    command that reads no record file (an unchanged import, a report from the index) does not
    load YAML at all."""
    import frontmatter
    import yaml

    class _LibYAML(frontmatter.YAMLHandler):
        def load(self, fm: str, **kwargs: object) -> Any:
            kwargs.setdefault("Loader", getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            return super().load(fm, **kwargs)

        def export(self, metadata: dict[str, object], **kwargs: object) -> str:
            kwargs.setdefault("Dumper", getattr(yaml, "CSafeDumper", yaml.SafeDumper))
            return super().export(metadata, **kwargs)

    return _LibYAML()


def dump_record(meta: dict[str, Any], body: str) -> str:
    """Render frontmatter + body as the Markdown text stored in the vault.

    Raises
    ------
    InvalidFieldError
        The frontmatter would be longer than :data:`MAX_FRONTMATTER_CHARS`, which reading
        refuses (naming the largest field): a record written must read back.
    """
    import frontmatter

    handler = _yaml_handler()
    post = frontmatter.Post(body, handler=handler, **meta)
    text = frontmatter.dumps(post, handler=handler, sort_keys=False, allow_unicode=True, width=1_000_000) + "\n"
    if len(text) - len(body) > MAX_FRONTMATTER_CHARS and text.find("\n---", 4) > MAX_FRONTMATTER_CHARS:
        _refuse_large(meta)
    return text


def check_metadata_size(meta: dict[str, Any]) -> None:
    """Refuse ``meta`` now as :func:`dump_record` would at its render: for a write whose render
    comes later (a batch's group commit renders in workers), where one turn's refusal ended the
    whole import. One ``orjson`` dump of the metadata; the render itself only for metadata near
    the limit (YAML's block style is at most a few times as long as its JSON).

    Raises
    ------
    InvalidFieldError
        The frontmatter would be longer than :data:`MAX_FRONTMATTER_CHARS`.
    """
    import orjson

    try:
        size = len(orjson.dumps(meta, default=str, option=orjson.OPT_NON_STR_KEYS))
    except (TypeError, orjson.JSONEncodeError):
        size = MAX_FRONTMATTER_CHARS  # what orjson cannot dump: rendered to be sure
    if size * 4 >= MAX_FRONTMATTER_CHARS:
        dump_record(meta, "")


def _refuse_large(meta: dict[str, Any]) -> None:
    from ..domain.errors import InvalidFieldError

    sizes = {name: len(repr(value)) for name, value in meta.items()}
    largest = max(sizes, key=sizes.__getitem__)
    raise InvalidFieldError(largest, f"about {sizes[largest]:,} characters: a record's metadata is at most "
                                     f"{MAX_FRONTMATTER_CHARS:,} characters (the text of a turn goes in its body)")


def dump_records(records: list[tuple[dict[str, Any], str]]) -> list[bytes]:
    """:func:`dump_record` of each ``(meta, body)``, as UTF-8: what a group commit writes (a
    worker process renders a batch's records with it, while the writer goes on)."""
    return [dump_record(meta, body).encode("utf-8") for meta, body in records]


def write_record(path: Path, meta: dict[str, Any], body: str) -> None:
    """Atomically write one record file."""
    atomic_write_bytes(path, dump_record(meta, body).encode("utf-8"))


def read_record(path: Path) -> tuple[dict[str, Any], str]:
    """Read one record file into ``(frontmatter dict, body)``.

    The frontmatter is validated and returned in canonical form
    (:func:`~memo_analytics.domain.records.normalize_meta`).

    Raises
    ------
    CorruptRecordError
        When the file cannot be read (or is not a regular file: a FIFO is never waited on), is
        not UTF-8, has no YAML frontmatter mapping, the YAML is broken or a field is invalid.
        The file itself is never modified.
    """
    try:
        text = _regular_file_bytes(path).decode("utf-8-sig")  # an editor's byte-order mark is not content
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(str(path), f"not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise CorruptRecordError(str(path), exc.strerror or type(exc).__name__) from None
    return parse_record_text(text, str(path))


def read_placed_record(path: Path) -> tuple[dict[str, Any], str]:
    """:func:`read_record` for a file in its place in the vault (``projects/<project>/<kind
    folder>/<id>.md``): its ``id``, ``kind`` and ``project`` must be those its path gives — a
    file whose id was edited to another record's would otherwise be written over that record.

    Raises
    ------
    CorruptRecordError
        As :func:`read_record`; or the frontmatter names another record than the path.
    """
    from ..domain.records import subdir_for_kind

    meta, body = read_record(path)
    if meta["id"] != path.stem:
        raise CorruptRecordError(str(path), f"id {meta['id']!r} does not match the file name")
    if subdir_for_kind(meta["kind"]) != path.parent.name:
        raise CorruptRecordError(str(path), f"a {meta['kind']} record in {path.parent.name}/")
    if meta["project"] != path.parent.parent.name:
        raise CorruptRecordError(str(path), f"project {meta['project']!r} does not match its folder")
    return meta, body


#: The largest record file read, in bytes: far above any record memo writes (a turn's body is at
#: most ``MAX_BODY_BYTES``); a file larger is refused from its size, never read (a 1.5 GB file
#: named like a record was read whole by every report that said it could not be used).
MAX_RECORD_FILE_BYTES = 16 * 1024 * 1024


def _regular_file_bytes(path: Path) -> bytes:
    """The bytes of ``path``, opened without blocking: a FIFO, a device or a folder named like a
    record is refused (``OSError``) rather than waited on or read, and so is a file larger than
    :data:`MAX_RECORD_FILE_BYTES`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat.S_ISREG(mode):
            what = "a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
            raise OSError(0, f"not a regular file ({what})")
        if info.st_size > MAX_RECORD_FILE_BYTES:
            raise OSError(0, f"{info.st_size} bytes: larger than any record ({MAX_RECORD_FILE_BYTES} bytes at most)")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def read_frontmatter(path: Path) -> tuple[dict[str, Any], str]:
    """Read a Markdown file with YAML frontmatter that is not a record (an issued invoice):
    the same safe loading as records, no record fields required.

    Raises
    ------
    CorruptRecordError
        Unreadable, not UTF-8, no frontmatter mapping, broken YAML.
    """
    try:
        text = _regular_file_bytes(path).decode("utf-8-sig")  # never a FIFO waited on, nor 1.5 GB read
    except UnicodeDecodeError as exc:
        raise CorruptRecordError(str(path), f"not UTF-8 ({exc.reason})") from None
    except OSError as exc:
        raise CorruptRecordError(str(path), exc.strerror or type(exc).__name__) from None
    return parse_frontmatter_text(text, str(path))


def parse_frontmatter_text(text: str, source: str) -> tuple[dict[str, Any], str]:
    """:func:`read_frontmatter` of a text (``source`` names it in errors). Raises as it."""
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        raise CorruptRecordError(source, "no YAML frontmatter")
    metadata, content = _load_frontmatter(text, source)
    if not isinstance(metadata, dict):
        raise CorruptRecordError(source, "frontmatter is not a mapping")
    return {str(key): _plain(value) for key, value in metadata.items()}, content


def parse_record_text(text: str, source: str) -> tuple[dict[str, Any], str]:
    """Parse and validate the text of a record file (``source`` names it in errors).

    Raises
    ------
    CorruptRecordError
        No YAML frontmatter mapping, broken YAML, no id or an invalid field.
    """
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        raise CorruptRecordError(source, "no YAML frontmatter")
    metadata, content = _load_frontmatter(text, source)
    if not isinstance(metadata, dict) or "id" not in metadata:
        raise CorruptRecordError(source, "frontmatter has no id")
    try:
        meta = normalize_meta({str(key): _plain(value) for key, value in metadata.items()})
    except (ValueError, TypeError, RecursionError) as exc:
        raise CorruptRecordError(source, str(exc).splitlines()[0]) from None
    return meta, content


#: Largest frontmatter a record may carry, in characters (a record's metadata is a few
#: hundred bytes; anything near this is not a record).
MAX_FRONTMATTER_CHARS = 256_000
#: Deepest nesting of lists and mappings a frontmatter may hold (a record needs 3; libyaml's
#: loader recurses per level and a few tens of thousands crash the process).
MAX_FRONTMATTER_DEPTH = 32


def _load_frontmatter(text: str, source: str) -> tuple[Any, str]:
    """python-frontmatter's ``parse`` (same split and stripping) with three refusals first:
    an oversized frontmatter, YAML anchors or aliases (``&a`` / ``*a``: a record never needs
    them, and a few hundred bytes of nested aliases expand into millions of nodes), and
    nesting deeper than ``MAX_FRONTMATTER_DEPTH`` (50 kB of ``[`` crash libyaml's loader)."""
    import yaml

    handler = _yaml_handler()
    text = text.strip()
    try:
        fm, content = handler.split(text)
    except ValueError:
        return {}, text
    if len(fm) > MAX_FRONTMATTER_CHARS:
        raise CorruptRecordError(source, f"frontmatter is {len(fm)} characters; the limit is {MAX_FRONTMATTER_CHARS}")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        # cheap tests first; only a frontmatter that could hold aliases or deep nesting has
        # its events walked (libyaml's event parser keeps its own stack: it never recurses)
        # each of these opens a level at most: flow brackets, and the block indicators "-" and "?",
        # which YAML wants followed by a space, a tab or a line break (a "-" inside a timestamp or
        # an id opens nothing); nesting by indentation alone stays far below what libyaml survives
        # within 16,000 characters
        nesting = fm.count("[") + fm.count("{") + sum(fm.count(indicator + after) for indicator in "-?"
                                                      for after in " \t\n")
        if "&" in fm or "*" in fm or nesting > MAX_FRONTMATTER_DEPTH or len(fm) > 16_000:
            depth = 0
            for event in yaml.parse(fm, Loader=loader):
                if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                    raise CorruptRecordError(source, "frontmatter uses YAML anchors or aliases, which records never hold")
                if isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                    depth += 1
                    if depth > MAX_FRONTMATTER_DEPTH:
                        raise CorruptRecordError(source, f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels")
                elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                    depth -= 1
        if _may_name_a_key_twice(fm):  # looked at as YAML reads it
            _refuse_a_key_named_twice(fm, text, loader, source)
        return handler.load(fm), content.strip()
    except yaml.YAMLError as exc:
        if "nesting depth" in str(exc):  # PyYAML ≥ 6.0.4's scanner has a depth limit of its own (far above ours)
            raise CorruptRecordError(source, f"frontmatter nests deeper than {MAX_FRONTMATTER_DEPTH} levels") from None
        raise CorruptRecordError(source, f"broken frontmatter{_where(exc, text, fm)}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise CorruptRecordError(source, f"broken frontmatter ({type(exc).__name__})") from None


#: A line that may begin a key of a mapping (``client:``, ``"client" :``, ``  - type:``): its
#: indentation (``- `` counted as spaces) and the key as written. Two alike — or a key YAML
#: reads otherwise than written (an escape in a quoted key, an explicit ``? key``) — and the
#: frontmatter is looked at as YAML reads it.
_KEY_LINE = re.compile(r"""^([ \t]*(?:-[ \t]+)*)(?:"((?:[^"\\\n]|\\.)*)"|'((?:[^'\n]|'')*)'|([^\s#'"?:\-][^:\n]*?))[ \t]*:(?=[ \t\r]|$)""",
                       re.M)
_EXPLICIT_KEY = re.compile(r"^[ \t]*(?:-[ \t]+)*\?(?:[ \t]|$)", re.M)


def _may_name_a_key_twice(fm: str) -> bool:
    """Whether ``fm`` may give one key twice in a mapping (a cheap test on its lines; many
    alike keys of sibling list items only cost the full look)."""
    if "?" in fm and _EXPLICIT_KEY.search(fm):
        return True
    seen = set()
    for match in _KEY_LINE.finditer(fm):
        indent, double, single, plain = match.groups()
        if double is not None and "\\" in double:
            return True
        key = (len(indent), double if double is not None else single if single is not None else plain.strip())
        if key in seen:
            return True
        seen.add(key)
    return False


def _refuse_a_key_named_twice(fm: str, text: str, loader: Any, source: str) -> None:
    """Refuse a frontmatter whose mapping — the record's, or one inside it (a deliverable) —
    names a key twice (``client: null`` then ``client: Evil Corp``, ``billable`` true then
    false, however quoted or spaced): YAML keeps the last and says nothing, so a hand edit (or
    a merge) billed what its second line said.

    Raises
    ------
    CorruptRecordError
        Naming the key and the file's lines that give it.
    """
    import yaml

    before = text.find(fm)
    first = text.count("\n", 0, before) + 1 if before >= 0 else 2
    nodes = [yaml.compose(fm, Loader=loader)]
    while nodes:
        node = nodes.pop()
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, value in node.value:
                nodes.append(value)
                if isinstance(key, yaml.ScalarNode):
                    line = first + key.start_mark.line
                    if key.value in seen:
                        raise CorruptRecordError(source, f"frontmatter names {key.value!r} twice (lines "
                                                         f"{seen[key.value]} and {line}): keep the one that is right, "
                                                         "then memo reindex")
                    seen[key.value] = line
        elif isinstance(node, yaml.SequenceNode):
            nodes.extend(node.value)


def _where(exc: Exception, text: str, fm: str) -> str:
    """`` at line N (what is wrong, while reading what from line M)`` of a YAML error: lines of
    the record file, counted from 1 (the opening ``---`` is line 1)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    before = text.find(fm) if fm else -1
    first = text.count("\n", 0, before) + 1 if before >= 0 else 2  # the file's line of the frontmatter's first

    def line(mark: Any) -> int:
        return first + mark.line

    mark, context, context_mark = (getattr(exc, name, None) for name in ("problem_mark", "context", "context_mark"))
    if mark is None:
        return f" ({problem})"
    started = f", {context} from line {line(context_mark)}" if context and context_mark is not None and \
        context_mark.line != mark.line else ""
    return f" at line {line(mark)} ({problem}{started})"


_PLAIN_TYPES = frozenset({str, int, bool, float, list, dict, type(None)})


def _plain(value: Any) -> Any:
    """Hand-edited YAML may hold unquoted timestamps; keep them as stored ISO strings."""
    if type(value) in _PLAIN_TYPES:
        return value
    if isinstance(value, datetime):
        return to_iso(value if value.tzinfo else value.replace(tzinfo=timezone.utc))
    if isinstance(value, date):
        return value.isoformat()
    return value


def _missing_folders(folder: Path) -> list[Path]:
    """The levels of ``folder`` that do not exist yet, outermost first (empty when it exists).

    Raises
    ------
    InvalidFieldError
        The nearest existing level is not a folder, or a level is a dangling symbolic link.
    """
    from ..domain.errors import InvalidFieldError

    missing: list[Path] = []
    while not os.path.lexists(folder):
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    if folder.is_symlink() and not folder.exists():
        raise InvalidFieldError("output", f"{folder} is a symbolic link to nothing; give a real folder")
    if missing and not folder.is_dir():
        raise InvalidFieldError("output", f"{folder} is not a folder")
    return missing[::-1]


def _work_tree(path: Path) -> Path | None:
    """The git work tree holding ``path`` (itself or an ancestor with ``.git``), if any."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _vault_holding(path: Path) -> Path | None:
    """The memo vault holding ``path`` (itself or an ancestor with ``.memo/index.sqlite``, or
    with ``.memo/`` beside ``projects/``), if any: any vault, not only this run's (in remote mode
    there is none here, yet a story the daemon answered must not land in a vault as a record)."""
    for folder in (path, *path.parents):
        meta = folder / ".memo"
        if (meta / "index.sqlite").exists() or (meta.is_dir() and (folder / "projects").is_dir()):
            return folder
    return None


def output_target(output: Path, forbidden: tuple[Path, ...] = (), suffixes: tuple[str, ...] = (),
                  overwrite: bool = False, make_folders: bool = False, only_check: bool = False) -> Path:
    """The path an export or report will be written to (atomically).

    Refused: a path inside one of the ``forbidden`` folders or inside any memo vault (an export
    must never replace or add a record, nor touch an index), a path inside any git work tree (nothing is written
    inside a product repository except by rule promotion, SPEC §2.1), a suffix not in
    ``suffixes`` (the file kind's own: ``.pdf``, ``.html``, ``.md``), a missing folder, a
    parent that is not a folder, a symbolic link at the destination (never followed: it
    could point anywhere), and an existing file unless ``overwrite`` (``--force`` /
    ``overwrite: true``); an existing target that is not a regular file (a folder, a
    device such as ``/dev/null``, a FIFO) is refused even then.

    With ``make_folders`` a missing folder is created instead (every missing level, once
    the destination passed every other check: never inside the vault or a git work tree);
    a missing level that is a symbolic link (dangling) or a file is refused, and each level
    is made with ``mkdir``, which never follows a link. With ``only_check`` as well, the
    missing folders could be made but are not (yet): a check before the work that may fail.

    Raises
    ------
    InvalidFieldError
        ``Invalid output: ...``.
    """
    from ..domain.errors import InvalidFieldError

    if not str(output).strip():
        raise InvalidFieldError("output", "is empty; give a file name")
    try:
        output = Path(output).expanduser()
        if "\x00" in str(output) or "\n" in str(output):
            raise InvalidFieldError("output", "contains a NUL or newline character")
        target = Path(os.path.abspath(output))
        real = target.parent.resolve() / target.name
        for folder in (*forbidden, *filter(None, [_vault_holding(real.parent)])):
            if real.is_relative_to(Path(folder).resolve()):
                raise InvalidFieldError("output", f"{output} is inside the vault {folder}; write it elsewhere")
        if suffixes and real.suffix.lower() not in suffixes:
            raise InvalidFieldError("output", f"{output} must end with {' or '.join(suffixes)}")
        parent = target.parent
        missing = _missing_folders(parent) if make_folders else []
        if not missing and not parent.exists():
            raise InvalidFieldError("output", f"folder {parent} does not exist")
        if not missing and not parent.is_dir():
            raise InvalidFieldError("output", f"{parent} is not a folder")
        repository = _work_tree(real.parent)
        if repository is not None:
            raise InvalidFieldError("output", f"{output} is inside the git repository {repository}; "
                                              "write reports and exports outside repositories")
        if missing and only_check:
            return target
        for folder in missing:  # outermost first; mkdir never follows a link
            try:
                os.mkdir(folder)
            except FileExistsError:
                if folder.is_symlink() or not folder.is_dir():  # made meanwhile, as something else
                    raise InvalidFieldError("output", f"{folder} is not a folder") from None
        if target.is_symlink():
            raise InvalidFieldError("output", f"{output} is a symbolic link; give the path of a regular file")
        if target.exists() and not target.is_file():
            kind = "a folder" if target.is_dir() else "not a regular file"
            raise InvalidFieldError("output", f"{output} is {kind}")
        if target.exists() and not overwrite:
            raise InvalidFieldError("output", f"{output} already exists; ask to replace it (--force; over MCP, "
                                              "overwrite: true)")
    except (RuntimeError, OSError, ValueError) as exc:
        raise InvalidFieldError("output", f"{output} ({exc})") from None
    return target


def read_json_state(path: Path, required_key: str | None = None) -> dict[str, Any] | None:
    """A small JSON state file of the vault's ``.memo/`` (None when missing, unreadable, not
    an object, or without ``required_key``): state that is rebuilt, never trusted blindly."""
    import json

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or (required_key is not None and not isinstance(data.get(required_key), dict)):
        return None
    return data


def write_json_state(path: Path, data: dict[str, Any]) -> None:
    """Write a JSON state file atomically (its folder created as needed)."""
    import json

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    # a file name of bytes that are not UTF-8 (kept as surrogates): its JSON escape, \udcff, which reads back
    atomic_write_bytes(Path(path), json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False).encode(
        "utf-8", "backslashreplace"))


def file_identity(path: Path) -> tuple[int, int] | None:
    """``(device, inode)`` of ``path``, or None when it is not there: the same name may be
    another file now (removed and made again, replaced by a rename)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino

"""Commands printed for a person to paste into a POSIX shell (bash, zsh)."""

from __future__ import annotations

import re
import shlex


def shell_word(value: str) -> str:
    """``value`` as one word of a shell command a person pastes, naming exactly ``value``.

    As it is when it needs no quoting, else in single quotes (``$(…)``, backquotes and escapes
    stay text), as :func:`shlex.quote` does. A value holding a character a terminal does not show
    as itself — an escape or other control character, a line end, a tab, a direction or
    zero-width mark, a byte that is not UTF-8 (a surrogate of ``os.fsdecode``) — is written in
    ANSI-C quotes (``$'…'``, bash and zsh) with that character as its escape: printed raw, the
    terminal dropped or acted on it and the pasted command named another folder or client.
    """
    if value.isprintable():
        return shlex.quote(value)
    parts = []
    for char in value:
        code = ord(char)
        if char in "\\'":
            parts.append("\\" + char)
        elif char.isprintable():
            parts.append(char)
        elif 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode: that byte
            parts.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x80:
            parts.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            parts.append(f"\\u{code:04x}")
        else:
            parts.append(f"\\U{code:08x}")
    return "$'" + "".join(parts) + "'"


def one_line(text: str) -> str:
    """``text`` as one line of a command a person pastes: every character a terminal does not
    show as itself — a line end, a tab, an escape, a direction or zero-width mark — becomes a
    space. A command's words are :func:`shell_word` (printable already); what this guards is the
    free text beside them (a pull request's title or a client's name after ``#``), where a line
    end made the rest a second command that ran when the line was pasted."""
    return text if text.isprintable() else "".join(char if char.isprintable() else " " for char in text)


#: Characters a word of a printed command holds outside quotes (what :func:`shell_word` leaves bare).
_BARE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./~-")


def is_plain_command(text: str) -> bool:
    """Whether ``text`` — a command a person pastes, a comment after `` #`` allowed — is made only
    of words as :func:`shell_word` writes them: bare words, single quotes, ``"'"`` within them,
    ``$'…'``. No ``;``, ``|``, ``&``, redirection, ``$(…)``, backquote or glob: pasted, it runs one
    command with the words it shows (a team daemon's "memo session end …; curl … | sh" did not)."""
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == " ":
            i += 1
        elif char == "#" and (i == 0 or text[i - 1] == " "):
            # the rest is a comment, on this line — words only, or quoted (zsh may not read it as one)
            return one_line(text) == text and is_inert_hint(text[i + 1:].strip())
        elif char in _BARE:
            i += 1
        elif char == "'":
            end = text.find("'", i + 1)
            if end < 0:
                return False
            i = end + 1
        elif char == '"':  # shlex.quote's "'" (a quote inside a quoted word), nothing else
            if not text.startswith('"\'"', i):
                return False
            i += 3
        elif text.startswith("$'", i):
            i += 2
            while i < n and text[i] != "'":
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                return False
            i += 1
        else:
            return False
    return one_line(text) == text


#: A hint after ``#`` that any shell reads as words only, even one that does not take ``#`` for a
#: comment (zsh's default ``interactive_comments`` off): letters, digits, spaces, prose's ``.,:``.
_INERT = re.compile(r"[\w .,:/@%+=-]*")


def split_hint(line: str) -> tuple[str, str | None]:
    """``line`` split at the ``#`` that begins its comment (at a word's start, outside quotes):
    ``(command, hint)``, the hint None when there is none."""
    i, n, quote = 0, len(line), ""
    while i < n:
        char = line[i]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif quote:  # "…" or $'…': a backslash escapes the next character
            if char == "\\":
                i += 1
            elif char == quote[-1]:
                quote = ""
        elif char == "\\":
            i += 1
        elif line.startswith("$'", i):
            quote, i = "$'", i + 1
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1:].strip()
        i += 1
    return line, None


def _quoted_hint(hint: str) -> str:
    """``hint`` as one quoted word: in single quotes; one holding an apostrophe (prose: "an
    agent's") in double quotes when nothing in it is special there (``$``, backquote, ``\\``,
    ``!``, ``"``); else as :func:`shlex.quote` writes it."""
    if "'" not in hint:
        return f"'{hint}'"
    if not any(char in hint for char in '"$`\\!'):
        return f'"{hint}"'
    return shlex.quote(hint)


def _one_quoted_word(text: str) -> bool:
    try:
        words = shlex.split(text)
    except ValueError:
        return False
    return len(words) == 1 and _quoted_hint(words[0]) == text


def hint_text(hint: str) -> str:
    """A hint as a person reads it (the text of :func:`inert_hint`'s quotes)."""
    return shlex.split(hint)[0] if _one_quoted_word(hint) else hint


def inert_hint(line: str) -> str:
    """``line`` with the hint after its ``#`` in single quotes unless it is words only: zsh, by
    default, reads ``#`` as a word, not a comment — a client's name ``Acme; touch x`` or a pull
    request's ``…#$(id)`` in the hint ran when the line was pasted there."""
    command, hint = split_hint(line)
    if hint is None or _INERT.fullmatch(hint) or _one_quoted_word(hint):
        return line
    return f"{command}  # {_quoted_hint(hint)}"


def is_inert_hint(hint: str) -> bool:
    """Whether a hint is what :func:`inert_hint` writes: words only, or one single-quoted word."""
    return bool(_INERT.fullmatch(hint)) or _one_quoted_word(hint)


def with_vault_root(command: str, root: str) -> str:
    """``command`` (one or more ``memo …`` commands, hints after ``#``) with ``--vault-root
    ROOT`` after each ``memo`` that starts a command (outside quotes; in a hint, in its text):
    printed by ``memo --vault-root X digest``, a pasted command acted on the configured vault
    instead."""
    option = f"memo --vault-root {shell_word(root)} "
    head, hint = split_hint(command)
    if hint is None:
        return _rooted(command, option)
    return inert_hint(f"{_rooted(head, option)}  # {_rooted(hint_text(hint), option)}")


def _rooted(command: str, option: str) -> str:
    parts, quote, closed, i = [], "", False, 0
    while i < len(command):
        char, after = command[i], command[i - 1] if i else " "
        if quote == "$'" and char == "\\":  # an escape of ANSI-C quotes (\' among them): two characters
            parts.append(command[i:i + 2])
            i += 2
            continue
        if quote:
            quote, closed = ("", True) if char == quote[-1] else (quote, False)
        elif char in "'\"" and (after in " =" or closed):  # a quoted word (shell_word), not prose's "web's"
            quote, closed = char, False
        elif command.startswith("$'", i) and after in " =":  # shell_word's ANSI-C quotes
            quote, closed = "$'", False
            parts.append("$'")
            i += 2
            continue
        elif command.startswith("memo ", i) and after in " :":
            parts.append(option)
            i += len("memo ")
            closed = False
            continue
        else:
            closed = False
        parts.append(char)
        i += 1
    return "".join(parts)

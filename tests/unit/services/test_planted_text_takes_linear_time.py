"""Attacks a security tester replayed: text planted in a transcript, a prompt or a teammate's
push, shaped against one regular expression, held a process for minutes — and, as Python's
``re`` holds the GIL, every request of ``memo serve`` or the team daemon meanwhile. Each now
takes time in proportion to its length. (Replayed attacks, not speed figures: each bound is
far above what the pass now takes, and far below what the code before took.)"""

from __future__ import annotations

import re
import time

import pytest

from memo_analytics.services.importers.claude_code import _between, _without_wrappers, classify_text
from memo_analytics.services.importers.cursor_export import _TITLE
from memo_analytics.services.importers.specstory import _SESSION_COMMENT
from memo_analytics.services.rules.extract import spoken_text
from memo_analytics.vault.redact import redact_secrets


def _quick(work, *args) -> object:
    began = time.perf_counter()
    result = work(*args)
    assert time.perf_counter() - began < 10, (work, len(args[0]))
    return result


@pytest.mark.parametrize("text", [
    "-u x\n" + "http " * 20_000,  # 100 KB: 35 s before
    "-u x\n" + "curl " * 20_000,
    "mysql " * 17_000,
    "docker login " * 8_000,
    "gh secret set " * 7_200,  # 51 s of a hook before
    "htpasswd -b " * 8_000,
    "curl x -u'" * 10_000,
    "curl -su " * 11_000,
    "docker login -p '" * 6_000,
    "htpasswd -b x" + " y" * 50_000,
    "sshpass -p '" * 8_000,
    "<password>" * 10_000,
    '\\"password\\": \\"' * 6_000,
    "a://" * 25_000,
    "Private-Lines: 1\n" + "AAAA\n" * 20_000,
    "a:5432:b:c:" * 9_000,
    "machine h login u " * 6_000,
    "curl \\\n" * 14_000,
    "xh -a " * 16_000,
    "docker -H " * 10_000 + "login",
    "htpasswd -nb " * 7_000,
    "htpasswd -C 1 " * 7_000,
    "sshpass -v " * 9_000,
])
def test_redaction_of_many_command_words_on_one_line(text):
    _quick(redact_secrets, text)


def test_the_command_forms_are_still_redacted():
    assert redact_secrets("curl -s https://x.example/api -u admin:s3cretPassw0rd")[0] == \
        "curl -s https://x.example/api -u admin:[REDACTED:cli-password]"
    assert redact_secrets("mysql -h db -u root -phunter22x")[0] == "mysql -h db -u root -p[REDACTED:cli-password]"
    assert redact_secrets("docker login -u ana --password s3cr3tpw registry.example")[0] == \
        "docker login -u ana --password [REDACTED:cli-password] registry.example"
    assert redact_secrets("gh secret set FOO --body hunter2hunter")[0] == \
        "gh secret set FOO --body [REDACTED:secret-assignment]"
    # forms that leaked (found by a breaker): no space after -u, a quoted password of words, -p'…', -p=…, -b"…",
    # htpasswd -b
    for said, hidden in (("curl -uadmin:S3cretPw https://x", "curl -uadmin:[REDACTED:cli-password] https://x"),
                         ("curl -u 'admin:Quoted Passw0rd' https://x",
                          "curl -u 'admin:[REDACTED:cli-password]' https://x"),
                         ("mysql -h db -p'QuotedDbPassw0rd' shop", "mysql -h db -p'[REDACTED:cli-password]' shop"),
                         ("docker login -p=S3cretPw registry", "docker login -p=[REDACTED:cli-password] registry"),
                         ('gh secret set K -b"hunter2hunter"', 'gh secret set K -b"[REDACTED:secret-assignment]"'),
                         ("htpasswd -b /etc/nginx/.htpasswd bob S3cretPw",
                          "htpasswd -b /etc/nginx/.htpasswd bob [REDACTED:cli-password]")):
        assert redact_secrets(said)[0] == hidden
    assert redact_secrets("htpasswd -c file bob")[0] == "htpasswd -c file bob"  # asks for it: nothing on the line


def test_rules_read_a_prompt_of_many_blank_lines():
    """``derive-rules`` over one turn of 100 KB of blank lines held the server 98 s."""
    for text in ("Never push to main.\n" + "\n" * 100_000 + "x", " \n" * 50_000, "-\n" * 50_000):
        _quick(spoken_text, text)
    assert "Never push to main." in spoken_text("\n\nNever push to main.\n")


def test_claude_codes_wrappers_left_unclosed():
    """300 KB of ``<system-reminder>`` in a planted transcript took 71 s to import."""
    text = "please help " + "<system-reminder>" * 60_000
    assert _quick(_without_wrappers, text) == text
    assert classify_text("<system-reminder>be nice</system-reminder>\n  fix the login") == ("prompt", "fix the login")
    assert _between("<command-name>/review</command-name><command-args>now</command-args>", "command-args") == "now"
    assert _quick(_between, "<command-name>" * 60_000, "command-name") is None


def test_specstory_session_comment_and_cursor_title_lines():
    """4,000 spaces after ``<!--`` took 52 s; a Cursor title line of 30 KB 6 s."""
    assert _quick(_SESSION_COMMENT.match, "<!--" + " " * 100_000 + "x") is None
    assert _SESSION_COMMENT.match("<!-- Claude Code Session 7e3c1a2b-0000 (2025-10-09 14:01:02Z) -->").group(
        "agent", "id", "stamp") == ("Claude Code", "7e3c1a2b-0000", "2025-10-09 14:01:02Z")
    assert _quick(_TITLE.match, "# a" + " " * 100_000 + "b").group("title").endswith("b")
    assert _TITLE.match("#   Fix the login  ").group("title") == "Fix the login"
    assert re.fullmatch(r"", _TITLE.match("# ").group("title"))


@pytest.mark.parametrize("said, hidden", [
    # found by a breaker: short flags run together, a value without a space, htpasswd's usual -nb,
    # -b after another option, quoted words after docker's -p and sshpass's -p
    ("curl -su admin:hunter2hunter https://x", "curl -su admin:[REDACTED:cli-password] https://x"),
    ("curl -Lu admin:hunter2hunter https://x", "curl -Lu admin:[REDACTED:cli-password] https://x"),
    ("docker login -u me -p 'correct horse battery'", "docker login -u me -p '[REDACTED:cli-password]'"),
    ("docker login -pHunter2pass -u me", "docker login -p[REDACTED:cli-password] -u me"),
    ("docker login --password-stdin -u me", "docker login --password-stdin -u me"),
    ("gh secret set API -bs3cr3tvalue", "gh secret set API -b[REDACTED:secret-assignment]"),
    ("gh secret set API --body-file x.txt", "gh secret set API --body-file x.txt"),
    ("htpasswd -nb alice Hunter2pw", "htpasswd -nb alice [REDACTED:cli-password]"),
    ("htpasswd -nbB alice Hunter2pw", "htpasswd -nbB alice [REDACTED:cli-password]"),
    ("htpasswd -B -C 12 -b .htpasswd alice Hunter2pw", "htpasswd -B -C 12 -b .htpasswd alice [REDACTED:cli-password]"),
    ("htpasswd -bB .htpasswd alice 'two words'", "htpasswd -bB .htpasswd alice '[REDACTED:cli-password]'"),
    ("htpasswd -b f bob Hunter2pw | tee x", "htpasswd -b f bob [REDACTED:cli-password] | tee x"),
    ("htpasswd -c file bob", "htpasswd -c file bob"),
    ("sshpass -p 'two words' ssh host", "sshpass -p '[REDACTED:cli-password]' ssh host"),
    # found by a security tester: shapes of no command
    ('curl -d "{\\"user\\": \\"admin\\", \\"password\\": \\"Hunter2Prod!x\\"}" https://x',
     'curl -d "{\\"user\\": \\"admin\\", \\"password\\": \\"[REDACTED:secret-assignment]\\"}" https://x'),
    ('{\\"api_key\\":\\"a8f7d6s5a4d3f2g1h0\\"}', '{\\"api_key\\":\\"[REDACTED:secret-assignment]\\"}'),
    ("machine api.example.com login ana password Hunter3Prod9x",
     "machine api.example.com login ana password [REDACTED:netrc-password]"),
    ("config is <password>Hunter4Prod9x</password> in web.xml",
     "config is <password>[REDACTED:xml-secret]</password> in web.xml"),
    ("<token>${TOKEN}</token>", "<token>${TOKEN}</token>"),
    ("git clone https://0123456789abcdef0123456789abcdef01234567@github.com/acme/private.git",
     "git clone https://[REDACTED:url-token]@github.com/acme/private.git"),
    ("https://0123456789abcdef0123456789abcdef@o123.ingest.sentry.io/456",
     "https://[REDACTED:url-token]@o123.ingest.sentry.io/456"),
    ("git clone ssh://git@github.com/a/b", "git clone ssh://git@github.com/a/b"),
    ("git+ssh://deploy-user-production-01@host/x", "git+ssh://deploy-user-production-01@host/x"),
    ("https://acct.blob.core.windows.net/c?sv=2021&sig=abcdEFGH1234abcdEFGH1234%3D",
     "https://acct.blob.core.windows.net/c?sv=2021&sig=[REDACTED:azure-sas]"),
    ("AZURE_X Q7U8Q~abcdefghijklmnopqrstuv1234567890abc", "AZURE_X [REDACTED:azure-client-secret]"),
    ("PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 2\nAAAAIGh0dHBzOi8vZXhhbXBsZS5jb20=\nAAAAIGh0\nPrivate-MAC: ab",
     "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 2\n[REDACTED:private-key]\nPrivate-MAC: ab"),
    ("db:5432:mydb:admin:S3cretPw!x", "db:5432:mydb:admin:[REDACTED:pgpass-password]"),
    ("at 10:30:00:12:5 we met", "at 10:30:00:12:5 we met"),
    # found by a security tester in the forms above: a secret said in words hidden again, a redirection or a
    # comment after htpasswd's password, a line continuation, a quoted password, other registries' logins
    ("The default password is Hunter2xyz9", "The default password is [REDACTED:password]"),
    ("Keep the default password policy for now", "Keep the default password policy for now"),
    ("a machine with password authentication disabled", "a machine with password authentication disabled"),
    ("htpasswd -b .htpasswd alice Hunter2pw 2>/dev/null", "htpasswd -b .htpasswd alice [REDACTED:cli-password] 2>/dev/null"),
    ("htpasswd -b .htpasswd alice Hunter2pw # add alice", "htpasswd -b .htpasswd alice [REDACTED:cli-password] # add alice"),
    ("htpasswd -b .htpasswd alice Hunter2pw\r\n", "htpasswd -b .htpasswd alice [REDACTED:cli-password]\r\n"),
    ("htpasswd -nbB alice Hunter2pw 2>&1", "htpasswd -nbB alice [REDACTED:cli-password] 2>&1"),
    ("docker login -u me -p -Hunter2Prod9x", "docker login -u me -p [REDACTED:cli-password]"),
    ("podman login -u me -p Hunter2Prod9x quay.io", "podman login -u me -p [REDACTED:cli-password] quay.io"),
    ("docker -H tcp://x login -u me -p Hunter2Prod9x", "docker -H tcp://x login -u me -p [REDACTED:cli-password]"),
    ("sshpass -v -p Hunter2Prod9x ssh host", "sshpass -v -p [REDACTED:cli-password] ssh host"),
    ("curl \\\n  -u admin:Hunter2Prod9x https://x", "curl \\\n  -u admin:[REDACTED:cli-password] https://x"),
    ('curl -u admin:"Hunter2Prod9x" https://x', 'curl -u admin:"[REDACTED:cli-password]" https://x'),
    ("curl --proxy-user bob:Hunter2Prod9x x", "curl --proxy-user bob:[REDACTED:cli-password] x"),
    ("http -a admin:Hunter2Prod9x x", "http -a admin:[REDACTED:cli-password] x"),
    ("See http://example.com for details; sort -u a:b", "See http://example.com for details; sort -u a:b"),
    ("wget http://x && uniq -cu file:1", "wget http://x && uniq -cu file:1"),
    ('{\\"token_type\\": \\"Bearer\\"}', '{\\"token_type\\": \\"Bearer\\"}'),
    ('\\"max_tokens\\": \\"4096000\\"', '\\"max_tokens\\": \\"4096000\\"'),
    ("<TokenType>Bearer</TokenType>", "<TokenType>Bearer</TokenType>"),
    ("<PasswordField>Enter your password</PasswordField>", "<PasswordField>Enter your password</PasswordField>"),
    ("See .pgpass docs.\nsrc/app.py:120:foo:bar:baz", "See .pgpass docs.\nsrc/app.py:120:foo:bar:baz"),
    ("see ~/.pgpass\nfe80:0000:0000:0000:0204:61ff:fe9d:f156", "see ~/.pgpass\nfe80:0000:0000:0000:0204:61ff:fe9d:f156"),
])
def test_the_forms_breakers_and_testers_found_are_redacted(said, hidden):
    assert redact_secrets(said)[0] == hidden


def test_many_keys_a_detector_knows_on_one_line_take_linear_time_and_are_all_hidden():
    """Found by a security tester: each key the maintained detector found was replaced over the
    whole line (and its allowlist filter read the whole window again per key): 1 MB of Mailchimp
    keys held a worker 30 s."""
    import secrets

    keys = [secrets.token_hex(16) + "-us1" for _ in range(21_000)]
    text = " ".join(f"mailchimp {key}" for key in keys)  # about 1 MB
    hidden, count = _quick(redact_secrets, text)
    assert count == len(set(keys)) and not any(key in hidden for key in keys[::500])


def test_an_allowlist_pragma_keeps_no_secret_in_the_vault():
    """detect-secrets leaves a line marked "pragma: allowlist secret" alone: here a secret is hidden
    whatever the text says of it."""
    assert redact_secrets("mailchimp 0123456789abcdef0123456789abcdef-us1  # pragma: allowlist secret")[0] == \
        "mailchimp [REDACTED:mailchimp-access-key]  # pragma: allowlist secret"

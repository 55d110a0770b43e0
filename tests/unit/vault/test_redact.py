"""Secret redaction (SPEC §2.4): each format is hidden, and code that only looks like one is left alone."""

from __future__ import annotations

import pytest

from memo_analytics.vault.redact import redact_secrets, redact_value

# (text, the secret part that must disappear); every value here is fake
SECRETS = [
    ("key AKIAIOSFODNN7EXAMPLQ in use", "AKIAIOSFODNN7EXAMPLQ"),
    ("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("git clone https://github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF@github.com/o/r",
     "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF"),
    ("token ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("gitlab glpat-AbCdEfGhIjKlMnOpQrSt12", "glpat-AbCdEfGhIjKlMnOpQrSt12"),
    ("OPENAI_API_KEY=sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789", "sk-proj-Abcdefghijklmnopqrstuvwxyz0123456789"),
    ("use sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    ("slack xoxb-1234567890-abcdefghijklmnop", "xoxb-1234567890-abcdefghijklmnop"),
    ("hook https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX", "hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX"),
    ("https://discord.com/api/webhooks/123456789/abcDEF_ghi-JKL", "abcDEF_ghi-JKL"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("npm npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("hf hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "eyJzdWIiOiIxMjM0NTY3ODkwIn0"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA7"),
    ("postgres://admin:pa@ss9@db.example.com/app", "pa@ss9"),
    ("https://u:pw@host/x", "pw@"),
    ("Authorization: Basic YWRtaW46cGFzc3dvcmQ=", "YWRtaW46cGFzc3dvcmQ="),
    ("curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz123456'", "abcdefghijklmnopqrstuvwxyz123456"),
    ("curl -u admin:CurlPassw0rd https://x", "CurlPassw0rd"),
    ("mysql -u root -pMysqlPassw0rd123 db", "MysqlPassw0rd123"),
    ('password = "hunter2hunter"', "hunter2hunter"),
    ("DB_PASSWORD: YamlPassw0rdValue", "YamlPassw0rdValue"),
    ("my password is Hunter2!", "Hunter2!"),
    ("client_secret=abc123def456", "abc123def456"),
    ("x" * 25_000 + ' password = "Hunter2SuperSecretPw" ', "Hunter2SuperSecretPw"),
    ("AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;",
     "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50u"),
    ("twilio SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef0123456789abcdef"),
    ("SENDGRID=SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ", "SG.abcdefghijklmnopqrstuv"),
    ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"),
    ("mailchimp 0123456789abcdef0123456789abcdef-us12", "0123456789abcdef0123456789abcdef-us12"),
    ("square sq0atp-abcdefghijklmnopqrstuv", "sq0atp-abcdefghijklmnopqrstuv"),
    ("pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoLWlqa2wtbW5vcC1xcnN0LXV2d3h5ejAxMjM0NTY3AAIqWzMsImFiYyJd", "pypi-AgEIcHlwaS5vcmcCJGFiY2Rl"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA"),
    ('{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkq\\n-----END PRIVATE KEY-----"}',
     "MIIEvQIBADANBgkq"),
    ("dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "dop_v1_0123456789abcdef"),
    ("shopify shpat_0123456789abcdef0123456789abcdef", "shpat_0123456789abcdef0123456789abcdef"),
    ("gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 oauth", "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("AKCp5budTFpbypBqQbGJPz3pGCi28pPivfWczqjfYb9drAmd9LbRZbj6UpKFxJXA8ksWGc9fM",
     "AKCp5budTFpbypBqQbGJPz3pGCi28pPivfWczqjfYb9drAmd9LbRZbj6UpKFxJXA8ksWGc9fM"),
    ("redis://:R3disPassw0rd@cache:6379/0", "R3disPassw0rd"),
    ("GOOGLE_CLIENT_SECRET=GOCSPX-abcdefghijklmnopqrstuvwxyz01", "GOCSPX-abcdefghijklmnopqrstuvwxyz01"),
    ("vault hvs.CAESIJlU9JMYEhOPYv4KEvVYJ2TRAZXTlJMl0abcdefGh", "hvs.CAESIJlU9JMYEhOPYv4KEvVYJ2TRAZXTlJMl0"),
    ("docker login -u user -p Dock3rPassw0rd", "Dock3rPassw0rd"),
    ("PGPASSWORD=PgPassw0rd123 psql", "PgPassw0rd123"),
]

# code and prose from real transcripts that mention secrets without holding one
NOT_SECRETS = [
    "password: SecretStr = Field(",
    "def f(password: str) -> None:",
    "token = get_token()",
    "the password is required",
    'api_key = os.environ["API_KEY"]',
    "const token = process.env.TOKEN;",
    "pageToken = res.data?.next_page_token",
    "input_tokens = 6976",
    '"outputTokens":2848,"cacheReadTokens":1024',
    "DISCORD_BOT_TOKEN=your_bot_token",
    "secret = ${SECRET}",
    "--- PASS: TestAgentSessionTypes (0.00s)",
    "task-management-system-design-with-extra-words",
    "github_pat_xxx is a placeholder",
    "passwordless login",
    "time 12:30:00 ok",
    "http://localhost:8080/x and git@github.com:o/r.git",
    "const skipped = items.filter(x => x.sk_id)",
]


def test_the_corpus_covers_at_least_25_formats():
    assert len(SECRETS) >= 40


@pytest.mark.parametrize("text, secret", SECRETS, ids=[s[1][:24] for s in SECRETS])
def test_each_secret_format_is_redacted(text, secret):
    redacted, count = redact_secrets(text)
    assert secret not in redacted
    assert count >= 1 and "[REDACTED:" in redacted


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_code_that_mentions_secrets_is_left_alone(text):
    assert redact_secrets(text) == (text, 0)


def test_a_token_used_as_url_user_is_redacted_once():
    text = "https://github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF@github.com/o/r"
    assert redact_secrets(text) == ("https://[REDACTED:github-token]@github.com/o/r", 1)


def test_redact_value_walks_nested_structures():
    value = {"type": "commit", "sha": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "n": 3,
             "more": [{"note": "password=Sup3rS3cretPw!"}]}
    redacted = redact_value(value)
    assert redacted["sha"] == "[REDACTED:github-token]" and redacted["n"] == 3
    assert "Sup3rS3cretPw" not in str(redacted)


def test_every_own_pattern_match_holds_one_of_its_anchors():
    """The anchor prefilter may skip a pattern only where it cannot match: every match of
    every own pattern on the corpus (and on each secret alone) holds one of its anchors."""
    from memo_analytics.vault.redact import _OWN_PATTERNS

    matched_kinds = set()
    for text, secret in SECRETS:
        for candidate in (text, secret, text.upper(), text.title()):
            for kind, pattern, _, anchors in _OWN_PATTERNS:
                for match in pattern.finditer(candidate):
                    matched_kinds.add(kind)
                    near = candidate[max(0, match.start() - 16) : match.end()].lower()  # a look-behind's context
                    assert any(a in near for a in anchors), (kind, match.group(0))
    assert len(matched_kinds) >= 25

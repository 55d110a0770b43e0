"""The credential corpus shared by the redaction tests (SPEC §2.4).

``SECRETS`` pairs a text with the secret part of it that must never be stored; ``NEW_SHAPES``
names the exact marker three vendor shapes must get; ``LOOK_ALIKES`` are texts from real
transcripts and tool output that only look like secrets and must be stored byte for byte.
Every value here is fake.
"""

from __future__ import annotations

MAILGUN_KEY = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
DATABRICKS_TOKEN = "dapi0123456789abcdef0123456789abcdef"
DATABRICKS_TOKEN_SUFFIXED = "dapif13ac4b49d1cb31f69f678e39602e381-2"
DISCORD_BOT_TOKEN = "MTA4NzY1NDMyMTA5ODc2NTQzMg.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB"
AZURE_STORAGE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
DOPPLER_TOKEN = "dp.st.dev.xKx3NqG0QqJH7mZT9cWv1PFs2LhYdE8aRbUo4nVy"
AGE_SECRET_KEY = "AGE-SECRET-KEY-1QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE"
DISCORD_BOT_TOKEN_SHORT = "Nzk5MjgxNDk0NDc2NDU1OTg3.YABS5g.2lmzECVlZv3vv6miVnUaKPQi2wI"

# (text, the secret part that must disappear, the exact kind it is redacted as): no hint word
NEW_SHAPES = [
    (f"send with {MAILGUN_KEY} from the EU region", MAILGUN_KEY, "mailgun-api-key"),
    (f"curl -s https://api:{MAILGUN_KEY}@api.mailgun.net/v3/domains", MAILGUN_KEY, "mailgun-api-key"),
    (f"workspace pat {DATABRICKS_TOKEN} for the nightly job", DATABRICKS_TOKEN, "databricks-token"),
    (f"DATABRICKS_HOST=https://adb-1.azuredatabricks.net {DATABRICKS_TOKEN_SUFFIXED}", DATABRICKS_TOKEN_SUFFIXED,
     "databricks-token"),
    (f"the bot runs as {DISCORD_BOT_TOKEN} now", DISCORD_BOT_TOKEN, "discord-bot-token"),
    (f"DISCORD_TOKEN={DISCORD_BOT_TOKEN}", DISCORD_BOT_TOKEN, "discord-bot-token"),
    (f"client.run('{DISCORD_BOT_TOKEN_SHORT}')", DISCORD_BOT_TOKEN_SHORT, "discord-bot-token"),
    (f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE_STORAGE_KEY};EndpointSuffix=core.windows.net",
     AZURE_STORAGE_KEY, "azure-storage-key"),
    (f"export DOPPLER_TOKEN= && doppler setup --token {DOPPLER_TOKEN}", DOPPLER_TOKEN, "doppler-token"),
    (f"# created: 2026-11-30\n{AGE_SECRET_KEY}", AGE_SECRET_KEY, "age-secret-key"),
]

# (text, the secret part that must disappear)
SECRETS = [
    # found by an attacker: stored as typed
    ("AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij==;EndpointSuffix=x",
     "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghij"),
    ("pg_dump --host db --password S3cretPassw0rd --db shop", "S3cretPassw0rd"),
    ("deploy --api-key=k3y-for-the-deploy-4711 --region eu", "k3y-for-the-deploy-4711"),
    ("tags: tagghp_1234567890abcdefghijklmnopqrstuvwxAB", "ghp_1234567890abcdefghijklmnopqrstuvwxAB"),
    ("x_ghp_1234567890abcdefghijklmnopqrstuvwxAB", "ghp_1234567890abcdefghijklmnopqrstuvwxAB"),
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
    ("sshpass -p 'Sshp4ssw0rdX' ssh deploy@web1", "Sshp4ssw0rdX"),
    ("temporary ASIAY34FZKBOKMUTVV7A session key", "ASIAY34FZKBOKMUTVV7A"),
    ("restricted rk_live_51H8abcdEFGHijklMNOPqrst", "rk_live_51H8abcdEFGHijklMNOPqrst"),
    ("user token xoxp-2048-4096-8192-a1b2c3d4e5f6", "xoxp-2048-4096-8192-a1b2c3d4e5f6"),
    # found by an attacker on loopback: an env file's value of letters or digits only, a name
    # ending in _PASS, a password of digits, vendor shapes, a cookie header, a URL password with '/'
    ("DATABASE_PASSWORD=correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("export DB_PASS='Sup3rS3cret!'", "Sup3rS3cret!"),
    ("PIN=482913", "482913"),
    ("GITHUB_TOKEN=abcdefghijklmnopqrstuv", "abcdefghijklmnopqrstuv"),
    ("password=58302719", "58302719"),
    ('{"pwd": "99887766"}', "99887766"),
    ("whsec_abcdefghijklmnopqrstuvwxyz012345", "whsec_abcdefghijklmnopqrstuvwxyz012345"),
    ("Authorization header ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz0123456789",
     "ya29.a0AfH6SMBabcdefghijklmnopqrstuvwxyz0123456789"),
    ("xapp-1-A0123456789-0123456789012-abcdef0123456789abcdef0123456789abcdef",
     "xapp-1-A0123456789-0123456789012-abcdef0123456789abcdef0123456789abcdef"),
    ("Cookie: session=abcdef0123456789abcdef; theme=dark", "abcdef0123456789abcdef"),
    ("Set-Cookie: sid=Zm9vYmFyYmF6cXV4; Path=/; HttpOnly", "Zm9vYmFyYmF6cXV4"),
    ("postgres://u:p/ss1@h.example.com/db", "p/ss1"),
    # found by a security tester: a secret set by a command, its name and value apart (AWS's own way,
    # a Dockerfile's ENV, fish's set -x, Windows' setx, gh secret set --body), and said in words
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"),
    ("ENV AWS_SECRET_ACCESS_KEY wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"),
    ("ENV API_TOKEN a8f5f167f44f4964e6c998dee827110c", "a8f5f167f44f4964e6c998dee827110c"),
    ("set -x API_TOKEN a8f5f167f44f4964e6c998dee827110d", "a8f5f167f44f4964e6c998dee827110d"),
    ("setx API_TOKEN a8f5f167f44f4964e6c998dee827110e", "a8f5f167f44f4964e6c998dee827110e"),
    ("gh secret set DEPLOY_KEY --body a8f5f167f44f4964e6c998dee827110f", "a8f5f167f44f4964e6c998dee827110f"),
    ("api key = 'a8f5f167f44f4964e6c998dee8271101'", "a8f5f167f44f4964e6c998dee8271101"),
    ("aws secret access key: wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKE2", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKE2"),
    ("the password for prod is Tr0ub4dor3xyz!", "Tr0ub4dor3xyz!"),
    ("the token is 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    # found by a breaker of those: a quoted value of words, Windows' system-wide setx, "secret is", a colon
    ('ENV SECRET_KEY "quoted value here"', "quoted value here"),
    ('export DB_PASSWORD="two words"', "two words"),
    ("setx /M DB_PASSWORD Tr0ub4dor3x", "Tr0ub4dor3x"),
    ("the secret is 8f14e45fceea167a5a36dedd4bea2543", "8f14e45fceea167a5a36dedd4bea2543"),
    ("password for prod: Tr0ub4dor&3", "Tr0ub4dor&3"),
    # and of those: single quotes, quoted words said in prose, gh secret set -b with words
    ("export SECRET_KEY='my very secret phrase'", "my very secret phrase"),
    ("ENV API_TOKEN='correct horse battery staple'", "correct horse battery staple"),
    ("set -x DB_PASSWORD 'two words'", "two words"),
    ('the secret is "swordfish"', "swordfish"),
    ('The password is "correct horse"', "correct horse"),
    ('gh secret set API_KEY -b "x y z"', "x y z"),
    *[(text, secret) for text, secret, _ in NEW_SHAPES],
]

# code, prose and tool output from real transcripts that mention secrets without holding one
LOOK_ALIKES = [
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
    # git output: commit hashes and short shas
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8\nMerge: 3f5e2a1 7b9c0d4",
    "   3f5e2a1..9fceb02  main -> main",
    # identifiers
    "session 123e4567-e89b-12d3-a456-426614174000 resumed",
    "a key-value store with key-based sharding and key-valuestoreimplementationdetailsx",
    "the cache key-5d41402abc4b2a76b9719d911017c592a9e1f0b3 was evicted",
    # base64 image fragment
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    # token counts and limits
    "Total tokens: 128000 (max_tokens=4096, prompt_tokens=1873)",
    # type annotations
    "def login(user: str, password: str, token: Optional[str] = None) -> Session:",
    "    api_key: str | None = None",
    # dotted names of the Discord-token length, vendor-looking words
    "NotificationServiceProvider.config.resolveDefaultChannelSettingsV2",
    "dapiDataGetTopLongShortPositionRatio (params?: {}): Promise<implicitReturnType>;",
    "id dapi123456789012345678a9bc01234defg5 is not hex",
    # command options that name a secret but hold none
    "gh auth login --with-token < token.txt && vault login --token-file ~/.vault-token",
    "pytest --tb=short -x && git push --force-with-lease",
    "kubectl create secret generic --from-literal=user=admin --secret-name app-creds",
    "run --password $DB_PASSWORD --token ${TOKEN}",
    # found by an attacker: an option's value is never the next option, nor on the next line, and a
    # name that holds ghs_ is a name
    "cmd --secret --verbose",
    "cmd --token\n--verbose",
    "variable_name_ghs_thisIsALongIdentifierName1234567890Abc",
    # an env name alone is no secret: placeholders, calls, dotted names, counts, flags, a port
    "login(user=user, password=password)",
    "MAX_TOKENS=4096 and CLAUDE_CODE_MAX_OUTPUT_TOKENS=32000",
    "API_KEY=YOUR_API_KEY",
    "export GITHUB_TOKEN=$(gh auth token)",
    "SECRET_KEY=get_secret()",
    "TOKEN=os.environ",
    "PASSWORD_MIN_LENGTH=12",
    "USE_TOKEN=true",
    "http://localhost:3000/api/users/@me",
    "the cookie: we set it on login",
    # found by an attacker of the new patterns: settings and counts named after a password, the
    # shell's working directory, plain words and placeholders
    "passwordLength=12345678 password_min_length: 128000 passwordResetTimeout=3600000",
    "max_password_length = 100000 PASSWORD_MIN=123456 password_changed_at: 1712345678",
    "PWD=/home/me/projects OLDPWD=/tmp password=/run/secrets/db",
    "PWD=projects PASS=through PIN=disabled PASSWORD=example",
    # the new command and prose forms leave names, variables and plain words alone
    "ENV API_TOKEN $API_TOKEN",
    "set -x PATH /usr/local/bin",
    "the token is expired",
    "the password for prod is required",
    "aws configure set region eu-west-1",
    "gh secret set DEPLOY_KEY --body \"$KEY\"",
    "the token is stored in localStorage",
    'export API_TOKEN="$(cat token.txt)"',
    "the secret is out",
    "password for prod: required",
    "ENV TOKEN_URL https://auth.example.com/token",
    'the password is "$DB_PASSWORD"',
]

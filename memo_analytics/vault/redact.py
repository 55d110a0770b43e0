"""Secret redaction before anything is persisted (SPEC §2.4).

Two passes, in this order:

1. our own patterns for multi-line and vendor formats the maintained detector misses or
   only half-catches (private key blocks, GitHub fine-grained tokens, OpenAI/Anthropic
   keys, Mailgun, Databricks and whole Discord bot tokens, passwords inside URLs ...);
2. the maintained detector `detect-secrets` with its regex plugins (cloud keys, VCS
   tokens, chat tokens, JWTs, keyword assignments such as ``password = "..."``). Its
   high-entropy plugins are left off: on prose and code they flag ordinary words.

Each secret becomes ``[REDACTED:<kind>]``. :func:`redact_secrets` returns the redacted
text and the number of secrets replaced.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

REDACTION = "[REDACTED:{kind}]"

# A value worth hiding: not a placeholder, a variable reference, a type or a call, and with a
# letter and a digit or symbol (``letmein``, ``SecretStr``, ``get_token()``, ``6976`` are left alone).
_VALUE = (
    r"""(?!\$|\{|<|\[REDACTED|/[A-Za-z._~-])"""  # $VAR, ${VAR}, {{ template }}, <placeholder>, redacted, a path
    r"""(?!(?:[A-Za-z_]+\??\.)+[A-Za-z_]+(?:[\s"'`(),;\[\]{}]|$))"""  # dotted code reference (a.b, a?.b)
    r"""(?=[^\s"'`(),;\[\]{}]*[A-Za-z])"""  # a letter: counts such as input_tokens: 6976 are not secrets
    r"""(?=[^\s"'`(),;\[\]{}]*(?:\d|[^\w\s"'`(),;\[\]{}]))"""  # a digit or a symbol: not a word, type or name
    r"""[^\s"'`(),;\[\]{}]{6,}(?![\w(\[])"""
)
_SECRET_WORD = r"(?i:password|passwd|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?)"
#: A name that names a secret: the word with name characters around it (``AWS_SECRET_ACCESS_KEY``).
#: Bounded: unbounded runs on each side backtracked in the square of a long run of name
#: characters (``_secret_`` × 25,000: 82 s for one turn).
_SECRET_NAME = r"[A-Za-z0-9_.-]{0,64}" + _SECRET_WORD + r"[A-Za-z0-9_.-]{0,64}"
#: A command that takes a user and its password (``curl -u USER:PW``), up to the option, within the
#: command (bounded; a line continuation goes on with it).
_ARG_GAP = r"(?:[ \t]+|[ \t]*\\\n[ \t]*)"
_CLI_USER = (r"(?i:\bcurl|\bwget|(?<![\w/.-])https?|(?<![\w/.-])xh)(?:" + _ARG_GAP + r"[^\s;|&]+){0,40}?" + _ARG_GAP
             + r"(?:-[A-Za-z]{0,8}[uUa][ \t]*|--(?:proxy-)?user(?:[ \t]+|=)|--auth(?:[ \t]+|=))")
#: A registry's login with its password option (docker, podman, nerdctl, helm registry; global options
#: before ``login``), up to the option.
_REGISTRY_LOGIN = (r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm[ \t]+registry|oras)(?:[ \t]+-[^\n;|&]{0,200}?)?"
                   r"[ \t]+login\b[^\n;|&]{0,500}?\s(?:-p|--password)")
#: ``htpasswd`` with ``-b`` among its flags (none of them ``-n``), then its FILE USER PASSWORD; with ``-n``,
#: USER PASSWORD. A flag's number (``-C 12``, ``-r 5``) goes with it.
_HTP_FLAG = r"-[A-Za-mo-z25]{1,8}(?:[ \t]+\d{1,4})?[ \t]+"
_HTPASSWD = r"\bhtpasswd[ \t]+(?:" + _HTP_FLAG + r"){0,6}-[A-Za-mo-z]{0,7}b[A-Za-mo-z]{0,7}[ \t]+(?:" + _HTP_FLAG + r"){0,6}"
_HTPASSWD_N = (r"\bhtpasswd[ \t]+(?=(?:-[A-Za-z25]{1,8}(?:[ \t]+\d{1,4})?[ \t]+){0,7}-[A-Za-z]{0,7}n)"
               r"(?=(?:-[A-Za-z25]{1,8}(?:[ \t]+\d{1,4})?[ \t]+){0,7}-[A-Za-z]{0,7}b)"
               r"(?:-[A-Za-z25]{1,8}(?:[ \t]+\d{1,4})?[ \t]+){1,8}")
#: A value of letters and a digit or symbol, no placeholder (``$VAR``, ``${…}``, ``<…>``), up to an
#: escaped quote (``\"``) or a markup's ``<``: what an escaped JSON value or an XML element holds.
_MARKED_VALUE = (r"(?!\$|\{|<|\[REDACTED)(?=[^\s\"\\<]{0,200}[A-Za-z])(?=[^\s\"\\<]{0,200}[0-9!#$%&*+,./:;=?@^_|~-])"
                 r"[^\s\"\\<]{4,200}")

# (kind, pattern, group to replace: 0 = whole match, anchors). Order matters: specific shapes
# first. ``anchors`` are lower-case substrings of which every match holds at least one: a
# pattern runs only on a text that holds one of its anchors (a substring test is far cheaper
# than a regex scan; a test checks the anchors against the credential corpus).
_OWN_PATTERNS: list[tuple[str, re.Pattern[str], int, tuple[str, ...]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        0,
        ('private key',),
    ),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), 0, ('github_pat_',)),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), 0, ('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_')),
    # a token glued to other text (``tagghp_…``, ``x_ghp_…``: no word boundary): exactly its 36
    # characters, with digits and both cases (a longer identifier that holds ``ghs_`` is a name)
    ("github-token", re.compile(r"gh[pousr]_(?=[A-Za-z0-9]{0,35}\d)(?=[A-Za-z0-9]{0,35}[A-Z])"
                                r"(?=[A-Za-z0-9]{0,35}[a-z])[A-Za-z0-9]{36}(?![A-Za-z0-9])"), 0,
     ('ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_')),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0, ('glpat-',)),
    ("anthropic-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0, ('sk-ant-',)),
    ("openai-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0, ('sk-',)),
    # a key glued to other text (no word boundary): long, with digits and both cases
    ("openai-key", re.compile(r"sk-(?=[A-Za-z0-9_-]{40})(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])[A-Za-z0-9_-]{40,}"), 0, ('sk-',)),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0, ('aiza',)),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0, ('xox',)),
    ("slack-webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), 0, ('hooks.slack.com',)),
    ("discord-webhook", re.compile(r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"), 0, ('/api/webhooks/',)),
    ("stripe-key", re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0, ('k_live_', 'k_test_')),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0, ('akia', 'asia')),
    ("npm-token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), 0, ('npm_',)),
    ("pypi-token", re.compile(r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"), 0, ('pypi-',)),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"), 0, ('hf_',)),
    ("twilio-api-key", re.compile(r"\bSK[0-9a-fA-F]{32}\b"), 0, ('sk',)),
    ("sendgrid-api-key", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"), 0, ('sg.',)),
    ("telegram-bot-token", re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,}"), 0, (':aa',)),
    ("square-token", re.compile(r"\bsq0(?:atp|csp)-[A-Za-z0-9_-]{20,}"), 0, ('sq0',)),
    ("shopify-token", re.compile(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), 0, ('shp',)),
    ("vault-token", re.compile(r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"), 0, ('hvs.', 'hvb.', 'hvr.')),
    ("digitalocean-token", re.compile(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), 0, ('_v1_',)),
    ("doppler-token", re.compile(r"\bdp\.(?:pt|st|ct|sa|scim|audit)\.(?:[a-z0-9_-]{1,32}\.)?[A-Za-z0-9]{40,44}\b"), 0, ('dp.',)),
    ("age-secret-key", re.compile(r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b"), 0, ('age-secret-key-1',)),
    # a connection string's key, whatever its length (a real one is 88 characters; a shortened
    # or made-up one is still the key of that string)
    ("azure-storage-key", re.compile(r"(?i)\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{20,}={0,2})"), 1,
     ('accountkey=', 'sharedaccesskey=')),
    ("google-oauth-secret", re.compile(r"\bGOCSPX-[A-Za-z0-9_-]{20,}"), 0, ('gocspx-',)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0, ('eyj',)),
    # Mailgun private API key (gitleaks mailgun-private-api-token; older keys are alphanumeric)
    ("mailgun-api-key", re.compile(r"(?<![A-Za-z0-9])key-(?=[A-Za-z0-9]{0,31}\d)(?=[A-Za-z0-9]{0,31}[A-Za-z])[A-Za-z0-9]{32}(?![\w-])"), 0, ('key-',)),
    # Databricks personal access token (gitleaks databricks-api-token): hex, an optional -N suffix
    ("databricks-token", re.compile(r"(?<![A-Za-z0-9])dapi[a-f0-9]{32}(?:-\d{1,2})?(?![\w-])"), 0, ('dapi',)),
    # Discord bot token: id.timestamp.HMAC. The id part is base64 of the bot's decimal id, so
    # it opens with [MNO] and then [DTjz] (an ASCII digit's high bits) and holds no '-' or '_';
    # 6 chars of timestamp; 27-38 of HMAC. With a digit and a lower-case letter: not a dotted name.
    # The only literal every such token holds is its dot, hence the anchor.
    (
        "discord-bot-token",
        re.compile(
            r"[MNO](?<![\w.-][MNO])(?=[\w.-]*\d)(?=[\w.-]*[a-z])"
            r"[DTjz][A-Za-z0-9]{22,26}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?![\w-]|\.[\w-])"
        ),
        0,
        ('.',),
    ),
    # user:password@host — the password may hold '@'; the host may not
    ("url-password", re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s/:@\[\]]*:([^\s/\[\]]+)@[^\s/@]+"), 1, ('://',)),
    # … or holding '/' (``u:p/ss1@host``): a port's digits before the first '/' are a host:port/path
    # (bounded runs: unbounded ones scanned to the end of the text from every "://", in the
    # square of its length — 150 KB of "a://:b/" held the daemon 43 s)
    ("url-password", re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s/:@\[\]]{0,64}:"
                                r"((?!\d+/)[^\s/\[\]@]{1,64}/[^\s\[\]@]{0,64})@[A-Za-z0-9][^\s/@]{0,253}"), 1, ('://',)),
    ("authorization", re.compile(r"(?i)\bauthorization\s*[:=]\s*[\"']?(?:basic|bearer|token|digest)\s+([A-Za-z0-9+/=._~-]{8,})"), 1, ('authorization',)),
    ("bearer-token", re.compile(r"(?i)(?<=\bBearer )[A-Za-z0-9._~+/-]{20,}=*"), 0, ('bearer ',)),
    # a quoted user:password of words (``curl -u 'admin:two words'``), before the unquoted form took the first
    # (-u among other short flags too: ``curl -su``, ``-Lu``; -U and --proxy-user a proxy's; HTTPie's and xh's
    # -a; a command, not a URL's "http", and within it: ``http://x … sort -u a:b`` is no password)
    # (one pattern: 'user:two words', user:"its password" and user:password; a scan per pattern held the GIL)
    ("cli-password", re.compile(_CLI_USER + r"(?:([\"']))?[^\s:\"']+:(?:([\"']))?((?(1)[^\"'\n]{1,200}|(?(2)[^\"'\n]{1,200}|"
                                r"[^\s\"']+)))(?(1)\1)(?(2)\2)"), 3, ('curl', 'wget', 'http', 'xh')),
    ("cli-password", re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,500}?\s-p([\"'])([^\"'\n]{1,200})\1"),
     2, ('mysql', 'mariadb')),
    ("cli-password", re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]{0,500}?\s-p([^\s\"'-][^\s\"']*)"), 1, ('mysql', 'mariadb')),
    # (quoted words; -pVALUE without a space; --password-stdin takes none)
    ("cli-password", re.compile(_REGISTRY_LOGIN + r"(?:[ \t]+|=)?([\"'])([^\"'\n]{1,200})\1"),
     2, ('login',)),
    # (-p VALUE, -pVALUE, --password=VALUE; --password-stdin takes none)
    ("cli-password", re.compile(_REGISTRY_LOGIN + r"(?:(?:[ \t]+|=)(?=[^\s\"'])|(?![-\s\"']))([^\s\"']+)"), 1,
     ('login',)),
    # htpasswd -b[c] FILE USER PASSWORD (-n: USER PASSWORD, no file): the password on the command line, its
    # place among the arguments (-b among other flags: -bB, -B -C 12 -b; a redirection or comment after it)
    ("cli-password", re.compile(_HTPASSWD + r"(?:[^\s\-\"'][^\s]*[ \t]+){2}([\"'])([^\"'\n]{1,200})\1"), 2, ('htpasswd',)),
    ("cli-password", re.compile(_HTPASSWD + r"(?:[^\s\-\"'][^\s]*[ \t]+){2}(?![\"'])([^\s\"']{1,200})"), 1, ('htpasswd',)),
    ("cli-password", re.compile(_HTPASSWD_N + r"[^\s\-\"'][^\s]*[ \t]+([\"'])([^\"'\n]{1,200})\1"), 2, ('htpasswd',)),
    ("cli-password", re.compile(_HTPASSWD_N + r"[^\s\-\"'][^\s]*[ \t]+(?![\"'])([^\s\"']{1,200})"), 1, ('htpasswd',)),
    ("cli-password", re.compile(r"\bsshpass(?:[ \t]+-[A-Za-oq-z]{1,4}){0,4}[ \t]+-p[ \t]*([\"'])([^\"'\n]{1,200})\1"), 2,
     ('sshpass',)),
    ("cli-password", re.compile(r"\bsshpass(?:[ \t]+-[A-Za-oq-z]{1,4}){0,4}[ \t]+-p[ \t]*[\"']?([^\s\"']+)"), 1, ('sshpass',)),
    # a .netrc's entry: machine HOST login USER password PASSWORD
    # (its login named: "the default password is …" is said in words, "machine learning password manager" prose)
    ("netrc-password", re.compile(r"\b(?:machine[ \t]+[^\s]{1,253}|default)\s+login[ \t]+[^\s]{1,200}"
                                  r"(?:\s+account[ \t]+[^\s]{1,200})?\s+password[ \t]+(?!\[REDACTED)([^\s]{1,200})"), 1,
     ('machine', 'default')),
    # a .pgpass line: host:port:database:user:password
    ("pgpass-password", re.compile(r"(?m)^[ \t]*[^:\s#/]{1,253}:(?:\d{1,5}|\*):[^:\s/]{1,100}:[^:\s/]{1,100}:"
                                   r"(?!\[REDACTED)((?:[^\s:\\]|\\.){1,200})[ \t]*$"), 1, (':5432:', ':*:', ':6432:', 'pgpass')),
    # an XML element naming a secret: <password>…</password>, <db:apiKey>…</db:apiKey>
    ("xml-secret", re.compile(r"<((?:[\w.-]{1,64}:)?[\w.-]{0,64}" + r"(?i:password|passwd|passphrase|secret|token|api[_-]?key|"
                              r"access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?)[\w.-]{0,64})>"
                              r"(" + _MARKED_VALUE + r")</\1>"), 2, ('</',)),
    # a JSON value escaped in a string (a curl body, a log line): {\"password\": \"…\"}
    ("secret-assignment", re.compile(r'\\"[A-Za-z0-9_.-]{0,64}' + _SECRET_WORD + r'[A-Za-z0-9_.-]{0,64}\\"[ \t]*:[ \t]*\\"'
                                     r'(' + _MARKED_VALUE + r')\\"'), 1, ('\\"',)),
    # a token as a URL's user (``https://<40 hex>@github.com/…``, a Sentry DSN): long, of hex, or mixed
    ("url-token", re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://([0-9a-f]{32,64}|(?=[A-Za-z0-9_-]{0,200}\d)"
                             r"(?=[A-Za-z0-9_-]{0,200}[A-Z])(?=[A-Za-z0-9_-]{0,200}[a-z])[A-Za-z0-9_-]{30,200})@[A-Za-z0-9]"),
     1, ('://',)),
    # an Azure shared access signature's sig=, an Azure AD (Entra) client secret
    ("azure-sas", re.compile(r"(?i)[?&]sig=([A-Za-z0-9%+/=]{20,200})"), 1, ('sig=',)),
    ("azure-client-secret", re.compile(r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,40}(?![A-Za-z0-9_~.-])"),
     0, ('q~',)),
    # a PuTTY key file's private lines
    ("private-key", re.compile(r"Private-Lines:[ \t]*\d{1,4}[ \t]*\r?\n((?:[A-Za-z0-9+/=]{4,100}\r?\n){0,399}[A-Za-z0-9+/=]{4,100}(?=\r?\n|\Z))"), 1,
     ('private-lines:',)),
    # a command's option that takes a secret (--password X, --db-password=X, --api-key X): the
    # option's name ends in the secret word (--token-file names a file)
    ("cli-password", re.compile(r"(?i)(?<![\w-])--(?:[a-z0-9]+-)*(?:password|passwd|passphrase|secret|token|api-?key|"
                                r"access-key|auth-key|client-secret)(?:=|[ \t]+)[\"']?(?!-)(" + _VALUE + ")"), 1,
     ('passw', 'passphrase', 'secret', 'token', 'apikey', 'api-key', 'access-key', 'auth-key')),
    ("password", re.compile(r"\b(?i:password|passphrase|pin)\s+(?i:is|was)\s*:?\s*[\"']?(" + _VALUE + ")"), 1, ('password', 'passphrase', 'pin')),
    # said in words: "the password for prod is …", "the token is …", "api key = '…'", "aws secret access key: …"
    ("password", re.compile(r"\b(?i:password|passphrase|token|secret|api[ _-]?key|secret(?:[ _-]access)?[ _-]key)"
                            r"(?:\s+(?i:for|of)\s+[\w.-]{1,40})?(?:\s+(?i:is|was)\s*:?|(?<=[\w.-])\s*:)\s*[\"']?("
                            + _VALUE + ")"), 1,
     ('password', 'passphrase', 'token', 'secret', 'key')),
    # a quoted value said in words: "the password is \"correct horse\"", "the secret for prod is 'open sesame'"
    ("password", re.compile(r"\b(?i:password|passphrase|secret)(?:\s+(?i:for|of)\s+[\w.-]{1,40})?\s+(?i:is|was)\s*:?\s*"
                            r"([\"'])(?!\$|\[REDACTED)([^\"'\n]{4,100})\1"), 2, ('password', 'passphrase', 'secret')),
    ("secret-assignment", re.compile(r"\b(?i:api|secret|access|aws secret access|private|auth)[ ](?i:key|token)"
                                     r"\s*[:=]\s*[\"']?(" + _VALUE + ")"), 1, ('key', 'token')),
    # a secret set by a command, its name and value apart: `ENV NAME value` (a Dockerfile), `set -x NAME
    # value` (fish), `setx NAME value` (Windows), `aws configure set aws_secret_access_key value`
    # a quoted value of words (``ENV SECRET_KEY "two words here"``, ``export DB_PASSWORD='two words'``):
    # before the unquoted form below, which took its first word alone
    ("secret-assignment", re.compile(r"(?:(?<![\w-])ENV|\bexport|\bset[ \t]+-[gxU]+|\bsetx(?:[ \t]+/[Mm])?)[ \t]+"
                                     r"(?:[A-Z0-9]+_)*[A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|API_?KEY|"
                                     r"ACCESS_KEY|PRIVATE_KEY|AUTH_KEY)[A-Z0-9_]*(?:[ \t]*=[ \t]*|[ \t]+)([\"'])(?!\$)"
                                     r"([^\"'\n$]{6,200})\1"), 2, ('env', 'export', 'set')),
    ("secret-assignment", re.compile(r"(?:(?<![\w-])ENV|\bset[ \t]+-[gxU]+|\bsetx(?:[ \t]+/[Mm])?|\baws[ \t]+configure"
                                     r"[ \t]+set)[ \t]+" + _SECRET_NAME + r"[ \t]+[\"']?(?![a-z]+://)(" + _VALUE + ")"), 1,
     ('env', 'set', 'setx', 'configure')),
    ("secret-assignment", re.compile(r"\bgh[ \t]+secret[ \t]+set\b[^\n]{0,500}?[ \t](?:-b|--body)(?:=|[ \t]*)([\"'])(?!\$)"
                                     r"([^\"'\n$]{3,200})\1"), 2, ('gh',)),
    ("secret-assignment", re.compile(r"\bgh[ \t]+secret[ \t]+set\b[^\n]{0,500}?[ \t](?:-b|--body)(?:=|[ \t]*)[\"']?(?!-)(" + _VALUE
                                     + ")"), 1, ('gh',)),
    # an environment variable that names a secret (``DATABASE_PASSWORD=…``, ``DB_PASS=…``,
    # ``PIN=…``, as an .env file or a shell writes it): its value, even all letters or all digits
    # (an env file's value is no word of prose), but no $VAR, placeholder (``YOUR_PASSWORD``,
    # ``your_bot_token``: capitals, or snake_case words), call or dotted name
    # (``SECRET_KEY=get_secret()``, ``TOKEN=os.environ``)
    # (not the shell's PWD; a bare PASS is no name of a secret; a PIN is digits)
    ("secret-assignment", re.compile(
        r"(?<![\w.-])(?:(?:[A-Z0-9]+_)*[A-Z0-9]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|APIKEY|API_KEY|"
        r"ACCESS_KEY|PRIVATE_KEY|AUTH_KEY|CREDENTIALS?)|(?:[A-Z0-9]+_)+PASS)[ \t]*=[ \t]*[\"']?("
        r"(?!\$|\{|<|\[REDACTED)(?!(?:[A-Za-z_]+\??\.)+[A-Za-z_]+(?:[\s\"'`(),;\[\]{}]|$))"
        r"(?![A-Z][A-Z0-9_]*(?:[\s\"'`,;]|$))(?![a-z]+(?:_[a-z0-9]+)+(?:[\s\"'`,;]|$))"
        r"(?!(?i:true|false|null|none|example|sample|placeholder|changeme|required|optional|string|dummy)"
        r"(?:[\s\"'`,;]|$))"
        r"[^\s\"'`(),;\[\]{}]{6,}(?![\w(\[]))"), 1,
     ('password', 'passwd', 'passphrase', '_pass', 'secret', 'token', 'key', 'credential')),
    ("secret-assignment", re.compile(r"(?<![\w.-])(?:[A-Z0-9]+_)*PIN[ \t]*=[ \t]*[\"']?(\d{4,12})(?![\w.])"), 1,
     ('pin=', 'pin =')),
    # a password of digits only, in any assignment (``password=58302719``): the name ends in the word
    # (``passwordLength=12345678``, ``password_min_length: 128000`` are settings)
    # (the name's words before it bounded: ``a_a_a_…pwd`` of 40 KB took 33 s, each ``_`` a new start
    # scanning to the end — found by a security tester: one prompt froze the daemon and the hook)
    ("secret-assignment", re.compile(r"(?<![A-Za-z0-9])(?:[A-Za-z0-9]{1,64}_){0,8}(?i:password|passwd|passphrase|pwd)"
                                     r"(?![A-Za-z0-9_.-])[\"']?[ \t]*(?::=|=>|=|:)[ \t]*[\"']?(\d{6,})(?![\w.])"), 1,
     ('password', 'passwd', 'passphrase', 'pwd')),
    ("slack-token", re.compile(r"\bxapp-\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]{20,}"), 0, ('xapp-',)),
    ("stripe-webhook-secret", re.compile(r"\bwhsec_[A-Za-z0-9+/=]{24,}"), 0, ('whsec_',)),
    ("google-oauth-token", re.compile(r"\bya29\.[0-9A-Za-z_-]{20,}"), 0, ('ya29.',)),
    # a Cookie / Set-Cookie header's name=value pairs (a session cookie is a login)
    ("cookie", re.compile(r"(?i)\b(?:set-)?cookie:[ \t]*([\w.-]+=[^;\s]{6,}(?:;[ \t]*[\w.-]+(?:=[^;\s]*)?)*)"), 1,
     ('cookie:',)),
    # from the word on (what comes before it in the name changes nothing: the value is replaced)
    ("secret-assignment", re.compile(_SECRET_WORD + r"[A-Za-z0-9_.-]{0,64}\b[\"']?\s*(?::=|=>|=|:)\s*[\"']?(" + _VALUE + ")"), 1, ('password', 'passwd', 'passphrase', 'pwd', 'secret', 'token', 'api_key', 'apikey', 'api-key', 'access_key', 'accesskey', 'access-key', 'private_key', 'privatekey', 'private-key', 'auth_key', 'authkey', 'auth-key', 'credential')),
]
_ALL_ANCHORS = tuple(sorted({anchor for *_, anchors in _OWN_PATTERNS for anchor in anchors}))

# Substrings that a line must hold for the (slower) maintained detector to look at it.
_DETECTOR_HINTS = (
    "key", "token", "secret", "pass", "pwd", "auth", "cred", "akia", "asia", "eyj", "xox", "begin",
    "://", "sk_", "rk_", "sg.", "npm_", "pypi", "ghp_", "gho_", "ghs_", "glpat", "hooks.", "discord",
    "twilio", "mailchimp", "artifactory", "akc", "cloudant", "ibm", "softlayer", "square", "stripe", "telegram",
)
_SECRET_VALUE = re.compile(_VALUE)
#: No pattern here matches a text shorter than this.
_MIN_SECRET_TEXT = 8
_CHUNK = 4_000
_OVERLAP = 200
#: Of a long line, at most this many distinct values the detector found are looked for in the whole
#: line (beyond it, in the windows they were found in: a line of thousands is a planted text).
_VALUES_EVERYWHERE = 64

# detect-secrets plugins that look for a known shape (no entropy guessing). The IBM plugins
# are left out: on real transcripts they flag Go test output ("--- PASS: TestX (0.00s)").
_DETECTOR_PLUGINS = [
    "ArtifactoryDetector", "AWSKeyDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "JwtTokenDetector", "KeywordDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
]
_MIN_DETECTED_LENGTH = 6
#: A run of word characters longer than any secret the detector's shapes find (our own patterns
#: see the text whole): its keyword plugin matches ``\w*`` around a keyword, and backtracked in
#: the square of such a run (``_secret_`` × 25,000: 82 s for one turn). The detector sees a space
#: in its place.
_LONG_WORD = re.compile(r"\w{101,}")
#: A redaction marker as :data:`REDACTION` writes it (in a text: a secret was there).
REDACTED_MARKER = re.compile(r"\[REDACTED:[a-z-]+\]")
_ALREADY = REDACTED_MARKER


#: detect-secrets' filter of lines that carry its "allowlist" pragma: not used here.
_ALLOWLIST_FILTER = "detect_secrets.filters.allowlist.is_line_allowlisted"


@lru_cache(maxsize=1)
def _detector_config() -> dict:
    return {"plugins_used": [{"name": name} for name in _DETECTOR_PLUGINS]}


def _use_detector_settings() -> None:
    """Configure detect-secrets (process-wide) with our plugin list, once: entering its
    ``transient_settings`` per line costs four times the scan itself. Re-applied if
    something else in the process changed the detector's settings."""
    from detect_secrets.settings import configure_settings_from_baseline, get_settings

    settings = get_settings()
    if set(settings.plugins) != set(_DETECTOR_PLUGINS) or _ALLOWLIST_FILTER in settings.filters:
        configure_settings_from_baseline(_detector_config())
        # a "pragma: allowlist secret" comment in a text kept its secret in the vault, and the filter read the
        # whole line again for every secret found (1 MB of keys: 20 s — found by a security tester)
        get_settings().disable_filters(_ALLOWLIST_FILTER)


def warm() -> None:
    """Load and configure the secret detector now (its first use imports detect-secrets and,
    through it, requests: about 0.1 s). An import calls it while its workers read the files,
    so the first redaction does not wait for it."""
    import detect_secrets.core.scan

    _use_detector_settings()
    del detect_secrets


def _detector_secrets(line: str) -> list[tuple[str, str]]:
    from detect_secrets.core.scan import scan_line

    _use_detector_settings()
    found: list[tuple[str, str]] = []
    for secret in scan_line(line):
        value = secret.secret_value
        if secret.type == "Secret Keyword" and not _SECRET_VALUE.fullmatch(value or ""):
            continue  # the keyword plugin also flags identifiers and words: keep only secret-like values
        if value and len(value) >= _MIN_DETECTED_LENGTH and not _ALREADY.search(value):
            kind = re.sub(r"[^a-z]+", "-", secret.type.lower()).strip("-")
            found.append((kind, value))
    return found


#: Every anchor of our patterns and every hint of the detector (all lower case): a text holding
#: none of them holds no secret either pass would find (issue 16 point 2: one cheap test first).
_TRIGGER_WORDS = tuple(sorted({*_ALL_ANCHORS, *_DETECTOR_HINTS}, key=len, reverse=True))
#: The same as one alternation, run on the lower-cased text: one pass of the regex engine
#: (a case-insensitive alternation is several times slower than lower() and a plain one).
_TRIGGER = re.compile("|".join(re.escape(word) for word in _TRIGGER_WORDS))
#: Hexadecimal digits and hyphens: ids (UUIDs, hashes) are made of nothing else. While no trigger
#: word is made of them alone, such a text holds no secret either pass would find — a test that
#: costs one ``str.strip`` (the ids of a transcript's checkpoint are tens of thousands).
_HEX_AND_HYPHENS = "0123456789abcdefABCDEF-"
_HEX_HOLDS_NONE = not any(set(word) <= set(_HEX_AND_HYPHENS.lower()) for word in _TRIGGER_WORDS)
#: Short texts repeat (models, agents, sources, branch names): their result is remembered.
_SHORT = 256
#: Above this length substring tests (memchr-fast) beat the alternation.
_LONG = 600


def _may_hold_secret(text: str) -> bool:
    lowered = text.lower()
    if len(lowered) > _LONG:
        return any(word in lowered for word in _TRIGGER_WORDS)
    return _TRIGGER.search(lowered) is not None


def redact_secrets(text: str) -> tuple[str, int]:
    """Replace every secret in ``text`` by ``[REDACTED:<kind>]`` (SPEC §2.4).

    Parameters
    ----------
    text : str
        Any text (a prompt body, a summary, a title).

    Returns
    -------
    tuple[str, int]
        The redacted text and how many secrets were replaced.
    """
    if len(text) < _MIN_SECRET_TEXT or (_HEX_HOLDS_NONE and not text.strip(_HEX_AND_HYPHENS)):
        return text, 0
    if len(text) <= _SHORT:
        return _redact_short(text)
    return _redact(text) if _may_hold_secret(text) else (text, 0)


@lru_cache(maxsize=8192)
def _redact_short(text: str) -> tuple[str, int]:
    return _redact(text) if _may_hold_secret(text) else (text, 0)


def _redact(text: str) -> tuple[str, int]:
    count = 0

    def _sub(kind: str, group: int):
        def replace(match: re.Match[str]) -> str:
            nonlocal count
            count += 1
            if group == 0:
                return REDACTION.format(kind=kind)
            whole = match.group(0)
            start, end = match.span(group)
            offset = match.start(0)
            return whole[: start - offset] + REDACTION.format(kind=kind) + whole[end - offset :]

        return replace

    lowered = text.lower()
    present = {anchor for anchor in _ALL_ANCHORS if anchor in lowered}
    for kind, pattern, group, anchors in _OWN_PATTERNS if present else ():
        if not present.isdisjoint(anchors):
            before = count
            text = pattern.sub(_sub(kind, group), text)
            if count != before:
                lowered = text.lower()
                present = {anchor for anchor in _ALL_ANCHORS if anchor in lowered}

    whole = text.lower()
    if not any(hint in whole for hint in _DETECTOR_HINTS):
        return text, count
    lines = text.split("\n")
    for index, line in enumerate(lines):
        lowered = line.lower()
        if not line.strip() or not any(hint in lowered for hint in _DETECTOR_HINTS):
            continue
        # long lines are scanned in overlapping windows so that nothing escapes by length; what a detector finds
        # in a window is looked for in that window alone, and the line rebuilt once (a replace of the whole line
        # per value found took the square of its length — 1 MB of keys a detector knows held a worker 30 s:
        # found by a security tester); every window a value is in finds it there
        spans: list[tuple[int, int, str]] = []
        found: dict[str, str] = {}  # each value found, and the kind it was found as first
        for at in range(0, max(len(line), 1), _CHUNK):
            window = line[at : at + _CHUNK + _OVERLAP]
            for kind, value in _detector_secrets(_LONG_WORD.sub(" ", window)):
                where = window.find(value)
                while where >= 0:
                    spans.append((at + where, at + where + len(value), kind))
                    found.setdefault(value, kind)
                    where = window.find(value, where + len(value))
            if len(line) <= _CHUNK:
                break
        if len(line) > _CHUNK and len(found) <= _VALUES_EVERYWHERE:
            # a few values: each looked for in the whole line too (a password said once beside its name, again
            # alone in another window), as a replace of the line did
            for value, kind in found.items():
                where = line.find(value)
                while where >= 0:
                    spans.append((where, where + len(value), kind))
                    where = line.find(value, where + len(value))
        if spans:
            spans.sort(key=lambda span: (span[0], -span[1]))
            parts, done = [], 0
            for begin, finish, kind in spans:
                if begin < done:
                    continue  # inside one replaced already (the longest at a place first)
                parts += [line[done:begin], REDACTION.format(kind=kind)]
                done = finish
            line = "".join(parts) + line[done:]
            count += len(found)
        lines[index] = line
    return "\n".join(lines), count


def redact_value(value: object) -> object:
    """Redact every string inside ``value`` (str, list, dict; nested), other types as is."""
    if isinstance(value, str):
        return redact_secrets(value)[0]
    if isinstance(value, list):
        return [redact_value(item) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    return value


#: What the value of a secret-named field becomes (``password: hunter2``).
SECRET_VALUE = REDACTION.format(kind="secret-assignment")
_SECRET_NAME_RE = re.compile(_SECRET_NAME)


def is_secret_name(name: object) -> bool:
    """Whether a field name names a secret (``password``, ``api_key``, ``AWS_SECRET_ACCESS_KEY``,
    ``token`` …): its value is hidden whatever its shape. Names that merely count or describe
    tokens (``inputTokens``, ``max_tokens``) are not secrets."""
    if not isinstance(name, str) or not _SECRET_NAME_RE.fullmatch(name):
        return False
    return not re.search(r"(?i)tokens$|^(?:max|input|output|total|cache)[_-]?tokens?|count", name)


def looks_like_secret(text: str) -> bool:
    """True when ``text`` holds something :func:`redact_secrets` would hide."""
    return redact_secrets(text)[1] > 0


# ---------------------------------------------------------------- capture-ignore paths

IGNORED_PATH = "[IGNORED PATH]"
IGNORE_FILE = ".memoignore"
_PATH_CANDIDATE = re.compile(r"(?<![\w@:/.~-])(?:~|\.{1,2})?/?[\w.~-]+(?:/[\w.~-]+)*/?")


class IgnoreRules:
    """Paths a person does not want captured (SPEC §2.4): the product root's ``.memoignore``
    (gitignore syntax) plus configured globs, matched by ``pathspec``.

    Parameters
    ----------
    root : Path | None
        The product repository root; absolute paths inside it are matched relative to it.
    patterns : list[str]
        Gitignore-style patterns.
    """

    def __init__(self, root, patterns: list[str]) -> None:
        self.root = root
        self.patterns = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
        self.spec = None
        if self.patterns:  # no rules (the common case): pathspec is not even loaded
            import pathspec

            self.spec = pathspec.GitIgnoreSpec.from_lines(self.patterns)

    @classmethod
    def for_root(cls, root, extra: list[str] | None = None) -> "IgnoreRules":
        """Rules from ``root/.memoignore`` (when present) and ``extra`` globs."""
        from pathlib import Path

        patterns = list(extra or [])
        if root is not None:
            ignore_file = Path(root) / IGNORE_FILE
            if ignore_file.is_file():
                patterns += ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
        return cls(root, patterns)

    def matches(self, candidate: str) -> bool:
        """Whether a path (relative, ``./``-relative, ``~``-less absolute inside the root) is ignored."""
        from pathlib import PurePosixPath

        if self.spec is None:
            return False
        path = candidate.rstrip("/")
        if path.startswith("/") and self.root is not None:
            try:
                path = str(PurePosixPath(path).relative_to(str(self.root)))
            except ValueError:
                pass
        path = path.removeprefix("./")
        if not path or path in (".", ".."):
            return False
        return self.spec.match_file(path) or self.spec.match_file(path + "/")


def redact_ignored_paths(text: str, rules: IgnoreRules | None) -> tuple[str, int]:
    """Replace every path in ``text`` that ``rules`` ignore by ``[IGNORED PATH]``.

    Returns
    -------
    tuple[str, int]
        The text and the number of paths replaced.
    """
    if rules is None or not rules.patterns:
        return text, 0
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        token = match.group(0)
        if ("/" in token or token.startswith(".")) and rules.matches(token):
            count += 1
            return IGNORED_PATH
        return token

    return _PATH_CANDIDATE.sub(replace, text), count


# ---------------------------------------------------------------- URLs shown to people

_URL_MASK = "***"


def mask_url(text: str, secret_path: bool = False) -> str:
    """``text`` with the secrets of a URL masked.

    The userinfo's password (``https://ana:***@host``; a lone user name, which is often a
    token, as ``***@host``), every query value (``?key=***&token=***``), the fragment, and a
    path that is a secret by itself (a Slack or Discord webhook: ``/***``) become ``***``;
    with ``secret_path`` (a webhook's URL, whatever its host), any path.
    Text that is not a URL with a host is returned as it is.
    """
    try:
        parts = urlsplit(text)
    except ValueError:
        return redact_secrets(text)[0]
    if not parts.scheme or not parts.netloc:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0] if ":" in userinfo else ""
        netloc = f"{user}:{_URL_MASK}@{host}" if user else f"{_URL_MASK}@{host}"
    query = "&".join(f"{pair.split('=', 1)[0]}={_URL_MASK}" if pair else pair for pair in parts.query.split("&")) \
        if parts.query else ""
    path = parts.path
    if path.strip("/") and (secret_path or redact_secrets(
            urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[-1], path, "", "")))[1]):
        path = "/" + _URL_MASK
    return urlunsplit((parts.scheme, netloc, path, query, _URL_MASK if parts.fragment else ""))

"""A seeded corpus of made-up secrets in real shapes, shared by the redaction tests.

Right prefixes, lengths and alphabets; random bodies that start with FAKE where the alphabet
allows, so no real secret is ever written into a file of the repository.
"""

from __future__ import annotations

import base64
import json
import random
import string
from dataclasses import dataclass, field

SEED = 20240611


UPPER = string.ascii_uppercase


UPPER_DIGITS = UPPER + string.digits


ALNUM = string.ascii_letters + string.digits


HEX = "0123456789abcdef"


B64 = ALNUM + "+/"


B64URL = ALNUM + "-_"


BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


@dataclass
class Entry:
    """One piece of text holding secrets, and what must never be seen again."""

    kind: str
    text: str
    needles: list[str]
    one_line: bool = True
    unclosed: bool = False
    """An unclosed `<private>` span: it removes everything after it, so it goes last."""


@dataclass
class Corpus:
    """Seeded made-up secrets in every shape the pipeline promises to catch."""

    rng: random.Random
    entries: list[Entry] = field(default_factory=list)
    env_literals: list[str] = field(default_factory=list)
    toml_literals: list[str] = field(default_factory=list)
    pyproject_literals: list[str] = field(default_factory=list)

    def rand(self, alphabet: str, length: int) -> str:
        """`length` random characters of `alphabet`."""
        return "".join(self.rng.choice(alphabet) for _ in range(length))

    def body(self, alphabet: str, length: int) -> str:
        """A random body that starts with FAKE (or fake) when the alphabet has those letters."""
        for marker in ("FAKE", "fake"):
            if set(marker) <= set(alphabet) and length > 12:
                return marker + self.rand(alphabet, length - 4)
        return self.rand(alphabet, length)

    def add(self, kind: str, text: str, *needles: str, one_line: bool = True) -> None:
        """Record an entry; every needle must be long enough to be distinctive."""
        assert all(len(n) >= 8 for n in needles), (kind, needles)
        assert all(n in text for n in needles), kind
        self.entries.append(Entry(kind, text, list(needles), one_line=one_line))

    @property
    def needles(self) -> list[str]:
        """Every secret value and distinctive body of the corpus."""
        return [n for e in self.entries for n in e.needles]

    @property
    def literals(self) -> list[str]:
        """Every configured literal, from all three sources."""
        return [*self.env_literals, *self.toml_literals, *self.pyproject_literals]


def token(corpus: Corpus, kind: str, prefix: str, alphabet: str, length: int) -> str:
    """Add a prefixed token in prose and return it."""
    body = corpus.body(alphabet, length)
    value = prefix + body
    corpus.add(kind, f"{kind} credential: {value} (rotate it)", value, body)
    return value


def pem_block(corpus: Corpus, label: str, *, end: bool = True) -> tuple[str, list[str]]:
    """A private-key block of random base64 lines; returns it and its lines."""
    lines = [corpus.rand(B64, 64) for _ in range(4)] + [corpus.rand(B64, 20) + "=="]
    block = f"-----BEGIN {label}-----\n" + "\n".join(lines) + "\n"
    if end:
        block += f"-----END {label}-----"
    return block, lines


def build_corpus(seed: int = SEED) -> Corpus:
    """The corpus: every shape, every assignment form, literals and private spans."""
    c = Corpus(random.Random(seed))

    # Token shapes.
    token(c, "aws_akia", "AKIA", UPPER_DIGITS, 16)
    token(c, "aws_asia", "ASIA", UPPER_DIGITS, 16)
    token(c, "github_ghp", "ghp_", ALNUM, 36)
    token(c, "github_ghs", "ghs_", ALNUM, 36)
    token(c, "github_fine_grained", "github_pat_", ALNUM + "_", 82)
    token(c, "gitlab", "glpat-", ALNUM + "-_", 20)
    token(c, "gitlab_ci_job", "glcbt-64_", ALNUM, 24)
    token(c, "slack_bot", "xoxb-" + c.rand(string.digits, 12) + "-", ALNUM, 24)
    token(c, "slack_user", "xoxp-" + c.rand(string.digits, 12) + "-", ALNUM, 32)
    token(c, "slack_app", "xapp-1-A" + c.rand(UPPER_DIGITS, 10) + "-", ALNUM, 64)
    webhook_secret = c.body(ALNUM, 24)
    webhook = (
        f"https://hooks.slack.com/services/T{c.rand(UPPER_DIGITS, 8)}/"
        f"B{c.rand(UPPER_DIGITS, 8)}/{webhook_secret}"
    )
    c.add("slack_webhook", f"post alerts to {webhook}", webhook, webhook_secret)
    token(c, "stripe_sk_live", "sk_live_", ALNUM, 24)
    token(c, "stripe_rk_test", "rk_test_", ALNUM, 24)
    token(c, "stripe_pk_live", "pk_live_", ALNUM, 24)
    token(c, "stripe_whsec", "whsec_", ALNUM, 32)
    token(c, "openai_sk", "sk-", ALNUM, 48)
    token(c, "openai_sk_proj", "sk-proj-", ALNUM + "-_", 120)
    token(c, "anthropic_sk_ant", "sk-ant-api03-", ALNUM + "-_", 95)
    token(c, "google_aiza", "AIza", ALNUM + "-_", 35)
    token(c, "npm", "npm_", ALNUM, 36)
    sendgrid_a, sendgrid_b = c.body(ALNUM, 22), c.body(ALNUM + "-_", 43)
    sendgrid = f"SG.{sendgrid_a}.{sendgrid_b}"
    c.add("sendgrid", f"SENDGRID key {sendgrid}", sendgrid, sendgrid_a, sendgrid_b)
    token(c, "huggingface", "hf_", ALNUM, 34)
    token(c, "twilio", "SK", HEX, 32)
    jwt_payload = (
        base64.urlsafe_b64encode(
            json.dumps({"sub": "fake-" + c.rand(ALNUM, 16), "iat": 1700000000}).encode()
        )
        .decode()
        .rstrip("=")
    )
    jwt_signature = c.body(B64URL, 43)
    jwt = f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{jwt_payload}.{jwt_signature}"
    c.add("jwt", f"session cookie was {jwt}; expired", jwt, jwt_payload, jwt_signature)

    # Private-key blocks.
    for label in (
        "RSA PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ):
        block, lines = pem_block(c, label)
        c.add(f"pem {label}", f"key file:\n{block}\nend of key file", *lines, one_line=False)
    truncated, lines = pem_block(c, "RSA PRIVATE KEY", end=False)
    c.add("pem missing END", "pasted half a key:\n" + truncated, *lines, one_line=False)
    c.entries[-1].unclosed = True

    # Authorization headers, bearer tokens, passwords in URLs.
    bearer = c.body(ALNUM + "._-", 40) + "7"
    c.add("authorization bearer", f"Authorization: Bearer {bearer}", bearer)
    basic = base64.b64encode(f"fake-user:{c.rand(ALNUM, 20)}".encode()).decode()
    c.add("authorization basic", f"curl -H 'Authorization: Basic {basic}' x.invalid", basic)
    header_token = c.body(ALNUM, 30)
    c.add("authorization token", f"authorization: token {header_token}", header_token)
    prose_bearer = c.body(ALNUM, 32) + "9"
    c.add("bearer in prose", f"the client sent bearer {prose_bearer} again", prose_bearer)
    json_basic = base64.b64encode(f"fake-svc:{c.rand(ALNUM, 20)}".encode()).decode()
    c.add(
        "authorization in json",
        json.dumps({"headers": {"Authorization": "Basic " + json_basic}}),
        json_basic,
    )
    db_password = c.body(ALNUM, 20)
    db_url = f"postgres://app_user:{db_password}@db.example.invalid:5432/app"
    c.add("url password", f"DATABASE at {db_url}", db_password)
    slash_password = c.body(ALNUM, 8) + "/" + c.rand(ALNUM, 6) + "+" + c.rand(ALNUM, 6)
    c.add(
        "url password with slash",
        f"dsn mysql://admin:{slash_password}@mysql.example.invalid:3306/app",
        slash_password,
    )
    redis_password = c.body(ALNUM, 20)
    c.add(
        "url password no user",
        f"cache redis://:{redis_password}@cache.example.invalid:6379/0",
        redis_password,
    )

    # Passwords in a tool's own command-line syntax.
    curl_password = c.body(ALNUM, 18)
    c.add("curl user", f"curl -fsS -u fake-ci:{curl_password} https://x.invalid", curl_password)
    mysql_password = c.body(ALNUM, 16)
    c.add("mysql -p", f"mysql -h db.invalid -u app -p{mysql_password} app", mysql_password)
    sshpass_password = c.body(ALNUM, 16)
    c.add("sshpass", f"sshpass -p {sshpass_password} ssh deploy@x.invalid", sshpass_password)

    # Secret-named assignments in every form, with varied key names.
    def value(length: int = 20) -> str:
        return c.body(ALNUM, length)

    v = value()
    c.add("env", f"DB_PASSWORD={v}", v)
    v = value()
    c.add("env export", f'export API_KEY="{v}"', v)
    v1, v2 = value(), value()
    c.add("env two per line", f"GH_TOKEN={v1} AWS_SECRET_ACCESS_KEY={v2} ./deploy.sh", v1, v2)
    v = value()
    c.add("env single quotes", f"export SLACK_SIGNING_SECRET='{v}'", v)
    v = value()
    c.add("env pgpassword", f"PGPASSWORD={v} psql -h db.example.invalid", v)
    v = value()
    c.add("env npm auth", f"NPM_AUTH={v}", v)
    v = value()
    c.add("yaml", f"client_secret: {v}", v)
    words = [c.body(string.ascii_lowercase, 9) for _ in range(3)]
    c.add("yaml multi word", f"  password: {' '.join(words)}", *words)
    v = value()
    c.add("yaml passphrase", f"key_passphrase: '{v}'", v)
    v = value()
    c.add("yaml spaced key", f"API Key: {v}", v)
    v = value()
    c.add("yaml auth", f"auth: {v}", v)
    v = value()
    c.add("json", json.dumps({"service": "billing", "api_key": v}), v)
    pin = str(c.rng.randrange(10**11, 10**12))
    c.add("json number", f'{{"user": "fake", "password": {pin}}}', pin)
    v = value()
    c.add("json token key", json.dumps({"access_token": v, "expires_in": 3600}), v)
    v = value()
    c.add("python dict", f"{{'secret_token': '{v}', 'retries': 3}}", v)
    v = value()
    c.add("json escaped in string", json.dumps(json.dumps({"client_secret": v})), v)
    v1, v2 = value(), value()
    # X is not a secret name: v2 may stay, only v1 must go.
    c.add("docker env", json.dumps({"Env": ["PATH=/usr/bin", f"DB_PASSWORD={v1}", f"X={v2}"]}), v1)
    v = value()
    c.add("json in note", json.dumps({"msg": f"refresh_token: {v}"}), v)
    v = value()
    c.add("flag space", f"deploy --password {v} --verbose", v)
    v = value()
    c.add("flag equals", f"deploy --token={v}", v)
    v = value()
    c.add("flag quoted", f'login --api-key "{v}"', v)
    v = value()
    c.add("argv list", json.dumps(["deploy", "--client-secret", v]), v)

    # Configured literals: the environment (one containing another), cortex.toml, pyproject.
    short = "corp-fake-" + c.rand(string.ascii_lowercase, 10)
    long_tail = c.rand(string.ascii_lowercase, 12)
    long = f"{short}-{long_tail}"
    c.env_literals += [short, long]
    c.add("literal env", f"tenant {short} is ours", short)
    c.add("literal env longest first", f"tenant {long} is ours", long, long_tail)
    toml_literal = "fake-toml-" + c.rand(string.ascii_lowercase, 12)
    c.toml_literals.append(toml_literal)
    c.add("literal cortex.toml", f"account {toml_literal} billing", toml_literal)
    pyproject_literal = "fake-pyproject-" + c.rand(string.ascii_lowercase, 12)
    c.pyproject_literals.append(pyproject_literal)
    c.add("literal pyproject", f"bucket {pyproject_literal} listed", pyproject_literal)

    # <private> spans.
    v = value()
    c.add("private", f"customer said <private>{v}</private> on the call", v)
    v = value()
    c.add("private attributes", f'<PRIVATE reason="pii" level=2>{v}</Private> seen', v)
    a, b, d = value(), value(), value()
    c.add("private nested", f"x <private>{a}<private>{b}</private>{d}</private> y", a, b, d)
    v = value()
    c.add("private multiline", f"start <private>\n{v}\n</private> end", v, one_line=False)
    v = value()
    c.add("private unclosed", f"the rest is mine <private reason=x>{v} and more", v)
    c.entries[-1].unclosed = True

    # Issue 18, item 6: shapes that were stored verbatim.
    token(c, "shopify_shpat", "shpat_", HEX, 32)
    token(c, "shopify_shpss", "shpss_", HEX, 32)
    token(c, "pypi", "pypi-AgEIcHlwaS5vcmc", B64URL, 120)
    token(c, "digitalocean_dop", "dop_v1_", HEX, 64)
    token(c, "google_oauth_client_secret", "GOCSPX-", B64URL, 28)
    token(c, "age_secret_key", "AGE-SECRET-KEY-1", BECH32, 58)
    account_key = c.body(B64, 86) + "=="
    c.add(
        "azure_account_key",
        "DefaultEndpointsProtocol=https;AccountName=fakeacct;"
        f"AccountKey={account_key};EndpointSuffix=core.windows.net",
        account_key,
    )
    bus_key = c.body(B64, 43) + "="
    c.add(
        "azure_shared_access_key",
        "Endpoint=sb://fake.servicebus.windows.net/;SharedAccessKeyName=Root;"
        f"SharedAccessKey={bus_key}",
        bus_key,
    )
    signature = c.body(ALNUM, 40) + "%2B" + c.rand(ALNUM, 3) + "%3D"
    c.add(
        "azure_sas_sig",
        f"GET https://fakeacct.blob.core.windows.net/c/b.txt?sv=2022-11-02&sp=r&sig={signature}",
        signature,
    )

    # Issue 18, item 1 and issue 19, item 4: secrets written escaped, or split by a continuation.
    v1, v2 = value(), value()
    c.add(
        "json log escaped",
        f'{{"level":"info","msg":"loaded env\\nDB_PASSWORD={v1}\\nAPI_TOKEN={v2}\\n"}}',
        v1,
        v2,
    )
    v = value()
    c.add("repr quoted ini", f"bad value '[database]\\npassword = {v}\\n' given", v)
    v = value()
    c.add("literal backslash n", f"x \\npassword = {v}", v)
    v = value()
    c.add("tab escaped yaml", f"db:\\tpassword:\\t{v}", v)
    v = value()
    go_escaped = f"said \\u003cprivate\\u003e{v}\\u003c/private\\u003e ok"
    c.add("go escaped private", go_escaped, v)
    head, tail = value(), value()
    continued = f"deploy --token {head}\\\n{tail} --yes"
    c.add("continuation split", continued, head, tail, one_line=False)
    block, lines = pem_block(c, "RSA PRIVATE KEY")
    cut = block.split("\n", 3)[3]  # the key's last lines and END, as a tail cut keeps them
    c.add("pem tail only", f"tail of a key file:\n{cut}\nend", *lines[2:], one_line=False)
    return c


CORPUS = build_corpus()


def chunks(entries: list[Entry], count: int) -> list[list[Entry]]:
    """Split entries round-robin into `count` groups."""
    return [entries[i::count] for i in range(count)]


def join(entries: list[Entry], label: str) -> str:
    """One text holding the entries, unclosed spans last, with a label that must survive."""
    ordered = sorted(entries, key=lambda e: e.unclosed)
    return f"{label}\n" + "\n".join(e.text for e in ordered)


def needles_in(data: bytes, needles: list[str]) -> list[str]:
    """Which needles occur in `data`, raw or JSON-escaped."""
    found = []
    for needle in needles:
        forms = {needle.encode(), json.dumps(needle)[1:-1].encode()}
        if any(form in data for form in forms):
            found.append(needle)
    return found

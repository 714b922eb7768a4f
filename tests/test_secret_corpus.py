"""docs/design/redaction.md end to end: no secret reaches a byte under the state root.

A corpus of made-up secrets in real shapes is generated at run time from a fixed seed (right
prefixes, lengths and alphabets; random bodies that start with FAKE where the alphabet allows, so
no real secret is ever written into this file). It is pushed through every ingress the CLI has:
the goal, criteria, claims, notes, symbols, URIs, raw files and stdin (through a real process).
Afterwards every byte of every file under the state root is read back, and neither a secret
value nor its distinctive body may appear anywhere. Secret-looking identifiers are refused
before anything is written.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, base_env, make_repo, run_cortex, tree_state

from cortex.cases.redact import PRIVATE, REDACTED, Redactor

SEED = 20240611

UPPER = string.ascii_uppercase
UPPER_DIGITS = UPPER + string.digits
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


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


def every_file(root: Path) -> Iterator[Path]:
    """Every regular file under `root`."""
    return (p for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink())


# The populated state (built once for the class) ------------------------------------------


@dataclass
class Populated:
    """A state root after the whole corpus went through every ingress."""

    env: dict[str, str]
    repo: Path
    state_root: Path
    cli: Cli
    tasks: list[str]
    submitted: dict[str, tuple[str, str]]
    """Evidence id -> (field, secret-bearing text submitted in that field)."""
    raw_json_evidence: str
    raw_binary_evidence: str
    raw_stdin_evidence: str
    outputs: list[Outcome]


def _configure_literals(env: dict[str, str], repo: Path) -> None:
    env["CORTEX_REDACT_LITERALS"] = ",".join(CORPUS.env_literals)
    (repo / "cortex.toml").write_text(f"redact_literals = {json.dumps(CORPUS.toml_literals)}\n")
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "fake-app"\n\n[tool.cortex]\n'
        f"redact_literals = {json.dumps(CORPUS.pyproject_literals)}\n"
    )


def _raw_json_document() -> str:
    """A tool's JSON output with secrets under secret keys and inside strings."""
    by_kind = {e.kind: e for e in CORPUS.entries}
    document = {
        "tool": "fake-inspect",
        "config": {
            "password": by_kind["env"].needles[0],
            "api_key": by_kind["json"].needles[0],
            "token": int(by_kind["json number"].needles[0]),
            "db": {"client_secret": by_kind["yaml"].needles[0]},
        },
        "log": [e.text for e in CORPUS.entries if not e.unclosed and "private" not in e.kind],
        "count": 3,
    }
    return json.dumps(document, indent=2)


@pytest.fixture(scope="class")
def populated(tmp_path_factory: pytest.TempPathFactory) -> Populated:
    """Open cases and add evidence so that every corpus entry crosses every kind of ingress."""
    base = tmp_path_factory.mktemp("corpus")
    env = base_env(base)
    repo = make_repo(base / "repo", env)
    _configure_literals(env, repo)
    cli = Cli(env, repo)
    outputs: list[Outcome] = []
    submitted: dict[str, tuple[str, str]] = {}

    def run(*args: str, stdin: bytes = b"") -> Any:
        outcome = cli(*args, stdin=stdin)
        outputs.append(outcome)
        return outcome.data

    entries = CORPUS.entries
    # Goals and criteria: three cases, each goal and criterion carrying a share of the corpus.
    tasks = []
    for index, group in enumerate(chunks(entries, 3)):
        criteria = [
            f"--criterion=c{index}_{n}=" + join(part, f"criterion {index}.{n}")
            for n, part in enumerate(chunks(group, 3))
        ]
        goal = join(group[:4], f"goal {index}")
        tasks.append(run("case", "open", goal, *criteria)["taskId"])
    task = tasks[0]

    # Claims and notes: every entry once as a claim and once inside a note.
    for index, group in enumerate(chunks(entries, 8)):
        claim = join(group, f"claim {index}")
        record = run("case", "evidence", "add", task, "--claim", claim)["evidence"]
        submitted[record["id"]] = ("claim", claim)
    for index, group in enumerate(chunks(entries, 6)):
        note = join(group, f"note {index}")
        record = run("case", "note", task, note)["evidence"]
        submitted[record["id"]] = ("claim", note)

    # Symbols and URIs: one-line entries, with a plain claim.
    one_line = [e for e in entries if e.one_line and not e.unclosed]
    for entry in one_line[::2]:
        record = run(
            "case", "evidence", "add", task, "--claim", "symbol check", "--symbol", entry.text
        )["evidence"]
        submitted[record["id"]] = ("symbol", entry.text)
    for entry in one_line[1::2]:
        record = run("case", "evidence", "add", task, "--claim", "uri check", "--uri", entry.text)[
            "evidence"
        ]
        submitted[record["id"]] = ("uri", entry.text)

    # Raw files: the whole corpus as text, a JSON document, and bytes that are not UTF-8.
    (repo / "tool-output.txt").write_text(join(entries, "raw text"))
    (repo / "inspect.json").write_text(_raw_json_document())
    closed = [e for e in entries if not e.unclosed]
    unclosed = [e for e in entries if e.unclosed]
    binary = (
        b"\xff\xfe\x00binary\x80 "
        + join(closed, "raw binary").encode()
        + b"\n\xc3\x28 not utf-8\n"
        + join(unclosed, "the end").encode()
    )
    (repo / "dump.bin").write_bytes(binary)
    run("case", "evidence", "add", task, "--claim", "tool output", "--raw-file", "tool-output.txt")
    raw_json = run(
        "case", "evidence", "add", task, "--claim", "inspect", "--raw-file", "inspect.json"
    )["evidence"]["id"]
    raw_binary = run(
        "case", "evidence", "add", task, "--claim", "binary dump", "--raw-file", "dump.bin"
    )["evidence"]["id"]
    # stdin in-process, and through a real process.
    stdin = join(entries, "stdin in-process").encode()
    run("case", "evidence", "add", task, "--claim", "piped", "--raw-file", "-", stdin=stdin)
    proc = run_cortex(
        ["case", "evidence", "add", task, "--claim", "piped for real", "--raw-file", "-", "--json"],
        env,
        repo,
        stdin=join(entries, "stdin subprocess").encode(),
    )
    envelope = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stderr
    outputs.append(Outcome(proc.returncode, proc.stdout.decode(), proc.stderr.decode()))
    # A note through a real process too, and a clean record as a control.
    proc_note = run_cortex(
        ["case", "note", task, join(entries[:10], "note subprocess"), "--json"], env, repo
    )
    assert proc_note.returncode == 0, proc_note.stderr
    note_record = json.loads(proc_note.stdout)["data"]["evidence"]
    submitted[note_record["id"]] = ("claim", join(entries[:10], "note subprocess"))
    outputs.append(Outcome(proc_note.returncode, proc_note.stdout.decode(), ""))
    run("case", "evidence", "add", task, "--claim", "the login redirect loops on /home")
    for each in tasks:
        run("case", "status", each)
    return Populated(
        env=env,
        repo=repo,
        state_root=Path(env["CORTEX_STATE_DIR"]),
        cli=cli,
        tasks=tasks,
        submitted=submitted,
        raw_json_evidence=raw_json,
        raw_binary_evidence=raw_binary,
        raw_stdin_evidence=envelope["data"]["evidence"]["id"],
        outputs=outputs,
    )


def evidence_records(state: Populated) -> dict[str, dict[str, Any]]:
    """Every committed evidence record of the first case, by id."""
    case_dirs = list(state.state_root.glob(f"sessions/*/{state.tasks[0]}"))
    assert len(case_dirs) == 1
    lines = (case_dirs[0] / "evidence.jsonl").read_text().splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def raw_blob(state: Populated, evidence_id: str) -> bytes:
    """The stored raw blob of one evidence record."""
    reference = evidence_records(state)[evidence_id]["rawRef"]
    task, _, raw_id = reference.removeprefix("case://").split("/")
    (path,) = state.state_root.glob(f"sessions/*/{task}/raw/{raw_id}.txt")
    return path.read_bytes()


class TestCorpus:
    """The corpus itself is what the promise needs: big, varied, and caught by the pipeline."""

    def test_corpus_is_large_and_covers_every_shape(self) -> None:
        """At least 50 secrets, every promised shape and form, all needles distinct."""
        needles = CORPUS.needles
        assert len(needles) >= 50
        assert len(set(needles)) == len(needles)
        kinds = {e.kind for e in CORPUS.entries}
        for expected in (
            "aws_akia",
            "github_ghp",
            "github_fine_grained",
            "gitlab",
            "slack_bot",
            "slack_webhook",
            "stripe_whsec",
            "openai_sk",
            "anthropic_sk_ant",
            "google_aiza",
            "npm",
            "sendgrid",
            "huggingface",
            "jwt",
            "pem RSA PRIVATE KEY",
            "pem PGP PRIVATE KEY BLOCK",
            "pem missing END",
            "authorization basic",
            "bearer in prose",
            "url password",
            "env two per line",
            "yaml",
            "json number",
            "json escaped in string",
            "flag equals",
            "literal env longest first",
            "literal cortex.toml",
            "private nested",
            "private unclosed",
        ):
            assert expected in kinds

    def test_same_seed_same_corpus(self) -> None:
        """The corpus is a function of its seed (a failure can be replayed)."""
        assert build_corpus(SEED).needles == CORPUS.needles
        assert build_corpus(SEED + 1).needles != CORPUS.needles

    @pytest.mark.parametrize("entry", CORPUS.entries, ids=[e.kind for e in CORPUS.entries])
    def test_pipeline_removes_every_needle(self, entry: Entry) -> None:
        """Unit level first, so a shape that leaks is named precisely."""
        out = Redactor(CORPUS.literals)(entry.text)
        assert needles_in(out.encode(), entry.needles) == []
        assert REDACTED in out or PRIVATE in out


class TestEveryIngress:
    """After every ingress, the state root holds no secret and is still well-formed."""

    def test_no_secret_anywhere_under_the_state_root(self, populated: Populated) -> None:
        """Every byte of every file is free of every needle, raw or JSON-escaped."""
        files = list(every_file(populated.state_root))
        assert len(files) > 10
        leaks = {
            str(path.relative_to(populated.state_root)): found
            for path in files
            if (found := needles_in(path.read_bytes(), CORPUS.needles))
        }
        assert leaks == {}

    def test_ingresses_really_carried_the_corpus(self, populated: Populated) -> None:
        """The secrets did reach the store (redacted): labels survive, markers are there."""
        records = evidence_records(populated)
        fields: dict[str, Callable[[dict[str, Any]], str]] = {
            "claim": lambda r: r["claim"],
            "symbol": lambda r: r["location"]["symbol"],
            "uri": lambda r: r["source"]["uri"],
        }
        assert {f for f, _ in populated.submitted.values()} == set(fields)
        for evidence_id, (name, text) in populated.submitted.items():
            stored = fields[name](records[evidence_id])
            assert stored != text
            assert REDACTED in stored or PRIVATE in stored
            if name == "claim":
                assert stored.startswith(text.split("\n", 1)[0] + "\n")
        case_json = next(populated.state_root.glob(f"sessions/*/{populated.tasks[0]}/case.json"))
        case = json.loads(case_json.read_text())
        assert case["goal"].startswith("goal 0\n")
        assert REDACTED in case["goal"]
        assert all(c["statement"].startswith("criterion 0.") for c in case["acceptanceCriteria"])
        assert all(REDACTED in c["statement"] for c in case["acceptanceCriteria"])

    def test_every_ledger_line_and_snapshot_parses(self, populated: Populated) -> None:
        """Each *.jsonl line and each *.json file is valid JSON."""
        checked = 0
        for path in every_file(populated.state_root):
            if path.suffix == ".jsonl":
                for line in path.read_text().splitlines():
                    json.loads(line)
                    checked += 1
            elif path.suffix == ".json":
                json.loads(path.read_text())
                checked += 1
        assert checked > 20

    def test_redacted_records_are_marked_sensitive(self, populated: Populated) -> None:
        """Every evidence record whose text was redacted says so; a clean one does not."""
        records = evidence_records(populated)
        redacted = [
            r
            for r in records.values()
            if REDACTED in json.dumps(r) or PRIVATE in json.dumps(r) or r["rawRef"]
        ]
        assert len(redacted) >= len(populated.submitted)
        assert {r["sensitivity"] for r in redacted} == {"sensitive"}
        clean = [r for r in records.values() if r["claim"] == "the login redirect loops on /home"]
        assert [r["sensitivity"] for r in clean] == ["normal"]

    def test_raw_json_stays_json(self, populated: Populated) -> None:
        """A JSON document given as a raw file is stored redacted and still parses."""
        document = json.loads(raw_blob(populated, populated.raw_json_evidence))
        assert document["config"] == {
            "password": REDACTED,
            "api_key": REDACTED,
            "token": REDACTED,
            "db": {"client_secret": REDACTED},
        }
        assert document["count"] == 3
        assert len(document["log"]) == len(
            [e for e in CORPUS.entries if not e.unclosed and "private" not in e.kind]
        )

    def test_raw_bytes_that_are_not_utf8_survive(self, populated: Populated) -> None:
        """Non-UTF-8 bytes of a raw file are kept exactly; the text between them is redacted."""
        blob = raw_blob(populated, populated.raw_binary_evidence)
        assert blob.startswith(b"\xff\xfe\x00binary\x80 raw binary\n")
        assert b"\n\xc3\x28 not utf-8\nthe end\n" in blob
        assert blob.count(REDACTED.encode()) > 40

    def test_stdin_through_a_real_process_was_redacted(self, populated: Populated) -> None:
        """The blob piped into `python -m cortex` is stored without its secrets."""
        blob = raw_blob(populated, populated.raw_stdin_evidence)
        assert blob.startswith(b"stdin subprocess\n")
        assert needles_in(blob, CORPUS.needles) == []
        assert blob.count(REDACTED.encode()) > 40

    def test_outputs_echo_no_secret(self, populated: Populated) -> None:
        """What the commands printed (stored records, statuses) carries no secret either."""
        assert len(populated.outputs) > 20
        for outcome in populated.outputs:
            assert needles_in(outcome.stdout.encode(), CORPUS.needles) == []

    def test_audit_passes_without_residue(self, populated: Populated) -> None:
        """`cortex case audit` passes for every case and finds no secret left in stored text."""
        reports = [populated.cli("case", "audit", task).data for task in populated.tasks]
        for report in reports:
            assert report["ok"] is True
            assert report["errors"] == []
            assert [w for w in report["warnings"] if w["code"] == "secret_residue"] == []
        assert reports[0]["records"]["evidence"] == len(evidence_records(populated)) > 50


def fake_token(prefix: str, alphabet: str, length: int, seed: int) -> str:
    """A made-up token for the refusal tests."""
    rng = random.Random(seed)
    return prefix + "FAKE" + "".join(rng.choice(alphabet) for _ in range(length - 4))


GHP = fake_token("ghp_", ALNUM, 36, 1)
AKIA = fake_token("AKIA", UPPER_DIGITS, 16, 2)
SK = fake_token("sk-", ALNUM, 48, 3)
GLPAT = fake_token("glpat-", ALNUM, 20, 4)
XOXB = "xoxb-" + "1" * 12 + "-" + fake_token("", ALNUM, 24, 5)

# Refused commands: opening a case, and writing to one (given its id).
OPEN_REFUSALS: dict[str, list[str]] = {
    "open --actor": ["case", "open", "Fix the login redirect", "--actor", GHP],
    "open --idempotency-key": ["case", "open", "goal", "--idempotency-key", AKIA],
    "open --criterion id": ["case", "open", "goal", "--criterion", f"{GLPAT}=it works"],
    "open --criterion id among good ones": [
        *("case", "open", "goal", "--criterion", "c1=fine", "--criterion", f"{XOXB}=x")
    ],
}
CASE_REFUSALS: dict[str, Callable[[str], list[str]]] = {
    "evidence --actor": lambda t: ["case", "evidence", "add", t, "--claim", "x", "--actor", GHP],
    "evidence --source": lambda t: ["case", "evidence", "add", t, "--claim", "x", "--source", SK],
    "evidence --file": lambda t: [
        *("case", "evidence", "add", t, "--claim", "x", "--file", f"config/{GHP}/settings.py")
    ],
    "evidence --file literal": lambda t: [
        *("case", "evidence", "add", t, "--claim", "x", "--file", "src/fake-refused-literal.py")
    ],
    "note --actor": lambda t: ["case", "note", t, "a note", "--actor", AKIA],
}
REFUSED_SECRETS = [GHP, AKIA, SK, GLPAT, XOXB, "fake-refused-literal"]


def assert_refused(cli: Cli, argv: list[str], state_root: Path) -> None:
    """The command fails with invalid_input, writes no byte and echoes no secret."""
    before = tree_state(state_root)
    outcome = cli(*argv)
    assert outcome.code == 4
    assert outcome.error_code == "invalid_input"
    assert "secret" in outcome.envelope["error"]["message"]
    assert tree_state(state_root) == before
    assert needles_in((outcome.stdout + outcome.stderr).encode(), REFUSED_SECRETS) == []


class TestRefusals:
    """Secret-looking identifiers are refused (exit 4) and nothing at all is written."""

    @pytest.mark.parametrize("name", OPEN_REFUSALS)
    def test_open_refused_on_an_empty_root(self, name: str, cli: Cli, state_root: Path) -> None:
        """Nothing exists yet, and nothing is created: not even the store directory."""
        assert_refused(cli, OPEN_REFUSALS[name], state_root)
        assert not state_root.exists()

    @pytest.mark.parametrize("name", OPEN_REFUSALS)
    def test_open_refused_next_to_a_case(self, name: str, cli: Cli, state_root: Path) -> None:
        """With a store in place, a refused open leaves every file as it was."""
        task = cli.open()
        assert_refused(cli, OPEN_REFUSALS[name], state_root)
        assert cli("case", "audit", task).data["ok"] is True

    @pytest.mark.parametrize("name", CASE_REFUSALS)
    def test_write_refused(
        self, name: str, cli: Cli, env: dict[str, str], state_root: Path
    ) -> None:
        """A refused evidence or note leaves the case (and its audit trail) untouched."""
        env["CORTEX_REDACT_LITERALS"] = "fake-refused-literal"
        task = cli.open()
        assert_refused(cli, CASE_REFUSALS[name](task), state_root)
        assert cli("case", "audit", task).data["records"]["commands"] == 1

    def test_refusal_through_a_real_process(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        """A real process refuses a secret actor on stdin evidence and leaves the tree alone."""
        task = cli.open()
        before = tree_state(state_root)
        proc = run_cortex(
            ["case", "evidence", "add", task, "--claim", "x", "--raw-file", "-", "--actor", GHP],
            env,
            repo,
            stdin=f"token={SK}\n".encode(),
        )
        assert proc.returncode == 4
        assert tree_state(state_root) == before
        assert needles_in(proc.stdout + proc.stderr, [GHP, SK]) == []


# Issue 18, item 1: secrets in escaped form, on every surface ----------------------------------

INI_KIND = "[database]\npassword = Hunter2Hunter2Kd\n"
INI_SOURCE = "[database]\npassword = Hunter2Hunter2Sr\n"
INI_ORIGIN = "[database]\npassword = Hunter2Hunter2Or\n"
INI_TASK = "[database]\npassword = Hunter2Hunter2Tk\n"
INI_LIMIT = "[database]\npassword = Hunter2Hunter2Lm\n"
ESCAPED_SECRETS = [
    "Hunter2Hunter2Kd",
    "Hunter2Hunter2Sr",
    "Hunter2Hunter2Or",
    "Hunter2Hunter2Tk",
    "Hunter2Hunter2Lm",
    "Hunter2Hunter2A3",
    "JsonLogPw123456",
    "JsonLogTok98765",
    "PlanPw1234567890",
]


class TestEscapedIngress:
    """The reproductions of issue 18, item 1: each used to leave its secret in plain sight."""

    def test_a_json_log_piped_as_raw_output(
        self, cli: Cli, env: dict[str, str], repo: Path, state_root: Path
    ) -> None:
        """A structured log's escaped env lines are masked in the blob, which stays JSON."""
        task = cli.open()
        line = (
            '{"level":"info","msg":"loaded env\\nDB_PASSWORD=JsonLogPw123456\\n'
            'API_TOKEN=JsonLogTok98765\\n"}\n'
        )
        proc = run_cortex(
            ["case", "evidence", "add", task, "--claim", "json log", "--raw-file", "-", "--json"],
            env,
            repo,
            stdin=line.encode(),
        )
        assert proc.returncode == 0, proc.stderr
        record = json.loads(proc.stdout)["data"]["evidence"]
        assert record["sensitivity"] == "sensitive"
        assert needles_in(proc.stdout + proc.stderr, ESCAPED_SECRETS) == []
        blob = next(state_root.glob(f"sessions/*/{task}/raw/*.txt")).read_bytes()
        assert (
            json.loads(blob)["msg"] == f"loaded env\nDB_PASSWORD={REDACTED}\nAPI_TOKEN={REDACTED}\n"
        )
        assert no_secret_under(state_root, ESCAPED_SECRETS)

    def test_a_claim_with_a_literal_backslash_n(self, cli: Cli, state_root: Path) -> None:
        """`--claim 'x \\npassword = v'` is stored masked, like a real newline is."""
        task = cli.open()
        out = cli("case", "evidence", "add", task, "--claim", "x \\npassword = Hunter2Hunter2A3")
        assert out.data["evidence"]["claim"] == f"x \\npassword = {REDACTED}"
        assert no_secret_under(state_root, ESCAPED_SECRETS)

    def test_the_plan_blob_is_built_from_redacted_values(self, cli: Cli, state_root: Path) -> None:
        """The plan's raw record holds exactly what plan.json and hypotheses.json hold."""
        task = cli.open()
        cli("case", "evidence", "add", task, "--claim", "seen")
        out = cli(
            "case", "plan", task, "--hypothesis", "h :: [database]\npassword = PlanPw1234567890\n",
            "--uncertainty", "none", "--file", "app.py", "--boundary-reason", "here",
            "--verify", "pytest",
        )  # fmt: skip
        assert out.code == 0, out.stdout
        case_dir = next(state_root.glob(f"sessions/*/{task}"))
        hypotheses = json.loads((case_dir / "hypotheses.json").read_text())["hypotheses"]
        assert hypotheses[0]["disproof"] == f"[database]\npassword = {REDACTED}"
        plans = [r for r in evidence_records_of(case_dir).values() if r["kind"] == "plan"]
        assert [p["sensitivity"] for p in plans] == ["sensitive"]
        raw_id = plans[0]["rawRef"].rsplit("/", 1)[1]
        blob = json.loads((case_dir / "raw" / f"{raw_id}.txt").read_text())
        assert blob["hypotheses"] == hypotheses
        assert no_secret_under(state_root, ESCAPED_SECRETS)

    def test_error_messages_quoting_bad_values(
        self, cli: Cli, env: dict[str, str], repo: Path
    ) -> None:
        """`--kind`, `--source`, `--origin`, a task id and a parse error quote no password."""
        task = cli.open()
        outcomes = [
            cli("case", "evidence", "add", task, "--claim", "c", "--kind", INI_KIND),
            cli("case", "evidence", "add", task, "--claim", "c", "--source", INI_SOURCE),
            cli("case", "evidence", "add", task, "--claim", "c", "--origin", INI_ORIGIN),
            cli("case", "evidence", "add", INI_TASK, "--claim", "c"),
            cli("case", "list", "--limit", INI_LIMIT),
        ]
        for outcome in outcomes:
            assert outcome.code == 4
            assert outcome.error_code == "invalid_input"
            assert REDACTED in outcome.envelope["error"]["message"]
            assert needles_in((outcome.stdout + outcome.stderr).encode(), ESCAPED_SECRETS) == []
        human = cli("case", "evidence", "add", task, "--claim", "c", "--kind", INI_KIND, human=True)
        assert human.code == 4
        assert needles_in((human.stdout + human.stderr).encode(), ESCAPED_SECRETS) == []
        proc = run_cortex(["case", "list", "--limit", INI_LIMIT, "--json"], env, repo)
        assert proc.returncode == 4
        assert needles_in(proc.stdout + proc.stderr, ESCAPED_SECRETS) == []

    def test_a_long_bad_value_is_cut_between_words(self, cli: Cli) -> None:
        """A value quoted in part keeps no part of a token: the cut drops the word it hits."""
        for pad in range(60, 84):
            value = "x" * pad + " " + GHP
            for argv in (
                ["case", "status", value],
                ["case", "timeline", cli.open(), "--kind", value],
            ):
                out = cli(*argv)
                assert out.code == 4
                assert "ghp_" not in out.stdout, (pad, out.stdout)

    def test_a_parse_error_uses_the_configured_literals(
        self, cli: Cli, env: dict[str, str]
    ) -> None:
        """A command line that does not parse is redacted with the workspace's literals too."""
        env["CORTEX_REDACT_LITERALS"] = "fake-parse-literal"
        out = cli("case", "list", "--limit", "fake-parse-literal")
        assert out.code == 4
        assert "fake-parse-literal" not in out.stdout
        assert REDACTED in out.envelope["error"]["message"]


def evidence_records_of(case_dir: Path) -> dict[str, dict[str, Any]]:
    """Every evidence record of a case directory, by id."""
    lines = (case_dir / "evidence.jsonl").read_text().splitlines()
    return {record["id"]: record for record in map(json.loads, lines)}


def no_secret_under(root: Path, secrets: list[str]) -> bool:
    """Whether no file under `root` holds any of `secrets` (raw or JSON-escaped)."""
    leaks = {
        str(path.relative_to(root)): found
        for path in every_file(root)
        if (found := needles_in(path.read_bytes(), secrets))
    }
    assert leaks == {}
    return True


MCP_SECRETS = {
    name: f"[database]\npassword = McpFake{name.title().replace('_', '')}99\n"
    for name in ("tool", "origin", "kind", "task_id", "field", "method", "actor", "source")
}


def test_mcp_error_paths_quote_no_secret(env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """Every kind of refused MCP call, and the SDK's own protocol errors, come back redacted."""
    from test_mcp_adversarial import envelope_of, raw_server

    env = {**env, "CORTEX_REDACT_LITERALS": "fake-mcp-literal"}
    needles = [v.split(" = ")[1].strip() for v in MCP_SECRETS.values()] + ["fake-mcp-literal"]
    with raw_server(repo, env, tmp_path) as s:
        opened = envelope_of(s.call("cortex_open_task", {"goal": "g"}))[0]
        task = opened["data"]["taskId"]
        replies = [
            s.call(MCP_SECRETS["tool"], {}),
            s.call("fake-mcp-literal", {}),
            s.call("cortex_note", {"task_id": task, "text": "x", "origin": MCP_SECRETS["origin"]}),
            s.call(
                "cortex_record_evidence",
                {"task_id": task, "claim": "c", "kind": MCP_SECRETS["kind"]},
            ),
            s.call(
                "cortex_record_evidence",
                {"task_id": task, "claim": "c", "source": MCP_SECRETS["source"]},
            ),
            s.call("cortex_status", {"task_id": MCP_SECRETS["task_id"]}),
            s.call("cortex_status", {"task_id": task, MCP_SECRETS["field"]: 1}),
            s.call("cortex_note", {"task_id": task, "text": "x", "actor": MCP_SECRETS["actor"]}),
        ]
        for reply in replies:
            envelope, status = envelope_of(reply)
            assert status == 4, envelope
        # The SDK answers an unknown method itself, quoting it: that answer is redacted too.
        unknown = s.wait_for(s.request(MCP_SECRETS["method"], {}), 30)
        assert unknown is not None
        assert "error" in unknown
        replies.append(unknown)
        assert s.finish() == 0
    answered = json.dumps(replies).encode()
    assert needles_in(answered, needles) == []
    assert b"[REDACTED]" in answered
    assert needles_in((tmp_path / "serve-stderr.txt").read_bytes(), needles) == []
    assert no_secret_under(Path(env["CORTEX_STATE_DIR"]), needles)

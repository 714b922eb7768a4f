"""docs/design/redaction.md end to end: no secret reaches a byte under the state root.

A corpus of made-up secrets in real shapes is generated at run time from a fixed seed (right
prefixes, lengths and alphabets; random bodies that start with FAKE where the alphabet allows, so
no real secret is ever written into this file). It is pushed through every ingress the CLI has:
the goal, criteria, claims, notes, symbols, URIs, raw files and stdin (through a real process).
Afterwards every byte of every file under the state root is read back, and neither a secret
value nor its distinctive body may appear anywhere. Secret-looking identifiers are refused
before anything is written.

The campaign at the end is issue 18's proof: the corpus (over 80 shapes) through every ingress
(every text field of every command, raw stdin, files and directories, a verifier's stdout and
stderr with values across the runner's head and tail cuts, CLI and MCP error paths), each
ingress with values of its own so that a leak names its shape and ingress; then every byte
under the state root, the configuration and home directories, and everything printed.
"""

from __future__ import annotations

import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, base_env, git, make_repo, run_cortex, tree_state
from secret_kit import (
    ALNUM,
    CORPUS,
    SEED,
    UPPER_DIGITS,
    Corpus,
    Entry,
    build_corpus,
    chunks,
    join,
    needles_in,
)

from cortex.cases.redact import PRIVATE, REDACTED, Redactor


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


@pytest.mark.process  # its class fixture runs real processes
class TestEveryIngress:
    """After every ingress, the state root holds no secret and is still well-formed."""

    @pytest.mark.process
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

    @pytest.mark.process
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

    @pytest.mark.process
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

    @pytest.mark.process
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


@pytest.mark.process
def test_mcp_error_paths_quote_no_secret(env: dict[str, str], repo: Path, tmp_path: Path) -> None:
    """Every kind of refused MCP call, and the SDK's own protocol errors, come back redacted."""
    from mcp_kit import envelope_of, raw_server

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


# The campaign: every ingress, each with its own corpus (issue 18, proof required) -------------
#
# Each ingress gets a corpus of its own (the same shapes, other values), so a leak names the
# shape and the ingress it came through. Afterwards every byte under the state root, the
# configuration and home directories, and everything any command printed, is scanned.

INGRESSES = (
    "goal",
    "criterion",
    "claim",
    "note",
    "symbol",
    "uri",
    "hypothesis statement",
    "hypothesis disproof",
    "boundary symbol",
    "boundary reason",
    "uncertainty",
    "re-plan reason",
    "resolve reason",
    "decision question",
    "decision option",
    "verify claim",
    "complete outcome",
    "accept-failed reason",
    "not-possible reason",
    "block reason",
    "abort reason",
    "raw stdin",
    "raw file",
    "raw dir contents",
    "raw dir names",
    "verifier stdout",
    "verifier stderr",
    "head cut",
    "tail cut",
    "cli errors",
    "identifiers",
    "mcp text",
    "mcp raw",
    "mcp errors",
)


@cache
def campaign_corpora() -> dict[str, Corpus]:
    """Each ingress's own corpus, built on first use (not while the suite is collected)."""
    return {name: build_corpus(SEED + 101 * (i + 1)) for i, name in enumerate(INGRESSES)}


@cache
def origin() -> dict[str, tuple[str, str]]:
    """Every secret of the campaign -> (the ingress it went through, its shape)."""
    return {
        needle: (ingress, entry.kind)
        for ingress, corpus in campaign_corpora().items()
        for entry in corpus.entries
        for needle in entry.needles
    }


def campaign_literals() -> list[str]:
    """Every configured literal of every ingress's corpus."""
    return [lit for corpus in campaign_corpora().values() for lit in corpus.literals]


VERIFIER = Path(__file__).resolve().parent / "children" / "print_files.py"
OUTPUT_HEAD, OUTPUT_TAIL = 8 * 1024, 24 * 1024
SEPARATOR = " ~ "
"""Between one-line entries packed into one line (no entry holds it, nor `|` or `::`)."""


def packed(entries: list[Entry], label: str, limit: int) -> list[str]:
    """The entries as texts of at most `limit` bytes, each starting with a label line.

    An unclosed span removes the rest of its text, so it ends one: nothing follows it.
    """
    texts: list[str] = []
    group: list[Entry] = []
    size = 0
    for entry in sorted(entries, key=lambda e: e.unclosed):
        cost = len(entry.text.encode()) + 1
        if group and (size + cost > limit - 40 or group[-1].unclosed):
            texts.append(join(group, f"{label} {len(texts)}"))
            group, size = [], 0
        group.append(entry)
        size += cost
    if group:
        texts.append(join(group, f"{label} {len(texts)}"))
    return texts


def packed_lines(entries: list[Entry], limit: int) -> list[str]:
    """One-line entries (unclosed ones aside) packed into lines of at most `limit` bytes."""
    lines: list[str] = []
    current = ""
    for entry in (e for e in entries if e.one_line and not e.unclosed):
        candidate = entry.text if not current else current + SEPARATOR + entry.text
        if current and len(candidate.encode()) > limit:
            lines.append(current)
            candidate = entry.text
        current = candidate
    if current:
        lines.append(current)
    return lines


def filler(size: int, word: str = "filler") -> bytes:
    """`size` bytes of harmless lines."""
    line = f"{word} line of ordinary test output\n".encode()
    return (line * (size // len(line) + 1))[: size - 1] + b"\n" if size else b""


def stream_layout(kept: list[Entry], head_cut: Entry, tail_cut: Entry) -> bytes:
    """A verifier's stream: `kept` entries where they are kept whole, the others across cuts.

    The runner keeps the first OUTPUT_HEAD bytes and the last OUTPUT_TAIL: `head_cut` is placed
    across the first cut, `tail_cut` across the second (its middle is where the tail starts).
    """
    first = [e for e in kept if not e.unclosed]
    head_entries: list[Entry] = []
    tail_entries: list[Entry] = []
    size = 0
    for entry in first:
        target = head_entries if size < OUTPUT_HEAD - 2500 else tail_entries
        target.append(entry)
        size += len(entry.text.encode()) + 1
    tail_entries += [e for e in kept if e.unclosed]
    head_text = (join(head_entries, "head of the run") + "\n").encode()
    crossing = head_cut.text.encode()
    lead = OUTPUT_HEAD - len(crossing) // 2 - len(head_text) - 1
    assert lead > 0, "the head entries do not fit before the cut"
    head = head_text + filler(lead) + b" " + crossing + b"\n"
    tail_text = ("\n" + join(tail_entries, "tail of the run") + "\n").encode()
    across = tail_cut.text.encode() + b"\n"
    rest = OUTPUT_TAIL - (len(across) - len(across) // 2) - len(tail_text)
    assert rest > 0, "the tail entries do not fit after the cut"
    tail = across + filler(rest, "closing") + tail_text
    return head + filler(40_000, "middle") + tail


@dataclass
class Campaign:
    """The state after every ingress, and everything that was printed."""

    env: dict[str, str]
    base: Path
    printed: list[tuple[str, bytes]]
    """(what printed it, the bytes) for every command's stdout and stderr."""
    tasks: dict[str, str]
    statuses: dict[str, int] = field(default_factory=dict)
    """Command label -> exit status, for the ingress checks."""


class _Runner:
    """Runs commands in-process and keeps what each printed."""

    def __init__(self, env: dict[str, str], repo: Path, printed: list[tuple[str, bytes]]) -> None:
        self.cli = Cli(env, repo)
        self.printed = printed

    def __call__(self, label: str, *args: str, stdin: bytes = b"", ok: bool = True) -> Outcome:
        outcome = self.cli(*args, stdin=stdin)
        self.printed.append((label, (outcome.stdout + outcome.stderr).encode()))
        if ok:
            # A verify that recorded a batch which does not verify the case exits 2.
            allowed = {0, 2} if args[:2] == ("case", "verify") else {0}
            assert outcome.code in allowed, (label, outcome.stdout[:2000])
        return outcome


def _configure(repo: Path, env: dict[str, str], outputs: tuple[Path, Path, Path]) -> None:
    """Literals from all three sources, and the verifier printing the two layout files."""
    env_literals = [lit for c in campaign_corpora().values() for lit in c.env_literals]
    toml_literals = [lit for c in campaign_corpora().values() for lit in c.toml_literals]
    pyproject_literals = [lit for c in campaign_corpora().values() for lit in c.pyproject_literals]
    env["CORTEX_REDACT_LITERALS"] = ",".join(env_literals)
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    argv = [sys.executable, str(VERIFIER), *map(str, outputs)]
    (repo / "cortex.toml").write_text(
        f"redact_literals = {json.dumps(toml_literals)}\n\n"
        f"[verifiers.corpus]\nargv = {json.dumps(argv)}\n"
    )
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "fake-app"\n\n[tool.cortex]\n'
        f"redact_literals = {json.dumps(pyproject_literals)}\n"
    )
    git(repo, "add", "cortex.toml", "pyproject.toml", env=env)
    git(repo, "commit", "-q", "-m", "configure", env=env)


def _text_fields(run: _Runner, tasks: dict[str, str]) -> None:
    """Goal, criteria, claims, notes, symbols and URIs."""
    c = campaign_corpora()
    for index, goal in enumerate(packed(c["goal"].entries, "goal", GOAL_LIMIT)):
        tasks[f"goal {index}"] = run("goal", "case", "open", goal).data["taskId"]
    criteria = packed(c["criterion"].entries, "criterion", GOAL_LIMIT)
    for start in range(0, len(criteria), 8):
        specs = [f"--criterion=c{start + i}={t}" for i, t in enumerate(criteria[start : start + 8])]
        tasks[f"criteria {start}"] = run("criterion", "case", "open", "criteria", *specs).data[
            "taskId"
        ]
    task = tasks["main"] = run("main", "case", "open", "the main case").data["taskId"]
    for claim in packed(c["claim"].entries, "claim", CLAIM_LIMIT):
        run("claim", "case", "evidence", "add", task, "--claim", claim)
    for note in packed(c["note"].entries, "note", CLAIM_LIMIT):
        run("note", "case", "note", task, note)
    for symbol in packed_lines(c["symbol"].entries, 1000):
        run("symbol", "case", "evidence", "add", task, "--claim", "symbol", "--symbol", symbol)
    for uri in packed_lines(c["uri"].entries, 3900):
        run("uri", "case", "evidence", "add", task, "--claim", "uri", "--uri", uri)


GOAL_LIMIT = 3900
CLAIM_LIMIT = 15_000
REASON_LIMIT = 3900


def _padded(texts: list[str], count: int, plain: str) -> list[str]:
    return texts + [f"{plain} {i}" for i in range(len(texts), count)]


def _lifecycle(
    run: _Runner, tasks: dict[str, str], repo: Path, outputs: tuple[Path, Path, Path]
) -> None:
    """A change case from plan to completion: every text of plan, resolve, verify, complete."""
    c = campaign_corpora()
    task = tasks["change"] = run("change", "case", "open", "the change case").data["taskId"]
    evidence = run("change", "case", "evidence", "add", task, "--claim", "seen").data["evidence"]
    statements = packed(c["hypothesis statement"].entries, "statement", 1900)
    disproofs = packed(c["hypothesis disproof"].entries, "disproof", 1900)
    count = max(len(statements), len(disproofs))
    hypotheses = [
        f"--hypothesis={s} :: {d}"
        for s, d in zip(
            _padded(statements, count, "statement"),
            _padded(disproofs, count, "disproof"),
            strict=True,
        )
    ]
    symbols = [f"--symbol={s}" for s in packed_lines(c["boundary symbol"].entries, 1000)]
    reasons = packed(c["boundary reason"].entries, "boundary", REASON_LIMIT)
    uncertainties = packed(c["uncertainty"].entries, "uncertainty", REASON_LIMIT)
    replans = packed(c["re-plan reason"].entries, "re-plan", REASON_LIMIT)
    resolves = packed(c["resolve reason"].entries, "resolve", REASON_LIMIT)
    # The first plan carries the hypotheses, the re-plans the rest, the last one hypotheses to
    # resolve.
    plans = max(len(reasons), len(uncertainties), len(replans) + 1) + 1
    reasons = _padded(reasons, plans, "boundary")
    uncertainties = _padded(uncertainties, plans, "uncertainty")
    replans = _padded(replans, plans - 1, "re-plan")
    common = ["--file", "app.py", "--verify", "command:corpus"]
    planned: dict[str, Any] = {}
    for index in range(plans):
        extra = hypotheses + symbols if index == 0 else ["--hypothesis", "h :: d"]
        if index == plans - 1:
            extra = [f"--hypothesis=h{i} :: d{i}" for i in range(len(resolves))]
        if index:
            extra += ["--reason", replans[index - 1]]
        planned = run(
            "plan", "case", "plan", task, *extra, *common,
            "--boundary-reason", reasons[index], "--uncertainty", uncertainties[index],
        ).data  # fmt: skip
    current = [h["id"] for h in planned["hypotheses"]]
    for hypothesis, reason in zip(current, resolves, strict=True):
        run(
            "resolve", "case", "resolve", task, hypothesis, "--status", "confirmed",
            "--reason", reason, "--evidence", evidence["id"],
        )  # fmt: skip
    run("change", "case", "begin-change", task, "--actor", "agent-1")
    (repo / "app.py").write_text("print('fixed')\n")
    claims = []
    for index, text in enumerate(packed(c["verify claim"].entries, "verify claim", 3900)):
        claims += [f"--claim=c{index}={text}", f"--contract=c{index}=command:corpus"]
    for index, (head_out, tail_out, head_err, tail_err) in enumerate(CUT_PLACEMENTS):
        kept_out = c["verifier stdout"].entries[index::4]
        kept_err = c["verifier stderr"].entries[index::4]
        outputs[0].write_bytes(
            stream_layout(kept_out, cut(head_out, "head"), cut(tail_out, "tail"))
        )
        outputs[1].write_bytes(
            stream_layout(kept_err, cut(head_err, "head"), cut(tail_err, "tail"))
        )
        # The last run fails, so that completing needs --accept-failed.
        outputs[2].write_text("1" if index == len(CUT_PLACEMENTS) - 1 else "0")
        run("verify", "case", "verify", task, "--actor", "agent-1", *(claims if index == 0 else []))
    # One text each (the second unclosed span then sits inside the first: both are masked).
    outcome = join(c["complete outcome"].entries, "outcome")
    accepted = join(c["accept-failed reason"].entries, "accepted")
    assert len(outcome.encode()) <= CLAIM_LIMIT
    assert len(accepted.encode()) <= CLAIM_LIMIT
    run(
        "complete", "case", "complete", task, "--actor", "agent-1",
        "--outcome", outcome, "--accept-failed", accepted,
    )  # fmt: skip


def cut(kind: str, where: str) -> Entry:
    """The entry of shape `kind` placed across the `where` cut of a verifier's output."""
    corpus = campaign_corpora()["head cut" if where == "head" else "tail cut"]
    return next(e for e in corpus.entries if e.kind == kind)


CUT_PLACEMENTS = [
    # (stdout across the head cut, stdout across the tail cut, the same for stderr)
    ("github_ghp", "pem OPENSSH PRIVATE KEY", "yaml multi word", "private multiline"),
    ("env two per line", "yaml multi word", "json log escaped", "continuation split"),
    ("authorization bearer", "pem RSA PRIVATE KEY", "azure_account_key", "jwt"),
    ("sendgrid", "pem tail only", "pem EC PRIVATE KEY", "pem PGP PRIVATE KEY BLOCK"),
]


def _other_cases(run: _Runner, tasks: dict[str, str]) -> None:
    """Completing without proof, blocking, aborting, and decisions, each in cases of their own."""
    c = campaign_corpora()
    for index, reason in enumerate(packed(c["not-possible reason"].entries, "why", CLAIM_LIMIT)):
        task = tasks[f"not possible {index}"] = run(
            "not-possible", "case", "open", "nothing to prove", "--mode", "investigate"
        ).data["taskId"]
        run("not-possible", "case", "evidence", "add", task, "--claim", "seen")
        run(
            "not-possible", "case", "plan", task, "--hypothesis", "h :: d",
            "--uncertainty", "none", "--verify", "command:corpus",
        )  # fmt: skip
        # Without the approval the command is blocked and never runs: nothing can be proven.
        unapproved = {k: v for k, v in run.cli.env.items() if k != "CORTEX_APPROVE_COMMANDS"}
        blocked = Cli(unapproved, run.cli.cwd)("case", "verify", task)
        run.printed.append(("not-possible", (blocked.stdout + blocked.stderr).encode()))
        run(
            "not-possible", "case", "complete", task, "--outcome", "looked",
            "--verification-not-possible", reason,
        )  # fmt: skip
    for verb in ("block", "abort"):
        for index, reason in enumerate(packed(c[f"{verb} reason"].entries, verb, REASON_LIMIT)):
            task = tasks[f"{verb} {index}"] = run(verb, "case", "open", verb).data["taskId"]
            run(verb, "case", verb, task, "--reason", reason)
    questions = packed(c["decision question"].entries, "question", CLAIM_LIMIT)
    labels = packed_lines(c["decision option"].entries, 1000)
    consequences = packed(c["decision option"].entries, "consequence", REASON_LIMIT)
    for index in range(max(len(questions), len(labels), len(consequences))):
        task = tasks[f"decision {index}"] = run("decision", "case", "open", "ask").data["taskId"]
        question = questions[index] if index < len(questions) else f"plain question {index}"
        label = labels[index] if index < len(labels) else "label"
        consequence = consequences[index] if index < len(consequences) else "consequence"
        run(
            "decision", "case", "decision", "request", task, "--question", question,
            "--option", f"a={label}|{consequence}", "--option", "b=keep it|nothing changes",
        )  # fmt: skip


def _raw_ingresses(
    run: _Runner, tasks: dict[str, str], env: dict[str, str], repo: Path, base: Path
) -> list[tuple[str, bytes]]:
    """Raw output: stdin through a real process, a file, a directory's contents and names."""
    c = campaign_corpora()
    task = tasks["main"]
    printed = []
    stdin = join(c["raw stdin"].entries, "stdin").encode()
    proc = run_cortex(
        ["case", "evidence", "add", task, "--claim", "piped", "--raw-file", "-", "--json"],
        env,
        repo,
        stdin=stdin,
    )
    assert proc.returncode == 0, proc.stderr
    printed.append(("raw stdin", proc.stdout + proc.stderr))
    raw_file = base / "tool-output.txt"
    raw_file.write_text(join(c["raw file"].entries, "raw file"))
    run("raw file", "case", "evidence", "add", task, "--claim", "file", "--raw-file", str(raw_file))
    contents = base / "raw-contents"
    contents.mkdir()
    for index, text in enumerate(packed(c["raw dir contents"].entries, "member", 4000)):
        (contents / f"member-{index}.txt").write_text(text)
    run("raw dir contents", "case", "evidence", "add", task, "--claim", "dir", "--raw-dir",
        str(contents))  # fmt: skip
    names = base / "raw-names"
    names.mkdir()
    for entry in c["raw dir names"].entries:
        if entry.one_line and "/" not in entry.text and len(entry.text.encode()) <= 200:
            (names / entry.text).write_text("named after a secret\n")
    run("raw dir names", "case", "evidence", "add", task, "--claim", "names", "--raw-dir",
        str(names))  # fmt: skip
    return printed


CLI_ERRORS: list[Callable[[str, str], list[str]]] = [
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--kind", v],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--origin", v],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--confidence", v],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--line", v],
    lambda _, v: ["case", "status", v],
    lambda _, v: ["case", "list", "--limit", v],
    lambda _, v: ["case", "open", "g", "--mode", v],
    lambda _, v: ["case", "open", "g", "--risk", v],
    lambda _, v: ["case", "open", "g", "--surface", v],
    lambda t, v: ["case", "timeline", t, "--kind", v],
    lambda t, v: ["case", "timeline", t, "--since", v],
    lambda t, v: ["case", "timeline", t, "--anchor", v],
    lambda t, v: ["case", "read-artifact", t, v],
    lambda t, v: ["case", "read-evidence", t, v],
    lambda t, v: ["case", "begin-change", t, "--actor", "a", "--ttl", v],
    lambda _, v: ["case", "sessions", "--since", v],
]
"""Commands refusing a bad value, which their error message quotes."""

IDENTIFIER_ERRORS: list[Callable[[str, str], list[str]]] = [
    lambda t, v: ["case", "note", t, "x", "--actor", v],
    lambda _, v: ["case", "open", "g", "--idempotency-key", v],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--source", v],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--file", v],
    lambda _, v: ["case", "open", "g", "--parent", v],
    lambda _, v: ["case", "open", "g", "--criterion", f"{v}=it works"],
    lambda t, v: ["case", "evidence", "add", t, "--claim", "c", "--derived-from", v],
]
"""Identifier fields: a secret-looking value is refused, never rewritten."""


def _error_paths(
    run: _Runner, tasks: dict[str, str], env: dict[str, str], repo: Path
) -> list[tuple[str, bytes]]:
    """Every entry as a bad value of some option, and every one-line entry as an identifier."""
    task = tasks["main"]
    for index, entry in enumerate(campaign_corpora()["cli errors"].entries):
        outcome = run(
            "cli errors", *CLI_ERRORS[index % len(CLI_ERRORS)](task, entry.text), ok=False
        )
        assert outcome.code != 0, (entry.kind, outcome.stdout)
    for index, entry in enumerate(campaign_corpora()["identifiers"].entries):
        chosen = IDENTIFIER_ERRORS[index % len(IDENTIFIER_ERRORS)]
        if "=" in entry.text and chosen is IDENTIFIER_ERRORS[5]:
            chosen = IDENTIFIER_ERRORS[0]  # `ID=STATEMENT`: a `=` would split the value in two
        argv = chosen(task, entry.text)
        outcome = run("identifiers", *argv, ok=False)
        assert outcome.code == 4, (entry.kind, outcome.stdout)
    # The same through real processes, human output included (stderr carries the message).
    printed = []
    for index, entry in enumerate(campaign_corpora()["cli errors"].entries[:6]):
        for human in (False, True):
            argv = CLI_ERRORS[index](task, entry.text) + ([] if human else ["--json"])
            proc = run_cortex(argv, env, repo)
            assert proc.returncode != 0
            printed.append(("cli errors (process)", proc.stdout + proc.stderr))
    return printed


MCP_ERRORS: list[Callable[[str, str], tuple[str, dict[str, Any]]]] = [
    lambda _, v: (v, {}),
    lambda t, v: ("cortex_note", {"task_id": t, "text": "x", "origin": v}),
    lambda t, v: ("cortex_record_evidence", {"task_id": t, "claim": "c", "kind": v}),
    lambda t, v: ("cortex_record_evidence", {"task_id": t, "claim": "c", "source": v}),
    lambda _, v: ("cortex_status", {"task_id": v}),
    lambda t, v: ("cortex_status", {"task_id": t, v: 1}),
    lambda t, v: ("cortex_note", {"task_id": t, "text": "x", "actor": v}),
    lambda _, v: ("cortex_open_task", {"goal": "g", "mode": v}),
    lambda t, v: ("cortex_read_artifact", {"task_id": t, "ref": v}),
    lambda t, v: ("cortex_timeline", {"task_id": t, "since": v}),
]
"""Refused MCP calls: each quotes (or is named by) the bad value."""


def _mcp(env: dict[str, str], repo: Path, base: Path) -> list[tuple[str, bytes]]:
    """A real `cortex serve`: every text argument, raw output, and every kind of refusal."""
    from mcp_kit import envelope_of, raw_server

    c = campaign_corpora()
    replies: list[tuple[str, dict[str, Any]]] = []

    def call(label: str, name: str, arguments: dict[str, Any], *, ok: bool = True) -> Any:
        reply = server.call(name, arguments)
        replies.append((label, reply))
        envelope, status = envelope_of(reply)
        assert (status == 0) is ok, (label, envelope["error"])
        return envelope["data"]

    texts = packed(c["mcp text"].entries, "mcp", GOAL_LIMIT)
    lines = packed_lines(c["mcp text"].entries, 1000)
    with raw_server(repo, env, base) as server:
        task = call("mcp", "cortex_open_task", {"goal": texts[0], "criteria": [f"c1={texts[1]}"]})[
            "taskId"
        ]
        for text in texts[2:]:
            call("mcp", "cortex_record_evidence", {"task_id": task, "claim": text})
            call("mcp", "cortex_note", {"task_id": task, "text": text})
        for line in lines:
            call("mcp", "cortex_record_evidence",
                 {"task_id": task, "claim": "c", "uri": line, "symbol": line})  # fmt: skip
        call("mcp", "cortex_request_decision",
             {"task_id": task, "question": texts[0], "options": [f"a={lines[0]}|{texts[1]}",
                                                                  "b=keep|nothing"]})  # fmt: skip
        other = call("mcp", "cortex_open_task", {"goal": "plan", "mode": "investigate"})["taskId"]
        call("mcp", "cortex_record_evidence", {"task_id": other, "claim": "seen"})
        statement = packed(c["mcp text"].entries, "mcp hypothesis", 1800)[0]
        call("mcp", "cortex_plan", {"task_id": other, "hypotheses": [f"{statement} :: x"],
                                    "uncertainty": texts[1], "verify": ["pytest"]})  # fmt: skip
        call("mcp", "cortex_abort_task", {"task_id": other, "reason": texts[2]})
        raw = join(c["mcp raw"].entries, "mcp raw")
        call("mcp raw", "cortex_record_evidence", {"task_id": task, "claim": "raw", "raw": raw})
        for index, entry in enumerate(c["mcp errors"].entries):
            name, arguments = MCP_ERRORS[index % len(MCP_ERRORS)](task, entry.text)
            call("mcp errors", name, arguments, ok=False)
        for entry in c["mcp errors"].entries[:8]:
            # The SDK answers an unknown method itself, quoting its name.
            reply = server.wait_for(server.request(entry.text, {}), 30)
            assert reply is not None
            assert "error" in reply
            replies.append(("mcp errors (protocol)", reply))
        for view in ("cortex_status", "cortex_timeline", "cortex_handoff"):
            call("mcp", view, {"task_id": task})
        assert server.finish() == 0
    printed = [(label, json.dumps(reply).encode()) for label, reply in replies]
    printed.append(("mcp server stderr", (base / "serve-stderr.txt").read_bytes()))
    return printed


def _views(run: _Runner, tasks: dict[str, str], home: Path) -> None:
    """Every read of every case, a handoff written into the home directory, and previews."""
    for name, task in tasks.items():
        for view in ("status", "show", "timeline", "metrics", "audit"):
            run(f"view {view}", "case", view, task)
        run("view decisions", "case", "decision", "list", task)
        run("view handoff", "case", "handoff", task, "-o", str(home / f"handoff-{name}.md"))
        run("view handoff json", "case", "handoff", task, "--format", "json",
            "-o", str(home / f"handoff-{name}.json"))  # fmt: skip
    for view in ("list", "sessions", "overview"):
        run(f"view {view}", "case", view)
    for task in (tasks["main"], tasks["change"]):
        timeline = run("view", "case", "timeline", task, "--limit", "500").data
        for entry in timeline["entries"]:
            ref = entry.get("rawRef") or (entry.get("data") or {}).get("rawRef")
            if ref:
                run("view read-artifact", "case", "read-artifact", task, ref)
            evidence_id = entry.get("id", "")
            if evidence_id.startswith("ev_"):
                record = run("view", "case", "read-evidence", task, evidence_id).data["evidence"]
                if record.get("rawRef"):
                    run("view read-artifact", "case", "read-artifact", task, record["rawRef"],
                        "--max-bytes", "131072")  # fmt: skip


@pytest.fixture(scope="class")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """Every ingress, each with its own corpus, then every view of every case."""
    base = tmp_path_factory.mktemp("campaign")
    env = base_env(base)
    repo = make_repo(base / "repo", env)
    outputs = (base / "verifier-stdout", base / "verifier-stderr", base / "verifier-exit")
    _configure(repo, env, outputs)
    printed: list[tuple[str, bytes]] = []
    run = _Runner(env, repo, printed)
    tasks: dict[str, str] = {}
    _text_fields(run, tasks)
    _lifecycle(run, tasks, repo, outputs)
    _other_cases(run, tasks)
    printed += _raw_ingresses(run, tasks, env, repo, base)
    printed += _error_paths(run, tasks, env, repo)
    printed += _mcp({**env, "CORTEX_ACTOR": "agent-9"}, repo, base)
    _views(run, tasks, Path(env["HOME"]))
    return Campaign(env=env, base=base, printed=printed, tasks=tasks)


def any_of(words: list[bytes]) -> re.Pattern[bytes]:
    """A pattern that finds any of `words`: a trie, so a scan costs one pass, not one a word."""
    trie: dict[int, Any] = {}
    for word in words:
        node = trie
        for byte in word:
            node = node.setdefault(byte, {})
        node[-1] = {}  # a word ends here

    def pattern(node: dict[int, Any]) -> bytes:
        parts = []
        for byte, branch in sorted(node.items()):
            if byte == -1:
                return b""  # a shorter word already matches: what follows does not matter
            literal, rest = bytes([byte]), branch
            while len(rest) == 1 and -1 not in rest:  # a chain of single letters
                ((next_byte, rest),) = rest.items()
                literal += bytes([next_byte])
            parts.append(re.escape(literal) + pattern(rest))
        return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"

    return re.compile(pattern(trie))


@cache
def campaign_needles() -> re.Pattern[bytes]:
    """Every campaign secret, raw or JSON-escaped, as one pattern (built on first use)."""
    return any_of(
        sorted({form for n in origin() for form in (n.encode(), json.dumps(n)[1:-1].encode())})
    )


def leaks_in(data: bytes) -> list[tuple[str, str]]:
    """(ingress, shape) of every campaign secret in `data`, raw or JSON-escaped."""
    if campaign_needles().search(data) is None:
        return []  # the common case, in one pass; otherwise say exactly which
    return sorted({origin()[needle] for needle in needles_in(data, list(origin()))})


@pytest.mark.process  # its class fixture runs real processes
class TestCampaign:
    """Issue 18's proof: at least 80 shapes through every ingress; no secret byte anywhere."""

    def test_the_corpus_has_at_least_80_shapes_and_unique_values(self) -> None:
        """Every ingress has its own values of every shape, so a leak names both."""
        kinds = {e.kind for e in CORPUS.entries}
        assert len(kinds) >= 80
        assert all({e.kind for e in c.entries} == kinds for c in campaign_corpora().values())
        needles = [n for c in campaign_corpora().values() for n in c.needles]
        assert len(needles) == len(set(needles)) == len(origin())

    def test_every_shape_of_every_ingress_is_caught_by_the_pipeline(self) -> None:
        """Unit level first: each entry of each ingress's corpus loses its secrets."""
        redactor = Redactor(campaign_literals())
        missed = [
            (ingress, entry.kind)
            for ingress, corpus in campaign_corpora().items()
            for entry in corpus.entries
            if needles_in(redactor(entry.text).encode(), entry.needles)
        ]
        assert missed == []

    @pytest.mark.process
    def test_no_secret_under_the_state_root_config_or_home(self, campaign: Campaign) -> None:
        """Every byte of every file the campaign left is free of every secret."""
        roots = [Path(campaign.env[k]) for k in ("CORTEX_STATE_DIR", "XDG_CONFIG_HOME", "HOME")]
        files = [p for root in roots if root.exists() for p in every_file(root)]
        assert len(files) > 100
        leaks = {str(p): found for p in files if (found := leaks_in(p.read_bytes()))}
        assert leaks == {}, json.dumps(leaks, indent=1)

    def test_nothing_printed_holds_a_secret(self, campaign: Campaign) -> None:
        """Every command's stdout and stderr, every MCP reply, the server's stderr."""
        assert len(campaign.printed) > 300
        leaks: dict[str, list[tuple[str, str]]] = {}
        for label, data in campaign.printed:
            for found in leaks_in(data):
                leaks.setdefault(label, []).append(found)
        assert leaks == {}, json.dumps(leaks, indent=1)

    def test_the_stored_text_still_says_what_was_there(self, campaign: Campaign) -> None:
        """The ingresses really carried the corpus: markers are stored where secrets were."""
        state = Path(campaign.env["CORTEX_STATE_DIR"])
        stored = b"".join(p.read_bytes() for p in every_file(state))
        assert stored.count(REDACTED.encode()) > 2000
        assert PRIVATE.encode() in stored
        for label in ("goal 0", "claim 0", "note 0", "statement 0", "question 0", "member 0"):
            assert label.encode() in stored, label

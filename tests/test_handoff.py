"""`cortex case handoff`: a bounded, read-only transfer packet (docs/design/handoff.md).

The seeded case is real: opened, investigated (one record marked sensitive, one made
sensitive by a secret in it), planned, verified with a command verifier, edited afterwards so its
receipts are stale, and paused on a decision. Large cases are built in one commit through the
store's own transaction (10k records in a few seconds) and must stay within the budget, with
what each tier dropped listed. The Markdown is parsed with a CommonMark parser to show that
hostile text cannot add a heading, HTML, a link or a table.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shlex
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    Cli,
    base_env,
    case_lock_held,
    case_path,
    configure_verifiers,
    git,
    ready_to_verify,
)
from markdown_it import MarkdownIt
from markdown_it.token import Token

from cortex.cases.ids import new_id
from cortex.cases.records import Evidence, Source, encode_pretty
from cortex.cli.parser import parse
from cortex.kernel.human.decisions import request
from cortex.kernel.kernel import Kernel
from cortex.kernel.lease import begin_change
from cortex.kernel.proof.verify import verify
from cortex.kernel.steps.evidence import add_evidence
from cortex.kernel.steps.open_case import open_case
from cortex.kernel.steps.plan import plan
from cortex.kernel.views.handoff import packet as handoff_module
from cortex.kernel.views.handoff.packet import TIERS, handoff
from cortex.kernel.views.markdown import code, inline, quote

TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"
PASSWORD = "hunter2-made-up-secret"  # noqa: S105 - made up, to be redacted
LITERAL = "tenant-7731-made-up"
CRITERION = "c1=the login returns to checkout"
GOLDEN = Path(__file__).resolve().parent / "golden"
ULID = re.compile(r"\b(task|ev|hyp|vr|vb|dec|raw|cmd|ph)_[0-9A-HJKMNP-TV-Z]{26}\b")
HOSTILE = (
    "Fix it\n"
    "# Verification: verified\n"
    "## Next actions\n"
    "<img src=x onerror=alert(1)> <b>bold</b> &amp; &#x202E;\n"
    "[click](http://evil.example) ![img](http://evil.example/x.png) <http://evil.example>\n"
    "| a | b |\n"
    "|---|---|\n"
    "---\n"
    "===\n"
    "1. one\n"
    "- item\n"
    "```\n"
    "> quoted\n"
    "\u202egnp.exe\u200b \u009b31mred \u2066x\u2069 **bold** _em_ ~~gone~~ `tick` $x$"
)
HEADINGS = [
    r"Handoff of `task_[0-9A-Z]{26}`",
    r"Goal",
    r"Case",
    r"Acceptance criteria",
    r"Plan \(revision \d+\)",
    r"Plan",
    r"Hypotheses",
    r"Verification: \*\*(verified|partial|failed|unverified)\*\*",
    r"Decisions",
    r"`dec_[0-9A-Z]{26}`: (pending|answered|withdrawn)(, answered `[^`]+` by `[^`]+`)?",
    r"Evidence",
    r"`ev_[0-9A-Z]{26}`: `[a-z_]+`",
    r"Left out",
    r"Next actions",
    r"Warnings",
]


# Helpers -------------------------------------------------------------------------------------


def handoff_of(cli: Cli, task: str, *extra: str) -> dict[str, Any]:
    """The envelope data of `cortex case handoff TASK ... --json`."""
    data: dict[str, Any] = cli("case", "handoff", task, *extra).data
    return data


def files_of(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file and directory under `root`: (sha256 of its bytes, size, mtime_ns)."""
    found: dict[str, tuple[str, int, int]] = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        found[str(path.relative_to(root))] = (digest, info.st_size, info.st_mtime_ns)
    return found


def everything(data: dict[str, Any]) -> str:
    """The whole answer as one string: packet (JSON), Markdown and omissions."""
    return json.dumps(data, ensure_ascii=False)


def omitted(data: dict[str, Any], what: str) -> dict[str, Any]:
    """The one `omitted` entry about `what`."""
    entries = [e for e in data["omitted"] if e["what"] == what]
    assert len(entries) == 1, data["omitted"]
    entry: dict[str, Any] = entries[0]
    return entry


def assert_runnable(entries: list[dict[str, Any]]) -> None:
    """Every command an omission points to is a valid command line (placeholders filled)."""
    for entry in entries:
        if entry["command"] is not None:
            program, *argv = shlex.split(re.sub(r"<[^>]+>", "x", entry["command"]))
            assert program == "cortex"
            parse(argv)


def headings(markdown: str) -> list[str]:
    """The source text of every heading the CommonMark parser sees."""
    tokens = parser().parse(markdown)
    return [tokens[i + 1].content for i, token in enumerate(tokens) if token.type == "heading_open"]


def parser() -> MarkdownIt:
    """CommonMark with HTML on (as most renderers have it), plus GitHub's tables and strikes."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def walk(tokens: list[Token]) -> Iterator[Token]:
    """Every token, inline children included."""
    for token in tokens:
        yield token
        yield from walk(token.children or [])


def bulk_evidence(kernel: Kernel, task: str, count: int, claim_bytes: int) -> None:
    """`count` records in one commit through the store's transaction; every 10th sensitive."""
    store = kernel.writable(task)
    filler = "word " * (claim_bytes // 5)
    with store.transaction(task, actor="bulk", operation="case.evidence.add") as txn:
        for index in range(count):
            txn.append(
                "evidence",
                Evidence(
                    id=new_id("ev"),
                    timestamp=kernel.now(),
                    source=Source(tool="bulk"),
                    claim=f"finding {index} {filler}",
                    sensitivity="sensitive" if index % 10 == 0 else "normal",
                ),
            )


def kernel_for(cli: Cli) -> Kernel:
    """An in-process kernel for the test's repository and environment."""
    return Kernel(str(cli.cwd), cli.env, default_actor="agent-1")


# The seeded case -------------------------------------------------------------------------------


@dataclass
class Seeded:
    """The ids a test needs from the seeded case."""

    task: str
    located: str
    sensitive: str
    secret: str
    decision: str
    receipts: list[str]


@pytest.fixture
def seeded(cli: Cli, repo: Path, env: dict[str, str]) -> Seeded:
    """A verified case whose code changed since, paused on a decision (see the module doc)."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli, criteria=(CRITERION,))
    located = cli(
        "case", "evidence", "add", task, "--claim", "resolve_return_url falls back to /",
        "--kind", "code_location", "--file", "app.py", "--line", "1", "--symbol", "main",
        "--confidence", "high",
    ).data["evidence"]["id"]  # fmt: skip
    sensitive = cli(
        "case", "evidence", "add", task, "--claim", "the staging tenant list", "--sensitive"
    ).data["evidence"]["id"]
    secret = cli("case", "evidence", "add", task, "--claim", f"the log shows {TOKEN}").data
    assert secret["evidence"]["sensitivity"] == "sensitive"
    cli("case", "evidence", "add", task, "--claim", f"tenant {LITERAL} failed")
    (repo / "app.py").write_text("print('fixed')\n")
    verified = cli("case", "verify", task, "--claim", CRITERION, "--contract", "c1=command:unit")
    assert verified.data["assessment"]["status"] == "verified", verified.stdout
    (repo / "app.py").write_text("print('fixed, then edited')\n")
    asked = cli(
        "case", "decision", "request", task, "--question", f"Rotate it? password={PASSWORD}",
        "--option", "rotate=Rotate it|a short outage", "--option", "keep=Keep it|the risk stays",
    )  # fmt: skip
    assert asked.code == 0, asked.stdout
    env["CORTEX_REDACT_LITERALS"] = LITERAL  # configured after the record was stored
    return Seeded(
        task=task,
        located=located,
        sensitive=sensitive,
        secret=secret["evidence"]["id"],
        decision=asked.data["decision"]["id"],
        receipts=[r["id"] for r in verified.data["receipts"]],
    )


class TestContents:
    def test_identity_plan_and_criteria(self, cli: Cli, seeded: Seeded) -> None:
        data = handoff_of(cli, seeded.task)
        packet = data["packet"]
        assert (data["tier"], data["tierName"], data["compact"]) == (0, "full", False)
        assert packet["taskId"] == seeded.task
        assert packet["goal"] == "Fix the login redirect"
        assert (packet["mode"], packet["risk"]) == ("change", "medium")
        assert packet["phase"] == "needs_human_decision"
        assert packet["pausedFrom"] == "verifying"
        assert packet["acceptanceCriteria"] == [
            {"id": "c1", "statement": "the login returns to checkout"}
        ]
        assert packet["plan"]["changeBoundary"]["files"] == ["app.py"]
        assert packet["plan"]["verificationRequired"] == ["command:unit"]
        assert packet["plan"]["uncertainty"] == "none"
        (hypothesis,) = packet["hypotheses"]
        assert hypothesis["statement"] == "app.py is wrong"
        assert hypothesis["disproof"] == "a run shows it right"
        assert hypothesis["status"] == "open"
        assert packet["lease"]["actor"] == "agent-1"
        assert packet["lease"]["state"] == "active"
        assert packet["workspace"]["root"] == str(cli.cwd)
        assert packet["store"]["root"] == str(case_path(cli.env, seeded.task).parent)
        markdown = data["markdown"]
        for expected in (
            f"# Handoff of `{seeded.task}`",
            "> Fix the login redirect",
            "- `c1`: the login returns to checkout",
            "- Change boundary, files: `app.py`",
            "  - Disproved if: a run shows it right",
            "- Change lease: `agent-1`, active",
        ):
            assert expected in markdown, expected

    def test_the_assessment_is_the_one_status_shows(self, cli: Cli, seeded: Seeded) -> None:
        """The receipts come from `assess`, as in status: stale after the edit, and marked."""
        data = handoff_of(cli, seeded.task)
        verification = data["packet"]["verification"]
        shown = cli("case", "status", seeded.task).data["verification"]
        assert verification["status"] == shown["status"] != "verified"
        assert verification["stale"] == shown["stale"] == seeded.receipts
        assert [
            (r["id"], r["proof"], r["stale"], r["status"]) for r in verification["receipts"]
        ] == [(r["id"], r["proof"], r["stale"], r["status"]) for r in shown["receipts"]]
        assert all(r["stale"] and not r["proof"] for r in verification["receipts"])
        assert verification["missingCriteria"] == ["c1"]
        claim = next(r for r in verification["receipts"] if r["claimId"] == "c1")
        assert claim["claim"] == "the login returns to checkout"
        markdown = data["markdown"]
        assert "## Verification: **unverified**" in markdown
        stale_lines = [line for line in markdown.splitlines() if "STALE" in line]
        assert len(stale_lines) == len(seeded.receipts)
        assert any(line.startswith("- claim `c1`: **passed**, STALE") for line in stale_lines)
        assert "receipt(s) are stale" in markdown

    def test_the_pending_decision_comes_first_with_the_next_actions(
        self, cli: Cli, seeded: Seeded
    ) -> None:
        """The pending decision, its options, and the same next actions status offers."""
        out = cli("case", "handoff", seeded.task)
        data = out.data
        decision = data["packet"]["decisions"][0]
        assert (decision["id"], decision["status"]) == (seeded.decision, "pending")
        assert [o["id"] for o in decision["options"]] == ["rotate", "keep"]
        status = cli("case", "status", seeded.task).envelope
        assert out.envelope["actions"] == status["actions"] == data["packet"]["nextActions"]
        assert any(seeded.decision in a["command"] for a in data["packet"]["nextActions"])
        markdown = data["markdown"]
        assert f"### `{seeded.decision}`: pending" in markdown
        assert "- `rotate`: Rotate it (then: a short outage)" in markdown
        assert f"cortex case decision answer {seeded.task} {seeded.decision}" in markdown

    def test_children_are_listed_with_their_own_phase(self, cli: Cli, task: str) -> None:
        child = cli.open("Fix the link too", "--parent", task)
        cli("case", "evidence", "add", child, "--claim", "the link drops it")
        data = handoff_of(cli, task)
        assert data["packet"]["children"] == [
            {"taskId": child, "phase": "investigating", "goal": "Fix the link too"}
        ]
        assert f"- Child case `{child}`: `investigating`: Fix the link too" in data["markdown"]
        assert handoff_of(cli, child)["packet"]["parentTaskId"] == task

    def test_evidence_is_newest_first_with_its_provenance(self, cli: Cli, seeded: Seeded) -> None:
        data = handoff_of(cli, seeded.task)
        evidence = data["packet"]["evidence"]
        records = evidence["records"]
        ids = [r["id"] for r in records]
        assert ids == sorted(ids, reverse=True)  # ULIDs sort by creation time
        assert evidence["shown"] == evidence["shareable"] == len(records)
        assert evidence["total"] == evidence["shareable"] + 2
        located = next(r for r in records if r["id"] == seeded.located)
        where = dict(located["location"])
        # What the file was when the record was made: its git blob id and HEAD (freshness).
        assert len(where.pop("blob")) == len(where.pop("head")) == 40
        assert where == {"file": "app.py", "startLine": 1, "endLine": 1, "symbol": "main"}
        assert (located["kind"], located["confidence"]) == ("code_location", "high")
        assert "- Location: `app.py` lines 1-1, symbol `main`" in data["markdown"]
        assert "> resolve\\_return\\_url falls back to /" in data["markdown"]


class TestNeverIncluded:
    def test_sensitive_records_are_left_out_entirely_and_counted(
        self, cli: Cli, seeded: Seeded, tmp_path: Path
    ) -> None:
        out = tmp_path / "handoff.md"
        data = handoff_of(cli, seeded.task, "-o", str(out))
        text = everything(data) + out.read_text()
        for hidden in (seeded.sensitive, seeded.secret, "the staging tenant list"):
            assert hidden not in text
        assert data["packet"]["evidence"]["sensitiveLeftOut"] == 2
        entry = omitted(data, "sensitive evidence records")
        assert (entry["count"], entry["tier"]) == (2, 0)
        assert "- 2 sensitive evidence records (tier 0): never part of a handoff" in out.read_text()

    def test_secrets_are_redacted_in_every_form(
        self, cli: Cli, seeded: Seeded, tmp_path: Path
    ) -> None:
        """A token, a secret-named value, and a literal configured after it was stored."""
        markdown, packet = tmp_path / "h.md", tmp_path / "h.json"
        data = handoff_of(cli, seeded.task, "-o", str(markdown))
        handoff_of(cli, seeded.task, "-o", str(packet), "--format", "json")
        files = markdown.read_text() + packet.read_text()
        for text in (everything(data), files):
            for secret in (TOKEN, PASSWORD, LITERAL):
                assert secret not in text
        assert "password=[REDACTED]" in markdown.read_text()
        assert "tenant [REDACTED] failed" in files
        question = data["packet"]["decisions"][0]["question"]
        assert question == "Rotate it? password=[REDACTED]"

    def test_uncommitted_bytes_are_not_read(self, cli: Cli, seeded: Seeded) -> None:
        """A line past the committed length (an interrupted write) is neither shown nor trusted."""
        ledger = case_path(cli.env, seeded.task) / "evidence.jsonl"
        line = {"id": new_id("ev"), "claim": "UNCOMMITTED-CLAIM", "revision": 10**6}
        with ledger.open("ab") as handle:
            handle.write(json.dumps(line).encode() + b"\n")
        data = handoff_of(cli, seeded.task)
        assert "UNCOMMITTED-CLAIM" not in everything(data)
        assert any("uncommitted bytes" in w for w in data["packet"]["warnings"])
        assert "## Warnings" in data["markdown"]


class TestReadOnly:
    def test_the_store_is_unchanged_and_the_file_is_replaced_atomically(
        self, cli: Cli, seeded: Seeded, state_root: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "out" / "handoff.md"
        out.parent.mkdir()
        out.write_text("an older handoff\n")
        before_inode = out.stat().st_ino
        before = files_of(state_root)
        data = handoff_of(cli, seeded.task, "-o", str(out))
        assert files_of(state_root) == before
        assert out.read_text() == data["markdown"]
        assert out.stat().st_ino != before_inode  # renamed into place, never rewritten
        assert out.stat().st_mode & 0o777 == 0o600
        assert sorted(p.name for p in out.parent.iterdir()) == ["handoff.md"]  # no temp left
        assert data["written"] == {
            "path": str(out), "bytes": data["bytes"], "format": "markdown", "warnings": []
        }  # fmt: skip

    def test_the_json_file_is_the_packet(self, cli: Cli, seeded: Seeded, tmp_path: Path) -> None:
        out = tmp_path / "packet.json"
        data = handoff_of(cli, seeded.task, "-o", str(out), "--format", "json")
        assert out.read_bytes() == encode_pretty(data["packet"])
        assert json.loads(out.read_bytes()) == data["packet"]
        assert data["written"]["bytes"] == data["jsonBytes"] == len(out.read_bytes())

    def test_a_file_in_the_store_or_state_directory_is_refused(
        self, cli: Cli, seeded: Seeded, state_root: Path
    ) -> None:
        before = files_of(state_root)
        for inside in (
            case_path(cli.env, seeded.task) / "handoff.md",
            case_path(cli.env, seeded.task).parent / "handoff.md",
            state_root / "handoff.md",
        ):
            out = cli("case", "handoff", seeded.task, "-o", str(inside))
            assert (out.code, out.error_code) == (5, "refused")
        assert files_of(state_root) == before

    def test_a_symlinked_directory_into_the_store_is_refused(
        self, cli: Cli, seeded: Seeded, tmp_path: Path
    ) -> None:
        link = tmp_path / "innocent"
        link.symlink_to(case_path(cli.env, seeded.task))
        out = cli("case", "handoff", seeded.task, "-o", str(link / "handoff.md"))
        assert out.error_code == "refused"
        assert not (case_path(cli.env, seeded.task) / "handoff.md").exists()

    def test_a_symlink_as_the_file_is_replaced_never_followed(
        self, cli: Cli, seeded: Seeded, state_root: Path, tmp_path: Path
    ) -> None:
        before = files_of(state_root)
        link = tmp_path / "handoff.md"
        link.symlink_to(case_path(cli.env, seeded.task) / "case.json")
        data = handoff_of(cli, seeded.task, "-o", str(link))
        assert not link.is_symlink()
        assert link.read_text() == data["markdown"]
        assert files_of(state_root) == before

    def test_a_file_in_the_workspace_is_written_with_a_warning(self, cli: Cli, task: str) -> None:
        data = handoff_of(cli, task, "-o", "handoff.md")
        assert (cli.cwd / "handoff.md").read_text() == data["markdown"]
        (warning,) = data["written"]["warnings"]
        assert "receipts are bound to" in warning

    def test_format_needs_an_output_and_a_known_value(self, cli: Cli, task: str) -> None:
        assert cli("case", "handoff", task, "--format", "json").code == 4
        assert cli("case", "handoff", task, "-o", "x.md", "--format", "yaml").code == 4
        assert not (cli.cwd / "x.md").exists()
        assert cli("case", "handoff", task, "-o", "/nonexistent-dir/x.md").code == 4

    @pytest.mark.process
    def test_it_reads_while_another_process_holds_the_case_lock(self, cli: Cli, task: str) -> None:
        """A reader takes no lock: a held lock neither blocks nor fails it."""
        with case_lock_held(cli, task):
            cli.env["CORTEX_LOCK_TIMEOUT"] = "0.2"
            assert cli("case", "note", task, "blocked").error_code == "busy"  # the lock is held
            assert handoff_of(cli, task)["packet"]["taskId"] == task

    def test_people_get_the_markdown_byte_for_byte(self, cli: Cli, seeded: Seeded) -> None:
        printed = cli("case", "handoff", seeded.task, human=True)
        assert printed.code == 0, printed.stderr
        markdown = handoff_of(cli, seeded.task)["markdown"]
        stamp = re.compile(r"Generated at \S+")
        assert stamp.sub("", printed.stdout) == stamp.sub("", markdown)

    def test_people_get_a_confirmation_when_it_goes_to_a_file(
        self, cli: Cli, seeded: Seeded, tmp_path: Path
    ) -> None:
        out = tmp_path / "h.md"
        printed = cli("case", "handoff", seeded.task, "-o", str(out), human=True)
        assert printed.code == 0, printed.stderr
        assert printed.stdout.startswith(f"Wrote the handoff of {seeded.task} to {out}")
        assert "left out: 2 sensitive evidence records" in printed.stdout
        assert out.read_text().startswith(f"# Handoff of `{seeded.task}`")


# Budget and tiers --------------------------------------------------------------------------------


class TestBudget:
    def test_compact_starts_smaller(self, cli: Cli, seeded: Seeded) -> None:
        full = handoff_of(cli, seeded.task)
        compact = handoff_of(cli, seeded.task, "--compact")
        assert (compact["tier"], compact["compact"]) == (2, True)
        assert compact["bytes"] < full["bytes"]
        assert compact["jsonBytes"] < full["jsonBytes"]
        records = compact["packet"]["evidence"]["records"]
        assert records
        # Titles keep their labels: a stale or contested record says so at every tier.
        assert all(set(r) == {"id", "timestamp", "kind", "title", "labels"} for r in records)
        entry = omitted(compact, "evidence records shown as titles only")
        assert (entry["count"], entry["tier"]) == (len(records), 2)

    def test_ten_thousand_records_stay_in_budget_in_bounded_memory(
        self, cli: Cli, task: str
    ) -> None:
        """40 MB of evidence: the newest 20 are shown, cut; the rest counted; memory stays small."""
        kernel = kernel_for(cli)
        bulk_evidence(kernel, task, 10_000, claim_bytes=4096)
        ledger = case_path(cli.env, task) / "evidence.jsonl"
        assert ledger.stat().st_size > 40_000_000
        tracemalloc.start()
        try:
            result = handoff(kernel, task, compact=False)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 * 1024 * 1024, peak  # a whole-ledger read would need 40 MB and more
        data = result.data
        assert data["tier"] == 1  # 50 records of 4 KiB are over 128 KiB; 20 cut ones are not
        assert data["bytes"] <= data["budget"] == 128 * 1024
        assert data["jsonBytes"] <= data["budget"]
        evidence = data["packet"]["evidence"]
        assert (evidence["total"], evidence["sensitiveLeftOut"]) == (10_000, 1000)
        assert evidence["shown"] == 20
        assert evidence["records"][0]["claim"].startswith("finding 9999 ")
        assert evidence["records"][0]["claim"].endswith("more bytes cut]")
        older = omitted(data, "older evidence records")
        assert (older["count"], older["tier"]) == (9000 - 20, 1)
        assert older["command"] == f"cortex case timeline {task} --kind evidence"
        assert omitted(data, "evidence claims cut")["count"] == 20
        assert_runnable(data["omitted"])
        assert (
            f"- 8980 older evidence records (tier 1): list them with "
            f"`cortex case timeline {task} --kind evidence`"
        ) in data["markdown"]

    def test_a_lowered_budget_walks_down_the_tiers(
        self, cli: Cli, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Each smaller budget gives a later tier, within the budget, saying what it dropped."""
        kernel = kernel_for(cli)
        bulk_evidence(kernel, seeded.task, 300, claim_bytes=2048)
        answer = ["--answer", "keep", "--responder", "alice"]
        assert cli("case", "decision", "answer", seeded.task, seeded.decision, *answer).code == 0
        again = ["--question", "Ship now?", "--option", "y=Yes|now", "--option", "n=No|later"]
        pending = cli("case", "decision", "request", seeded.task, *again).data["decision"]["id"]
        tiers: list[int] = []
        data: dict[str, Any] = {}
        # Calibrated to this case's sizes per tier (about 37, 14 and 7 KiB of JSON at tiers 1-3).
        for budget in (128 * 1024, 30 * 1024, 10 * 1024):
            monkeypatch.setattr(handoff_module, "HANDOFF_BUDGET", budget)
            data = handoff(kernel, seeded.task, compact=False).data
            assert data["bytes"] <= budget
            assert data["jsonBytes"] <= budget
            assert data["packet"]["handoff"]["omitted"] == data["omitted"]
            for entry in data["omitted"]:
                line = f"- {entry['count']} "
                assert any(line in row and f"(tier {entry['tier']})" in row
                           for row in data["markdown"].splitlines()), entry  # fmt: skip
            assert_runnable(data["omitted"])
            tiers.append(data["tier"])
        assert tiers == sorted(tiers)
        assert len(set(tiers)) == len(tiers)
        assert tiers[0] <= 1
        assert tiers[-1] >= 3
        # At tier 3 the evidence, the answered decisions and the notes are gone, counted.
        assert data["packet"]["evidence"]["records"] == []
        assert [d["id"] for d in data["packet"]["decisions"]] == [pending]
        assert omitted(data, "answered or withdrawn decisions")["count"] == 1
        assert all(not r["notes"] for r in data["packet"]["verification"]["receipts"])
        evidence = data["packet"]["evidence"]
        assert omitted(data, "older evidence records")["count"] == evidence["shareable"]

    def test_maximal_content_fits_by_the_last_tiers(self, cli: Cli) -> None:
        """Every bound at its maximum, in the worst characters: tier 4 or 5 still fits."""
        kernel = kernel_for(cli)
        text = ("\u202e<b>*x*</b> # " * 400)[:3500]  # 4000 bytes of UTF-8, most of it escaped
        criteria = [f"c{i}={text}" for i in range(64)]
        task = open_case(kernel, goal=text, criteria=criteria).data["taskId"]
        evidence = add_evidence(kernel, task, claim=text).data["evidence"].id
        plan(
            kernel,
            task,
            hypotheses=[f"{text} {i} :: {text}" for i in range(64)],
            supports=[f"{i + 1}={evidence}" for i in range(64)],
            files=[f"dir{i}/" + "f" * 900 for i in range(256)],
            symbols=["s" * 1000 + str(i) for i in range(256)],
            boundary_reason=text,
            verify=["scope"],
            uncertainty=text,
        )
        options = [f"o{i}={text[:300]}|{text}" for i in range(16)]
        request(kernel, task, question=text * 3, options=options, actor="agent-1")
        data = handoff(kernel, task, compact=False).data
        assert data["tier"] >= 4
        assert data["bytes"] <= data["budget"]
        assert data["jsonBytes"] <= data["budget"]
        assert_runnable(data["omitted"])
        cut_texts = [e for e in data["omitted"] if e["what"].startswith("texts cut to")]
        assert cut_texts
        assert cut_texts[0]["count"] > 0
        what = {e["what"] for e in data["omitted"]}
        assert any(w.startswith("items of plan.changeBoundary.files") for w in what), what
        assert any(w.startswith("items of hypotheses") for w in what), what
        assert "\u202e" not in data["markdown"]
        kinds = {t.type for t in walk(parser().parse(data["markdown"]))}
        assert not kinds & {"html_block", "html_inline"}

    def test_a_budget_nothing_fits_is_an_error_not_a_cut(
        self, cli: Cli, task: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(handoff_module, "HANDOFF_BUDGET", 512)
        out = cli("case", "handoff", task)
        assert (out.code, out.error_code) == (4, "invalid_input")
        assert "does not fit 512 bytes" in out.envelope["error"]["message"]

    def test_the_tiers_keep_less_and_less(self) -> None:
        """Each tier keeps at most what the one before kept (documented in the design doc)."""
        design = (Path(__file__).resolve().parent.parent / "docs/design/handoff.md").read_text()
        for before, after in itertools.pairwise(TIERS):
            assert after.evidence <= before.evidence
            assert after.titles >= before.titles
            assert after.core >= before.core
            assert (after.text or 10**9) <= (before.text or 10**9)
            assert (after.items or 10**9) <= (before.items or 10**9)
        for index, tier in enumerate(TIERS):
            assert f"| {index} | {tier.name} |" in design


# Hostile text ------------------------------------------------------------------------------------


class TestHostileText:
    def test_hostile_goal_claim_and_question_cannot_restructure_the_markdown(
        self, cli: Cli
    ) -> None:
        task = cli.open(HOSTILE)
        claim = cli("case", "evidence", "add", task, "--claim", HOSTILE).data["evidence"]["id"]
        cli(
            "case", "decision", "request", task, "--question", HOSTILE,
            "--option", f"a={HOSTILE.splitlines()[3]}|{HOSTILE.splitlines()[4]}",
            "--option", "b=plain|plain",
        )  # fmt: skip
        data = handoff_of(cli, task)
        markdown = data["markdown"]
        assert data["packet"]["goal"] == HOSTILE  # the data keeps the text as written
        for char in ("\u202e", "\u200b", "\u009b", "\u2066", "\x1b"):
            assert char not in markdown
        assert "\\u202egnp.exe\\u200b" in markdown
        for heading in headings(markdown):
            assert any(re.fullmatch(p, heading) for p in HEADINGS), heading
        tokens = list(walk(parser().parse(markdown)))
        kinds = {t.type for t in tokens}
        for forbidden in ("html_block", "html_inline", "link_open", "image", "table_open",
                          "s_open", "hr", "fence", "ordered_list_open"):  # fmt: skip
            assert forbidden not in kinds, forbidden
        assert sum(1 for t in tokens if t.type == "heading_open" and t.tag == "h1") == 1
        assert markdown.count(f"### `{claim}`") == 1
        # What a reader sees is the text itself: the goal's lines come back literally.
        quoted = [t for t in tokens if t.type == "inline" and "Verification: verified" in t.content]
        rendered = parser().renderInline(quoted[0].content)
        assert "# Verification: verified" in rendered

    def test_the_helpers_escape_what_would_be_markup(self) -> None:
        assert inline("a\x1b[31mb") == "a\\x1b\\[31mb"
        assert inline("  two\nlines\u2028three ") == "two lines three"
        assert inline("- x") == "\\- x"
        assert inline("12. x") == "12\\. x"
        assert inline("<b>&amp;") == "\\<b\\>\\&amp;"
        assert code("a`b") == "``a`b``"
        assert code("`x`") == "`` `x` ``"
        assert code("") == "` `"
        assert code("x\u202ey") == "`x\\u202ey`"
        assert quote("# h\n===\n\n1) x") == ["> \\# h", "> \\===", ">", "> 1\\) x"]
        for text in ("# h", "===", "---", "* * *", "<div>x</div>", "[a](b)", "| a |\n|-|"):
            tokens = list(walk(parser().parse("\n".join([*quote(text), ""]))))
            kinds = {t.type for t in tokens}
            assert not kinds & {"heading_open", "hr", "html_block", "html_inline", "link_open"}
            rendered = "".join(t.content for t in tokens if t.type == "text")
            assert rendered.replace(" ", "") in text.replace("\n", "").replace(" ", "")


# Golden ------------------------------------------------------------------------------------------

FIXED = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def normalize(text: str, tmp_path: Path) -> str:
    """Stable text: generated ids as placeholders in order of first appearance, paths, timings."""
    seen: dict[str, str] = {}

    def placeholder(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(), f"{match.group(1)}_<{len(seen) + 1}>")

    text = ULID.sub(placeholder, text)
    text = text.replace(str(tmp_path), "<tmp>")
    text = re.sub(r"repo-[0-9a-f]{12}", "repo-<store>", text)
    return re.sub(r"in \d+\.\d\d s", "in <seconds> s", text)


def test_golden_markdown_and_json(tmp_path: Path) -> None:
    """A seeded case with a fixed clock renders exactly as tests/golden/ says.

    Regenerate with `UPDATE_GOLDEN=1 pytest tests/test_handoff.py -k golden` after an intended
    change, and read the diff.
    """
    env = {
        **base_env(tmp_path),
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "CORTEX_APPROVE_COMMANDS": "1",
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "-c", "init.defaultBranch=main", "init", "-q", env=env)
    (repo / "app.py").write_text("print('hello')\n")
    git(repo, "add", "app.py", env=env)
    git(repo, "commit", "-q", "-m", "initial", env=env)
    configure_verifiers(repo, env, {"unit": ["true"]})
    kernel = Kernel(str(repo), env, default_actor="agent-1", clock=lambda: FIXED)
    task = open_case(kernel, goal="Fix the checkout redirect", criteria=[CRITERION]).data["taskId"]
    first = add_evidence(
        kernel, task, claim="resolve_return_url falls back to /", kind="code_location",
        file="app.py", line="1", symbol="main", confidence="high",
    ).data["evidence"].id  # fmt: skip
    add_evidence(kernel, task, claim="a private detail", sensitive=True)
    plan(
        kernel, task, hypotheses=["the callback drops return_to :: a request keeps it"],
        supports=[f"1={first}"], files=["app.py"], boundary_reason="the redirect is decided there",
        verify=["command:unit"], uncertainty="the link may drop it earlier",
    )  # fmt: skip
    token = begin_change(kernel, task, actor="agent-1").data["leaseToken"]
    (repo / "app.py").write_text("print('fixed')\n")
    verify(kernel, task, claims=[CRITERION], contracts=["c1=command:unit"], lease_token=token)
    (repo / "app.py").write_text("print('fixed, then edited')\n")
    request(kernel, task, question="Ship it now?", options=["yes=Ship|now", "no=Wait|later"])
    data = handoff(kernel, task, compact=False).data
    markdown = normalize(data["markdown"], tmp_path)
    packet = normalize(encode_pretty(data["packet"]).decode(), tmp_path)
    for name, actual in (("handoff.md", markdown), ("handoff.json", packet)):
        golden = GOLDEN / name
        if os.environ.get("UPDATE_GOLDEN"):
            golden.parent.mkdir(exist_ok=True)
            golden.write_text(actual)
        assert actual == golden.read_text(), f"{name} differs from tests/golden/{name}"

"""Every human surface marks a replica's records, above all a person's word (issue 27).

A replica is another machine's word: a record it says came from a person at a terminal
(`via: cli-tty`) cannot be checked here. The text timeline, `show`, the handoff and the report
(HTML and Markdown) mark each record fetched from another replica, and never show such a
person's word as plain `human` (docs/design/trust.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest
from share_kit import Machine, make_machine, make_remote

from cortex.cases import ledger
from cortex.cases.ids import new_id
from cortex.cases.records import CaseFile, Evidence, decode, encode, encode_pretty

WORD = "the release manager approved shipping it"


def forge_person(directory: Path) -> str:
    """Append an evidence record claiming a person's word at a terminal, digests recomputed."""
    case = decode((directory / "case.json").read_bytes(), CaseFile)
    state = case.ledgers["evidence"]
    body = (directory / "evidence.jsonl").read_bytes()[: state.bytes]
    last = body.splitlines()[-1]
    record = decode(last, Evidence)
    record.id = new_id("ev")
    record.prev = ledger.line_hash(last)
    record.claim = WORD
    record.source = msgspec.structs.replace(
        record.source, origin="human", via="cli-tty", claimed_by_agent=False
    )
    line = encode(record)
    (directory / "evidence.jsonl").write_bytes(body + line + b"\n")
    case.ledgers["evidence"] = msgspec.structs.replace(
        state, count=state.count + 1, bytes=len(body) + len(line) + 1, tip=ledger.line_hash(line)
    )
    (directory / "case.json").write_bytes(encode_pretty(case))
    return record.id


@pytest.fixture
def fetched(tmp_path: Path) -> tuple[Machine, str, str]:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    b = make_machine(tmp_path, "b", remote)
    task = a.ok("case", "open", "Ship the release")["taskId"]
    a.ok("case", "evidence", "add", task, "--claim", "the build is green")
    (directory,) = Path(a.env["CORTEX_STATE_DIR"]).glob(f"sessions/*/{task}")
    forge_person(directory)
    a.ok("case", "share", task)
    b.ok("case", "fetch", task)
    (replica,) = b.ok("case", "status", task)["replicas"]["imported"]
    return b, task, replica["key"]


def plain_human(text: str) -> bool:
    """Whether `human` appears anywhere not followed by a qualifier in parentheses."""
    return re.search(r"\bhuman\b(?!\s*\()", text) is not None


def test_the_text_timeline_and_show_mark_the_replica(fetched: tuple[Machine, str, str]) -> None:
    b, task, key = fetched
    for args in (("case", "timeline", task), ("case", "show", task)):
        out = b.cli(*args, human=True)
        assert out.code == 0, out.stderr
        line = next(x for x in out.stdout.splitlines() if "approved" in x)
        assert key in line, line
        assert f"from replica {key}, unverified" in line, line
        assert not plain_human(line), line


def test_the_handoff_marks_the_replica(fetched: tuple[Machine, str, str]) -> None:
    b, task, key = fetched
    out = b.cli("case", "handoff", task, human=True)
    assert out.code == 0, out.stderr
    text = out.stdout.replace("\\_", "_")  # Markdown escapes the underscore
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if WORD in line)
    record = "\n".join(lines[at - 3 : at])
    assert f"human (from replica {key}, unverified)" in record, record
    assert f"[from `{key}`]" in record, record
    records = b.ok("case", "handoff", task)["packet"]["evidence"]["records"]
    source = next(r["source"] for r in records if r["claim"] == WORD)
    assert source["replica"] == key
    assert source["shown"] == f"human (from replica {key}, unverified)"


@pytest.mark.parametrize("form", ["html", "md"])
def test_the_report_marks_the_replica(
    fetched: tuple[Machine, str, str], tmp_path: Path, form: str
) -> None:
    b, task, key = fetched
    target = tmp_path / f"report.{form}"
    args = ["case", "report", task]
    args += ["--html", str(target)] if form == "html" else ["--format", "md", "-o", str(target)]
    assert b.cli(*args).code == 0
    text = target.read_text().replace("\\_", "_")
    line = next(x for x in text.splitlines() if WORD in x)
    assert f"human (from replica {key}, unverified)" in line, line
    assert "[from replica" in line, line
    assert not plain_human(line.replace(f"human (from replica {key}", "")), line

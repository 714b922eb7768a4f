"""`cortex case audit`: every kind of tampering is caught; arbitrary bytes never crash it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Cli, case_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cortex.cases.integrity import audit_case
from cortex.cases.redact import Redactor


@pytest.fixture
def busy_case(cli: Cli, task: str, tmp_path: Path) -> str:
    """A case with several evidence records, one with a raw blob."""
    raw = tmp_path / "raw.txt"
    raw.write_text("tool output\n")
    for index in range(4):
        cli("case", "evidence", "add", task, "--claim", f"finding {index}")
    cli("case", "evidence", "add", task, "--claim", "with raw", "--raw-file", str(raw))
    return task


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def flip_byte(directory: Path) -> None:
    data = bytearray((directory / "evidence.jsonl").read_bytes())
    data[60] = ord("X") if data[60] != ord("X") else ord("Y")
    (directory / "evidence.jsonl").write_bytes(bytes(data))


def drop_middle_line(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    kept = lines(ledger)
    del kept[2]
    ledger.write_bytes(b"".join(kept))


def swap_lines(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    kept = lines(ledger)
    kept[1], kept[2] = kept[2], kept[1]
    ledger.write_bytes(b"".join(kept))


def rewrite_claim(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    kept = lines(ledger)
    record = json.loads(kept[1])
    record["claim"] = "a claim nobody made"
    kept[1] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    ledger.write_bytes(b"".join(kept))


def truncate_and_reappend(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    kept = lines(ledger)
    ledger.write_bytes(b"".join(kept[:2] + kept[3:] + [kept[2]]))


def delete_raw_blob(directory: Path) -> None:
    for blob in (directory / "raw").iterdir():
        blob.unlink()


def shorten_ledger(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    ledger.write_bytes(b"".join(lines(ledger)[:-1]))


def future_revision(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    kept = lines(ledger)
    record = json.loads(kept[0])
    record["revision"] = 999
    kept[0] = json.dumps(record, separators=(",", ":")).encode() + b"\n"
    ledger.write_bytes(b"".join(kept))


def miscount(directory: Path) -> None:
    snapshot = json.loads((directory / "case.json").read_bytes())
    snapshot["ledgers"]["evidence"]["count"] += 1
    (directory / "case.json").write_text(json.dumps(snapshot))


def foreign_tail(directory: Path) -> None:
    ledger = directory / "evidence.jsonl"
    ledger.write_bytes(ledger.read_bytes() + lines(ledger)[0])


def transplant_case(directory: Path) -> None:
    snapshot = json.loads((directory / "case.json").read_bytes())
    snapshot["id"] = "task_01ARZ3NDEKTSV4RRFFQ69G5FAV"
    (directory / "case.json").write_text(json.dumps(snapshot))


TAMPERING: list[Callable[[Path], None]] = [
    flip_byte,
    drop_middle_line,
    swap_lines,
    rewrite_claim,
    truncate_and_reappend,
    delete_raw_blob,
    shorten_ledger,
    future_revision,
    miscount,
    foreign_tail,
    transplant_case,
]


class TestTampering:
    def test_an_untouched_case_passes(self, cli: Cli, busy_case: str) -> None:
        """A case written only by cortex audits clean, with no warnings."""
        report = cli("case", "audit", busy_case).data
        assert report["ok"] is True
        assert report["errors"] == []
        assert report["warnings"] == []
        assert report["records"] == {"evidence": 5, "commands": 6, "phases": 3}

    @pytest.mark.parametrize("tamper", TAMPERING, ids=lambda f: f.__name__)
    def test_tampering_is_detected(
        self, cli: Cli, busy_case: str, tamper: Callable[[Path], None]
    ) -> None:
        """Each edit, drop, reorder, truncation or transplant fails the audit with exit 4."""
        tamper(case_path(cli.env, busy_case))
        out = cli("case", "audit", busy_case)
        assert out.code == 4
        assert out.error_code == "integrity_error"
        assert out.envelope["data"]["errors"], "the report travels with the failure"

    def test_torn_tail_is_a_warning_not_a_failure(self, cli: Cli, busy_case: str) -> None:
        """An interrupted append is expected debris: reported, never fatal."""
        ledger = case_path(cli.env, busy_case) / "evidence.jsonl"
        ledger.write_bytes(ledger.read_bytes() + b'{"id":"ev_01AR')
        report = cli("case", "audit", busy_case).data
        assert report["ok"] is True
        assert [w["code"] for w in report["warnings"]] == ["uncommitted_tail"]
        assert "uncommitted" in " ".join(cli("case", "status", busy_case).data["warnings"])


CORRUPT_BYTES = st.one_of(
    st.binary(max_size=2000),
    st.text(max_size=500).map(str.encode),
    st.lists(
        st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8)), max_size=5
    ).map(lambda rows: b"".join(json.dumps(r).encode() + b"\n" for r in rows)),
)


@settings(
    derandomize=True,
    max_examples=150,
    deadline=None,
    # Each example copies a case directory: under a loaded CI machine generation is "slow",
    # which says nothing about the property.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    data=CORRUPT_BYTES, target=st.sampled_from(["evidence.jsonl", "case.json", "commands.jsonl"])
)
def test_arbitrary_bytes_give_typed_findings_never_a_crash(
    cli: Cli, busy_case: str, tmp_path: Path, data: bytes, target: str
) -> None:
    """Whatever bytes replace a ledger or the snapshot, audit returns findings, never raises.

    And it passes only when what was committed is intact: for a ledger, the committed prefix
    must be byte-identical (anything after it is an interrupted write); the snapshot must be
    unchanged.
    """
    original = case_path(cli.env, busy_case)
    scratch = tmp_path / "scratch" / busy_case
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(original, scratch)
    before = (scratch / target).read_bytes()
    (scratch / target).write_bytes(data)
    report = audit_case(str(scratch), busy_case, Redactor())
    if report.ok:
        if target == "case.json":
            assert data == before
        else:
            name = target.removesuffix(".jsonl")
            committed = json.loads((scratch / "case.json").read_bytes())["ledgers"][name]["bytes"]
            assert data[:committed] == before[:committed]
    for finding in report.errors + report.warnings:
        assert finding.code
        assert finding.message


@pytest.mark.parametrize(
    ("final", "backup", "trusted"),
    [
        ("summary.md", None, True),
        ("verification.json", ".bak-verification.json", True),
        ("../outside.txt", None, False),
        ("case.json", None, False),
        ("summary.md", ".bak-summary.md", False),
    ],
)
def test_a_pending_journal_is_judged_like_recovery_judges_it(
    cli: Cli, task: str, final: str, backup: str | None, *, trusted: bool
) -> None:
    """audit reports a journal recovery would refuse, instead of saying the next write fixes it."""
    path = case_path(cli.env, task)
    revision = json.loads((path / "case.json").read_bytes())["revision"]
    ledgers = {name: (path / f"{name}.jsonl").stat().st_size for name in LEDGER_NAMES}
    journal = {
        "schemaVersion": 1,
        "taskId": task,
        "fromRevision": revision,
        "toRevision": revision + 1,
        "ledgers": ledgers,
        "files": [{"staged": ".tmp-x", "final": final, "backup": backup}],
    }
    (path / ".journal.json").write_text(json.dumps(journal))
    report = cli("case", "audit", task).envelope["data"]
    codes = {finding["code"] for finding in report["errors"]}
    assert ("journal" not in codes) is trusted
    written = cli("case", "note", task, "after")
    assert (written.code == 0) is trusted


LEDGER_NAMES = ("evidence", "commands", "phases")

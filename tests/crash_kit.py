"""Crash-injection helpers shared by the crash tests: run a child, kill it where it says, check.

A child (tests/children/crash_child.py) runs cortex commands armed at a named crash point and
prints ACK/AT lines; `watch` SIGKILLs it when it says AT, and `check_after_kill` checks what a
reader sees afterwards.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import CHILDREN, Cli, case_path

CHILD = str(CHILDREN / "crash_child.py")


DEBRIS = {"uncommitted_tail", "stray_file", "pending_journal", "orphan_blob", "foreign_tail"}


RAW_POINTS = [
    ("txn.staged", 1),
    ("txn.journaled", 1),
    ("ledger.torn_write", 2),
    ("txn.appended", 1),
    ("txn.published", 1),
    ("snapshot.tmp_written", 2),
    ("snapshot.replaced", 2),
    ("txn.case_replaced", 1),
]


@dataclass
class Run:
    """What the child printed before it died (or finished)."""

    acked: list[dict[str, Any]] = field(default_factory=list)
    killed: bool = False


def watch(argv: list[str], env: dict[str, str]) -> Run:
    """Run a child that prints ACK/AT lines (tests/children); SIGKILL it when it says AT."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run = Run()
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            line = raw.decode()
            if line.startswith("AT "):
                proc.send_signal(signal.SIGKILL)
                run.killed = True
                break
            if line.startswith("ACK "):
                run.acked.append(json.loads(line[4:]))
            elif line.startswith("FAIL"):
                pytest.fail(f"child command failed: {line}")
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
        if proc.stderr is not None:
            proc.stderr.close()
    return run


def run_child(
    env: dict[str, str], cwd: Path, point: str, skip: int, commands: list[list[str]]
) -> Run:
    """Run crash_child.py armed at `point` after `skip` passes."""
    return watch([sys.executable, CHILD, point, str(skip), str(cwd), json.dumps(commands)], env)


def view(cli: Cli, task: str) -> tuple[int, list[str]]:
    """What a reader sees: the revision and the committed evidence ids, in order."""
    status = cli("case", "status", task).data
    env = cli.env
    path = case_path(env, task) / "evidence.jsonl"
    committed = json.loads((case_path(env, task) / "case.json").read_bytes())["ledgers"]["evidence"]
    ids = [json.loads(line)["id"] for line in path.read_bytes()[: committed["bytes"]].splitlines()]
    return status["revision"], ids


def audit(cli: Cli, task: str) -> dict[str, Any]:
    out = cli("case", "audit", task)
    assert out.code == 0, out.stdout
    report: dict[str, Any] = out.data
    return report


def check_after_kill(
    cli: Cli, task: str, before: tuple[int, list[str]], run: Run, *, raw: bool
) -> None:
    revision, ids = view(cli, task)
    acked_ids = [a["data"]["evidence"]["id"] for a in run.acked]
    base_revision, base_ids = before
    # Old-or-new: the interrupted command committed entirely or not at all.
    assert revision in {base_revision + len(acked_ids), base_revision + len(acked_ids) + 1}
    assert ids[: len(base_ids)] == base_ids
    assert ids[len(base_ids) : len(base_ids) + len(acked_ids)] == acked_ids
    extra = ids[len(base_ids) + len(acked_ids) :]
    assert len(extra) == revision - base_revision - len(acked_ids)
    audit(cli, task)
    for evidence_id in ids:
        record = cli("case", "read-evidence", task, evidence_id).data["evidence"]
        if raw and evidence_id not in base_ids:
            blob = record["rawRef"].rsplit("/", 1)[1]
            assert (case_path(cli.env, task) / "raw" / f"{blob}.txt").is_file()
    # The next writer removes every trace of the interrupted write.
    assert cli("case", "note", task, "after the crash").code == 0
    report = audit(cli, task)
    leftovers = [w for w in report["warnings"] if w["code"] in DEBRIS]
    assert leftovers == [], leftovers

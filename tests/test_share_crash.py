"""SIGKILL during an import or a share leaves the old state or the new one, and `audit` passes.

The import is one commit of the store's multi-file protocol (docs/design/storage.md), so it is
killed at that protocol's points; a share writes nothing in the case and is killed between its
git steps (docs/design/sharing.md, crash points). After every kill the reader sees the old or
the new state, `audit` passes, and one more fetch (or share) completes the work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crash_kit import DEBRIS, run_child
from share_kit import Machine, make_machine, make_remote

pytestmark = pytest.mark.process  # every test here starts Python processes

IMPORT_POINTS = [
    ("txn.staged", 0),
    ("txn.journaled", 0),
    ("ledger.torn_write", 1),
    ("ledger.written", 2),
    ("txn.appended", 0),
    ("txn.published", 0),
    ("snapshot.replaced", 1),
    ("txn.case_replaced", 0),
]
SHARE_POINTS = ["share.objects_written", "share.ref_updated", "share.pushed"]


def _audit(machine: Machine, task: str) -> None:
    out = machine("case", "audit", task)
    assert out.code == 0, out.stdout
    report = out.data
    unexpected = [w for w in report["warnings"] if w["code"] not in DEBRIS | {"replica_forked"}]
    assert unexpected == [], unexpected


def _world(tmp_path: Path) -> tuple[Machine, Machine, str, list[str]]:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    b = make_machine(tmp_path, "b", remote)
    task = a.ok("case", "open", "Crash me")["taskId"]
    a.ok("case", "share", task)
    b.ok("case", "fetch", task)
    new = [
        a.ok("case", "evidence", "add", task, "--claim", f"raw {i}", "--raw-file", "-",
             stdin=f"output {i}\n".encode())["evidence"]["id"]
        for i in range(2)
    ]  # fmt: skip
    asked = a.ok(
        "case", "decision", "request", task, "--question", "Go on?",
        "--option", "y=Yes", "--option", "n=No", "--actor", "agent-1",
    )  # fmt: skip
    del asked
    a.ok("case", "share", task)
    return a, b, task, new


@pytest.mark.parametrize(("point", "skip"), IMPORT_POINTS)
def test_a_killed_import_leaves_the_old_or_the_new_state(
    tmp_path: Path, point: str, skip: int
) -> None:
    _a, b, task, new = _world(tmp_path)
    before = b.ok("case", "status", task)
    run = run_child(b.env, b.repo, point, skip, [["case", "fetch", task]])
    assert run.killed, f"{point} was never reached"
    _audit(b, task)
    status = b.ok("case", "status", task)
    seen = set(b.evidence(task))
    if status["revision"] == before["revision"]:
        assert not seen & set(new)
        assert status["status"] == before["status"]
    else:
        assert set(new) <= seen
        assert status["status"] == "needs_human_decision"
    b.ok("case", "fetch", task)
    assert set(new) <= set(b.evidence(task))
    assert b.ok("case", "status", task)["status"] == "needs_human_decision"
    report = b.ok("case", "audit", task)
    assert report["ok"] is True
    assert report["warnings"] == []


@pytest.mark.parametrize("point", ["fetch.fetched", "open.staged"])
def test_a_killed_first_import_leaves_no_case_or_a_whole_one(tmp_path: Path, point: str) -> None:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    b = make_machine(tmp_path, "b", remote)
    task = a.ok("case", "open", "Crash me")["taskId"]
    a.ok("case", "evidence", "add", task, "--claim", "one")
    a.ok("case", "share", task)
    run = run_child(b.env, b.repo, point, 0, [["case", "fetch", task]])
    assert run.killed
    listed = b.ok("case", "list")["total"]
    if listed:
        _audit(b, task)
    b.ok("case", "fetch", task)
    assert b.evidence(task) == a.evidence(task)
    assert b.ok("case", "audit", task)["ok"] is True


@pytest.mark.parametrize("point", SHARE_POINTS)
def test_a_killed_share_is_finished_by_the_next_one(tmp_path: Path, point: str) -> None:
    remote = make_remote(tmp_path)
    a = make_machine(tmp_path, "a", remote)
    task = a.ok("case", "open", "Crash me")["taskId"]
    a.ok("case", "evidence", "add", task, "--claim", "one")
    revision = a.ok("case", "status", task)["revision"]
    run = run_child(a.env, a.repo, point, 0, [["case", "share", task]])
    assert run.killed
    assert a.ok("case", "status", task)["revision"] == revision  # a share never writes the case
    _audit(a, task)
    (case,) = a.ok("case", "share", task)["cases"]
    assert case["pushed"] is True
    reader = make_machine(tmp_path, "reader", remote)
    reader.ok("case", "fetch", task)
    assert reader.evidence(task) == a.evidence(task)
    assert json.dumps(reader.ok("case", "audit", task)["errors"]) == "[]"

"""Crash injection for verification: SIGKILL a real `case verify` / `case complete` mid-commit.

One verify call is one multi-file commit (docs/design/verification.md §3): raw blobs, evidence
records, verification.json, the phase line and case.json. The child (tests/children/
crash_child.py) runs the real CLI, stops at an armed crash point after a given number of passes
and is killed with SIGKILL. After each kill:

(a) a reader sees exactly the state the crash-point table of docs/design/storage.md predicts:
    the old case (no new batch, no new evidence, same revision) or the whole new batch (every
    receipt's evidence committed, every artifact's blob in raw/ with the recorded digest, the
    phase line, the audit line naming the batch, revision + 1); never a batch without its
    evidence or blob;
(b) `cortex case audit` passes; (c) `cortex case status` agrees with (a);
(d) one more write removes every trace of the interrupted commit;
(e) a new `case verify` on the unchanged tree succeeds and is `verified`.

The verifiers are `true` (run with the child's cwd inside the repository), so they have exited
before any commit point is reached; each kill also checks that no process is left running in
the repository. The default suite kills at every pass of every point from `changing` (a note
cleans up) and at its last pass from `verifying` (the retried verify cleans up); `pytest -m slow`
runs a seeded campaign of 60 kills per point at random passes, phases and next writers.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, Cli, case_path, configure_verifiers, ready_to_verify
from crash_kit import DEBRIS, Run, audit, run_child

pytestmark = pytest.mark.process  # every test here starts Python processes

CLAIM_ID = "c1"
CRITERION = "the redirect works"
REQUIREMENTS = ("command:unit", "command:lint", "scope")
ACTOR = "agent-1"

TXN_POINTS = (
    "txn.fence",
    "txn.staged",
    "txn.journaled",
    "txn.appended",
    "txn.published",
    "txn.case_replaced",
)
LEDGER_POINTS = ("ledger.before_write", "ledger.torn_write", "ledger.written", "ledger.synced")
SNAPSHOT_POINTS = (
    "snapshot.tmp_created",
    "snapshot.tmp_written",
    "snapshot.tmp_synced",
    "snapshot.replaced",
    "snapshot.dir_synced",
)
COMMIT_POINTS = TXN_POINTS + LEDGER_POINTS + SNAPSHOT_POINTS
NOT_REACHED = frozenset({"commit.case_replaced", "open.key_written", "open.staged"}) | {
    "share.objects_written",
    "share.ref_updated",
    "share.pushed",
    "fetch.fetched",
    "archive.moved",
    "remove.renamed",
    "remove.keys",
    "recall.dropped",
    "forget.rewritten",
    "forget.removed",
}
"""Points a verify never passes: it always journals, creates no case, shares nothing, and
archives, removes or forgets nothing (issue 28's points)."""


def passes(point: str, *, ledgers: int) -> int:
    """How many times one commit passes `point`, given how many ledgers it appends to.

    write_atomic runs twice (the journal, then case.json); each ledger is one append.
    """
    if point in LEDGER_POINTS:
        return ledgers
    if point in SNAPSHOT_POINTS:
        return 2
    return 1


def committed_at(point: str, index: int) -> bool:
    """Whether a kill at the `index`-th pass of `point` leaves the commit made (storage.md)."""
    if point == "txn.case_replaced":
        return True
    # Pass 0 of write_atomic is the journal; pass 1 is case.json, the commit point.
    return point in {"snapshot.replaced", "snapshot.dir_synced"} and index == 1


def verify_ledgers(phase: str) -> int:
    """evidence and commands, plus phases when the batch moves the case to verifying."""
    return 3 if phase == "changing" else 2


COMPLETE_LEDGERS = 2
"""A complete appends two phase lines in one write, and the audit line: two appends."""


# Setup ---------------------------------------------------------------------------------------


@pytest.fixture
def vcli(cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch) -> Cli:
    """The CLI with commands approved, and this process (so the children) working in the repo."""
    cli.env["CORTEX_APPROVE_COMMANDS"] = "1"
    configure_verifiers(repo, cli.env, {"unit": ["true"], "lint": ["true"]})
    monkeypatch.chdir(repo)
    return cli


def prepare(cli: Cli) -> str:
    """A change case in `changing`, holding the lease, with a change inside and one outside."""
    task = ready_to_verify(cli, verify=REQUIREMENTS, criteria=(f"{CLAIM_ID}={CRITERION}",))
    (cli.cwd / "app.py").write_text("print('fixed')\n")
    # Outside the boundary: scope records a drift finding (derived evidence), acknowledged.
    (cli.cwd / "NOTES.txt").write_text("drift\n")
    return task


def verify_argv(task: str) -> list[str]:
    """One batch: three verifiers and a named claim proving the acceptance criterion."""
    return [
        "case",
        "verify",
        task,
        "--claim",
        f"{CLAIM_ID}={CRITERION}",
        "--contract",
        f"{CLAIM_ID}=command:unit",
        "--ack-drift",
    ]


def complete_argv(task: str) -> list[str]:
    return ["case", "complete", task, "--outcome", "done", "--actor", ACTOR]


def to_phase(cli: Cli, task: str, phase: str) -> None:
    """Put the case in `phase` (changing or verifying) before the next verify."""
    if phase == "changing" and committed(cli.env, task).status != "changing":
        out = cli("case", "begin-change", task, "--actor", ACTOR)
        assert out.code == 0, out.stdout
    assert committed(cli.env, task).status == phase


# What a reader sees --------------------------------------------------------------------------


@dataclass
class View:
    """The committed state, read independently of cortex's own reader."""

    revision: int
    status: str
    lease: dict[str, Any] | None
    evidence: dict[str, dict[str, Any]]
    phases: list[dict[str, Any]]
    commands: list[dict[str, Any]]
    batches: list[dict[str, Any]]
    receipts: list[dict[str, Any]]


def _ledger(path: Path, case: dict[str, Any], name: str) -> list[dict[str, Any]]:
    length = case["ledgers"][name]["bytes"]
    data = (path / f"{name}.jsonl").read_bytes()[:length]
    assert len(data) == length, f"{name}.jsonl lost committed bytes"
    lines = data.splitlines()
    assert len(lines) == case["ledgers"][name]["count"]
    return [json.loads(line) for line in lines]


def committed(env: dict[str, str], task: str) -> View:
    """case.json, the committed prefix of each ledger, and the verification.json it records.

    Like a reader: a snapshot newer than case.json (a commit in flight or interrupted) is
    skipped for its backup, chosen by the digest case.json records.
    """
    path = case_path(env, task)
    case = json.loads((path / "case.json").read_bytes())
    batches: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    ref = case["snapshots"].get("verification")
    if ref is not None:
        for name in ("verification.json", ".bak-verification.json"):
            candidate = path / name
            if candidate.is_file() and sha256(candidate.read_bytes()) == ref["sha256"]:
                doc = json.loads(candidate.read_bytes())
                assert doc["revision"] == ref["revision"]
                batches, receipts = doc["batches"], doc["receipts"]
                break
        else:
            pytest.fail("no file holds the verification.json that case.json records")
    evidence = {record["id"]: record for record in _ledger(path, case, "evidence")}
    return View(
        revision=case["revision"],
        status=case["status"],
        lease=case["changeLease"],
        evidence=evidence,
        phases=_ledger(path, case, "phases"),
        commands=_ledger(path, case, "commands"),
        batches=batches,
        receipts=receipts,
    )


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_batches_whole(env: dict[str, str], task: str, view: View) -> None:
    """Every committed batch has its receipts, and each receipt its evidence and blob."""
    raw = case_path(env, task) / "raw"
    batch_ids = [batch["id"] for batch in view.batches]
    assert len(set(batch_ids)) == len(batch_ids)
    for batch_id in batch_ids:
        mine = [r for r in view.receipts if r["batchId"] == batch_id]
        assert {r["purpose"] for r in mine} == {"verifier_run", "named_claim"}, mine
        assert sorted(r["requirement"] for r in mine if r["purpose"] == "verifier_run") == sorted(
            REQUIREMENTS
        )
        audit_lines = [c for c in view.commands if c["operation"] == "case.verify"]
        assert [c for c in audit_lines if c["target"] == batch_id] != []
    for receipt in view.receipts:
        assert receipt["batchId"] in batch_ids
        assert receipt["evidence"], receipt
        for evidence_id in receipt["evidence"]:
            assert evidence_id in view.evidence, f"{evidence_id} is not committed evidence"
        if receipt["purpose"] == "verifier_run" and receipt["requirement"].startswith("command:"):
            assert receipt["artifact"] is not None
        if receipt["artifact"] is not None:
            raw_id = receipt["artifact"].rsplit("/", 1)[1]
            blob = raw / f"{raw_id}.txt"
            assert blob.is_file(), f"{receipt['artifact']} has no blob"
            cited = [view.evidence[e] for e in receipt["evidence"]]
            digests = [e["rawSha256"] for e in cited if e["rawRef"] == receipt["artifact"]]
            assert digests == [sha256(blob.read_bytes())]


def check_old(before: View, after: View) -> None:
    """Nothing of the interrupted commit is visible."""
    assert after == before


def check_new_batch(before: View, after: View, *, moved: bool) -> str:
    """Exactly one whole new batch, with its evidence, phase line and audit line; its id."""
    assert after.revision == before.revision + 1
    assert after.status == "verifying"
    assert after.lease == before.lease
    # The new batch is appended; the oldest ones may be trimmed (verification.json keeps 64).
    kept = before.batches[len(before.batches) + 1 - len(after.batches) :]
    assert after.batches[:-1] == kept
    batch = after.batches[-1]
    assert batch["id"] not in {b["id"] for b in before.batches}
    kept_ids = {b["id"] for b in kept}
    assert after.receipts[: -len(REQUIREMENTS) - 1] == [
        r for r in before.receipts if r["batchId"] in kept_ids
    ]
    assert batch["binding"] == "bound", batch
    receipts = [r for r in after.receipts if r["batchId"] == batch["id"]]
    assert len(receipts) == len(REQUIREMENTS) + 1
    assert all(r["status"] == "passed" for r in receipts), receipts
    added = {k: v for k, v in after.evidence.items() if k not in before.evidence}
    assert set(before.evidence) <= set(after.evidence)
    cited = {e for r in receipts for e in r["evidence"]}
    # unit, lint and scope runs, plus scope's drift finding: all of the batch, nothing else.
    assert set(added) == cited
    assert len(added) == len(REQUIREMENTS) + 1
    assert all(record["revision"] == after.revision for record in added.values())
    assert after.commands[:-1] == before.commands
    assert after.commands[-1]["target"] == batch["id"]
    if moved:
        assert after.phases[:-1] == before.phases
        line = after.phases[-1]
        assert (line["from"], line["to"]) == ("changing", "verifying")
        assert line["reason"] == f"batch {batch['id']}"
    else:
        assert after.phases == before.phases
    batch_id: str = batch["id"]
    return batch_id


def check_status(cli: Cli, task: str, view: View) -> None:
    """`status` works and its verification field is the committed latest batch."""
    data = cli("case", "status", task).data
    assert data["revision"] == view.revision
    assert data["status"] == view.status
    assert data["counts"]["evidence"] == len(view.evidence)
    verification = data["verification"]
    if not view.batches:
        assert verification is None
    else:
        assert verification["batchId"] == view.batches[-1]["id"]
        # The tree has not changed since any batch ran: the latest one is current proof.
        assert verification["status"] == "verified", verification


def check_clean(cli: Cli, task: str) -> None:
    """No debris: audit is silent about it, and the directory holds only committed state."""
    report = audit(cli, task)
    assert report["errors"] == []
    leftovers = [w for w in report["warnings"] if w["code"] in DEBRIS]
    assert leftovers == [], leftovers
    path = case_path(cli.env, task)
    case = json.loads((path / "case.json").read_bytes())
    names = os.listdir(path)
    assert ".journal.json" not in names
    assert [n for n in names if n.startswith((".tmp-", ".bak-"))] == []
    for name, state in case["ledgers"].items():
        assert (path / f"{name}.jsonl").stat().st_size == state["bytes"], name
    view = committed(cli.env, task)
    referenced = {
        record["rawRef"].rsplit("/", 1)[1] + ".txt"
        for record in view.evidence.values()
        if record["rawRef"] is not None
    }
    assert set(os.listdir(path / "raw")) == referenced


def no_process_in(directory: Path) -> list[int]:
    """Processes (other than this one) whose working directory is `directory`."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") == str(directory):
                found.append(int(entry))
        except OSError:
            continue
    return found


# The verify cycle ----------------------------------------------------------------------------


def kill_verify(
    cli: Cli, task: str, *, point: str, skip: int, phase: str, next_writer: str
) -> None:
    """Kill one `case verify` at the `skip`-th pass of `point` and check (a) to (e).

    `next_writer` is `note` (a plain write cleans up) or `verify` (the retry itself does).
    """
    to_phase(cli, task, phase)
    before = committed(cli.env, task)
    run = run_child(cli.env, cli.cwd, point, skip, [verify_argv(task)])
    assert run.killed, f"{point} (pass {skip}) was not reached from {phase}"
    assert run.acked == []
    assert no_process_in(cli.cwd) == [], "a verifier outlived the killed verify"
    # (a) old or new, exactly as the crash-point table says.
    after = committed(cli.env, task)
    if committed_at(point, skip):
        check_new_batch(before, after, moved=phase == "changing")
    else:
        check_old(before, after)
    check_batches_whole(cli.env, task, after)
    # (b) audit passes; (c) status agrees.
    report = audit(cli, task)
    assert report["errors"] == []
    assert report["revision"] == after.revision
    check_status(cli, task, after)
    # (d) the next write cleans up every trace, and changes nothing the reader saw.
    noted = after
    if next_writer == "note":
        assert cli("case", "note", task, "after").code == 0
        check_clean(cli, task)
        noted = committed(cli.env, task)
        assert noted.revision == after.revision + 1
        assert noted.batches == after.batches
        assert set(after.evidence) < set(noted.evidence)
    # (e) the receipts bind to the current tree: a new batch on it is verified.
    result = cli(*verify_argv(task)).data
    assert result["assessment"]["status"] == "verified", result["assessment"]
    assert result["batch"]["binding"] == "bound"
    final = committed(cli.env, task)
    batch_id = check_new_batch(noted, final, moved=noted.status == "changing")
    assert batch_id == result["batch"]["id"]
    check_batches_whole(cli.env, task, final)
    check_status(cli, task, final)
    check_clean(cli, task)


def schedule(point: str) -> list[tuple[str, int, str]]:
    """(phase, skip, next writer) for the default suite.

    Every pass of `point` from `changing` (the first run also creates verification.json),
    cleaned up by a note; then its last pass from `verifying` (verification.json is replaced,
    with a backup), cleaned up by the retried verify itself.
    """
    changing = passes(point, ledgers=verify_ledgers("changing"))
    runs = [("changing", k, "note") for k in range(changing)]
    last = passes(point, ledgers=verify_ledgers("verifying")) - 1
    return [*runs, ("verifying", last, "verify")]


@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_kill_verify(vcli: Cli, point: str) -> None:
    """A verify killed at each pass of each point leaves no half batch; the next writer cleans."""
    task = prepare(vcli)
    for phase, skip, next_writer in schedule(point):
        kill_verify(vcli, task, point=point, skip=skip, phase=phase, next_writer=next_writer)


@pytest.mark.slow
@pytest.mark.parametrize("point", COMMIT_POINTS)
def test_kill_verify_campaign(vcli: Cli, point: str) -> None:
    """60 seeded kills per point (past the 64 kept batches): random pass, phase, next writer."""
    rng = random.Random(f"verify-{point}")
    task = prepare(vcli)
    for _ in range(60):
        phase = rng.choice(("changing", "verifying"))
        if committed(vcli.env, task).status != "verifying":
            phase = "changing"  # the first run: nothing to verify again yet
        skip = rng.randrange(passes(point, ledgers=verify_ledgers(phase)))
        writer = rng.choice(("note", "verify"))
        kill_verify(vcli, task, point=point, skip=skip, phase=phase, next_writer=writer)


def crash_points_in_source() -> set[str]:
    """Every crash point named in the package (`_crash.point(...)` and `_crash.due(...)`)."""
    names: set[str] = set()
    for source in (ROOT / "cortex").rglob("*.py"):
        for call in re.findall(r"_crash\.(?:point|due)\(([^)]*)\)", source.read_text()):
            names.update(re.findall(r'"([a-z_]+\.[a-z_]+)"', call))
    return names


def test_verify_passes_exactly_these_points(vcli: Cli) -> None:
    """Discovery: every point in the package is in the table above, with its exact count.

    The kill tests show each listed pass is reached (the child reports `AT <point>`); here a
    child armed one pass beyond the count, or at a point verify never passes, must finish.
    """
    assert crash_points_in_source() == set(COMMIT_POINTS) | NOT_REACHED
    task = prepare(vcli)
    for point in sorted(crash_points_in_source()):
        to_phase(vcli, task, "changing")
        beyond = passes(point, ledgers=verify_ledgers("changing")) if point in COMMIT_POINTS else 0
        run: Run = run_child(vcli.env, vcli.cwd, point, beyond, [verify_argv(task)])
        assert not run.killed, f"{point} is passed more than {beyond} time(s)"
        assert len(run.acked) == 1
        assert run.acked[0]["data"]["assessment"]["status"] == "verified"
    check_batches_whole(vcli.env, task, committed(vcli.env, task))
    check_clean(vcli, task)


# complete ------------------------------------------------------------------------------------


def complete_cases() -> list[Any]:
    """Every pass of every point of a complete (summary.md is journaled as a write-once file)."""
    return [
        pytest.param(point, index, id=f"{point}-{index}")
        for point in COMMIT_POINTS
        for index in range(passes(point, ledgers=COMPLETE_LEDGERS))
    ]


def summary_pending(task_path: Path) -> bool:
    """summary.md is on disk only as an uncommitted file of a pending journal."""
    journal = json.loads((task_path / ".journal.json").read_bytes())
    return any(f["final"] == "summary.md" and f.get("backup") is None for f in journal["files"])


@pytest.mark.parametrize(("point", "index"), complete_cases())
def test_kill_complete(vcli: Cli, point: str, index: int) -> None:
    """complete killed at each pass of each point: verifying without a committed summary, or
    complete with it; audit passes; a retry completes or is refused (exit 5) as complete."""
    task = prepare(vcli)
    assert vcli(*verify_argv(task)).data["assessment"]["status"] == "verified"
    path = case_path(vcli.env, task)
    before = committed(vcli.env, task)
    run = run_child(vcli.env, vcli.cwd, point, index, [complete_argv(task)])
    assert run.killed, f"{point} (pass {index}) was not reached by complete"
    after = committed(vcli.env, task)
    summary = path / "summary.md"
    if committed_at(point, index):
        assert after.revision == before.revision + 1
        assert after.status == "complete"
        assert after.lease is not None
        assert after.lease["releasedAt"] is not None
        steps = [(p["from"], p["to"]) for p in after.phases[len(before.phases) :]]
        assert steps == [("verifying", "persisting"), ("persisting", "complete")]
        assert after.phases[: len(before.phases)] == before.phases
        text = summary.read_text()
        assert "## Outcome\n\n> done\n" in text
        assert before.batches[-1]["id"] in text
    else:
        assert after == before
        assert not summary.exists() or summary_pending(path)
    assert after.batches == before.batches
    report = audit(vcli, task)
    assert report["errors"] == []
    status = vcli("case", "status", task).data
    assert (status["status"], status["revision"]) == (after.status, after.revision)
    assert status["verification"]["batchId"] == before.batches[-1]["id"]
    retry = vcli(*complete_argv(task))
    if after.status == "complete":
        # Refused by the phase gate, after its transaction recovered: that is the next write.
        assert retry.code == 5, retry.stdout
        assert retry.error_code == "refused"
    else:
        assert retry.code == 0, retry.stdout
    final = committed(vcli.env, task)
    assert final.status == "complete"
    assert "## Outcome\n\n> done\n" in summary.read_text()
    steps = [(p["from"], p["to"]) for p in final.phases[len(before.phases) :]]
    assert steps == [("verifying", "persisting"), ("persisting", "complete")]
    check_batches_whole(vcli.env, task, final)
    check_clean(vcli, task)

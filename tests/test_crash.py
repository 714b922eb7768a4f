"""Crash injection: SIGKILL a real cortex process at every named point of every durable write.

After each kill: every reader sees the old or the new state (never a mix), every record whose
command printed its success envelope is present, `cortex case audit` passes, and one more
write removes every trace of the interrupted one. The default suite runs a few kills per
point; `pytest -m slow` runs the full campaign (200 per point).
"""

from __future__ import annotations

import json
import random
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

# (point, passes per command): an `evidence add` appends to two ledgers (evidence, commands)
# and writes one snapshot; with --raw-file it also writes the journal through write_atomic.
PLAIN_POINTS = [
    ("ledger.before_write", 2),
    ("ledger.torn_write", 2),
    ("ledger.written", 2),
    ("ledger.synced", 2),
    ("snapshot.tmp_created", 1),
    ("snapshot.tmp_written", 1),
    ("snapshot.tmp_synced", 1),
    ("snapshot.replaced", 1),
    ("snapshot.dir_synced", 1),
    ("commit.case_replaced", 1),
]
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
OPEN_POINTS = [("open.key_written", 1), ("open.staged", 1), ("snapshot.replaced", 1)]
COMMANDS_PER_CHILD = 3


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


def campaign(
    cli: Cli, task: str, tmp_path: Path, *, point: str, passes: int, runs: int, raw: bool
) -> None:
    rng = random.Random(f"{point}-{passes}-{raw}")
    raw_file = tmp_path / "raw-output.txt"
    raw_file.write_text("collected 12 items\n12 passed in 0.3s\n")
    killed = 0
    for index in range(runs):
        commands = [
            ["case", "evidence", "add", task, "--claim", f"{point} run {index} cmd {n}"]
            + (["--raw-file", str(raw_file)] if raw else [])
            for n in range(COMMANDS_PER_CHILD)
        ]
        before = view(cli, task)
        run = run_child(
            cli.env, cli.cwd, point, rng.randrange(passes * COMMANDS_PER_CHILD), commands
        )
        killed += run.killed
        check_after_kill(cli, task, before, run, raw=raw)
    assert killed == runs, f"{point} was reached in only {killed} of {runs} runs"


def open_campaign(cli: Cli, point: str, runs: int) -> None:
    for index in range(runs):
        key = f"crash-{point}-{index}"
        command = ["case", "open", f"goal {index}", "--idempotency-key", key]
        before = cli("case", "list").data["total"]
        run = run_child(cli.env, cli.cwd, point, 0, [command])
        assert run.killed
        after = cli("case", "list").data
        assert after["total"] in {before, before + 1}
        for item in after["items"]:
            assert "error" not in item
        # A retry with the same key yields exactly one case, whatever the crash left.
        retried = cli(*command).data
        again = cli(*command).data
        assert retried["taskId"] == again["taskId"]
        assert cli("case", "list", "--limit", "1000").data["total"] == before + 1
        audit(cli, retried["taskId"])


@pytest.mark.parametrize(("point", "passes"), PLAIN_POINTS)
def test_kill_during_evidence_add(
    cli: Cli, task: str, tmp_path: Path, point: str, passes: int
) -> None:
    """A plain append killed at each point: old or new state, acked records kept, audit passes."""
    campaign(cli, task, tmp_path, point=point, passes=passes, runs=2, raw=False)


@pytest.mark.parametrize(("point", "passes"), RAW_POINTS)
def test_kill_during_multi_file_commit(
    cli: Cli, task: str, tmp_path: Path, point: str, passes: int
) -> None:
    """A raw blob + evidence commit killed at each point is rolled back or kept whole."""
    campaign(cli, task, tmp_path, point=point, passes=passes, runs=2, raw=True)


@pytest.mark.parametrize(("point", "passes"), OPEN_POINTS)
def test_kill_during_open(cli: Cli, point: str, passes: int) -> None:
    """A keyed open killed at each point leaves no half case, and a retry gives exactly one."""
    del passes
    open_campaign(cli, point, runs=2)


@pytest.mark.slow
@pytest.mark.parametrize(("point", "passes"), PLAIN_POINTS)
def test_kill_during_evidence_add_campaign(
    cli: Cli, task: str, tmp_path: Path, point: str, passes: int
) -> None:
    """200 kills per point of a plain append."""
    campaign(cli, task, tmp_path, point=point, passes=passes, runs=200, raw=False)


@pytest.mark.slow
@pytest.mark.parametrize(("point", "passes"), RAW_POINTS)
def test_kill_during_multi_file_commit_campaign(
    cli: Cli, task: str, tmp_path: Path, point: str, passes: int
) -> None:
    """200 kills per point of a multi-file commit."""
    campaign(cli, task, tmp_path, point=point, passes=passes, runs=200, raw=True)


@pytest.mark.slow
@pytest.mark.parametrize(("point", "passes"), OPEN_POINTS)
def test_kill_during_open_campaign(cli: Cli, point: str, passes: int) -> None:
    """200 kills per point of a keyed open."""
    del passes
    open_campaign(cli, point, runs=200)


def test_kill_at_random_moments(cli: Cli, task: str) -> None:
    """SIGKILL at random times during a stream of appends: acked records always survive."""
    rng = random.Random(7)
    commands = [["case", "evidence", "add", task, "--claim", f"stream {n}"] for n in range(40)]
    for _ in range(6):
        before = view(cli, task)
        proc = subprocess.Popen(
            [sys.executable, CHILD, "never.reached", "0", str(cli.cwd), json.dumps(commands)],
            env=cli.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        run = Run()
        wanted = rng.randrange(1, 25)
        for raw in proc.stdout:
            if raw.startswith(b"ACK "):
                run.acked.append(json.loads(raw[4:]))
            if len(run.acked) >= wanted:
                break
        # Kill somewhere inside the next command, at a random sub-millisecond offset.
        signal_delay = rng.random() * 0.01
        subprocess.run(["sleep", f"{signal_delay:.4f}"], check=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        remaining = proc.stdout.read()
        proc.stdout.close()
        run.acked.extend(
            json.loads(line[4:]) for line in remaining.splitlines() if line.startswith(b"ACK ")
        )
        check_after_kill(cli, task, before, run, raw=False)

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
from pathlib import Path

import pytest
from conftest import Cli
from crash_kit import CHILD, RAW_POINTS, Run, audit, check_after_kill, run_child, view

pytestmark = pytest.mark.process  # every test here starts Python processes

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
OPEN_POINTS = [("open.key_written", 1), ("open.staged", 1), ("snapshot.replaced", 1)]
COMMANDS_PER_CHILD = 3


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

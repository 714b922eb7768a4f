"""The command runner: a verifier's process group never outlives the call that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Cli, configure_verifiers, ready_to_verify
from stand_ins import leased

from cortex.verifiers import runner


def alive(pid: int) -> bool:
    """Running (a zombie is dead: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_background_child_dies_with_its_command(tmp_path: Path) -> None:
    """A command that exits 0 but leaves a child running: the child is killed at once."""
    pid_file = tmp_path / "bg.pid"
    script = f"sleep 30 >/dev/null 2>&1 & echo $! > {pid_file}; echo done"
    result = runner.run(["sh", "-c", script], cwd=str(tmp_path), env=os.environ, timeout=10)
    assert result.exit_code == 0
    assert result.seconds < 5
    assert wait_dead(int(pid_file.read_text()))


def test_a_child_holding_the_pipes_does_not_hold_the_run(tmp_path: Path) -> None:
    """A background child that keeps stdout open does not make the run wait for it."""
    result = runner.run(
        ["sh", "-c", "sleep 30 & echo hi"], cwd=str(tmp_path), env=os.environ, timeout=10
    )
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.stdout == b"hi\n"
    assert result.seconds < 5


def test_the_deadline_kills_the_whole_group(tmp_path: Path) -> None:
    """At the deadline the command and its children are killed; the run is `timed_out`."""
    pid_file = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pid_file}; wait"
    result = runner.run(["sh", "-c", script], cwd=str(tmp_path), env=os.environ, timeout=1)
    assert result.timed_out
    assert result.exit_code is None
    assert wait_dead(int(pid_file.read_text()))


DRIVER = """
import os, sys
from cortex.verifiers import runner
runner.run(["sh", "-c", "echo $$ > " + sys.argv[1] + "; sleep 30 & echo $! >> " + sys.argv[1]
            + "; wait"], cwd=".", env=os.environ, timeout=60)
"""


def start_driver(tmp_path: Path) -> tuple[subprocess.Popen[bytes], list[int]]:
    """A cortex-like process running a command that has a child of its own."""
    pids = tmp_path / "pids"
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(pids)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pids.exists() and len(pids.read_text().split()) == 2:
            return proc, [int(p) for p in pids.read_text().split()]
        time.sleep(0.05)
    proc.kill()
    msg = "the command did not start"
    raise AssertionError(msg)


@pytest.mark.process
def test_sigterm_to_cortex_kills_the_command_group(tmp_path: Path) -> None:
    """Interrupting cortex (SIGTERM) takes the command and its children down with it."""
    proc, (command, child) = start_driver(tmp_path)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)  # the bare driver dies of the raised `Terminated`
    assert wait_dead(command)
    assert wait_dead(child)


@pytest.mark.process
def test_sigkill_to_cortex_kills_the_command(tmp_path: Path) -> None:
    """Killed outright, cortex cannot clean up, but the kernel still kills its command."""
    proc, (command, child) = start_driver(tmp_path)
    proc.kill()
    proc.wait(timeout=10)
    assert wait_dead(command)
    # The command's own child is orphaned, not killed (the documented limit): clean it up.
    if alive(child):
        os.kill(child, signal.SIGKILL)


@pytest.mark.process
def test_sigterm_during_verify_is_an_interrupted_envelope(
    repo: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """cortex stopped by SIGTERM while a verifier runs: one envelope, exit 143, nothing bound."""
    pid_file = tmp_path / "verifier.pid"
    configure_verifiers(repo, env, {"unit": ["sh", "-c", f"echo $$ > {pid_file}; sleep 30"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    cli = Cli(env, repo)
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cortex", "case", "verify", task, "--json"],
        cwd=repo,
        env=leased(env, [task]),  # the holder's lease token (tests/stand_ins.py)
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline, "the verifier did not start"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 128 + signal.SIGTERM
    envelope = json.loads(out)
    assert envelope["ok"] is False
    assert envelope["error"]["message"] == "interrupted"
    assert wait_dead(int(pid_file.read_text()))
    assert cli("case", "status", task).data["verification"] is None


# What a cut keeps (issue 18, item 2) ---------------------------------------------------------


def kept(output: bytes, head: int = 64, tail: int = 128) -> bytes:
    """What the runner keeps of `output` with a `head`- and `tail`-byte window."""
    stream = runner._Stream()
    with (
        __import__("unittest.mock").mock.patch.object(runner, "OUTPUT_HEAD", head),
        __import__("unittest.mock").mock.patch.object(runner, "OUTPUT_TAIL", tail),
    ):
        for at in range(0, len(output), 7):  # in small reads, as a pipe delivers them
            stream.feed(output[at : at + 7])
        return stream.text()


def test_the_kept_tail_starts_at_a_line() -> None:
    """A line cut by the tail window goes whole: `password: a b c` never keeps `b c`."""
    after = (b"t" * 60 + b"\n") * 2
    line = b"  password: FAKEone FAKEtwo FAKEthree\n"
    output = b"h" * 70 + b"\n" + b"m" * 200 + b"\n" + line + after
    # The window starts inside FAKEone: a cut at the next word kept FAKEtwo FAKEthree.
    out = kept(output, tail=len(after) + len(b"ne FAKEtwo FAKEthree\n"))
    assert b"FAKEtwo" not in out
    assert b"FAKEthree" not in out
    assert out.endswith(b"omitted ...]\n" + after)


def test_the_kept_tail_never_starts_inside_a_continued_command() -> None:
    """A `\\` continuation joins two lines into one command: its second half goes too."""
    after = (b"t" * 60 + b"\n") * 2
    command = b"deploy --token FAKEhead0000\\\nFAKEtail0000 --yes\n"
    output = b"h" * 70 + b"\n" + b"m" * 200 + b"\n" + command + after
    # The window starts inside the first line: the next line was the first kept.
    out = kept(output, tail=len(after) + len(command) - 5)
    assert b"FAKEtail" not in out
    assert out.endswith(b"omitted ...]\n" + after)


def test_a_tail_of_continuations_only_is_dropped() -> None:
    """With no whole line in the window, nothing of the command is kept."""
    output = b"h" * 70 + b"\n" + b"--token FAKEa \\\n" * 40
    out = kept(output, tail=100)
    assert b"FAKEa" not in out.split(b"omitted ...]")[1]


def test_a_tail_that_closes_a_private_span_keeps_nothing_of_it() -> None:
    """`</private>` in the kept tail, its opening cut away: what came before it is private."""
    output = (
        b"h" * 70 + b"\n<private>\n" + b"m" * 200 + b"\nFAKEprivate line\n</PRIVATE> after\nend\n"
    )
    out = kept(output, tail=60)
    assert b"FAKEprivate" not in out
    assert b"[PRIVATE] after\nend\n" in out


def test_a_tail_holding_a_whole_span_is_left_alone() -> None:
    """A span opened and closed inside the tail is the redactor's, as in any text."""
    output = b"h" * 70 + b"\n" + b"m" * 200 + b"\nx <private>y</private> z\nend\n"
    assert kept(output, tail=60).endswith(b"\nx <private>y</private> z\nend\n")


def test_a_long_last_line_falls_back_to_a_word() -> None:
    """Without a line break in the tail window, the cut is at a word, as before."""
    output = b"h" * 70 + b"\n" + b"word " * 100
    out = kept(output, tail=60)
    assert out.endswith(b"omitted ...]\n" + b"word " * 11)

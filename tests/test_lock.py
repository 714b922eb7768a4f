"""Locks, tested by asking other real processes (never by mocking fcntl)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CHILDREN, Cli, case_path, tree_state

pytestmark = pytest.mark.process  # every test here starts Python processes

HOLDER = str(CHILDREN / "hold_lock.py")


def hold(cli: Cli, task: str, backend: str = "fcntl") -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, HOLDER, str(case_path(cli.env, task) / ".lock"), backend],
        env=cli.env,
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"held\n"
    return proc


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def busy_cli(cli: Cli) -> Cli:
    return Cli({**cli.env, "CORTEX_LOCK_TIMEOUT": "0.3"}, cli.cwd)


@pytest.mark.parametrize("backend", ["fcntl", "portalocker"])
def test_a_held_lock_makes_writers_busy_and_names_the_holder(
    cli: Cli, task: str, backend: str
) -> None:
    """While another process holds the case lock, a writer waits, then fails busy (exit 6)."""
    holder = hold(cli, task, backend)
    try:
        before = tree_state(case_path(cli.env, task))
        started = time.monotonic()
        out = busy_cli(cli)("case", "note", task, "blocked")
        waited = time.monotonic() - started
        assert out.code == 6
        assert out.error_code == "busy"
        message = out.envelope["error"]["message"]
        assert "lock-holder" in message
        assert "test-host" in message
        assert 0.25 <= waited < 5
        after = tree_state(case_path(cli.env, task))
        assert {k: v for k, v in after.items() if k != ".lock"} == {
            k: v for k, v in before.items() if k != ".lock"
        }
    finally:
        stop(holder)


def test_readers_do_not_wait_for_writers(cli: Cli, task: str) -> None:
    """status and audit answer while a writer holds the lock: readers take no lock."""
    holder = hold(cli, task)
    try:
        assert busy_cli(cli)("case", "status", task).code == 0
        assert busy_cli(cli)("case", "audit", task).code == 0
    finally:
        stop(holder)


def test_a_killed_holder_frees_the_lock_at_once(cli: Cli, task: str) -> None:
    """SIGKILL of the holder releases the lock: no stale-lock guessing, no manual step."""
    holder = hold(cli, task)
    holder.send_signal(signal.SIGKILL)
    stop(holder)
    started = time.monotonic()
    assert busy_cli(cli)("case", "note", task, "after the holder died").code == 0
    assert time.monotonic() - started < 1.0
    assert (case_path(cli.env, task) / ".lock").exists(), "the lock file is never unlinked"


def test_fcntl_and_portalocker_exclude_each_other(cli: Cli, task: str) -> None:
    """The portable backend takes the same lock, so mixed installations stay safe."""
    holder = hold(cli, task, "portalocker")
    try:
        assert busy_cli(cli)("case", "note", task, "x").code == 6
    finally:
        stop(holder)


def test_a_holder_note_too_deep_to_read_is_no_holder(tmp_path: Path) -> None:
    """The note is read only for a `busy` message: one nested too deeply must not crash it."""
    from cortex.cases.lock import read_holder

    path = tmp_path / ".lock"
    path.write_bytes(b"[" * 2_000 + b"]" * 2_000)
    assert read_holder(str(path)) == {}

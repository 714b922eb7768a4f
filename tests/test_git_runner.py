"""The one git runner (cortex/workspace/git.py): what each caller gets back, and how it fails.

Every module that runs git maps the runner's failures into its own words, so the runner must
keep what they tell apart: a program (or directory) that is missing, a git that outlived its
bound, another failure to start, each with the operating system's own message. Real processes
throughout (`sleep` stands in for a hung git); nothing is mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cortex.workspace.git import GitNotRunError, git_output, run_git, spawn_git

ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def test_a_finished_command_is_returned_whatever_its_exit_status(tmp_path: Path) -> None:
    done = run_git(["git", "--version"], cwd=str(tmp_path), env=ENV, timeout=30)
    assert done.returncode == 0
    assert done.stdout.startswith(b"git version ")
    failed = run_git(["git", "rev-parse", "HEAD"], cwd=str(tmp_path), env=ENV, timeout=30)
    assert failed.returncode != 0
    assert failed.stderr


def test_git_output_is_the_output_of_a_success_and_none_otherwise(tmp_path: Path) -> None:
    ok = git_output(["git", "--version"], cwd=str(tmp_path), env=ENV, timeout=30)
    assert ok is not None
    assert ok.startswith(b"git version ")
    assert git_output(["git", "rev-parse", "HEAD"], cwd=str(tmp_path), env=ENV, timeout=30) is None
    missing = str(tmp_path / "no-such-git")
    assert git_output([missing], cwd=str(tmp_path), env=ENV, timeout=30) is None


def test_data_is_the_command_input(tmp_path: Path) -> None:
    done = run_git(["cat"], cwd=str(tmp_path), env=ENV, timeout=30, data=b"given\n")
    assert done.stdout == b"given\n"


@pytest.mark.process
def test_without_data_the_input_is_closed_and_the_callers_input_is_left_whole(
    tmp_path: Path,
) -> None:
    """Under `cortex serve` the process's input is the MCP stream: git must not read a byte."""
    script = (
        "import sys\n"
        "from cortex.workspace.git import run_git\n"
        f"done = run_git(['cat'], cwd='.', env={ENV!r}, timeout=30)\n"
        "sys.stdout.buffer.write(done.stdout + b'|' + sys.stdin.buffer.read())\n"
    )
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        input=b"kept\n",
        capture_output=True,
        check=False,
        env=ENV,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout == b"|kept\n"


def test_a_missing_program_is_told_apart_with_the_systems_words(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-git")
    with pytest.raises(GitNotRunError) as caught:
        run_git([missing, "status"], cwd=str(tmp_path), env=ENV, timeout=30)
    error = caught.value
    assert isinstance(error.cause, FileNotFoundError)
    assert (error.missing, error.timed_out) == (True, False)
    assert error.strerror == error.cause.strerror
    assert error.strerror
    assert str(error) == str(error.cause)


def test_a_missing_directory_counts_as_missing(tmp_path: Path) -> None:
    with pytest.raises(GitNotRunError) as caught:
        run_git(["git", "--version"], cwd=str(tmp_path / "gone"), env=ENV, timeout=30)
    assert caught.value.missing


def test_a_program_that_cannot_start_is_not_called_missing(tmp_path: Path) -> None:
    """Another OSError (here: not executable) keeps its own words and is not `missing`."""
    plain = tmp_path / "not-executable"
    plain.write_text("#!/bin/sh\n")
    with pytest.raises(GitNotRunError) as caught:
        run_git([str(plain)], cwd=str(tmp_path), env=ENV, timeout=30)
    error = caught.value
    assert isinstance(error.cause, PermissionError)
    assert (error.missing, error.timed_out) == (False, False)
    assert error.strerror == error.cause.strerror
    assert str(error) == str(error.cause)


def test_a_command_that_outlives_its_bound_is_a_timeout(tmp_path: Path) -> None:
    with pytest.raises(GitNotRunError) as caught:
        run_git(["sleep", "5"], cwd=str(tmp_path), env=ENV, timeout=0.2)
    error = caught.value
    assert isinstance(error.cause, subprocess.TimeoutExpired)
    assert (error.missing, error.timed_out, error.strerror) == (False, True, None)
    assert str(error) == str(error.cause)
    assert "timed out after 0.2 seconds" in str(error)


def test_spawn_gives_pipes_the_caller_owns(tmp_path: Path) -> None:
    process = spawn_git(["cat"], cwd=str(tmp_path), env=ENV, feed=True)
    out, err = process.communicate(b"asked\n", timeout=30)
    assert out == b"asked\n"
    assert process.stderr is None  # discarded unless asked for
    assert process.returncode == 0
    quiet = spawn_git(["git", "rev-parse", "HEAD"], cwd=str(tmp_path), env=ENV, feed=False)
    quiet.communicate(timeout=30)
    assert quiet.stdin is None
    assert quiet.stderr is None
    told = spawn_git(
        ["git", "rev-parse", "HEAD"], cwd=str(tmp_path), env=ENV, feed=False, errors=True
    )
    _, err = told.communicate(timeout=30)
    assert err


def test_spawn_fails_as_popen_does(tmp_path: Path) -> None:
    """The caller owns the process, so a failed start is Popen's own OSError, unwrapped."""
    with pytest.raises(FileNotFoundError):
        spawn_git([str(tmp_path / "no-such-git")], cwd=str(tmp_path), env=ENV, feed=False)

"""Trust helpers shared by the trust tests: a planned case, a decision asked, a detached call."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import CHILDREN, Cli, Outcome, configure_verifiers


def detached(args: list[str], env: dict[str, str], cwd: Path, *, stdin: bytes = b"") -> Outcome:
    """`python -m cortex ARGS --json` as an agent's tool call runs it: a new session with no
    controlling terminal, stdin and stdout pipes."""
    proc = subprocess.run(
        [PYTHON, "-m", "cortex", *args, "--json"],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        start_new_session=True,
        check=False,
    )
    return Outcome(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def planned(cli: Cli) -> str:
    """A change case planned to verify `command:unit` on app.py; nobody holds the lease."""
    task = cli.open("Fix the login redirect")
    evidence = cli("case", "evidence", "add", task, "--claim", "app.py is wrong").data
    out = cli("case", "plan", task, *PLAN, "--support", f"1={evidence['evidence']['id']}")
    assert out.code == 0, out.stdout
    return task


@pytest.fixture
def unit(repo: Path, env: dict[str, str]) -> dict[str, str]:
    """An approved `command:unit` that passes; the environment to run it with."""
    configure_verifiers(repo, env, {"unit": [PYTHON, "-c", "print('unit: 1 passed')"]})
    return {**env, "CORTEX_APPROVE_COMMANDS": "1"}


def ask(cli: Cli, actor: str = "agent-1") -> tuple[str, str]:
    """An investigating case paused on a decision; its task and decision ids."""
    task = cli.open("Migrate the sessions table")
    cli("case", "evidence", "add", task, "--claim", "two ways to migrate")
    argv = ["case", "decision", "request", task, "--question", "Which migration?", *OPTIONS]
    decision = cli(*argv, "--actor", actor).data["decision"]["id"]
    return task, decision


PYTHON = sys.executable


PLAN = (
    "--hypothesis", "app.py returns the wrong page :: a request shows the right one",
    "--uncertainty", "none", "--file", "app.py", "--boundary-reason", "the bug lives here",
    "--verify", "command:unit",
)  # fmt: skip


OPTIONS = ("--option", "safe=Safe migration|slower rollout", "--option", "fast=Fast|riskier")


WITH_TTY = str(CHILDREN / "with_tty.py")


def at_terminal(
    args: list[str], env: dict[str, str], cwd: Path, *, typed: str | None, prompt: bytes
) -> tuple[Outcome, bytes]:
    """`python -m cortex ARGS --json` at a person's terminal: a pseudo-terminal is the child's
    controlling terminal and its stdin (stdout stays a pipe, for the envelope). Types `typed`
    and enter when `prompt` appears; returns the outcome and what the terminal showed."""
    primary, secondary = os.openpty()
    try:
        proc = subprocess.Popen(
            [PYTHON, WITH_TTY, os.ttyname(secondary), PYTHON, "-m", "cortex", *args, "--json"],
            cwd=cwd,
            env=env,
            stdin=secondary,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        shown = b""
        sent = False
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([primary], [], [], 0.1)[0]:
                try:
                    shown += os.read(primary, 4096)
                except OSError:
                    break
            if typed is not None and not sent and prompt in shown:
                os.write(primary, typed.encode() + b"\n")
                sent = True
        if proc.poll() is None:
            proc.kill()
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        os.close(primary)
        os.close(secondary)
    return Outcome(proc.returncode, stdout.decode(), stderr.decode()), shown

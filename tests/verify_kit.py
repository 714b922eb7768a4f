"""Helpers shared by the verification tests: configuration, edits, receipts, raw blobs."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import CHILDREN, Cli, Outcome, case_path, committed_state, git

from cortex.cases.layout import parse_raw_ref


def receipts_by(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The receipts of a verify call by requirement (verifier runs) or `claim:ID`."""
    found: dict[str, dict[str, Any]] = {}
    for receipt in data["receipts"]:
        key = receipt["requirement"]
        if receipt["purpose"] == "named_claim":
            key = f"claim:{receipt['claimId']}"
        found[key] = receipt
    return found


def raw_blob(env: dict[str, str], task: str, ref: str) -> bytes:
    """The stored bytes of the raw blob a `case://` reference names."""
    parsed = parse_raw_ref(ref)
    assert parsed is not None, ref
    owner, raw_id = parsed
    assert owner == task
    return (case_path(env, task) / "raw" / f"{raw_id}.txt").read_bytes()


def trust_at_terminal(
    env: dict[str, str], repo: Path, name: str, answer: str, *extra: str
) -> tuple[Outcome, bytes]:
    """Run `cortex case trust NAME` with a pseudo-terminal as its controlling terminal.

    Answers `answer` when the prompt appears; returns the outcome (stdout is a pipe) and what
    the terminal showed.
    """
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [
                *(sys.executable, WITH_TTY, os.ttyname(slave)),
                *(sys.executable, "-m", "cortex", "case", "trust", name, *extra, "--json"),
            ],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        shown = b""
        answered = False
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                shown += os.read(master, 4096)
            if not answered and b"to approve" in shown:
                os.write(master, answer.encode() + b"\n")
                answered = True
        if proc.poll() is None:
            proc.kill()
        stdout, stderr = proc.communicate(timeout=10)
    finally:
        os.close(master)
        os.close(slave)
    return Outcome(proc.returncode, stdout.decode(), stderr.decode()), shown


WITH_TTY = str(CHILDREN / "with_tty.py")


def steps(*args: str) -> list[str]:
    """The argv of a configured verifier that runs `tests/children/verifier_steps.py`."""
    return [sys.executable, STEPS, *args]


def write_config(
    repo: Path, env: dict[str, str], tables: dict[str, dict[str, Any]], *, commit: bool = True
) -> None:
    """Write `[verifiers.NAME]` tables (any keys) to cortex.toml, committed unless told."""
    lines: list[str] = []
    for name, table in tables.items():
        lines.append(f"[verifiers.{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
        lines.append("")
    (repo / "cortex.toml").write_text("\n".join(lines))
    if commit:
        git(repo, "add", "cortex.toml", env=env)
        git(repo, "commit", "-q", "-m", "configure verifiers", env=env)


def approve(env: dict[str, str]) -> None:
    """Approve every configured command for the CLI (the launcher's environment)."""
    env["CORTEX_APPROVE_COMMANDS"] = "1"


def edit(repo: Path, text: str = "print('fixed')\n") -> None:
    """Change the file the change boundary covers."""
    (repo / "app.py").write_text(text)


def durable_state(env: dict[str, str]) -> dict[str, tuple[int, int, int, int]]:
    """`tree_state` of the state root without lock files and the capture's index mirror.

    The mirror (`index-mirror/`) is git's refreshed copy of the repository's index, a cache that
    any capture may write (docs/design/verification.md §1); it holds nothing of a case. Nor does
    the refusal log, where a refused verify counts itself (`committed_state`).
    """
    root = Path(env["CORTEX_STATE_DIR"])
    return {
        k: v
        for k, v in committed_state(root, ignore=LOCKS).items()
        if Path(k).parts[0] != "index-mirror"
    }


def verdict_of_status(cli: Cli, task: str) -> str | None:
    """`case status` data["verification"]["status"] (None: never verified)."""
    verification = cli("case", "status", task).data["verification"]
    return None if verification is None else str(verification["status"])


def assert_refused(out: Outcome, code: int) -> dict[str, Any]:
    """The command failed with exit `code`, one envelope, no traceback; returns the envelope."""
    assert out.code == code, out.stdout + out.stderr
    no_traceback(out)
    envelope = out.envelope
    assert envelope["ok"] is False
    return envelope


def complete(cli: Cli, task: str, *extra: str, actor: str = "agent-1") -> Outcome:
    """`case complete` as the lease holder."""
    return cli("case", "complete", task, "--outcome", "fixed it", "--actor", actor, *extra)


def assert_not_verified(cli: Cli, task: str, verified: Outcome | None = None) -> None:
    """No surface shows `task` as verified, and completing it unacknowledged is refused."""
    if verified is not None and verified.code == 0:
        assert verified.data["assessment"]["status"] != "verified", verified.stdout
    assert verdict_of_status(cli, task) != "verified"
    before = cli("case", "status", task).data["status"]
    refused = complete(cli, task)
    assert_refused(refused, 5)
    assert refused.error_code == "refused"
    assert cli("case", "status", task).data["status"] == before


AWS_KEY = "AKIA" + "QX7TZ2MB4KLN8RW5"
"""A made-up value in the shape of an AWS access key id."""


GITHUB_TOKEN = "ghp_" + "Zr8Kq2Lm5Nx7Vb3Ct9Wd4Fy6Hj1Gp0Sa2Ue5"
"""A made-up value in the shape of a classic GitHub token (36 characters after the prefix)."""


STEPS = str(CHILDREN / "verifier_steps.py")


LOCKS = {".lock", ".store.lock"}


def no_traceback(out: Outcome) -> None:
    """One envelope on stdout and no Python traceback anywhere."""
    assert "Traceback" not in out.stderr, out.stderr
    assert "Traceback" not in out.stdout, out.stdout
    out.envelope  # noqa: B018 - asserts exactly one envelope line

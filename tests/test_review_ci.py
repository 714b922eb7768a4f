"""examples/ci/review.sh, the script the GitHub Actions job runs, against a local bare remote.

Two machines share one bare `file://` remote (tests/share_kit.py): the agent verifies a fix
with the trailer hook installed, completes and shares the case, and pushes the branch as
pull request 7 (`refs/pull/7/head`, as a forge keeps it); CI, with a state directory of its
own, clones the remote, checks out the pull request's head commit and runs the script, which
fetches the pull request's cases and asks `cortex review` for the verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, case_path, git, ready_to_verify
from forge import forge_receipts
from share_kit import SHARE_TOML, Machine, make_machine, make_remote

SCRIPT = ROOT / "examples" / "ci" / "review.sh"
PR = "7"
CHECK = [sys.executable, "-c", "import sys; sys.exit('bad' in open('app.py').read())"]
"""The unit verifier: fails while app.py holds the word `bad`."""


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


@pytest.fixture
def agent(tmp_path: Path, remote: Path) -> Machine:
    machine = make_machine(tmp_path, "agent", remote)
    unit = f"[verifiers.unit]\nargv = {json.dumps(CHECK)}\n"
    (machine.repo / "cortex.toml").write_text(SHARE_TOML + "\n" + unit)
    machine.git("commit", "-q", "-am", "configure verifiers")
    machine.git("push", "-q", "origin", "main")
    machine.env["CORTEX_APPROVE_COMMANDS"] = "1"
    machine.ok("setup", "git-trailer")
    return machine


def push_pr(agent: Machine) -> str:
    agent.git("push", "-q", "-f", "origin", "HEAD:refs/heads/feature", f"HEAD:refs/pull/{PR}/head")
    return agent.git("rev-parse", "HEAD")


def run_ci(tmp_path: Path, remote: Path, head: str, name: str) -> tuple[int, str, Path]:
    """CI's run: a fresh clone, the head commit checked out, the script; (status, stdout, dir)."""
    ci = make_machine(tmp_path, name, remote)
    ci.git("checkout", "-q", "--detach", head)
    program = tmp_path / f"{name}-cortex"
    program.write_text(f'#!/bin/sh\nexec {sys.executable} -m cortex "$@"\n')
    program.chmod(0o755)
    summary = tmp_path / f"{name}-summary.md"
    reports = tmp_path / f"{name}-reports"
    env = {
        **ci.env,
        "CORTEX": str(program),
        "GITHUB_STEP_SUMMARY": str(summary),
        "CORTEX_REPORTS": str(reports),
        "CORTEX_APPROVE_COMMANDS": "1",
    }
    proc = subprocess.run(
        ["bash", str(SCRIPT), "origin/main", head, PR],
        cwd=ci.repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode in {0, 5}, proc.stderr
    assert summary.read_text() == proc.stdout
    assert git(ci.repo, "status", "--porcelain", env=ci.env) == ""  # nothing left in the clone
    return proc.returncode, proc.stdout, reports


@pytest.mark.process
def test_the_ci_script_approves_a_shared_verified_pull_request_and_not_a_later_change(
    tmp_path: Path, remote: Path, agent: Machine
) -> None:
    agent.git("checkout", "-q", "-b", "feature")
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('fixed')\n")
    assert agent.ok("case", "verify", task)["assessment"]["status"] == "verified"
    agent.git("commit", "-q", "-am", "fix the redirect")  # the hook adds the trailer
    assert f"Cortex-Case: {task}" in agent.git("log", "-1", "--format=%B")
    agent.ok("case", "complete", task, "--outcome", "fixed it", "--actor", "agent-1")
    agent.ok("case", "share", task)
    head = push_pr(agent)

    status, out, reports = run_ci(tmp_path, remote, head, "ci1")
    assert status == 0, out
    assert out.startswith("## Cortex review: **approve**")
    assert task in out
    assert "reproduced" in out  # the proof was run again in CI, not taken from the replica
    assert (reports / f"{task}.html").read_text().startswith("<!DOCTYPE html>")

    # A later commit on the pull request, never verified: the check no longer passes.
    (agent.repo / "app.py").write_text("print('fixed, then changed')\n")
    agent.git("commit", "-q", "-am", "one more change")
    later = push_pr(agent)
    status, out, _ = run_ci(tmp_path, remote, later, "ci2")
    assert status == 5
    assert out.startswith("## Cortex review: **needs\\_verification**")
    assert "`no_proof`" in out


def test_the_ci_script_says_when_no_case_claims_the_pull_request(
    tmp_path: Path, remote: Path, agent: Machine
) -> None:
    agent.git("checkout", "-q", "-b", "feature")
    (agent.repo / "app.py").write_text("print('unreviewed')\n")
    agent.git("commit", "-q", "-am", "no case")
    head = push_pr(agent)
    status, out, _ = run_ci(tmp_path, remote, head, "ci")
    assert status == 5
    assert "`no_case`" in out


@pytest.mark.process
def test_the_ci_script_does_not_approve_a_forged_replica(
    tmp_path: Path, remote: Path, agent: Machine
) -> None:
    """Receipts edited to name a head tree that was never verified, every digest recomputed."""
    agent.git("checkout", "-q", "-b", "feature")
    task = ready_to_verify(agent.cli)
    (agent.repo / "app.py").write_text("print('fixed')\n")
    assert agent.ok("case", "verify", task)["assessment"]["status"] == "verified"
    agent.ok("case", "complete", task, "--outcome", "fixed it", "--actor", "agent-1")
    agent.git("commit", "-q", "-am", "fix the redirect")
    (agent.repo / "app.py").write_text("print('bad')\n")
    agent.git("commit", "-q", "-am", f"break it\n\nCortex-Case: {task}")
    forge_receipts(case_path(agent.env, task), tree=agent.git("rev-parse", "HEAD^{tree}"))
    assert agent.cli("case", "audit", task).code == 0
    agent.ok("case", "share", task)
    head = push_pr(agent)
    status, out, _ = run_ci(tmp_path, remote, head, "ci")
    assert status == 5
    assert out.startswith("## Cortex review: **request\\_changes**"), out
    assert "reproduced on the head commit" in out

"""`cortex review`: the merge gate's verdict on real repositories (docs/design/report.md).

Each test builds a branch in a real git repository with real verifier runs and asks for the
verdict: approve only when every claiming case is complete with proof current for the head
commit's tree and nothing waits for a person. Exit 0 only for approve; otherwise exit 5 with
the whole verdict in `data`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, Outcome, configure_verifiers, git, ready_to_verify

CHECK = [sys.executable, "-c", "import sys; sys.exit('bad' in open('app.py').read())"]
"""The unit verifier: fails while app.py holds the word `bad`."""


@pytest.fixture
def branch(repo: Path, env: dict[str, str]) -> Path:
    """`repo` with a committed verifier on main, checked out on a new branch `feature`."""
    configure_verifiers(repo, env, {"unit": CHECK})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    git(repo, "checkout", "-q", "-b", "feature", env=env)
    return repo


def commit(repo: Path, env: dict[str, str], text: str, message: str = "change") -> str:
    (repo / "app.py").write_text(text)
    git(repo, "commit", "-q", "-am", message, env=env)
    return git(repo, "rev-parse", "HEAD", env=env)


def verify(cli: Cli, task: str) -> dict[str, Any]:
    out = cli("case", "verify", task)
    assert out.code in {0, 2, 5}, out.stdout
    data: dict[str, Any] = out.envelope["data"]
    return data


def complete(cli: Cli, task: str) -> None:
    out = cli("case", "complete", task, "--outcome", "fixed it", "--actor", "agent-1")
    assert out.code == 0, out.stdout


def review(cli: Cli, *extra: str) -> Outcome:
    return cli("review", "--base", "main", *extra)


def verdict(out: Outcome) -> dict[str, Any]:
    envelope = out.envelope
    data: dict[str, Any] = envelope["data"]
    if data["verdict"] == "approve":
        assert out.code == 0
        assert envelope["ok"] is True
    else:
        assert out.code == 5
        assert envelope["ok"] is False
        assert envelope["error"]["code"] == data["verdict"]
    return data


def codes(data: dict[str, Any]) -> list[str]:
    return sorted(p["code"] for p in data["problems"])


def verified_and_committed(cli: Cli, repo: Path, env: dict[str, str]) -> str:
    """A case on `feature` whose fix was verified in the work tree, then committed unchanged."""
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    assert verify(cli, task)["assessment"]["status"] == "verified"
    complete(cli, task)
    git(repo, "commit", "-q", "-am", "fix the redirect", env=env)
    return task


@pytest.mark.process
def test_verified_then_committed_unchanged_is_approved(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = verified_and_committed(cli, branch, env)
    data = verdict(review(cli))
    assert data["verdict"] == "approve", data
    assert data["problems"] == []
    assert [c["taskId"] for c in data["cases"]] == [task]
    case = data["cases"][0]
    assert case["claimedBy"] == ["branch"]
    assert case["assessment"] == "verified"
    assert "committed unchanged" in case["currency"]
    assert data["head"]["commit"] == git(branch, "rev-parse", "HEAD", env=env)
    assert data["head"]["tree"] == git(branch, "rev-parse", "HEAD^{tree}", env=env)
    assert data["head"]["branch"] == "feature"
    assert data["base"] == {"ref": "main", "commit": git(branch, "rev-parse", "main", env=env)}
    assert data["commits"] == 1
    # Text for people: the verdict first, exit 0.
    text = cli("review", "--base", "main", human=True)
    assert text.code == 0
    assert text.stdout.startswith("approve")
    # The same verdict for an explicit --head naming the branch, from another checkout.
    git(branch, "checkout", "-q", "main", env=env)
    again = verdict(review(cli, "--head", "feature"))
    assert again["verdict"] == "approve"
    assert again["head"]["branch"] == "feature"


@pytest.mark.process
def test_a_later_commit_that_changes_code_needs_verification(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    task = verified_and_committed(cli, branch, env)
    commit(branch, env, "print('fixed again')\n")
    data = verdict(review(cli))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["no_proof"]
    problem = data["problems"][0]
    assert problem["taskId"] == task
    assert "stale" in problem["message"]
    assert "the code changed since" in data["cases"][0]["currency"]


@pytest.mark.process
def test_an_uncommitted_edit_does_not_change_the_verdict_of_the_commit(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    verified_and_committed(cli, branch, env)
    (branch / "app.py").write_text("print('not committed')\n")
    assert verdict(review(cli))["verdict"] == "approve"


@pytest.mark.process
def test_latest_batch_failed_requests_changes(branch: Path, env: dict[str, str], cli: Cli) -> None:
    task = ready_to_verify(cli)
    commit(branch, env, "print('bad')\n")
    assert verify(cli, task)["assessment"]["status"] == "failed"
    data = verdict(review(cli))
    assert data["verdict"] == "request_changes"
    assert codes(data) == ["failed", "not_complete"]
    assert data["cases"][0]["assessment"] == "failed"
    # With --format md the summary is on stdout whatever the verdict.
    md = cli("review", "--base", "main", "--format", "md", human=True)
    assert md.code == 5
    assert md.stdout.startswith("## Cortex review: **request\\_changes**")
    assert "`failed`" in md.stdout
    assert "error [request_changes]" in md.stderr


@pytest.mark.process
def test_a_pending_decision_needs_verification(branch: Path, env: dict[str, str], cli: Cli) -> None:
    task = ready_to_verify(cli)
    commit(branch, env, "print('fixed')\n")
    assert verify(cli, task)["assessment"]["status"] == "verified"
    asked = cli(
        "case", "decision", "request", task, "--question", "Ship it?",
        "--option", "yes=Yes", "--option", "no=No",
    )  # fmt: skip
    assert asked.code == 0, asked.stdout
    data = verdict(review(cli))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["not_complete", "pending_decision"]
    assert data["cases"][0]["assessment"] == "verified"


def test_no_case_for_the_branch_needs_verification(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    commit(branch, env, "print('untracked work')\n")
    data = verdict(review(cli))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["no_case"]
    assert data["cases"] == []
    assert "feature" in data["problems"][0]["message"]


@pytest.mark.process
def test_a_trailer_claims_a_case_opened_elsewhere(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    # Opened and verified on another branch; the commit on `feature` carries its trailer.
    git(branch, "checkout", "-q", "-b", "elsewhere", env=env)
    task = ready_to_verify(cli)
    (branch / "app.py").write_text("print('fixed')\n")
    assert verify(cli, task)["assessment"]["status"] == "verified"
    complete(cli, task)
    git(branch, "checkout", "-q", "feature", env=env)  # the edit comes along, uncommitted
    git(branch, "commit", "-q", "-am", f"fix\n\nCortex-Case: {task}", env=env)
    data = verdict(review(cli))
    assert data["verdict"] == "approve", data
    assert data["cases"][0]["claimedBy"] == ["trailer"]


def test_a_trailer_naming_a_case_not_held_asks_to_fetch_it(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    missing = "task_01J00000000000000000000000"
    (branch / "app.py").write_text("print('x')\n")
    git(
        branch,
        "commit",
        "-q",
        "-am",
        f"x\n\nCortex-Case: {missing}\nCortex-Case: nonsense",
        env=env,
    )
    data = verdict(review(cli))
    assert data["verdict"] == "needs_verification"
    assert codes(data) == ["case_missing"]
    assert "fetch" in data["problems"][0]["message"]
    assert any("nonsense" in w for w in data["warnings"])


@pytest.mark.usefixtures("branch")
def test_bad_refs_are_invalid_input_and_name_the_option(cli: Cli) -> None:
    out = cli("review", "--base", "no-such-branch")
    assert out.code == 4
    assert out.error_code == "invalid_input"
    assert "--base" in out.envelope["error"]["message"]
    out = cli("review", "--base", "main", "--head", "--upload-pack=evil")
    assert out.code == 4
    assert "--head" in out.envelope["error"]["message"]
    out = cli("review", "--format", "html")
    assert out.code == 4
    assert "--format" in out.envelope["error"]["message"]
    assert "Traceback" not in out.stdout + out.stderr


@pytest.mark.process
def test_the_default_base_is_main_when_there_is_no_origin(
    branch: Path, env: dict[str, str], cli: Cli
) -> None:
    verified_and_committed(cli, branch, env)
    data = verdict(cli("review"))
    assert data["base"]["ref"] == "main"
    assert data["verdict"] == "approve"

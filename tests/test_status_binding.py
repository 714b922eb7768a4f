"""`status` says whether receipts can be bound in the case's workspace, and why not."""

from __future__ import annotations

from pathlib import Path

from conftest import Cli, case_path, configure_verifiers, git, ready_to_verify, tree_state


def test_a_plain_directory_cannot_bind(env: dict[str, str], tmp_path: Path) -> None:
    """Outside git, status says so before anything is verified."""
    plain = tmp_path / "plain"
    plain.mkdir()
    cli = Cli(env, plain)
    task = cli.open("look around", "--mode", "investigate")
    data = cli("case", "status", task).data
    assert data["binding"]["possible"] is False
    assert "not a git repository" in data["binding"]["reason"]
    assert data["verification"] is None
    assert "not a git repository" in cli("case", "status", task, human=True).stdout


def test_a_repository_without_a_commit_cannot_bind(env: dict[str, str], tmp_path: Path) -> None:
    """An unborn HEAD has nothing to bind to; once there is a commit, it can."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", env=env)
    cli = Cli(env, fresh)
    task = cli.open("first commit")
    data = cli("case", "status", task).data
    assert data["binding"]["possible"] is False
    assert "no commit" in data["binding"]["reason"]
    (fresh / "a.txt").write_text("a\n")
    git(fresh, "add", "a.txt", env=env)
    git(fresh, "commit", "-q", "-m", "a", env=env)
    assert cli("case", "status", task).data["binding"]["possible"] is True


def test_a_verified_case_shows_its_assessment(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """After a verify, status judges the latest batch against the code now."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).data["assessment"]["status"] == "verified"
    data = cli("case", "status", task).data
    assert data["binding"] == {"possible": True, "reason": None}
    assert data["verification"]["status"] == "verified"
    (repo / "app.py").write_text("print('changed again')\n")
    stale = cli("case", "status", task).data["verification"]
    assert stale["status"] == "unverified"
    assert stale["stale"]


def test_status_and_attest_write_nothing(
    cli: Cli, repo: Path, env: dict[str, str], state_root: Path
) -> None:
    """Readers judge the code without writing, not even the index mirror verify keeps."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli)
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).data["batch"]["binding"] == "bound"
    fitting = tree_state(state_root)  # the mirror fits the real index: readers use it as it is
    assert cli("case", "status", task).data["verification"]["status"] == "verified"
    assert cli("case", "attest", task).data["current"] is True
    assert tree_state(state_root) == fitting
    # A new real index (the existing mirror no longer fits) holding new code: since issue 14 a
    # `git add` of the verified code alone keeps the proof (its tree id is unchanged).
    (repo / "app.py").write_text("print('staged change')\n")
    git(repo, "add", "app.py", env=env)
    before = tree_state(state_root)
    git_before = tree_state(repo / ".git")
    assert cli("case", "status", task).data["verification"]["status"] == "unverified"
    assert cli("case", "attest", task).data["current"] is False
    assert tree_state(state_root) == before
    assert tree_state(repo / ".git") == git_before


def test_complete_defaults_to_the_lease_holder(cli: Cli, repo: Path, env: dict[str, str]) -> None:
    """Without --actor, complete acts as the holder of the active lease; others are refused."""
    configure_verifiers(repo, env, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    task = ready_to_verify(cli, actor="agent-7")
    (repo / "app.py").write_text("print('fixed')\n")
    assert cli("case", "verify", task).data["batch"]["actor"] == "agent-7"
    other = cli("case", "complete", task, "--outcome", "done", "--actor", "someone-else")
    assert other.error_code == "lease_conflict"
    done = cli("case", "complete", task, "--outcome", "done").data
    assert done["status"] == "complete"
    summary = (case_path(env, task) / "summary.md").read_text()
    assert "Completed by agent-7" in summary


def test_status_shows_the_contract_each_claim_rests_on_and_the_head_now(
    cli: Cli, repo: Path, env: dict[str, str]
) -> None:
    """Issue 29: `claim c1 passed (proof)` said nothing of the test it rests on, and after the
    verified code was committed the workspace line still named the commit the case opened at."""
    configure_verifiers(repo, {**env}, {"unit": ["true"]})
    env["CORTEX_APPROVE_COMMANDS"] = "1"
    opened_at = git(repo, "rev-parse", "HEAD", env=env)
    task = ready_to_verify(cli, verify=("command:unit",))
    (repo / "app.py").write_text("print('fixed')\n")
    verified = cli(
        "case", "verify", task, "--claim", "c1=the app prints fixed",
        "--contract", "c1=command:unit",
    ).data  # fmt: skip
    assert verified["assessment"]["status"] == "verified"
    git(repo, "commit", "-q", "-am", "the fix", env=env)
    now = git(repo, "rev-parse", "HEAD", env=env)
    data = cli("case", "status", task).data
    assert data["head"] == now
    (claim,) = [r for r in data["verification"]["receipts"] if r["claimId"] == "c1"]
    assert claim["contract"] == "command:unit"
    text = " ".join(cli("case", "status", task, human=True).stdout.split())
    assert f"HEAD {now[:12]}; opened at {opened_at[:12]}" in text
    assert "claim c1 passed (proof) on command:unit" in text

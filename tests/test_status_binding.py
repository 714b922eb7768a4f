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

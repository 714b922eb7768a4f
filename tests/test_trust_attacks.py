"""Issue 19, attacked: holes found by trying to break who may do what (docs/design/trust.md).

Each test is one attack that worked before its fix: real processes, real files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import Cli, case_path, without_answer_opt_in
from trust_kit import ask, detached, planned, unit

__all__ = ["unit"]  # a fixture, used by name

OPT_IN = 'stands_for = "the repository itself"\n'


def plant(directory: Path) -> Path:
    """An opt-in file in `directory`/cortex, as a repository could carry it (mode 600 even)."""
    path = directory / "cortex" / "unattended-answers.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(OPT_IN)
    path.chmod(0o600)
    return path


class TestARepositoryCannotOptItselfIn:
    @pytest.mark.process
    def test_the_configuration_directory_pointed_into_the_repository_is_not_consent(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        """An agent (or a repository's .envrc) pointing XDG_CONFIG_HOME or HOME at a directory
        of the repository, or linking the configuration directory there, does not opt in."""
        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        plant(repo / ".config")
        linked = tmp_path / "linked"
        linked.mkdir()
        (linked / "cortex").symlink_to(repo / ".config" / "cortex")
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        no_xdg = {k: v for k, v in env.items() if k != "XDG_CONFIG_HOME"}
        for environment in (
            {**env, "XDG_CONFIG_HOME": str(repo / ".config")},
            {**no_xdg, "HOME": str(repo)},
            {**env, "XDG_CONFIG_HOME": str(linked)},
        ):
            out = detached([*argv, "--responder", "alice"], environment, repo)
            assert out.code == 4, out.stdout
            error = out.envelope["error"]
            assert error["code"] == "config_error"
            assert "repository" in error["message"]
        assert cli("case", "status", task).data["status"] == "needs_human_decision"

    @pytest.mark.process
    def test_from_a_subdirectory_or_another_worktree_of_the_repository_too(
        self, cli: Cli, env: dict[str, str], repo: Path, tmp_path: Path
    ) -> None:
        from conftest import git

        task, decision = ask(cli)
        env = without_answer_opt_in(env)
        other = tmp_path / "other-worktree"
        git(repo, "worktree", "add", "-q", str(other), env=env)
        plant(other / ".config")
        (repo / "sub").mkdir()
        argv = ["case", "decision", "answer", task, decision, "--answer", "safe"]
        environment = {**env, "XDG_CONFIG_HOME": str(other / ".config")}
        out = detached([*argv, "--responder", "alice"], environment, repo / "sub")
        assert out.code == 4, out.stdout
        assert out.envelope["error"]["code"] == "config_error"
        assert cli("case", "status", task).data["status"] == "needs_human_decision"


class TestABareLeaseTokenIsASecret:
    @pytest.mark.process
    def test_pasted_alone_into_evidence_or_a_note_it_is_redacted(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        task = planned(cli)
        began = detached(["case", "begin-change", task, "--actor", "agent-1"], unit, repo).data
        token = began["leaseToken"]
        assert token.startswith("cortex-lease-")
        assert json.loads((case_path(unit, task) / "case.json").read_text())["changeLease"]
        for text in (token, f"the lease is {token}.", f"token '{token}'"):
            assert cli("case", "note", task, text).code == 0
            assert cli("case", "evidence", "add", task, "--claim", text).code == 0
        for path in case_path(unit, task).rglob("*"):
            if path.is_file():
                assert token.encode() not in path.read_bytes(), path

    @pytest.mark.process
    def test_begin_change_still_returns_it_whole_as_json_and_as_text(
        self, cli: Cli, unit: dict[str, str], repo: Path
    ) -> None:
        task = planned(cli)
        began = detached(["case", "begin-change", task, "--actor", "agent-1"], unit, repo).data
        token = began["leaseToken"]
        assert len(token) == len("cortex-lease-") + 43
        assert "[REDACTED]" not in token
        env = {**unit, "CORTEX_LEASE_TOKEN": token}
        released = detached(["case", "lease", "release", task, "--actor", "agent-1"], env, repo)
        assert released.code == 0, released.stdout
        again = cli("case", "begin-change", task, "--actor", "agent-1", human=True).stdout
        (line,) = [ln for ln in again.splitlines() if "cortex-lease-" in ln and "export" in ln]
        assert "[REDACTED]" not in line, again
        assert os.environ.get("CORTEX_LEASE_TOKEN") is None


def test_a_home_directory_kept_in_git_still_holds_the_users_own_opt_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dotfiles: the home itself may be a work tree; a repository inside it may not."""
    from cortex.kernel.errors import ConfigError
    from cortex.kernel.human import unattended

    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    monkeypatch.setattr(unattended, "_home", lambda: str(home))
    plant(home / ".config")
    env = {"XDG_CONFIG_HOME": str(home / ".config")}
    assert unattended.stands_for(env) == "the repository itself"
    project = home / "src" / "project"
    (project / ".git").mkdir(parents=True)
    plant(project / ".config")
    with pytest.raises(ConfigError, match="inside the git repository"):
        unattended.stands_for({"XDG_CONFIG_HOME": str(project / ".config")})


class TestAPersonsWordNeedsAPersonsChannel:
    """A record whose flag was cleared by hand, or by a replica that wrote it so (a share brings
    another machine's records as they are), is still shown as reported when its own channel
    had no person: the flag alone never makes a person's word."""

    @pytest.mark.parametrize("via", ["cli", "mcp", "share"])
    def test_a_cleared_flag_on_a_channel_without_a_person_is_still_reported(self, via: str) -> None:
        from cortex.cases.records import Source
        from cortex.kernel.provenance import shown

        forged = Source(tool="cortex", actor="agent-1", origin="human", via=via)  # type: ignore[arg-type]
        assert shown(forged) == f"human (reported by agent-1 via {via})"
        plain = {"origin": "reviewer", "actor": "agent-1", "via": via, "claimedByAgent": False}
        assert shown(plain) == f"reviewer (reported by agent-1 via {via})"

    @pytest.mark.parametrize("via", ["cli-tty", "studio"])
    def test_a_persons_channel_shows_the_persons_word(self, via: str) -> None:
        from cortex.cases.records import Source
        from cortex.kernel.provenance import shown

        said = Source(tool="cortex", actor="alice", origin="human", via=via)  # type: ignore[arg-type]
        assert shown(said) == "human"
